# mypy: ignore-errors
# (tinygrad is an optional dependency without type information that mypy --strict accepts; the
# package's type check covers the rest of uopd, and tests/tinygrad runs these modules.)
"""tinygrad 0.12.0 kernel AST (UOp graph) <-> uopd IR v1 Graph JSON (docs/IR.md).

(Moved here from bench/tinygrad/uop_ir.py, which re-exports it; `uopd.tinygrad` encodes every kernel
tinygrad schedules with it.)

encode_graph(ast) walks the UOp graph sources-first (each distinct UOp once, the root SINK last) and
spells every node as IR.md says. decode_graph(json) rebuilds the UOps, so an encoding can be checked
by comparing tinygrad's `ast.key` before and after (the corpus generator's round-trip check).

Anything IR v1 cannot spell (an op outside the proto's Op enum, a vector pointer, an arg shape IR.md
does not describe) raises IRError naming the node, instead of writing something the server would
read differently.
"""
from __future__ import annotations

import math
from typing import Any

from tinygrad.dtype import AddrSpace, DType, PtrDType, ImageDType, dtypes, Invalid, InvalidType
from tinygrad.uop.ops import UOp, Ops, AxisType, KernelInfo, PatternMatcher, UPat, graph_rewrite


class IRError(ValueError):
    pass


# Op names of the proto's Node.Op enum (proto/uopd/v1/graph.proto); the tinygrad names are the same.
IR_OPS = frozenset("""
SINK DEFINE_GLOBAL DEFINE_VAR CONST RANGE END INDEX LOAD STORE REDUCE AFTER GROUP WHERE CAST BITCAST
EXP2 LOG2 SIN SQRT RECIPROCAL NEG TRUNC
ADD SUB MUL FDIV IDIV MOD MAX POW SHL SHR AND OR XOR CMPLT CMPNE CMPEQ
MULACC THREEFRY RESHAPE
SPECIAL DEFINE_LOCAL DEFINE_REG BARRIER IF ENDIF GEP VECTORIZE VCONST WMMA UNROLL CONTRACT CUSTOM
""".split())

# Ops IR.md lists as meaningful in a scheduled kernel AST (the rest are "after lowering" ops).
KERNEL_AST_OPS = frozenset("""
SINK DEFINE_GLOBAL DEFINE_VAR CONST RANGE END INDEX LOAD STORE REDUCE AFTER GROUP WHERE CAST BITCAST
EXP2 LOG2 SIN SQRT RECIPROCAL NEG TRUNC
ADD SUB MUL FDIV IDIV MOD MAX POW SHL SHR AND OR XOR CMPLT CMPNE CMPEQ MULACC THREEFRY RESHAPE
""".split())

SCALAR_NAMES: dict[DType, str] = {
    dtypes.void: "VOID", dtypes.index: "INDEX", dtypes.bool: "BOOL",
    dtypes.int8: "INT8", dtypes.uint8: "UINT8", dtypes.int16: "INT16", dtypes.uint16: "UINT16",
    dtypes.int32: "INT32", dtypes.uint32: "UINT32", dtypes.int64: "INT64", dtypes.uint64: "UINT64",
    dtypes.fp8e4m3: "FP8E4M3", dtypes.fp8e5m2: "FP8E5M2",
    dtypes.float16: "FLOAT16", dtypes.bfloat16: "BFLOAT16",
    dtypes.float32: "FLOAT32", dtypes.float64: "FLOAT64",
}
SCALARS_BY_NAME: dict[str, DType] = {v: k for k, v in SCALAR_NAMES.items()}

INT64_MAX = 2**63 - 1


def scalar_name(dt: DType) -> str:
    """IR scalar name of a (non-pointer, scalar or vector) dtype's element type."""
    s = dt.scalar()
    if s not in SCALAR_NAMES:
        raise IRError(f"dtype {dt!r} has no IR v1 scalar name")
    return SCALAR_NAMES[s]


def encode_dtype(dt: DType) -> dict[str, Any]:
    if isinstance(dt, ImageDType):
        raise IRError(f"image dtype {dt!r} is not in IR v1")
    if isinstance(dt, PtrDType):
        if dt.v != 1:
            raise IRError(f"vector pointer dtype {dt!r} is not in IR v1")
        base = dt.base
        out: dict[str, Any] = {"scalar": scalar_name(base)}
        if base.count != 1:
            out["count"] = base.count
        out.update({"ptr": True, "size": int(dt.size), "addrspace": dt.addrspace.name})
        return out
    out = {"scalar": scalar_name(dt)}
    if dt.count != 1:
        out["count"] = dt.count
    return out


def decode_dtype(j: dict[str, Any]) -> DType:
    base = SCALARS_BY_NAME[j["scalar"]]
    if j.get("count", 1) not in (0, 1):
        base = base.vec(j["count"])
    if j.get("ptr"):
        return base.ptr(int(j.get("size", -1)), AddrSpace[j.get("addrspace", "GLOBAL")])
    return base


def _wrapped_const(v: int, dt: DType) -> dict[str, Any]:
    """An integer CONST of an integer dtype, taken modulo 2**64 (tinygrad's Python ints are unbounded,
    e.g. `CONST uint64 2**64+1`; rendered, they mean the value modulo 2**64): u64 for unsigned dtypes,
    two's complement into i64 for signed ones."""
    v = int(v) % 2**64
    if dtypes.is_unsigned(dt):
        return {"u64": str(v)} if v > INT64_MAX else {"i64": str(v)}
    return {"i64": str(v - 2**64 if v > INT64_MAX else v)}


def _i64(v: int) -> dict[str, Any]:
    v = int(v)
    if v > INT64_MAX:
        if v >= 2**64:
            raise IRError(f"integer {v} does not fit 64 bits")
        return {"u64": str(v)}
    if v < -2**63:
        raise IRError(f"integer {v} does not fit 64 bits")
    return {"i64": str(v)}


def _f64(v: float) -> dict[str, Any]:
    v = float(v)
    if math.isnan(v):
        return {"f64": "NaN"}
    if math.isinf(v):
        return {"f64": "Infinity" if v > 0 else "-Infinity"}
    return {"f64": v}


def encode_const_arg(u: UOp) -> dict[str, Any]:
    a = u.arg
    if isinstance(a, InvalidType):
        return {"invalid": True}
    if isinstance(a, tuple):
        raise IRError(f"vector CONST arg {a!r} (dtype {u.dtype!r}) is not in IR v1")
    dt = u.dtype
    if dtypes.is_float(dt):
        return _f64(a)
    if dt.scalar() == dtypes.bool:
        return {"b": bool(a)}
    if dtypes.is_int(dt):
        if isinstance(a, float):
            raise IRError(f"integer CONST of dtype {dt!r} with float arg {a!r}")
        if -2**63 <= int(a) < (2**64 if dtypes.is_unsigned(dt) else 2**63):
            return _i64(a)
        return _wrapped_const(a, dt)
    raise IRError(f"CONST of dtype {dt!r} (arg {a!r}) has no IR v1 spelling")


def encode_arg(u: UOp) -> dict[str, Any] | None:
    op, a = u.op, u.arg
    if op is Ops.CONST:
        return encode_const_arg(u)
    if op is Ops.DEFINE_GLOBAL or op is Ops.DEFINE_LOCAL or op is Ops.DEFINE_REG:
        if not isinstance(a, int):
            raise IRError(f"{op.name} arg {a!r} is not an int slot")
        return _i64(a)
    if op is Ops.RANGE:
        if not isinstance(a, tuple) or not a:
            raise IRError(f"RANGE arg {a!r} is not a tuple")
        types = [i for i, x in enumerate(a) if isinstance(x, AxisType)]
        if len(types) != 1 or types[0] != len(a) - 1 or not all(isinstance(x, int) for x in a[:-1]):
            raise IRError(f"RANGE arg {a!r} is not (axis id..., AxisType)")
        return {"range": {"axis": [int(x) for x in a[:-1]], "type": a[-1].name}}
    if op is Ops.DEFINE_VAR:
        if not (isinstance(a, tuple) and len(a) == 3 and isinstance(a[0], str)):
            raise IRError(f"DEFINE_VAR arg {a!r} is not (name, min, max)")
        return {"var": {"name": a[0], "min": str(int(a[1])), "max": str(int(a[2]))}}
    if op is Ops.REDUCE:
        if not isinstance(a, Ops):
            raise IRError(f"REDUCE arg {a!r} is not an Ops")
        return {"op": a.name}
    if op is Ops.SINK:
        if a is None:
            return None
        if not isinstance(a, KernelInfo):
            raise IRError(f"SINK arg {a!r} is not a KernelInfo")
        default = KernelInfo(name=a.name)
        if a != default:
            # Only the name travels (IR.md); a KernelInfo with opts/axis types would silently lose them.
            raise IRError(f"SINK KernelInfo {a!r} carries more than a name, which IR v1 cannot spell")
        return {"kernel": {"name": a.name}}
    if op in (Ops.SPECIAL, Ops.CUSTOM):
        if not isinstance(a, str):
            raise IRError(f"{op.name} arg {a!r} is not a str")
        return {"str": a}
    if op is Ops.GEP:
        return {"ints": [str(int(x)) for x in a]}
    if op is Ops.RESHAPE:
        return {"ints": [str(int(x)) for x in reshape_shape(u)]}
    if a is None:
        return None
    raise IRError(f"{op.name} arg {a!r} ({type(a).__name__}) has no IR v1 spelling")


def reshape_shape(u: UOp) -> tuple[int, ...]:
    """The shape of a RESHAPE (of a custom kernel's placeholder): tinygrad keeps it as a second source,
    a VCONST (or a vector-dtype CONST when all dimensions are equal); the wire form has it in arg.ints and no shape node."""
    if len(u.src) != 2:
        raise IRError(f"RESHAPE with {len(u.src)} sources, not (buffer, shape)")
    shape = u.src[1]
    if shape.op is Ops.VCONST and isinstance(shape.arg, tuple) and all(isinstance(x, int) for x in shape.arg):
        return tuple(shape.arg)
    if shape.op is Ops.CONST and isinstance(shape.arg, int):  # all dimensions equal: one CONST of a vector dtype
        return (shape.arg,) * shape.dtype.count
    raise IRError(f"RESHAPE shape {shape.op.name} {shape.arg!r} is not constant (symbolic shapes are not in IR v1)")


def wire_src(u: UOp) -> tuple[UOp, ...]:
    """The sources a node has on the wire: a RESHAPE's shape travels as its arg, not as a node."""
    return u.src[:1] if u.op is Ops.RESHAPE else u.src


def toposort(root: UOp) -> list[UOp]:
    """Sources before users, each distinct UOp once, root last (DFS post-order, sources in order)."""
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
        for s in reversed(wire_src(node)):
            if s not in seen:
                stack.append((s, False))
    return order


# An INDEX of a partly indexed view (a custom kernel's `src[G, :]`, a pointer-typed INDEX of a
# RESHAPE) indexed again (`[R]`): one INDEX with every index, which the IR takes, as tinygrad
# merges them in its codegen.
_merge_partial_index = PatternMatcher([
    (UPat(Ops.INDEX, src=(UPat(Ops.INDEX, name="inner"),), allow_any_len=True, name="outer"),
     lambda inner, outer: UOp(Ops.INDEX, outer.dtype, (*inner.src, *outer.src[1:]))
     if isinstance(inner.dtype, PtrDType) and len(outer.src) > 1 else None),
])


def _contract_lanes(contract: UOp) -> UOp | None:
    """CONTRACT of a value over one UPCAST range: the value at each of the range's values, as
    tinygrad's expander makes it (a VECTORIZE the GEPs of it then pick from)."""
    if len(contract.arg) != 1:
        return None
    axis, size = contract.arg[0]
    ranges = [u for u in contract.src[0].toposort() if u.op is Ops.RANGE and u.arg[0] == axis]
    if len(ranges) != 1:
        return None
    rng = ranges[0]
    lanes = [contract.src[0].substitute({rng: UOp.const(rng.dtype, k)}) for k in range(size)]
    return UOp(Ops.VECTORIZE, contract.dtype, tuple(lanes))


# A custom kernel's CONTRACT of an UPCAST range whose lanes are picked one by one (test_custom_kernel's
# flip_contract): each picked lane is the value at that point of the range, which the IR takes.
_expand_contract = PatternMatcher([
    (UPat(Ops.CONTRACT, name="contract"), _contract_lanes),
    (UPat(Ops.GEP, src=(UPat(Ops.VECTORIZE, name="vec"),), name="gep"),
     lambda vec, gep: vec.src[gep.arg[0]] if len(gep.arg) == 1 else None),
])


def encode_graph(root: UOp, kernel_ast_only: bool = True) -> dict[str, Any]:
    """IR v1 Graph JSON of a kernel AST. With kernel_ast_only, ops that IR.md lists only as 'after lowering'
    are refused too (a scheduled kernel AST should not contain them)."""
    if root.op is not Ops.SINK:
        raise IRError(f"root is {root.op}, not SINK")
    # One walk decides both rewrites: merging indexes makes no CONTRACT and removes none.
    sent = root.toposort()
    if any(u.op is Ops.INDEX and u.src[0].op is Ops.INDEX for u in sent):
        root = graph_rewrite(root, _merge_partial_index, name="merge partial indexes")
    if any(u.op is Ops.CONTRACT for u in sent):
        root = graph_rewrite(root, _expand_contract, name="expand contracts")
    order = toposort(root)
    index = {u: i for i, u in enumerate(order)}
    nodes = []
    for i, u in enumerate(order):
        allowed = KERNEL_AST_OPS if kernel_ast_only else IR_OPS
        if u.op.name not in allowed:
            where = "IR v1 kernel ASTs" if u.op.name in IR_OPS else "IR v1"
            raise IRError(f"node {i}: op {u.op.name} is not in {where}")
        try:
            node: dict[str, Any] = {"op": u.op.name, "dtype": encode_dtype(u.dtype)}
            if u.src:
                node["src"] = [index[s] for s in wire_src(u)]
            arg = encode_arg(u)
        except IRError as e:
            raise IRError(f"node {i} ({u.op.name}): {e}") from None
        if arg is not None:
            node["arg"] = arg
        nodes.append(node)
    return {"nodes": nodes}


def _decode_arg(j: dict[str, Any] | None) -> Any:
    if j is None:
        return None
    if "i64" in j:
        return int(j["i64"])
    if "u64" in j:
        return int(j["u64"])
    if "f64" in j:
        v = j["f64"]
        if isinstance(v, str):
            return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v]
        return float(v)
    if "b" in j:
        return bool(j["b"])
    if "invalid" in j:
        return Invalid
    if "range" in j:
        return tuple(int(x) for x in j["range"]["axis"]) + (AxisType[j["range"]["type"]],)
    if "var" in j:
        return (j["var"]["name"], int(j["var"]["min"]), int(j["var"]["max"]))
    if "op" in j:
        return Ops[j["op"]]
    if "kernel" in j:
        return KernelInfo(name=j["kernel"]["name"])
    if "str" in j:
        return j["str"]
    if "ints" in j:
        return tuple(int(x) for x in j["ints"])
    raise IRError(f"unknown arg {j!r}")


def decode_graph(g: dict[str, Any]) -> UOp:
    """Rebuild the tinygrad UOp graph of an IR v1 Graph JSON (root = last node)."""
    built: list[UOp] = []
    for n in g["nodes"]:
        src = tuple(built[s] for s in n.get("src", []))
        op, dt = Ops[n["op"]], decode_dtype(n["dtype"])
        arg = _decode_arg(n.get("arg"))
        if op is Ops.CONST and not isinstance(arg, InvalidType):
            arg = dtypes.as_const(arg, dt)
        if op is Ops.RESHAPE:
            src = src[:1] + (UOp.const(dtypes.index.vec(len(arg)), arg),)
            arg = None
        built.append(UOp(op, dt, src, arg))
    return built[-1]
