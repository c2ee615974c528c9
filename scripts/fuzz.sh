#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-19, ASan + UBSan) in build-fuzz/ and runs each for a
# bounded time, seeded from the corpus. A crash leaves its input in build-fuzz/crashes/ and fails
# the run; turn each into a regression input under tests/fuzz/regressions/.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 60; CI runs a shorter bound through CTest)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build="${UOPD_FUZZ_BUILD_DIR:-build-fuzz}"
if ! command -v clang++-19 >/dev/null || [ ! -e /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  echo "fuzz: SKIPPED: clang-19 with libFuzzer (libclang-rt-19-dev) is not installed"
  exit 0
fi
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUOPD_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target kernel_ast_fuzzer buffer_range_fuzzer make_fuzz_seeds
mkdir -p "$build/seeds" "$build/corpus/kernel_ast" "$build/corpus/buffer_range" "$build/crashes"
"$build/tests/fuzz/make_fuzz_seeds" "$build/seeds" tests/corpus/cases tests/corpus/plans tests/corpus14/cases
status=0
for target in kernel_ast buffer_range; do
  seeds=()
  [ "$target" = kernel_ast ] && seeds=("$build/seeds" tests/fuzz/regressions)
  echo "fuzz: $target for ${seconds}s"
  if ! "$build/tests/fuzz/${target}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/crashes/${target}-" \
      "$build/corpus/$target" "${seeds[@]}" 2>"$build/$target.log"; then
    tail -50 "$build/$target.log"
    echo "fuzz: $target FAILED; the input is in $build/crashes/"
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/$target.log" | sed "s/^/fuzz: $target /"
  fi
done
exit $status
