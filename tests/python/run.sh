#!/usr/bin/env bash
# Installs the `uopd` Python package (client/python) into a virtualenv and runs its tests against
# the daemon. CTest runs it as `python_client`.
#   run.sh SOURCE_DIR BUILD_DIR DAEMON_PATH
#
# Two virtualenvs are made once per build folder (from PyPI) and kept while what they were made
# from stays the same: BUILD_DIR/pyvenv, the package's dependencies as pyproject.toml allows them
# (the newest), with pytest, numpy, ml_dtypes and mypy; BUILD_DIR/pyvenv-protoc, the grpcio-tools release
# that client/python/regen_proto.sh pins, which the staleness test of the generated modules runs.
# Each run then reinstalls the package itself, offline, from a copy of client/python.
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) daemon=$3
pip_install() { "$@" -q --disable-pip-version-check; }

tools_version=$(sed -n 's/^GRPCIO_TOOLS_VERSION=//p' "$src/client/python/regen_proto.sh")
protoc_venv=$build/pyvenv-protoc
if [ "$(cat "$protoc_venv/stamp" 2>/dev/null)" != "$tools_version" ]; then
  rm -rf "$protoc_venv"
  python3 -m venv "$protoc_venv"
  pip_install "$protoc_venv/bin/python" -m pip install "grpcio-tools==$tools_version"
  echo "$tools_version" >"$protoc_venv/stamp"
fi

venv=$build/pyvenv
test_deps="pytest numpy ml_dtypes mypy grpc-stubs types-protobuf setuptools>=61 wheel"
stamp="$(sha256sum "$src/client/python/pyproject.toml" | cut -c1-64) $test_deps"
# Install from a copy: building in place would leave setuptools' build/ in the source tree.
rm -rf "$build/pystubs"  # what the client needed before it shipped its generated modules
rm -rf "$build/pyclient" && cp -r "$src/client/python" "$build/pyclient"
rm -rf "$build/pyclient/build" "$build/pyclient"/*.egg-info
if [ "$(cat "$venv/stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  # The package with its declared dependencies: proves pyproject.toml's ranges resolve.
  # shellcheck disable=SC2086
  pip_install "$venv/bin/python" -m pip install "$build/pyclient" $test_deps
  echo "$stamp" >"$venv/stamp"
fi
pip_install "$venv/bin/python" -m pip install --no-deps --no-build-isolation --no-index \
  --force-reinstall "$build/pyclient"
rm -rf "$build/pyclient/build"

export UOPD_DAEMON=$daemon UOPD_CORPUS_DIR=$src/tests/corpus UOPD_SOURCE_DIR=$src \
  UOPD_PROTOC_PYTHON=$protoc_venv/bin/python UOPD_MYPY_CACHE=$venv/mypy-cache
# From the build folder, so nothing but the installed package is importable as `uopd`.
cd "$build"
exec "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$src/tests/python"
