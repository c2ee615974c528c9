// Structured logging: one JSON object per line on stderr, with a level threshold set from main.
#ifndef UOPD_CORE_UTIL_LOG_H_
#define UOPD_CORE_UTIL_LOG_H_

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace uopd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Parses "debug", "info", "warning", "error"; false for anything else.
bool ParseLogLevel(absl::string_view text, LogLevel* level);
// Messages below `level` are dropped. Default: kInfo. Safe to call at any time.
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);

// {"ts":"2026-11-29T17:00:00.123Z","level":"info","msg":"...","key":"value",...}
void Log(LogLevel level, absl::string_view message,
         std::initializer_list<std::pair<absl::string_view, std::string>> fields = {});

}  // namespace uopd

#endif  // UOPD_CORE_UTIL_LOG_H_
