#!/usr/bin/env bash
# The GPU check, in one call on a machine with an NVIDIA GPU, the CUDA toolkit, CMake and Ninja
# (no internet): configure and build the core and the CUDA backend (UOPD_GPU_CHECK_BUILD: no
# LLVM or gRPC needed), run the CUDA tests and the corpus conformance on CUDA:0, and time the
# CUDA path against device-to-device copies. The table comes last.
#
# Libraries the machine lacks (protobuf, abseil, OpenSSL, GoogleTest) come from .gpu-deps/,
# which bench/gpu_prepare.sh fills on a Debian machine with network access.
#
#   bash bench/gpu_check.sh            (writes logs to $OUT when set)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/uopd-gpu-check}
mkdir -p "$out"
build=build-gpu-check
start=$(date +%s)

deps=$PWD/.gpu-deps/root
if [ -d "$deps" ]; then
  export PATH="$deps/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  prefix=(-DCMAKE_PREFIX_PATH="$deps/usr" -DProtobuf_PROTOC_EXECUTABLE="$deps/usr/bin/protoc"
          -DCMAKE_CXX_FLAGS="-isystem $deps/usr/include" -DCMAKE_C_FLAGS="-isystem $deps/usr/include"
          -DCMAKE_EXE_LINKER_FLAGS="-L$deps/usr/lib/x86_64-linux-gnu -Wl,-rpath-link,$deps/usr/lib/x86_64-linux-gnu")
else
  prefix=()
fi
export PATH="/usr/local/cuda/bin:$PATH"

step() { echo "== $* ($(( $(date +%s) - start )) s)"; }

step "configure"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DUOPD_GPU_CHECK_BUILD=ON "${prefix[@]}" \
  > "$out/configure.log" 2>&1 || { tail -40 "$out/configure.log"; exit 1; }
grep "uopd:" "$out/configure.log"

step "build"
cmake --build "$build" -j "$(nproc)" > "$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -40; exit 1; }

step "nvidia-smi"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

step "CUDA tests (NVRTC for sm_90/sm_80, GPU corpus run)"
"$build/tests/cuda_backend_test" > "$out/cuda_backend_test.log" 2>&1
tests_rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |Skipped|Failure" "$out/cuda_backend_test.log" | head -40

step "conformance on CUDA:0"
"$build/tests/uopd-conformance" --device CUDA:0 tests/corpus > "$out/conformance.log" 2>&1
conformance_rc=$?
grep -E "^FAIL" "$out/conformance.log" | head -30
conformance=$(tail -1 "$out/conformance.log")

step "benchmarks"
"$build/bench/cuda_exec_bench" > "$out/cuda_exec_bench.txt" 2>&1
bench_rc=$?

step "done"
echo
echo "=== uopd GPU check ==="
echo "cuda_backend_test: $( [ $tests_rc -eq 0 ] && echo passed || echo FAILED )"
echo "conformance CUDA:0: $conformance"
cat "$out/cuda_exec_bench.txt"
[ $tests_rc -eq 0 ] && [ $conformance_rc -eq 0 ] && [ $bench_rc -eq 0 ]
