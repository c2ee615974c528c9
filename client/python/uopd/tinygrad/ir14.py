# mypy: ignore-errors
# (tinygrad is an optional dependency without type information that mypy --strict accepts.)
"""tinygrad 0.14 kernel AST (UOp graph) -> uopd IR v1 Graph JSON in the TINYGRAD_0_14 dialect.

tinygrad 0.14 spells kernels in its own vocabulary (PARAM, CDIV/CMOD, FLOORDIV/FLOORMOD, weak
types, STACK, REDUCE (op, n)); the server rewrites them into the IR (docs/IR.md, "The tinygrad
0.14 dialect"), so this encoder writes what tinygrad holds, node for node, and refuses what the
wire cannot carry with an IRError naming the node.
"""
from __future__ import annotations

import math
from typing import Any

from tinygrad.dtype import AddrSpace, DType, dtypes
from tinygrad.schedule.multi import multi_pm
from tinygrad.schedule.rangeify import pm_mops
from tinygrad.uop.movement import mop_cleanup
from tinygrad.uop.ops import GroupOp, UOp, Ops, AxisType, KernelInfo, ParamArg, graph_rewrite

DIALECT = "TINYGRAD_0_14"


class IRError(ValueError):
    pass


# What the 0.14 dialect carries: the kernel AST ops of tinygrad 0.14 the proto names.
OPS = frozenset("""
SINK PARAM CONST RANGE END INDEX LOAD STORE REDUCE AFTER GROUP WHERE CAST BITCAST STACK
EXP2 LOG2 SIN SQRT RECIPROCAL NEG TRUNC
ADD SUB MUL FDIV CDIV CMOD FLOORDIV FLOORMOD MAX POW SHL SHR AND OR XOR CMPLT CMPNE CMPEQ
MULACC THREEFRY
""".split())


def _scalar_names() -> dict[DType, str]:
    names = {
        "void": "VOID", "index": "INDEX", "weakint": "WEAKINT", "weakfloat": "WEAKFLOAT", "bool": "BOOL",
        "int8": "INT8", "uint8": "UINT8", "int16": "INT16", "uint16": "UINT16", "int32": "INT32",
        "uint32": "UINT32", "int64": "INT64", "uint64": "UINT64", "fp8e4m3": "FP8E4M3", "fp8e5m2": "FP8E5M2",
        "fp8e4m3fnuz": "FP8E4M3FNUZ", "fp8e5m2fnuz": "FP8E5M2FNUZ", "float16": "FLOAT16",
        "bfloat16": "BFLOAT16", "float32": "FLOAT32", "float64": "FLOAT64",
    }
    return {getattr(dtypes, k): v for k, v in names.items() if hasattr(dtypes, k)}


SCALAR_NAMES = _scalar_names()
INT64_MAX = 2**63 - 1


def encode_dtype(dt: DType) -> dict[str, Any]:
    # 0.14's DType is a scalar type (vectors are STACKs, buffers are PARAMs).
    name = SCALAR_NAMES.get(dt)
    if name is None:
        raise IRError(f"dtype {dt!r} has no IR spelling")
    return {"scalar": name}


# _int and _float spell values as ir.py's _i64 and _f64 do: each encoder stays one file that
# needs only tinygrad (bench scripts and capture_014.py load it by path, without grpc).
def _int(v: int) -> dict[str, Any]:
    v = int(v)
    if v > INT64_MAX:
        if v >= 2**64:
            raise IRError(f"integer {v} does not fit 64 bits")
        return {"u64": str(v)}
    if v < -2**63:
        raise IRError(f"integer {v} does not fit 64 bits")
    return {"i64": str(v)}


def _float(v: float) -> dict[str, Any]:
    v = float(v)
    if math.isnan(v):
        return {"f64": "NaN"}
    if math.isinf(v):
        return {"f64": "Infinity" if v > 0 else "-Infinity"}
    return {"f64": v}


def _const_arg(u: UOp) -> dict[str, Any]:
    a = u.arg
    if type(a).__name__ == "InvalidType":
        return {"invalid": True}
    if type(a).__name__ == "ConstFloat":  # 0.14 wraps float literals (-0.0 and NaN keep their bits)
        a = float(a)
    if isinstance(a, bool):
        return {"b": a}
    if isinstance(a, float):
        return _float(a)
    if isinstance(a, int):
        if dtypes.is_float(u.dtype):
            return _float(a)
        if not -2**63 <= a < 2**64:  # unbounded Python ints mean their value modulo 2**64
            v = a % 2**64
            a = v - 2**64 if v > INT64_MAX and not dtypes.is_unsigned(u.dtype) else v
        return _int(a)
    raise IRError(f"CONST arg {a!r} ({type(a).__name__}) has no IR spelling")


def _param_arg(a: Any) -> dict[str, Any]:
    p: dict[str, Any] = {"slot": str(int(a.slot))}
    if a.name is not None:
        p["name"] = a.name
    if a.vmin_vmax is not None:
        p["hasBounds"] = True
        p["min"], p["max"] = str(int(a.vmin_vmax[0])), str(int(a.vmin_vmax[1]))
    if a.multiple_of is not None:
        p["multipleOf"] = str(int(a.multiple_of))
    if a.addrspace is AddrSpace.ALU:
        p["isValue"] = True
    elif a.addrspace is not None and a.addrspace is not AddrSpace.GLOBAL:
        p["addrspace"] = a.addrspace.name
    return p


def _is_register(u: UOp) -> bool:
    """A register placeholder (`UOp.placeholder(..., addrspace=AddrSpace.REG)`: a BUFFER), which
    the dialect spells as a PARAM of address space REG."""
    return u.op is Ops.BUFFER and isinstance(u.arg, ParamArg) and u.arg.addrspace is AddrSpace.REG


def encode_arg(u: UOp) -> dict[str, Any] | None:
    op, a = u.op, u.arg
    if op is Ops.CONST:
        return _const_arg(u)
    if op is Ops.PARAM or _is_register(u):
        return {"param": _param_arg(a)}
    if op is Ops.RANGE:
        if not isinstance(a, tuple) or not a or not isinstance(a[-1], AxisType):
            raise IRError(f"RANGE arg {a!r} is not (axis id..., AxisType)")
        return {"range": {"axis": [str(int(x)) for x in a[:-1]], "type": a[-1].name}}
    if op is Ops.REDUCE:
        if not (isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], Ops)):
            raise IRError(f"REDUCE arg {a!r} is not (Ops, n)")
        return {"op": a[0].name, "ints": [str(int(a[1]))]}
    if op in (Ops.CAST, Ops.BITCAST):
        if a is not None and a != u.dtype:
            raise IRError(f"{op.name} to {a!r} with dtype {u.dtype!r}")
        return None
    if op is Ops.SINK:
        if a is None:
            return None
        if not isinstance(a, KernelInfo):
            raise IRError(f"SINK arg {a!r} is not a KernelInfo")
        if a.opts_to_apply or a.applied_opts or a.axis_types or a.dont_use_locals:
            raise IRError(f"SINK KernelInfo {a!r} carries more than a name, which the wire cannot spell yet")
        return {"kernel": {"name": a.name}}
    if a is None:
        return None
    raise IRError(f"{op.name} arg {a!r} ({type(a).__name__}) has no IR spelling")


def toposort(root: UOp) -> list[UOp]:
    """Sources before users, each distinct UOp once, root last."""
    order: list[UOp] = []
    seen: set[UOp] = set()
    stack: list[tuple[UOp, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if node in seen:
            continue
        if expanded:
            seen.add(node)
            order.append(node)
            continue
        stack.append((node, True))
        for s in reversed(node.src):
            if s not in seen:
                stack.append((s, False))
    return order


def lower_movement_ops(root: UOp) -> UOp:
    """`root` as tinygrad's codegen first rewrites it (full_rewrite_to_sink's "multi_pm" and
    "early movement ops"): in-kernel UNSHARDs resolved, and movement ops on a PARAM (a custom
    kernel's `UOp.placeholder((M, K), ...)` is a RESHAPE of a flat PARAM; `x[i:j]` a SHRINK)
    folded into its INDEX as index arithmetic, which the dialect carries. The same UOp when
    there are none."""
    nodes = root.toposort()
    if not any(u.op in GroupOp.Movement or u.op is Ops.UNSHARD or (u.op is Ops.PARAM and u.axis is not None)
               for u in nodes):
        return root
    sink = graph_rewrite(root, multi_pm, name="multi_pm")
    # An INDEX of a partly indexed view (`src[G, :][R]`) folds once its INDEXes merge, which
    # tinygrad's codegen does later (mop_cleanup, with its reduces): here both, to a fixed point.
    return graph_rewrite(sink, pm_mops + mop_cleanup, name="early movement ops", bottom_up=True)


def encode_graph(root: UOp) -> dict[str, Any]:
    """Graph JSON (dialect TINYGRAD_0_14) of a tinygrad 0.14 kernel AST."""
    if root.op is not Ops.SINK:
        raise IRError(f"root is {root.op}, not SINK")
    order = toposort(root)
    index = {u: i for i, u in enumerate(order)}
    nodes = []
    for i, u in enumerate(order):
        op_name = "PARAM" if _is_register(u) else u.op.name
        if op_name not in OPS:
            raise IRError(f"node {i}: op {u.op.name} is not in the tinygrad 0.14 dialect")
        try:
            node: dict[str, Any] = {"op": op_name, "dtype": encode_dtype(u.dtype)}
            if u.src:
                node["src"] = [index[s] for s in u.src]
            arg = encode_arg(u)
        except IRError as e:
            raise IRError(f"node {i} ({u.op.name}): {e}") from None
        if arg is not None:
            node["arg"] = arg
        nodes.append(node)
    return {"nodes": nodes, "dialect": DIALECT}
