#!/usr/bin/env bash
# Sets up a virtualenv (once per build folder) with grpcio, grpcio-tools and pytest from PyPI,
# generates the Python stubs from proto/, installs the client package, and runs the tests.
#   run.sh SOURCE_DIR BUILD_DIR DAEMON_PATH
set -euo pipefail
src=$1 build=$2 daemon=$3
venv=$build/pyvenv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import grpc_tools, pytest" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "grpcio>=1.51" "grpcio-tools>=1.51" pytest
fi
stubs=$build/pystubs
rm -rf "$stubs" && mkdir -p "$stubs"
"$venv/bin/python" -m grpc_tools.protoc -I "$src/proto" --python_out="$stubs" --grpc_python_out="$stubs" \
  "$src"/proto/uopd/v1/*.proto
touch "$stubs/uopd/__init__.py" "$stubs/uopd/v1/__init__.py"
# Install from a copy: building in place would leave setuptools' build/ in the source tree.
rm -rf "$build/pyclient" && cp -r "$src/client/python" "$build/pyclient"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$build/pyclient"
export PYTHONPATH=$stubs UOPD_DAEMON=$daemon UOPD_CORPUS_DIR=$src/tests/corpus
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python"
