// The opts of an optimized corpus case (tests/corpus_opt/README.md) as uopd Opts, and the target
// tinygrad chose them for: shared by the tests that replay or re-derive them.
#ifndef UOPD_TESTS_TESTING_CORPUS_OPTS_H_
#define UOPD_TESTS_TESTING_CORPUS_OPTS_H_

#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "core/opt/opt.h"
#include "core/opt/opt_target.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "uopd/v1/corpus.pb.h"

namespace uopd::testing {

// One of a case's opts ({"op": "UPCAST", "axis": 1, "arg": 4}; TC's arg a list of three).
inline absl::StatusOr<Opt> OptOf(const v1::CorpusOpt& wire) {
  Opt opt;
  auto op = ParseOptOp(wire.op());
  if (!op.ok()) return op.status();
  opt.op = *op;
  if (wire.axis().kind_case() == google::protobuf::Value::kNumberValue) {
    opt.axis = static_cast<int>(wire.axis().number_value());
  }
  if (wire.arg().kind_case() == google::protobuf::Value::kNumberValue) {
    opt.arg = static_cast<int>(wire.arg().number_value());
  } else if (wire.arg().kind_case() == google::protobuf::Value::kListValue) {
    for (int i = 0; i < 3 && i < wire.arg().list_value().values_size(); ++i) {
      opt.tc[i] = static_cast<int>(wire.arg().list_value().values(i).number_value());
    }
  }
  return opt;
}

// The corpus was captured with CPU_COUNT=8 (threads up to 8) and CUDARenderer("sm_80"); a
// case whose manifest context says ALLOW_TF32=1 may put float32 on a TF32 tensor core.
inline OptTarget TargetOf(const v1::CorpusCase& kase) {
  if (kase.target() == "CPU") return OptTarget::Cpu(8);
  OptTarget cuda = OptTarget::Cuda("sm_80");
#ifdef UOPD_CORPUS_OPT_DIR
  static const google::protobuf::Struct* manifest = [] {
    auto* out = new google::protobuf::Struct;
    std::ifstream in(std::string(UOPD_CORPUS_OPT_DIR) + "/manifest.json");
    std::stringstream text;
    text << in.rdbuf();
    if (!google::protobuf::util::JsonStringToMessage(text.str(), out).ok()) out->Clear();
    return out;
  }();
  for (const auto& [section, cases] : manifest->fields()) {
    const auto& entries = cases.struct_value().fields();
    auto it = entries.find(kase.name());
    if (it == entries.end()) continue;
    const auto& fields = it->second.struct_value().fields();
    auto context = fields.find("context");
    if (context == fields.end()) continue;
    const auto& flags = context->second.struct_value().fields();
    auto tf32 = flags.find("ALLOW_TF32");
    if (tf32 != flags.end() && tf32->second.number_value() != 0) cuda.allow_tf32 = true;
  }
#endif
  return cuda;
}

// A JSON value of a line re-read as the message it encodes (an IR v1 Graph, an opt).
template <typename Message>
absl::StatusOr<Message> MessageOf(const google::protobuf::Value& value) {
  std::string json;
  Message message;
  if (auto s = google::protobuf::util::MessageToJsonString(value, &json); !s.ok()) {
    return absl::InvalidArgumentError(s.ToString());
  }
  if (auto s = google::protobuf::util::JsonStringToMessage(json, &message); !s.ok()) {
    return absl::InvalidArgumentError(s.ToString());
  }
  return message;
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_CORPUS_OPTS_H_
