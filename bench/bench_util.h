// Small timing helpers shared by the benchmarks: repeated wall-clock samples and percentiles.
#ifndef UOPD_BENCH_BENCH_UTIL_H_
#define UOPD_BENCH_BENCH_UTIL_H_

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace uopd::bench {

inline double SecondsOf(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `fn` `warmup` times untimed, then `reps` timed; returns the samples in seconds.
inline std::vector<double> Sample(int warmup, int reps, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> samples;
  for (int i = 0; i < reps; ++i) samples.push_back(SecondsOf(fn));
  return samples;
}

inline double Percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  size_t index = static_cast<size_t>(p * (samples.size() - 1) + 0.5);
  return samples[std::min(index, samples.size() - 1)];
}

}  // namespace uopd::bench

#endif  // UOPD_BENCH_BENCH_UTIL_H_
