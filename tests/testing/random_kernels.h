// Test helper: a generator of random well-formed elementwise kernels (random ops, dtypes, casts,
// bitcasts, selects and masked loads) for robustness tests of the backends.
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
         s == DType::FLOAT64 || s == DType::FP8E4M3 || s == DType::FP8E5M2;
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

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  v1::Graph Make(std::vector<std::pair<S, int>>* inputs, S* out_dtype) {
    out_dtype_ = kScalars[Pick(std::size(kScalars))];
    out_ = g_.Buffer(0, out_dtype_, kN);
    r_ = g_.Range(g_.Index(kN), 0);
    int value = Expr(out_dtype_, 4);
    *inputs = inputs_;
    *out_dtype = out_dtype_;
    return g_.Sink({g_.End(g_.Store(g_.Target(out_, r_), value), {r_})});
  }

 private:
  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  int Input(S dtype) {
    for (const auto& [s, node] : inputs_) {
      if (s == dtype) return node;
    }
    int node = g_.Buffer(static_cast<int>(inputs_.size()) + 1, dtype, kN);
    inputs_.push_back({dtype, node});
    return node;
  }

  int Leaf(S dtype) {
    switch (Pick(3)) {
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
    switch (Pick(6)) {
      case 0: {  // CAST from another type
        S from = kScalars[Pick(std::size(kScalars))];
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
        S cmp = kScalars[Pick(std::size(kScalars))];
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
  GraphBuilder g_;
  int out_ = 0, r_ = 0;
  S out_dtype_ = DType::FLOAT32;
  std::vector<std::pair<S, int>> inputs_;
};

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_RANDOM_KERNELS_H_
