#!/usr/bin/env bash
# Run here (Debian, network) before the GPU check. It
#  - downloads the Debian packages of the libraries the GPU build needs besides the CUDA toolkit
#    and unpacks them into .gpu-deps/root (the GPU machine has no network and maybe no such
#    packages), and
#  - builds the GPU check's programs here into .gpu-deps/bin, so the GPU machine's time goes to
#    running them; bench/gpu_check.sh builds there only if these do not run there.
# Pass `.gpu-deps` in the device call's carry list.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.gpu-deps/' .git/info/exclude 2>/dev/null || echo '/.gpu-deps/' >> .git/info/exclude
rm -rf .gpu-deps && mkdir -p .gpu-deps/debs .gpu-deps/root .gpu-deps/bin
packages=(libprotobuf-dev libprotobuf32 libprotoc32 protobuf-compiler libabsl-dev libabsl20220623
          libssl-dev libssl3 libgtest-dev libgmock-dev zlib1g-dev
          libhiredis-dev libhiredis0.14)
(cd .gpu-deps/debs && apt-get download "${packages[@]}")
for deb in .gpu-deps/debs/*.deb; do dpkg -x "$deb" .gpu-deps/root; done
rm -rf .gpu-deps/debs .gpu-deps/root/usr/share/doc .gpu-deps/root/usr/share/man

build=build-gpu-prepare
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DUOPD_GPU_CHECK_BUILD=ON > /dev/null
cmake --build "$build" -j "$(nproc)" --target cuda_backend_test uopd-conformance cuda_exec_bench \
  cuda_plan_bench cuda_matmul_bench
cp "$build/tests/cuda_backend_test" "$build/tests/uopd-conformance" "$build/bench/cuda_exec_bench" \
  "$build/bench/cuda_plan_bench" "$build/bench/cuda_matmul_bench" .gpu-deps/bin/
du -sh .gpu-deps
