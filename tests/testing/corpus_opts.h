// The opts of an optimized corpus case (tests/corpus_opt/README.md) as uopd Opts, and the target
// tinygrad chose them for: shared by the tests that replay or re-derive them.
#ifndef UOPD_TESTS_TESTING_CORPUS_OPTS_H_
#define UOPD_TESTS_TESTING_CORPUS_OPTS_H_

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

// The corpus was captured with CPU_COUNT=8 (threads up to 8) and CUDARenderer("sm_80").
inline OptTarget TargetOf(const v1::CorpusCase& kase) {
  return kase.target() == "CPU" ? OptTarget::Cpu(8) : OptTarget::Cuda("sm_80");
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
