#!/usr/bin/env bash
# The optimizer benchmark in one command: makes the tinygrad 0.12.0 virtualenv (PyPI) and the
# workload plans when missing, builds the benchmark, and runs it side by side with tinygrad's
# CPU device, numpy and memcpy. Extra arguments go to optimizer_bench (--search_budget S,
# --only matmul,conv2d, --runs N).
#
#   bash bench/optimizer_bench.sh [ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/tinygrad-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import tinygrad, numpy" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet tinygrad==0.12.0 numpy
fi
if [ ! -f build/workloads/full/matmul.json ]; then
  "$venv/bin/python" bench/tinygrad/export_workloads.py --size full --out build/workloads/full
fi
cmake --build build --target optimizer_bench > /dev/null
exec build/bench/optimizer_bench --workloads build/workloads/full --python "$venv/bin/python" "$@"
