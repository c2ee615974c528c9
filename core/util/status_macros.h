// Early-return helpers for absl::Status / absl::StatusOr. The abseil packaged in Debian 12
// (20220623) predates ABSL_RETURN_IF_ERROR / ABSL_ASSIGN_OR_RETURN; these stand in until it does.
#ifndef UOPD_CORE_UTIL_STATUS_MACROS_H_
#define UOPD_CORE_UTIL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#define UOPD_STATUS_CONCAT_INNER_(a, b) a##b
#define UOPD_STATUS_CONCAT_(a, b) UOPD_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status); returns it from the enclosing function when not OK.
#define UOPD_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::absl::Status uopd_status_ = (expr);        \
    if (!uopd_status_.ok()) return uopd_status_; \
  } while (false)

// `UOPD_ASSIGN_OR_RETURN(auto x, MakeX());` declares/assigns `x` from an absl::StatusOr, or
// returns its error status from the enclosing function.
#define UOPD_ASSIGN_OR_RETURN(lhs, expr) \
  UOPD_ASSIGN_OR_RETURN_IMPL_(UOPD_STATUS_CONCAT_(uopd_statusor_, __LINE__), lhs, expr)

#define UOPD_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)   \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

namespace uopd {

// Returns `status` with `context` prepended to its message ("while lowering kernel E_4: ...").
// An OK status is returned unchanged.
absl::Status WithContext(const absl::Status& status, absl::string_view context);

}  // namespace uopd

#endif  // UOPD_CORE_UTIL_STATUS_MACROS_H_
