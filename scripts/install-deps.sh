#!/usr/bin/env bash
# Installs every package uopd needs to build, test and serve, from Debian's archive.
# Does nothing (and needs no network) when they are all present already.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev llvm-19-dev clang-19 libclang-rt-19-dev clang-format prometheus-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev libssl-dev libseccomp-dev libhiredis-dev
  redis-server python3-yaml
  python3 python3-venv
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
