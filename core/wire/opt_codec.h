// Opts on the wire (uopd.v1.Opt): what clients send as tinygrad's opts_to_apply and what comes
// back as applied opts and in a search's cache record.
#ifndef UOPD_CORE_WIRE_OPT_CODEC_H_
#define UOPD_CORE_WIRE_OPT_CODEC_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/opt/opt.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "uopd/v1/graph.pb.h"

namespace uopd {

// INVALID_ARGUMENT naming the entry ("`where`[2]: ...") for an unknown op, a missing axis or a
// TC without its three parameters.
absl::StatusOr<std::vector<Opt>> DecodeOpts(const google::protobuf::RepeatedPtrField<v1::Opt>& wire,
                                            absl::string_view where);
v1::Opt EncodeOpt(const Opt& opt);

}  // namespace uopd

#endif  // UOPD_CORE_WIRE_OPT_CODEC_H_
