"""Moved: the tinygrad UOp <-> IR v1 encoder now lives in the `uopd` package as `uopd.tinygrad.ir`.

This module re-exports it for the bench scripts. It imports the installed package if there is one,
else the copy in this checkout (client/python), so the scripts keep working without installing it.
"""
import pathlib
import sys

try:
    import uopd.tinygrad.ir  # noqa: F401
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "client" / "python"))
from uopd.tinygrad.ir import *  # noqa: E402,F401,F403
from uopd.tinygrad.ir import (IRError, IR_OPS, KERNEL_AST_OPS, SCALAR_NAMES,  # noqa: E402,F401
                              SCALARS_BY_NAME, decode_graph, encode_graph, scalar_name, toposort)
