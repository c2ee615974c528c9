#include "core/wire/opt_codec.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace uopd {

absl::StatusOr<std::vector<Opt>> DecodeOpts(const google::protobuf::RepeatedPtrField<v1::Opt>& wire,
                                            absl::string_view where) {
  if (wire.size() > kMaxOptsPerKernel) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", wire.size(), " opts, at most ",
                                                   kMaxOptsPerKernel, " per kernel"));
  }
  std::vector<Opt> opts;
  for (int i = 0; i < wire.size(); ++i) {
    const v1::Opt& w = wire[i];
    absl::StatusOr<OptOp> op = ParseOptOp(w.op());
    if (!op.ok()) return WithContext(op.status(), absl::StrCat(where, "[", i, "]"));
    Opt opt;
    opt.op = *op;
    if (w.has_axis()) opt.axis = w.axis();
    opt.arg = w.arg();
    if (opt.op == OptOp::kTc) {
      if (w.tc_size() != 3) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "[", i, "]: TC needs tc = [tc_select, tc_opt, use_tensor_cores]"));
      }
      opt.tc = {w.tc(0), w.tc(1), w.tc(2)};
    }
    if (!opt.axis.has_value() && opt.op != OptOp::kNoLocals) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "[", i, "]: ", w.op(), " needs an axis"));
    }
    opts.push_back(opt);
  }
  return opts;
}

v1::Opt EncodeOpt(const Opt& opt) {
  v1::Opt w;
  w.set_op(std::string(OptOpName(opt.op)));
  if (opt.axis.has_value()) w.set_axis(*opt.axis);
  w.set_arg(opt.arg);
  if (opt.op == OptOp::kTc) {
    for (int v : opt.tc) w.add_tc(v);
  }
  return w;
}

}  // namespace uopd
