// Test helper: a generator of random well-formed kernels (random ops, dtypes, casts, bitcasts,
// selects, masked loads, reductions, index arithmetic that may leave its buffer, a symbolic
// "shift" in [0, 40]) for robustness tests of the backends. With `long_reductions`, some
// reductions run 32 to 101 iterations over rows of wider inputs (row-major, in bounds), the
// shape GPUs share among a warp's lanes.
#ifndef UOPD_TESTS_TESTING_RANDOM_KERNELS_H_
#define UOPD_TESTS_TESTING_RANDOM_KERNELS_H_

#include <array>
#include <random>
#include <vector>

#include "tests/testing/graph_builder.h"

namespace uopd::testing {

using v1::DType;
using v1::Node;
using S = DType::Scalar;

inline constexpr S kScalars[] = {DType::BOOL,    DType::INT8,    DType::UINT8,    DType::INT16,
                                 DType::UINT16,  DType::INT32,   DType::UINT32,   DType::INT64,
                                 DType::UINT64,  DType::FLOAT16, DType::BFLOAT16, DType::FLOAT32,
                                 DType::FLOAT64, DType::FP8E4M3, DType::FP8E5M2};
inline constexpr int64_t kN = 37;

inline bool IsFloatS(S s) {
  return s == DType::FLOAT16 || s == DType::BFLOAT16 || s == DType::FLOAT32 ||
         s == DType::FLOAT64 || s == DType::FP8E4M3 || s == DType::FP8E5M2 ||
         s == DType::FP8E4M3FNUZ || s == DType::FP8E5M2FNUZ;
}
inline bool IsIntS(S s) { return s != DType::BOOL && !IsFloatS(s); }
inline int Size(S s) {
  switch (s) {
    case DType::INT16:
    case DType::UINT16:
    case DType::FLOAT16:
    case DType::BFLOAT16:
      return 2;
    case DType::INT32:
    case DType::UINT32:
    case DType::FLOAT32:
      return 4;
    case DType::INT64:
    case DType::UINT64:
    case DType::FLOAT64:
      return 8;
    default:
      return 1;
  }
}

// An input buffer of a generated kernel: slot = its index in the list + 1.
struct RandomInput {
  S dtype;
  int node;
  int64_t elements;
};

class Generator {
 public:
  // `outputs`: the output buffer's length (37, a prime, unless a test needs divisors).
  explicit Generator(uint32_t seed, bool long_reductions = false, int64_t outputs = kN)
      : rng_(seed), n_(outputs), long_reductions_(long_reductions) {}

  v1::Graph Make(std::vector<RandomInput>* inputs, S* out_dtype) {
    out_dtype_ = PickScalar();
    out_ = g_.Buffer(0, out_dtype_, n_);
    r_ = g_.Range(g_.Index(n_), 0);
    int value = Expr(out_dtype_, 4);
    *inputs = inputs_;
    *out_dtype = out_dtype_;
    return g_.Sink({g_.End(g_.Store(g_.Target(out_, r_), value), {r_})});
  }

 private:
  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  // One of kScalars; an fp8 format is either of its encodings (OCP or fnuz), so fp8 kernels,
  // whose reductions' orders often differ past the comparison's tolerance, stay 2 in 15.
  S PickScalar() {
    const S s = kScalars[Pick(std::size(kScalars))];
    if (s != DType::FP8E4M3 && s != DType::FP8E5M2) return s;
    if (Pick(2) == 0) return s;
    return s == DType::FP8E4M3 ? DType::FP8E4M3FNUZ : DType::FP8E5M2FNUZ;
  }

  int Input(S dtype) { return Input(dtype, n_); }
  int Input(S dtype, int64_t elements) {
    for (const RandomInput& in : inputs_) {
      if (in.dtype == dtype && in.elements == elements) return in.node;
    }
    int node = g_.Buffer(static_cast<int>(inputs_.size()) + 1, dtype, elements);
    inputs_.push_back({dtype, node, elements});
    return node;
  }

  // The variable "shift" in [0, 40], created on first use.
  int Shift() {
    if (shift_ < 0) shift_ = g_.Var("shift", 0, 40);
    return shift_;
  }

  // A random index expression over the output range, the open reduction ranges and "shift";
  // it may leave the buffer (the kernel must then stop with OUT_OF_RANGE, never touch memory).
  int IndexExpr() {
    int idx = r_;
    for (int k : reduce_ranges_) idx = g_.Node(Node::ADD, DType::INDEX, {idx, k});
    switch (Pick(5)) {
      case 0:
        return g_.Node(
            Node::MOD, DType::INDEX,
            {g_.Node(Node::MUL, DType::INDEX, {idx, g_.Index(1 + Pick(7))}), g_.Index(n_)});
      case 1:
        return g_.Node(Node::IDIV, DType::INDEX, {idx, g_.Index(1 + Pick(4))});
      case 2:
        return g_.Node(Node::ADD, DType::INDEX, {idx, Shift()});
      case 3:
        return g_.Node(Node::SUB, DType::INDEX, {g_.Index(n_ - 1), idx});
      default:
        return idx;
    }
  }

  int Leaf(S dtype) {
    if (!long_ranges_.empty() && Pick(2) == 0) {
      // Row r of a row-major n_ x K input, along the outermost long reduction.
      const auto [k, length] = long_ranges_.front();
      int element = g_.RowMajor(r_, length, k);
      return g_.Load(Input(dtype, n_ * length), element);
    }
    switch (Pick(4)) {
      case 3:
        return g_.Load(Input(dtype), IndexExpr());
      case 0: {
        if (dtype == DType::BOOL) return g_.Bool(Pick(2));
        if (IsFloatS(dtype))
          return g_.Float(dtype, std::uniform_real_distribution<double>(-4, 4)(rng_));
        return g_.Int(dtype, static_cast<int64_t>(Pick(200)) - 100);
      }
      case 1: {
        // A masked load: in[i - 3] where i >= 3, else a constant.
        int valid = g_.Node(Node::CMPNE, DType::BOOL,
                            {g_.Node(Node::CMPLT, DType::BOOL, {r_, g_.Index(3)}), g_.Bool(true)});
        int idx =
            g_.Node(Node::WHERE, DType::INDEX,
                    {valid, g_.Node(Node::ADD, DType::INDEX, {r_, g_.Index(-3)}), g_.Invalid()});
        return g_.Node(Node::WHERE, dtype, {valid, g_.Load(Input(dtype), idx), Leaf(dtype)});
      }
      default:
        return g_.Load(Input(dtype), r_);
    }
  }

  int Expr(S dtype, int depth) {
    if (depth == 0) return Leaf(dtype);
    if (depth >= 2 && reduce_ranges_.size() + long_ranges_.size() < 2 && Pick(5) == 0) {
      // A reduction over a fresh range; loads inside may index with it.
      const bool long_one = long_reductions_ && Pick(2) == 0;
      const int64_t length = long_one ? 32 + static_cast<int64_t>(Pick(70)) : 1 + Pick(5);
      int k = g_.Range(g_.Index(length), 10 + next_axis_++, v1::RangeArg::REDUCE);
      if (long_one) {
        long_ranges_.push_back({k, length});
      } else {
        reduce_ranges_.push_back(k);
      }
      int body = Expr(dtype, depth - 1);
      if (long_one) {
        long_ranges_.pop_back();
      } else {
        reduce_ranges_.pop_back();
      }
      Node::Op op = std::array{Node::ADD, Node::MUL, Node::MAX}[Pick(3)];
      return g_.Reduce(op, dtype, body, {k});
    }
    switch (Pick(6)) {
      case 0: {  // CAST from another type
        S from = PickScalar();
        return g_.Node(Node::CAST, dtype, {Expr(from, depth - 1)});
      }
      case 1: {  // BITCAST from a type of the same size
        std::vector<S> same;
        for (S s : kScalars) {
          if (Size(s) == Size(dtype) && s != DType::BOOL && dtype != DType::BOOL) same.push_back(s);
        }
        if (same.empty()) return Leaf(dtype);
        return g_.Node(Node::BITCAST, dtype, {Expr(same[Pick(same.size())], depth - 1)});
      }
      case 2: {  // WHERE over a comparison
        S cmp = PickScalar();
        Node::Op op = std::array{Node::CMPLT, Node::CMPNE, Node::CMPEQ}[Pick(3)];
        int cond = g_.Node(op, DType::BOOL, {Expr(cmp, depth - 1), Expr(cmp, depth - 1)});
        return g_.Node(Node::WHERE, dtype, {cond, Expr(dtype, depth - 1), Expr(dtype, depth - 1)});
      }
      case 3:
        if (IsFloatS(dtype)) {
          Node::Op op = std::array{Node::EXP2,       Node::LOG2, Node::SIN,  Node::SQRT,
                                   Node::RECIPROCAL, Node::NEG,  Node::TRUNC}[Pick(7)];
          return g_.Node(op, dtype, {Expr(dtype, depth - 1)});
        }
        return g_.Node(Node::NEG, dtype, {Expr(dtype, depth - 1)});
      default: {
        std::vector<Node::Op> ops = {Node::ADD, Node::MUL, Node::MAX};
        if (dtype != DType::BOOL) ops.push_back(Node::SUB);
        auto add = [&ops](std::initializer_list<Node::Op> more) {
          for (Node::Op op : more) ops.push_back(op);
        };
        if (IsFloatS(dtype)) {
          add({Node::FDIV, Node::POW});
        } else {
          add({Node::AND, Node::OR, Node::XOR});
          if (IsIntS(dtype)) add({Node::IDIV, Node::MOD, Node::SHL, Node::SHR});
        }
        if (dtype == DType::UINT64 && Pick(4) == 0) {
          return g_.Node(Node::THREEFRY, dtype, {Expr(dtype, depth - 1), Expr(dtype, depth - 1)});
        }
        return g_.Node(ops[Pick(ops.size())], dtype,
                       {Expr(dtype, depth - 1), Expr(dtype, depth - 1)});
      }
    }
  }

  std::mt19937 rng_;
  int64_t n_ = kN;
  GraphBuilder g_;
  int out_ = 0, r_ = 0;
  S out_dtype_ = DType::FLOAT32;
  bool long_reductions_ = false;
  std::vector<RandomInput> inputs_;
  std::vector<int> reduce_ranges_;                    // short: index expressions may use them
  std::vector<std::pair<int, int64_t>> long_ranges_;  // long, with their lengths: rows only
  int next_axis_ = 0;
  int shift_ = -1;
};

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_RANDOM_KERNELS_H_
