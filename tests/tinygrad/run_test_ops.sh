#!/usr/bin/env bash
# tinygrad's test_ops.py (which compares every Tensor op with torch) on tinygrad's CPU device
# and on UOPD, compared as run.sh compares its suites (counts, regressions, exceptions.txt).
# TINYGRAD_VERSION=0.14.0 runs tinygrad 0.14's (test/backend/test_ops.py, from run.sh's
# TINYGRAD_TESTS tree) with exceptions_014.txt.
#
#   run_test_ops.sh SOURCE_DIR BUILD_DIR DAEMON_PATH
#
# test_ops.py needs torch, which CI does not install (PyPI's Linux wheel pulls several GB of CUDA
# libraries). Give it a virtualenv that has torch:
#   TORCH_VENV=/path/to/venv      an existing virtualenv with torch (kept as it is; tinygrad,
#                                 pytest, numpy and the uopd package are installed into it)
#   CREATE_TORCH_VENV=1           make BUILD_DIR/tinygrad-torch-venv once, with `pip install torch`
#                                 (from PyPI, or from PIP_INDEX_URL / PIP_EXTRA_INDEX_URL, e.g.
#                                 https://download.pytorch.org/whl/cpu for the small CPU wheel)
# Without either it exits 77 (CTest's "skipped") saying so. Extra pytest selection: TEST_OPS_K
# (a -k expression) to run part of test_ops.py.
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) daemon=$3
TINYGRAD_VERSION=${TINYGRAD_VERSION:-0.12.0}
if [ "$TINYGRAD_VERSION" = 0.12.0 ]; then
  venv=${TORCH_VENV:-$build/tinygrad-torch-venv}
  suite=test/test_ops.py
else  # 0.14 keeps it in test/backend/, in its test tree (run.sh's TINYGRAD_TESTS)
  venv=${TORCH_VENV:-$build/tinygrad-$TINYGRAD_VERSION-torch-venv}
  suite=test/backend/test_ops.py
fi
if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  if [ "${CREATE_TORCH_VENV:-0}" != 1 ]; then
    echo "run_test_ops.sh: no virtualenv with torch at $venv; set TORCH_VENV=<venv with torch>," \
      "or CREATE_TORCH_VENV=1 to make one (pip install torch)" >&2
    exit 77
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check torch
fi
export TINYGRAD_VERSION TINYGRAD_VENV=$venv TINYGRAD_SUITES=$suite TINYGRAD_PYTEST_ARGS="${TEST_OPS_K:+-k $TEST_OPS_K}"
exec bash "$src/tests/tinygrad/run.sh" "$src" "$build" "$daemon"
