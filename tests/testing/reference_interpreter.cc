#include "tests/testing/reference_interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/codegen/tinygrad_algebra.h"
#include "core/ir/value_range.h"
#include "core/util/kernel_support.h"

namespace uopd::testing {
namespace {

// A scalar: integers and bools as bits in `u` (wrapped to the dtype); floats as a double holding
// the dtype's value exactly, and their bits in `u` (loads and bitcasts keep NaN payloads).
struct Val {
  uint64_t u = 0;
  double f = 0;
};

bool IsF(Scalar s) { return IsFloat(s); }
int Width(Scalar s) {
  return s == Scalar::kIndex ? 64 : (s == Scalar::kBool ? 1 : ScalarItemSize(s) * 8);
}

uint64_t Wrap(Int128 v, Scalar s) { return static_cast<uint64_t>(WrapToDType(v, s)); }
Int128 Signed(const Val& v, Scalar s) {
  if (s == Scalar::kBool) return v.u & 1;
  if (IsUnsigned(s)) return static_cast<Int128>(v.u);
  return WrapToDType(static_cast<Int128>(v.u), s == Scalar::kIndex ? Scalar::kInt64 : s);
}

// Rounds a double to the float dtype `s`.
double Round(double x, Scalar s) {
  switch (s) {
    case Scalar::kFloat32:
      return static_cast<float>(x);
    case Scalar::kFloat16:
      return uopd_f16_to_f32(uopd_f64_to_f16(x));
    case Scalar::kBfloat16:
      return uopd_bf16_to_f32(uopd_f64_to_bf16(x));
    case Scalar::kFp8E4M3:
      return uopd_fp8e4m3_to_f32(uopd_f64_to_fp8e4m3(x));
    case Scalar::kFp8E5M2:
      return uopd_fp8e5m2_to_f32(uopd_f64_to_fp8e5m2(x));
    case Scalar::kFp8E4M3Fnuz:
      return uopd_fp8e4m3fnuz_to_f32(uopd_f64_to_fp8e4m3fnuz(x));
    case Scalar::kFp8E5M2Fnuz:
      return uopd_fp8e5m2fnuz_to_f32(uopd_f64_to_fp8e5m2fnuz(x));
    default:
      return x;
  }
}
bool Single(Scalar s) { return s != Scalar::kFloat64; }  // computes in float32

Val FromInt(Int128 v, Scalar s) { return Val{Wrap(v, s), 0}; }
uint64_t FloatBits(double x, Scalar s);
Val FromFloat(double x, Scalar s) {
  double r = Round(x, s);
  return Val{FloatBits(r, s), r};
}

Val Load(const std::string& bytes, int64_t i, Scalar s) {
  const char* p = bytes.data() + i * ScalarItemSize(s);
  uint64_t raw = 0;
  std::memcpy(&raw, p, ScalarItemSize(s));
  switch (s) {
    case Scalar::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return Val{raw, f};
    }
    case Scalar::kFloat64: {
      double d;
      std::memcpy(&d, p, 8);
      return Val{raw, d};
    }
    case Scalar::kFloat16:
      return Val{raw, uopd_f16_to_f32(static_cast<uint32_t>(raw))};
    case Scalar::kBfloat16:
      return Val{raw, uopd_bf16_to_f32(static_cast<uint32_t>(raw))};
    case Scalar::kFp8E4M3:
      return Val{raw, uopd_fp8e4m3_to_f32(static_cast<uint32_t>(raw))};
    case Scalar::kFp8E5M2:
      return Val{raw, uopd_fp8e5m2_to_f32(static_cast<uint32_t>(raw))};
    case Scalar::kFp8E4M3Fnuz:
      return Val{raw, uopd_fp8e4m3fnuz_to_f32(static_cast<uint32_t>(raw))};
    case Scalar::kFp8E5M2Fnuz:
      return Val{raw, uopd_fp8e5m2fnuz_to_f32(static_cast<uint32_t>(raw))};
    case Scalar::kBool:
      return Val{raw != 0 ? 1u : 0u, 0};
    default:
      return FromInt(static_cast<Int128>(raw), s);
  }
}

void Store(std::string& bytes, int64_t i, Scalar s, const Val& v) {
  // Floats are stored as their bits too: a value that only went through loads and bitcasts
  // keeps its exact pattern (NaN payloads included), as the backends keep it.
  std::memcpy(bytes.data() + i * ScalarItemSize(s), &v.u, ScalarItemSize(s));
}

uint64_t FloatBits(double x, Scalar s) {
  switch (s) {
    case Scalar::kFloat32: {
      float f = static_cast<float>(x);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    case Scalar::kFloat64: {
      uint64_t b;
      std::memcpy(&b, &x, 8);
      return b;
    }
    case Scalar::kFloat16:
      return uopd_f64_to_f16(x);
    case Scalar::kBfloat16:
      return uopd_f64_to_bf16(x);
    case Scalar::kFp8E4M3:
      return uopd_f64_to_fp8e4m3(x);
    case Scalar::kFp8E4M3Fnuz:
      return uopd_f64_to_fp8e4m3fnuz(x);
    case Scalar::kFp8E5M2Fnuz:
      return uopd_f64_to_fp8e5m2fnuz(x);
    default:
      return uopd_f64_to_fp8e5m2(x);
  }
}

double FloatFromBits(uint64_t b, Scalar s) {
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &b, 8);
  return Load(bytes, 0, s).f;
}

class Interpreter {
 public:
  Interpreter(std::vector<std::string>& buffers,
              const absl::flat_hash_map<std::string, int64_t>& vars, const Unspecified& unspecified)
      : buffers_(buffers), vars_(vars), unspecified_(unspecified) {}

  absl::Status Exec(const UOp* stmt) {
    switch (stmt->op()) {
      case Op::kSink:
      case Op::kGroup:
        for (const UOp* s : stmt->src()) {
          if (absl::Status st = Exec(s); !st.ok()) return st;
        }
        return absl::OkStatus();
      case Op::kEnd: {
        std::vector<const UOp*> ranges(stmt->src().begin() + 1, stmt->src().end());
        std::sort(ranges.begin(), ranges.end(),
                  [](const UOp* a, const UOp* b) { return a->arg().axis < b->arg().axis; });
        return Loop(ranges, 0, [&] { return Exec(stmt->src(0)); });
      }
      case Op::kAfter:
        return Deps(stmt);
      case Op::kStore: {
        const UOp* target = stmt->src(0);
        if (absl::Status st = Deps(target->src(0)); !st.ok()) return st;
        int64_t index = 0;
        bool valid = false;
        if (absl::Status st = Index(target, &index, &valid); !st.ok()) return st;
        if (!valid) return absl::OkStatus();
        Val v;
        if (absl::Status st = Eval(stmt->src(1), &v); !st.ok()) return st;
        Store(Memory(target->src(0)), index, target->dtype().scalar, v);
        return absl::OkStatus();
      }
      default:
        return absl::InvalidArgumentError(absl::StrCat("not a statement: ", OpName(stmt->op())));
    }
  }

 private:
  template <typename F>
  absl::Status Loop(const std::vector<const UOp*>& ranges, size_t i, const F& body,
                    bool reverse = false) {
    if (i == ranges.size()) return body();
    Val end;
    if (absl::Status st = Eval(ranges[i]->src(0), &end); !st.ok()) return st;
    int64_t n = static_cast<int64_t>(Signed(end, ranges[i]->src(0)->dtype().scalar));
    open_.push_back(ranges[i]);
    for (int64_t step = 0; step < n; ++step) {
      env_[ranges[i]] = reverse ? n - 1 - step : step;
      if (absl::Status st = Loop(ranges, i + 1, body, reverse); !st.ok()) {
        open_.pop_back();
        return st;
      }
    }
    open_.pop_back();
    env_.erase(ranges[i]);
    return absl::OkStatus();
  }

  // Statements an AFTER chain orders a buffer after. Each is one program point, as in the
  // structured code tinygrad and the backends generate: inside the loop of the innermost range
  // it depends on, among those open where it is first referenced. It runs once per iteration of
  // that loop and the loops around it, however often it is referenced, and a reference from
  // deeper loops does not run it again.
  absl::Status Deps(const UOp* buffer) {
    std::vector<const UOp*> chain;
    for (; buffer->op() == Op::kAfter; buffer = buffer->src(0)) chain.push_back(buffer);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      for (size_t i = 1; i < (*it)->num_src(); ++i) {
        const UOp* dep = (*it)->src(i);
        if (dep->op() == Op::kRange || dep->op() == Op::kConst) continue;
        auto [placed, first] = placement_.try_emplace(dep);
        if (first) {
          const std::vector<const UOp*>& free = Free(dep);
          size_t depth = 0;  // the open loops up to the innermost one `dep` depends on
          for (size_t k = 0; k < open_.size(); ++k) {
            if (std::find(free.begin(), free.end(), open_[k]) != free.end()) depth = k + 1;
          }
          placed->second.assign(open_.begin(), open_.begin() + depth);
        }
        std::vector<int64_t> key = {static_cast<int64_t>(dep->id())};
        bool outside = false;  // referenced where its loops are closed: it ran in them
        for (const UOp* range : placed->second) {
          auto it = env_.find(range);
          outside |= it == env_.end();
          if (!outside) key.push_back(it->second);
        }
        if (outside) continue;
        if (!ran_.insert(key).second) continue;
        if (absl::Status st = Exec(dep); !st.ok()) return st;
      }
    }
    return absl::OkStatus();
  }

  // The loop variables `node` depends on that no END or REDUCE inside it closes.
  const std::vector<const UOp*>& Free(const UOp* node) {
    if (auto it = free_.find(node); it != free_.end()) return it->second;
    std::vector<const UOp*> free;
    size_t closed_from =
        (node->op() == Op::kEnd || node->op() == Op::kReduce) ? 1 : node->num_src();
    for (size_t i = 0; i < node->num_src(); ++i) {
      for (const UOp* r : Free(node->src(i))) {
        bool closed = false;
        for (size_t c = closed_from; c < node->num_src(); ++c) closed |= node->src(c) == r;
        if (!closed && std::find(free.begin(), free.end(), r) == free.end()) free.push_back(r);
      }
    }
    if (node->op() == Op::kRange) free.push_back(node);
    return free_[node] = std::move(free);
  }

  // The bytes a buffer operand names: a slot's, or a register array's (DEFINE_REG: one array,
  // as the kernel runs here as one thread), zeros until first stored.
  std::string& Memory(const UOp* buffer) {
    while (buffer->op() == Op::kAfter) buffer = buffer->src(0);
    if (buffer->op() != Op::kDefineReg) return buffers_[Slot(buffer)];
    std::string& bytes = registers_[buffer];
    bytes.resize(buffer->dtype().size * ScalarItemSize(buffer->dtype().scalar), '\0');
    return bytes;
  }

  static int Slot(const UOp* buffer) {
    while (buffer->op() == Op::kAfter) buffer = buffer->src(0);
    return static_cast<int>(buffer->arg().i);
  }

  static int64_t Size(const UOp* buffer) {
    while (buffer->op() == Op::kAfter) buffer = buffer->src(0);
    return buffer->dtype().size;
  }

  absl::Status Index(const UOp* index_node, int64_t* index, bool* valid) {
    const UOp* idx = index_node->src(1);
    *valid = true;
    while (idx->op() == Op::kWhere && idx->src(2)->IsInvalid()) {
      Val c;
      if (absl::Status st = Eval(idx->src(0), &c); !st.ok()) return st;
      if ((c.u & 1) == 0) *valid = false;
      idx = idx->src(1);
    }
    if (!*valid) return absl::OkStatus();
    Val v;
    if (absl::Status st = Eval(idx, &v); !st.ok()) return st;
    Int128 i = Signed(v, idx->dtype().scalar);
    if (i < 0 || i >= Size(index_node->src(0))) {
      return absl::OutOfRangeError(
          absl::StrCat("index ", static_cast<int64_t>(i), " of slot ", Slot(index_node->src(0))));
    }
    *index = static_cast<int64_t>(i);
    return absl::OkStatus();
  }

  // A REDUCE in the order the variation says (lanes, reversed, shuffled).
  absl::Status Reduce(const UOp* n, Val* out) {
    const Scalar s = n->dtype().scalar;
    auto src = [&](size_t i, Val* v) { return Eval(n->src(i), v); };
    Op op = n->arg().reduce_op;
    Val identity;
    if (IsF(s))
      identity = FromFloat(op == Op::kAdd ? 0.0 : op == Op::kMul ? 1.0 : -INFINITY, s);
    else
      identity = FromInt(op == Op::kAdd ? 0 : op == Op::kMul ? 1 : DTypeRange(s).min, s);
    std::vector<const UOp*> ranges(n->src().begin() + 1, n->src().end());
    std::sort(ranges.begin(), ranges.end(),
              [](const UOp* a, const UOp* b) { return a->arg().axis < b->arg().axis; });
    const int lanes = std::max(1, unspecified_.reduction_lanes);
    std::vector<Val> partial(lanes, identity);
    std::vector<Val> values;  // with reduction_shuffle: combined after the loop
    absl::Status st = Loop(
        ranges, 0,
        [&]() -> absl::Status {
          Val v;
          if (absl::Status e = src(0, &v); !e.ok()) return e;
          if (unspecified_.reduction_shuffle != 0) {
            values.push_back(v);
            return absl::OkStatus();
          }
          Val& acc = partial[env_.at(ranges[0]) % lanes];
          acc = Binary(op, acc, v, s);
          return absl::OkStatus();
        },
        unspecified_.reverse_reductions);
    if (unspecified_.reduction_shuffle != 0) {
      std::mt19937 order(unspecified_.reduction_shuffle + static_cast<uint32_t>(n->id()));
      std::shuffle(values.begin(), values.end(), order);
      for (const Val& v : values) partial[0] = Binary(op, partial[0], v, s);
    }
    if (unspecified_.pad_reductions) {
      for (Val& p : partial) p = Binary(op, p, identity, s);
    }
    for (int half = lanes / 2; half > 0; half /= 2) {
      for (int lane = 0; lane < half; ++lane) {
        partial[lane] = Binary(op, partial[lane], partial[lane + half], s);
      }
    }
    Val acc = partial[0];
    *out = acc;
    return st;
  }

  absl::Status Eval(const UOp* n, Val* out) {
    const Scalar s = n->dtype().scalar;
    auto src = [&](size_t i, Val* v) { return Eval(n->src(i), v); };
    switch (n->op()) {
      case Op::kConst:
        if (IsF(s))
          *out = FromFloat(
              n->arg().kind == ArgKind::kF64 ? n->arg().f : static_cast<double>(n->arg().i), s);
        else
          *out = FromInt(ConstIntValue(*n), s);
        return absl::OkStatus();
      case Op::kDefineVar:
        *out = FromInt(vars_.at(n->arg().str), s);
        return absl::OkStatus();
      case Op::kRange: {
        auto it = env_.find(n);
        if (it == env_.end()) return absl::InvalidArgumentError("range outside its loop");
        *out = FromInt(it->second, s);
        return absl::OkStatus();
      }
      case Op::kIndex:
      case Op::kLoad: {
        const UOp* index_node = n->op() == Op::kLoad ? n->src(0) : n;
        if (absl::Status st = Deps(index_node->src(0)); !st.ok()) return st;
        int64_t i = 0;
        bool valid = false;
        if (absl::Status st = Index(index_node, &i, &valid); !st.ok()) return st;
        if (!valid) {
          if (n->op() == Op::kLoad && n->num_src() > 1) return src(1, out);
          *out = Val{};
          return absl::OkStatus();
        }
        *out = Load(Memory(index_node->src(0)), i, s);
        return absl::OkStatus();
      }
      case Op::kReduce:
        return Reduce(n, out);
      case Op::kCast:
      case Op::kBitcast: {
        Val v;
        if (absl::Status st = src(0, &v); !st.ok()) return st;
        *out = n->op() == Op::kCast ? Cast(v, n->src(0)->dtype().scalar, s)
                                    : Bitcast(v, n->src(0)->dtype().scalar, s);
        return absl::OkStatus();
      }
      case Op::kWhere: {
        Val c, a, b;
        if (absl::Status st = src(0, &c); !st.ok()) return st;
        if (absl::Status st = src(1, &a); !st.ok()) return st;
        if (absl::Status st = src(2, &b); !st.ok()) return st;
        *out = (c.u & 1) ? a : b;
        return absl::OkStatus();
      }
      default: {
        std::vector<Val> v(n->num_src());
        for (size_t i = 0; i < n->num_src(); ++i) {
          if (absl::Status st = src(i, &v[i]); !st.ok()) return st;
        }
        Scalar operand = n->src(0)->dtype().scalar;
        if (IsComparison(n->op())) {
          bool r;
          if (IsF(operand)) {
            r = n->op() == Op::kCmplt   ? v[0].f < v[1].f
                : n->op() == Op::kCmpne ? v[0].f != v[1].f
                                        : v[0].f == v[1].f;
          } else {
            Int128 a = Signed(v[0], operand), b = Signed(v[1], operand);
            r = n->op() == Op::kCmplt ? a < b : n->op() == Op::kCmpne ? a != b : a == b;
          }
          *out = Val{r ? 1u : 0u, 0};
        } else if (IsUnaryAlu(n->op())) {
          *out = Unary(n->op(), v[0], s);
        } else if (n->op() == Op::kMulacc) {
          *out = Binary(Op::kAdd, Binary(Op::kMul, v[0], v[1], s), v[2], s);
        } else if (n->op() == Op::kThreefry) {
          *out = Val{uopd_threefry(v[0].u, v[1].u), 0};
        } else if (n->op() == Op::kShl || n->op() == Op::kShr) {
          int amount = static_cast<int>(v[1].u & static_cast<uint64_t>(Width(s) - 1));
          Int128 a = Signed(v[0], s);
          *out = FromInt(n->op() == Op::kShl
                             ? static_cast<Int128>(static_cast<uint64_t>(v[0].u) << amount)
                             : (a >> amount),
                         s);
        } else {
          *out = Binary(n->op(), v[0], v[1], s);
        }
        return absl::OkStatus();
      }
    }
  }

  // A float result of arithmetic. Its NaNs have the host's bits, or every mantissa bit set (the
  // GPU's choice) when the variation says so.
  Val Computed(double r, Scalar s) const {
    Val v = FromFloat(r, s);
    if (!std::isnan(r) || !unspecified_.nan_all_ones) return v;
    const int bits = ScalarItemSize(s) * 8;
    v.u = (bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1) >> 1;
    return v;
  }
  // A transcendental result, moved by the variation's units in the last place.
  double Transcendental(double r, bool single) const {
    if (!std::isfinite(r)) return r;
    for (int i = 0; i < std::abs(unspecified_.transcendental_ulps); ++i) {
      double toward = unspecified_.transcendental_ulps > 0 ? INFINITY : -INFINITY;
      r = single ? std::nextafter(static_cast<float>(r), static_cast<float>(toward))
                 : std::nextafter(r, toward);
    }
    return r;
  }

  Val Unary(Op op, const Val& x, Scalar s) {
    if (IsF(s)) {
      double r;
      bool single = Single(s);
      switch (op) {
        case Op::kNeg:
          r = -x.f;
          break;
        case Op::kReciprocal:
          r = single ? 1.0f / static_cast<float>(x.f) : 1.0 / x.f;
          break;
        case Op::kExp2:
          r = Transcendental(single ? std::exp2(static_cast<float>(x.f)) : std::exp2(x.f), single);
          break;
        case Op::kLog2:
          r = Transcendental(single ? std::log2(static_cast<float>(x.f)) : std::log2(x.f), single);
          break;
        case Op::kSin:
          r = Transcendental(single ? std::sin(static_cast<float>(x.f)) : std::sin(x.f), single);
          break;
        case Op::kSqrt:
          r = single ? std::sqrt(static_cast<float>(x.f)) : std::sqrt(x.f);
          break;
        default:
          r = std::trunc(x.f);
          break;
      }
      return Computed(r, s);
    }
    if (s == Scalar::kBool) return Val{x.u ^ 1u, 0};
    return FromInt(-Signed(x, s), s);
  }

  Val Binary(Op op, const Val& a, const Val& b, Scalar s) {
    if (IsF(s)) {
      bool single = Single(s);
      float fa = static_cast<float>(a.f), fb = static_cast<float>(b.f);
      double r;
      switch (op) {
        case Op::kAdd:
          r = single ? fa + fb : a.f + b.f;
          break;
        case Op::kSub:
          r = single ? fa - fb : a.f - b.f;
          break;
        case Op::kMul:
          r = single ? fa * fb : a.f * b.f;
          break;
        case Op::kFdiv:
          r = single ? fa / fb : a.f / b.f;
          break;
        case Op::kPow:
          r = Transcendental(single ? std::pow(fa, fb) : std::pow(a.f, b.f), single);
          break;
        case Op::kMax:
          r = a.f > b.f ? a.f : b.f;
          break;
        default:
          r = 0;
          break;
      }
      return Computed(r, s);
    }
    if (s == Scalar::kBool) {
      uint64_t x = a.u & 1, y = b.u & 1;
      switch (op) {
        case Op::kAdd:
        case Op::kOr:
        case Op::kMax:
          return Val{x | y, 0};
        case Op::kMul:
        case Op::kAnd:
          return Val{x & y, 0};
        case Op::kXor:
        case Op::kSub:
          return Val{x ^ y, 0};
        default:
          return Val{};
      }
    }
    Int128 x = Signed(a, s), y = Signed(b, s);
    switch (op) {
      case Op::kAdd:
        return FromInt(x + y, s);
      case Op::kSub:
        return FromInt(x - y, s);
      case Op::kMul:
        return FromInt(x * y, s);
      case Op::kMax:
        return FromInt(std::max(x, y), s);
      case Op::kAnd:
        return FromInt(x & y, s);
      case Op::kOr:
        return FromInt(x | y, s);
      case Op::kXor:
        return FromInt(x ^ y, s);
      case Op::kIdiv:
        return FromInt(y == 0 ? 0 : x / y, s);  // Int128: MIN/-1 wraps via FromInt
      case Op::kMod:
        return FromInt(y == 0 ? 0 : x % y, s);
      default:
        return Val{};
    }
  }

  Val Cast(const Val& v, Scalar from, Scalar to) {
    // To its own type, a value is itself (tinygrad folds such a CAST): no round trip, which for
    // fp8 e5m2 would turn an infinity into 57344 (conversions saturate).
    if (from == to) return v;
    if (to == Scalar::kBool)
      return Val{(IsF(from) ? v.f != 0.0 : Signed(v, from) != 0) ? 1u : 0u, 0};
    if (IsF(to)) {
      if (IsF(from)) return Computed(v.f, to);
      Int128 i = Signed(v, from);
      // Integers convert to the target directly (through double for narrow floats).
      double d = IsUnsigned(from) ? static_cast<double>(static_cast<uint64_t>(i))
                                  : static_cast<double>(static_cast<int64_t>(i));
      if (to == Scalar::kFloat32)
        d = IsUnsigned(from) ? static_cast<float>(static_cast<uint64_t>(i))
                             : static_cast<float>(static_cast<int64_t>(i));
      return FromFloat(d, to);
    }
    if (IsF(from)) {
      double x = std::isnan(v.f) ? 0.0 : std::trunc(v.f);
      auto saturate = [&](Int128 lo, Int128 hi) -> Int128 {
        if (std::isnan(v.f)) return 0;
        if (x <= static_cast<double>(lo)) return lo;
        if (x >= static_cast<double>(hi)) return hi;
        return static_cast<Int128>(x);
      };
      if (!IsUnsigned(to)) {
        Interval r = DTypeRange(to == Scalar::kIndex ? Scalar::kInt64 : to);
        return FromInt(saturate(r.min, r.max), to);
      }
      if (Width(to) == 64) return FromInt(saturate(0, DTypeRange(Scalar::kUint64).max), to);
      Interval r = DTypeRange(Scalar::kInt64);
      return FromInt(saturate(r.min, r.max), to);  // through int64, then wrapped
    }
    return FromInt(Signed(v, from), to);
  }

  Val Bitcast(const Val& v, Scalar from, Scalar to) {
    if (from == Scalar::kBool || to == Scalar::kBool || from == Scalar::kIndex ||
        to == Scalar::kIndex) {
      return Cast(v, from, to);
    }
    const int bytes = ScalarItemSize(to);
    uint64_t bits = bytes == 8 ? v.u : v.u & ((uint64_t{1} << (8 * bytes)) - 1);
    if (IsF(to)) return Val{bits, FloatFromBits(bits, to)};
    return FromInt(static_cast<Int128>(bits), to);
  }

  std::vector<std::string>& buffers_;
  absl::flat_hash_map<const UOp*, std::string> registers_;
  const absl::flat_hash_map<std::string, int64_t>& vars_;
  const Unspecified unspecified_;
  absl::flat_hash_map<const UOp*, int64_t> env_;
  absl::flat_hash_set<std::vector<int64_t>> ran_;  // (statement id, its loop variables)
  // The loops open where each AFTER dependency was first referenced.
  absl::flat_hash_map<const UOp*, std::vector<const UOp*>> placement_;
  std::vector<const UOp*> open_;  // the loops running now, outermost first
  absl::flat_hash_map<const UOp*, std::vector<const UOp*>> free_;
};

}  // namespace

absl::Status Interpret(const KernelAst& ast, std::vector<std::string>& buffers,
                       const absl::flat_hash_map<std::string, int64_t>& vars,
                       const Unspecified& unspecified) {
  // IR.md makes tinygrad's always-applied rewrites part of what a kernel means, so the reference
  // computes the rewritten kernel (the rewrites have tests of their own, against fixed values).
  auto rewritten = ApplyTinygradAlgebra(
      std::shared_ptr<const KernelAst>(std::shared_ptr<const KernelAst>(), &ast));
  Interpreter interpreter(buffers, vars, unspecified);
  return interpreter.Exec(rewritten->root);
}

}  // namespace uopd::testing
