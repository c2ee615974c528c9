#!/usr/bin/env bash
# The GPU check, in one call on a machine with an NVIDIA GPU, the CUDA toolkit, CMake and Ninja
# (no internet): run the CUDA tests (the whole corpus and randomized kernels on CUDA:0 against
# the reference interpreter), the corpus conformance on CUDA:0, and time the CUDA path against
# device-to-device copies and bare driver launches. The table comes last.
#
# bench/gpu_prepare.sh, run beforehand on a Debian machine with network access, fills
# .gpu-deps/: the libraries the GPU machine lacks (protobuf, abseil, OpenSSL, GoogleTest) and
# the programs built from this checkout. They are used as they are when they run here;
# otherwise this script configures and builds the core and the CUDA backend here
# (UOPD_GPU_CHECK_BUILD: no LLVM or gRPC needed).
#
# A device call runs at most 10 minutes, so the whole check keeps to UOPD_GPU_CHECK_SECONDS
# (default 540): each step gets at most its own cap and what is left, the tests and the
# benchmarks (the targets still unmeasured) before the conformance runs, and a step with too
# little time left is skipped, saying so.
#
#   bash bench/gpu_check.sh            (writes logs to $OUT when set)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/uopd-gpu-check}
mkdir -p "$out"
start=$(date +%s)
budget=${UOPD_GPU_CHECK_SECONDS:-540}
step() { echo "== $* ($(( $(date +%s) - start )) s)"; }
# Seconds a step may take: its cap, or what is left of the budget less 15 s for the summary.
allow() {
  local left=$(( budget - ($(date +%s) - start) - 15 ))
  echo $(( left < $1 ? left : $1 ))
}
# Runs "$@" with at most `allow CAP` seconds (CAP first); 124 when skipped or timed out.
timed() {
  local seconds
  seconds=$(allow "$1"); shift
  if [ "$seconds" -lt 10 ]; then echo "skipped: the check's time is spent"; return 124; fi
  timeout "$seconds" "$@"
}

deps=$PWD/.gpu-deps/root
cuda_libs=/usr/local/cuda/lib64:/usr/local/cuda/lib:/usr/local/cuda/targets/x86_64-linux/lib
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"
export UOPD_CORPUS_DIR=$PWD/tests/corpus

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
ldconfig -p | grep -m2 "libcuda.so" || echo "libcuda.so.1 is not in the loader cache"

bin=.gpu-deps/bin
if [ -x "$bin/cuda_backend_test" ] && "$bin/cuda_backend_test" --gtest_list_tests > /dev/null 2>&1; then
  step "using the programs gpu_prepare.sh built"
  tests=$bin/cuda_backend_test conformance=$bin/uopd-conformance
  exec_bench=$bin/cuda_exec_bench plan_bench=$bin/cuda_plan_bench matmul_bench=$bin/cuda_matmul_bench
else
  build=build-gpu-check
  if [ -d "$deps" ]; then
    prefix=(-DCMAKE_PREFIX_PATH="$deps/usr" -DProtobuf_PROTOC_EXECUTABLE="$deps/usr/bin/protoc"
            -DCMAKE_CXX_FLAGS="-isystem $deps/usr/include" -DCMAKE_C_FLAGS="-isystem $deps/usr/include"
            -DCMAKE_EXE_LINKER_FLAGS="-L$deps/usr/lib/x86_64-linux-gnu -Wl,-rpath-link,$deps/usr/lib/x86_64-linux-gnu")
    export PATH="$deps/usr/bin:$PATH"
  else
    prefix=()
  fi
  step "configure (prepared programs missing or not runnable here)"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DUOPD_GPU_CHECK_BUILD=ON "${prefix[@]}" \
    > "$out/configure.log" 2>&1 || { tail -40 "$out/configure.log"; exit 1; }
  grep "uopd:" "$out/configure.log"
  step "build"
  cmake --build "$build" -j "$(nproc)" > "$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -40; exit 1; }
  tests=$build/tests/cuda_backend_test conformance=$build/tests/uopd-conformance
  exec_bench=$build/bench/cuda_exec_bench plan_bench=$build/bench/cuda_plan_bench
  matmul_bench=$build/bench/cuda_matmul_bench
fi

# The tests that need a GPU; those that need only NVRTC run in CTest on every machine, and the
# corpus on the GPU runs once, as the conformance below.
step "CUDA tests on the GPU (random kernels against the reference, plans on streams, timed heuristics)"
gpu_tests='CudaGpuTest.*:-CudaGpuTest.RunsTheCorpusOnTheGpu'
timed 200 "$tests" --gtest_filter="$gpu_tests" > "$out/cuda_backend_test.log" 2>&1
tests_rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|Skipped|Failure|seed|rror| us$|^skipped" "$out/cuda_backend_test.log" | head -80

step "benchmarks"
timed 100 "$exec_bench" > "$out/cuda_exec_bench.txt" 2>&1
exec_rc=$?
timed 100 "$matmul_bench" > "$out/cuda_matmul_bench.txt" 2>&1
matmul_rc=$?
timed 60 "$plan_bench" > "$out/cuda_plan_bench.txt" 2>&1
plan_rc=$?

step "conformance on CUDA:0"
conformance_bin=$conformance
timed 120 "$conformance" --device CUDA:0 tests/corpus > "$out/conformance.log" 2>&1
conformance_rc=$?
grep -E "^FAIL" "$out/conformance.log" | head -30
conformance=$(tail -1 "$out/conformance.log")

step "conformance on CUDA:0, every kernel with a random valid GPU opt list (LOCAL, GROUP, ...)"
timed 240 "$conformance_bin" --device CUDA:0 --random-opts 1 tests/corpus > "$out/conformance_random_opts.log" 2>&1
random_opts_rc=$?
grep -E "^FAIL|^  opts" "$out/conformance_random_opts.log" | head -30
random_opts=$(tail -1 "$out/conformance_random_opts.log")

step "done"
echo
echo "=== uopd GPU check ==="
echo "cuda_backend_test: $( [ $tests_rc -eq 0 ] && echo passed || echo "FAILED ($tests_rc)" )"
echo "conformance CUDA:0: $conformance"
echo "conformance CUDA:0, random opt lists: $random_opts"
cat "$out/cuda_exec_bench.txt" "$out/cuda_plan_bench.txt" "$out/cuda_matmul_bench.txt"
[ $tests_rc -eq 0 ] && [ $conformance_rc -eq 0 ] && [ $random_opts_rc -eq 0 ] && [ $exec_rc -eq 0 ] && [ $plan_rc -eq 0 ] && [ $matmul_rc -eq 0 ]
