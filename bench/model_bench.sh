#!/usr/bin/env bash
# The whole-model benchmark in one command (issue 21): makes the virtualenv (tinygrad 0.12.0, numpy,
# PyTorch and this checkout's uopd package, from PyPI) when missing, builds the daemon, and runs
# bench/model_bench.py: three models through UOPD, tinygrad's CPU device and PyTorch eager, side by
# side. Arguments go to model_bench.py (--models llama,resnet,train, --runs N, --no-torch,
# --tinygrad-opts, --export DIR, --json FILE).
#
#   bash bench/model_bench.sh [ARGS...]
#
# MODEL_VENV=path uses an existing virtualenv instead (it gets the uopd package); PyPI's Linux torch
# wheel pulls several GB of CUDA libraries, so with --no-torch the venv is made without it.
# TINYGRAD_VERSION=0.14.0 benchmarks tinygrad 0.14 (in build/model-venv-0.14.0) instead of 0.12.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${TINYGRAD_VERSION:-0.12.0}
default_venv=build/model-venv
[ "$version" = 0.12.0 ] || default_venv=build/model-venv-$version
venv=${MODEL_VENV:-$default_venv}
want="tinygrad==$version numpy"
case " $* " in *" --no-torch "*) ;; *) want="$want torch" ;; esac
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
venv=$(cd "$venv" && pwd)  # the workers run from bench/: a relative path would not reach it
# shellcheck disable=SC2086
if ! "$venv/bin/python" -c "import tinygrad, numpy$(case "$want" in *torch*) echo ", torch";; esac)" 2>/dev/null; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check ./client/python
cmake --build build --target uopd > /dev/null
exec "$venv/bin/python" bench/model_bench.py --python "$venv/bin/python" "$@"
