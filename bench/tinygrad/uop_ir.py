"""Moved: the tinygrad UOp <-> IR v1 encoder now lives in the `uopd` package as `uopd.tinygrad.ir`.

This module re-exports it for the bench scripts: the installed package's when there is one, else
the file in this checkout (client/python/uopd/tinygrad/ir.py, loaded on its own: it needs only
tinygrad, not grpc), so the scripts keep working in a tinygrad-only virtualenv.
"""
import importlib.util
import pathlib
import sys

try:
    from uopd.tinygrad import ir as _ir
except ImportError:
    _path = pathlib.Path(__file__).resolve().parents[2] / "client/python/uopd/tinygrad/ir.py"
    _spec = importlib.util.spec_from_file_location("_uopd_tinygrad_ir", _path)
    assert _spec is not None and _spec.loader is not None
    _ir = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _ir
    _spec.loader.exec_module(_ir)

globals().update({k: v for k, v in vars(_ir).items() if not k.startswith("__")})
