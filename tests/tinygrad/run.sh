#!/usr/bin/env bash
# Runs tinygrad's own tests (0.12 or 0.14; and, on 0.12, tests/tinygrad/test_uopd_backend.py) on tinygrad's CPU device
# and on the UOPD device (a real daemon on a free loopback port, through the `uopd` package's
# tinygrad backend), and fails when a test that passes on CPU does not pass on UOPD, unless
# tests/tinygrad/exceptions.txt lists it with a reason. CTest runs it as `tinygrad_backend`.
#
#   run.sh SOURCE_DIR BUILD_DIR DAEMON_PATH
#
# Environment:
#   TINYGRAD_VERSION 0.12.0 (default) or 0.14.0. tinygrad 0.14's sdist holds only test/test_tiny.py:
#                    its other suites come from TINYGRAD_TESTS (a checkout of tinygrad's test tree
#                    at 0.14; default SOURCE_DIR/../shared/tinygrad-tests when it exists), and
#                    without one only test_tiny runs, said so in the output
#   TINYGRAD_SUITES  tinygrad test files to compare, relative to the sdist (default: test_tiny.py and
#                    the sdist's other suites that need neither torch nor files the sdist lacks,
#                    listed below); "-" for none
#   TINYGRAD_PYTEST_ARGS  more pytest arguments for the tinygrad suites (e.g. "-k conv")
#   TINYGRAD_VENV    use this virtualenv instead (kept: the test dependencies and the package are
#                    installed into it; run_test_ops.sh passes one with torch)
#   TINYGRAD_SRC     an unpacked tinygrad-0.12.0 sdist (default: BUILD_DIR/tinygrad-src-0.12.0/tinygrad-0.12.0,
#                    fetched once with `pip download --no-binary :all: tinygrad==0.12.0`)
#   KEEP_RESULTS     a folder to leave the junit XML reports and the daemon's log in
#   COMPILE_CACHE    a folder for both devices' compiled-kernel caches (the daemon's --cache_dir and
#                    tinygrad's CACHEDB), kept: a second run with the same folder is a warm run.
#                    Default: a fresh one per run (both devices compile cold)
#
# The virtualenv BUILD_DIR/tinygrad-test-venv (tinygrad==0.12.0, pytest, numpy and the package's
# dependencies, from PyPI) is made once and kept while pyproject.toml and the list below stay the
# same; the package itself is reinstalled, offline, from a copy of client/python on every run.
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) daemon=$3
here=$src/tests/tinygrad
TINYGRAD_VERSION=${TINYGRAD_VERSION:-0.12.0}
pip_install() { "$@" -q --disable-pip-version-check; }

if [ "$TINYGRAD_VERSION" = 0.12.0 ]; then
  venv=${TINYGRAD_VENV:-$build/tinygrad-test-venv}
  exceptions=$here/exceptions.txt
else
  venv=${TINYGRAD_VENV:-$build/tinygrad-$TINYGRAD_VERSION-test-venv}
  minor=${TINYGRAD_VERSION%.*}
  exceptions=$here/exceptions_${minor//./}.txt  # 0.14.0 -> exceptions_014.txt
fi
deps="tinygrad==$TINYGRAD_VERSION pytest hypothesis numpy setuptools>=61 wheel"
stamp="$(sha256sum "$src/client/python/pyproject.toml" | cut -c1-64) $deps"
# One copy per version: CTest runs the 0.12 and 0.14 comparisons side by side.
copy=$build/pyclient-tinygrad-$TINYGRAD_VERSION
rm -rf "$copy" && cp -r "$src/client/python" "$copy" && rm -rf "$copy/build" "$copy"/*.egg-info
if [ -n "${TINYGRAD_VENV:-}" ]; then
  if [ "$(cat "$venv/stamp" 2>/dev/null)" != "$stamp" ]; then
    # shellcheck disable=SC2086
    pip_install "$venv/bin/python" -m pip install "$copy[tinygrad]" $deps
    echo "$stamp" >"$venv/stamp"
  fi
elif [ "$(cat "$venv/stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086
  pip_install "$venv/bin/python" -m pip install "$copy[tinygrad]" $deps
  echo "$stamp" >"$venv/stamp"
fi
pip_install "$venv/bin/python" -m pip install --no-deps --no-build-isolation --no-index \
  --force-reinstall "$copy"
rm -rf "$copy/build"
py=$venv/bin/python

# A folder per version: the 0.12 and 0.14 comparisons run side by side.
srcdir=$build/tinygrad-src-$TINYGRAD_VERSION
tgsrc=${TINYGRAD_SRC:-$srcdir/tinygrad-$TINYGRAD_VERSION}
tgtests=${TINYGRAD_TESTS:-$src/../shared/tinygrad-tests}
if [ "$TINYGRAD_VERSION" != 0.12.0 ] && [ -f "$tgtests/test/test_tiny.py" ]; then
  tgsrc=$(cd "$tgtests" && pwd)
elif [ ! -f "$tgsrc/test/test_tiny.py" ]; then
  rm -rf "$srcdir" && mkdir -p "$srcdir"
  pip_install "$py" -m pip download --no-deps --no-binary :all: "tinygrad==$TINYGRAD_VERSION" \
    -d "$srcdir"
  tar -xzf "$srcdir/tinygrad-$TINYGRAD_VERSION.tar.gz" -C "$srcdir"
  tgsrc=$srcdir/tinygrad-$TINYGRAD_VERSION
fi

work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "${KEEP_RESULTS:-}" ]; then mkdir -p "$KEEP_RESULTS" && cp "$work"/*.xml "$work"/daemon.log "$KEEP_RESULTS"/ 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
# A copy of the daemon: the build folder's binary may be replaced while the tests run.
for _ in $(seq 1 30); do [ -x "$daemon" ] && cp "$daemon" "$work/uopd" && break; sleep 2; done
cache=${COMPILE_CACHE:-$work/cache}
mkdir -p "$cache"
export CACHEDB=$cache/tinygrad-cache.db
# On a unix socket, as a daemon on the tinygrad user's own machine would be: JIT replays then go
# over its local socket (RunPlan without gRPC).
"$work/uopd" --listen="unix:$work/uopd.sock" --metrics= --cache_dir="$cache/uopd" --port_file="$work/port" \
  --log_level=warning --compile_workers=2 >"$work/daemon.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "the daemon did not start:"; cat "$work/daemon.log"; exit 1; }
address=$(head -n 1 "$work/port")
echo "daemon at $address"

# DERANDOMIZE_CI: tinygrad's hypothesis tests (test_dtype_alu) draw the same examples on both devices.
export PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 DERANDOMIZE_CI=1
unset DEV UOPD UOPD_ADDRESS UOPD_DEVICE CPU PYTHON NULL 2>/dev/null || true
# run_suite NAME DIR FILE: pytest FILE in DIR on CPU, then on UOPD; junit XML into $work.
run_suite() {
  local name=$1 dir=$2 file=$3 t0 t1 t2
  shift 3
  t0=$(date +%s.%N)
  (cd "$dir" && DEV=CPU EXPECT_DEVICE=CPU timeout 1800 "$py" -m pytest -q -p no:cacheprovider \
    -o addopts= --junitxml="$work/$name.cpu.xml" "$@" "$file" >"$work/$name.cpu.log" 2>&1) || true
  t1=$(date +%s.%N)
  (cd "$dir" && UOPD=$address EXPECT_DEVICE=UOPD timeout 1800 "$py" -m uopd.tinygrad -m pytest -q \
    -p no:cacheprovider -o addopts= --junitxml="$work/$name.uopd.xml" "$@" "$file" >"$work/$name.uopd.log" 2>&1) || true
  t2=$(date +%s.%N)
  tail -n 1 "$work/$name.cpu.log" | sed "s/^/$name CPU:  /"
  tail -n 1 "$work/$name.uopd.log" | sed "s/^/$name UOPD: /"
  awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$name" 'BEGIN { printf "%s wall: CPU %.2fs, UOPD %.2fs\n", n, b-a, c-b }'
  reports+=("$name" "$work/$name.cpu.xml" "$work/$name.uopd.xml")
}

reports=()
default_suites="test/test_tiny.py test/test_custom_kernel.py test/test_assign.py test/test_setitem.py
  test/test_jit_cases.py test/test_jit_footguns.py test/test_tensor_variable.py test/test_fusion_op.py
  test/test_to_numpy.py test/test_pickle.py test/test_softmax_fusion.py test/test_gc.py
  test/test_outerworld.py test/test_outerworld_range.py test/test_memory_planner.py test/test_zero_copy.py
  test/test_kernel_cache.py test/test_compile_failures.py test/test_stunning.py test/test_rangeify.py
  test/test_uops_stats.py test/test_dtype_alu.py test/test_arange.py::TestArange"
if [ "$TINYGRAD_VERSION" != 0.12.0 ]; then
  if [ -f "$tgsrc/test/unit/test_assign.py" ]; then
    default_suites="test/test_tiny.py test/backend/test_setitem.py test/backend/test_tensor_variable.py
      test/backend/test_arange.py test/backend/test_softmax_fusion.py test/unit/test_assign.py
      test/unit/test_jit_cases.py test/unit/test_jit_footguns.py test/unit/test_conv.py
      test/unit/test_dtype_weak.py test/unit/test_masked_tensor.py test/unit/test_indexing.py
      test/unit/test_getitem_ops.py test/unit/test_symbolic_tensor.py test/backend/test_custom_kernel.py
      test/backend/test_uops.py test/backend/test_jit.py test/backend/test_const_folding.py
      test/backend/test_subbuffer.py test/unit/test_call.py test/unit/test_function.py
      test/unit/test_invalid_tensor.py test/unit/test_gradient.py test/unit/test_setitem_schedule.py
      test/unit/test_callify.py test/unit/test_rearrange_einops.py test/unit/test_winograd.py
      test/unit/test_tensor_data.py test/unit/test_realize_is_realize.py test/unit/test_schedule_cache.py
      test/unit/test_allreduce.py test/backend/test_pickle.py test/backend/test_opt_gemm.py
      test/backend/test_stunning.py test/backend/test_to_numpy.py test/backend/test_symbolic_jit.py
      test/backend/test_rangeify.py test/backend/test_schedule.py test/opt/test_kernel_opts.py
      test/unit/test_jit.py test/device/test_validate_with_cpu.py"
  else
    echo "tinygrad $TINYGRAD_VERSION: no test tree (TINYGRAD_TESTS); its sdist has test/test_tiny.py only, so only that runs"
    default_suites="test/test_tiny.py"
  fi
fi
suites=${TINYGRAD_SUITES:-$default_suites}
if [ "$suites" != "-" ]; then
  # shellcheck disable=SC2086
  # A suite may name one class of its file (FILE::Class); it keeps its file's name.
  for f in $suites; do run_suite "tinygrad:$(basename "${f%%::*}" .py)" "$tgsrc" "$f" ${TINYGRAD_PYTEST_ARGS:-}; done
fi
# uopd's own backend tests, one file per tinygrad version (their interfaces differ).
if [ "$TINYGRAD_VERSION" = 0.12.0 ]; then
  run_suite "uopd:test_uopd_backend" "$here" test_uopd_backend.py
else
  run_suite "uopd:test_uopd_backend_014" "$here" test_uopd_backend_014.py
fi
status=0
"$py" "$here/compare.py" --exceptions "$exceptions" "${reports[@]}" || status=1

# Selection without code changes: the .pth hook (installed into this virtualenv for the check).
program='from tinygrad import Device, Tensor; assert Device.DEFAULT == "UOPD", Device.DEFAULT; print((Tensor([1, 2]) + 1).tolist())'
"$py" -m uopd.tinygrad --install-pth >/dev/null
if out=$(cd "$work" && UOPD=$address "$py" -c "$program" 2>&1) && [ "$out" = "[2, 3]" ]; then
  echo "selection by UOPD=$address through the .pth hook: ok"
else
  echo "selection by UOPD=$address through the .pth hook FAILED: $out"; status=1
fi
if out=$(cd "$work" && UOPD_ADDRESS=$address DEV=UOPD "$py" -c "$program" 2>&1) && [ "$out" = "[2, 3]" ]; then
  echo "selection by DEV=UOPD (UOPD_ADDRESS=$address) through the .pth hook: ok"
else
  echo "selection by DEV=UOPD through the .pth hook FAILED: $out"; status=1
fi
"$py" -m uopd.tinygrad --uninstall-pth >/dev/null
if out=$(cd "$work" && "$py" -c 'import sys, tinygrad; print("uopd" in sys.modules)' 2>&1) && [ "$out" = "False" ]; then
  echo "without UOPD/DEV nothing of uopd is imported: ok"
else
  echo "without UOPD/DEV: unexpected $out"; status=1
fi
exit $status
