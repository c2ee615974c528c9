#!/usr/bin/env bash
# Run here (Debian, network) before the GPU check: downloads the Debian packages of the
# libraries the GPU build needs besides the CUDA toolkit, and unpacks them into .gpu-deps/root
# for bench/gpu_check.sh (the GPU machine has no network and maybe no such packages).
# Pass `.gpu-deps` in the device call's carry list.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.gpu-deps/' .git/info/exclude 2>/dev/null || echo '/.gpu-deps/' >> .git/info/exclude
rm -rf .gpu-deps && mkdir -p .gpu-deps/debs .gpu-deps/root
packages=(libprotobuf-dev libprotobuf32 libprotoc32 protobuf-compiler libabsl-dev libabsl20220623
          libssl-dev libssl3 libgtest-dev libgmock-dev zlib1g-dev)
(cd .gpu-deps/debs && apt-get download "${packages[@]}")
for deb in .gpu-deps/debs/*.deb; do dpkg -x "$deb" .gpu-deps/root; done
rm -rf .gpu-deps/debs .gpu-deps/root/usr/share/doc .gpu-deps/root/usr/share/man
du -sh .gpu-deps
