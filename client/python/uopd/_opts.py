"""Optimizations in tinygrad's spelling (core/opt/opt.cc, docs/OPTIMIZER.md), as the wire's
``Optimization`` message."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Union, cast

from uopd.v1 import graph_pb2, kernel_service_pb2

__all__ = ["OPT_OPS", "OptLike", "OptimizationLike", "parse_opts", "opt_of", "optimization_of",
           "opts_to_string"]

#: The opt ops, in tinygrad's order.
OPT_OPS = ("TC", "UPCAST", "UNROLL", "LOCAL", "THREAD", "GROUP", "GROUPTOP", "NOLOCALS", "PADTO",
           "SWAP")

#: One opt: ``graph_pb2.Opt``; a string "UPCAST(1, 4)"; a tuple ("UPCAST", 1, 4), ("NOLOCALS",),
#: ("TC", 0, (-1, 2, 1)); a dict {"op": "UPCAST", "axis": 1, "arg": 4} (tinygrad's JSON, TC's
#: arg the list [tc_select, tc_opt, use_tensor_cores]); or a tinygrad ``Opt``.
OptLike = Union[graph_pb2.Opt, str, "tuple[Any, ...]", Mapping[str, Any], Any]

#: How a kernel is optimized: None (the AST's opts_to_apply, else the server's default);
#: "heuristic", "none", "search" or "default"; opts in tinygrad's spelling as one string
#: ("UPCAST(1, 16) UNROLL(0, 4)") or a list of OptLike; or a ``kernel_service_pb2.Optimization``.
OptimizationLike = Union[None, str, Iterable[OptLike], kernel_service_pb2.Optimization]

_Mode = kernel_service_pb2.Optimization.Mode
_MODES = {name: cast(kernel_service_pb2.Optimization.Mode, _Mode.Value(name.upper()))
          for name in ("default", "heuristic", "none", "search")}
_OPTS = cast(kernel_service_pb2.Optimization.Mode, _Mode.Value("OPTS"))


def _make(op: str, axis: int | None, arg: int = 0, tc: Iterable[int] = ()) -> graph_pb2.Opt:
    op = op.upper()
    if op not in OPT_OPS:
        raise ValueError(f"unknown opt op {op!r}: expected one of {' '.join(OPT_OPS)}")
    if axis is None and op != "NOLOCALS":
        raise ValueError(f"{op} needs an axis")
    opt = graph_pb2.Opt(op=op, arg=int(arg))
    if axis is not None:
        opt.axis = int(axis)
    if op == "TC":
        tc = [int(v) for v in tc]
        if len(tc) != 3:
            raise ValueError("TC takes (axis, (tc_select, tc_opt, use_tensor_cores))")
        opt.tc.extend(tc)
        opt.arg = 0
    return opt


def parse_opts(text: str) -> list[graph_pb2.Opt]:
    """The opts of "UPCAST(1, 16) UNROLL(0,4) NOLOCALS TC(0, (-1, 2, 1))" (what the server's
    ``OptsToString`` writes; spaces and commas between opts optional), as uopctl parses them."""
    opts: list[graph_pb2.Opt] = []
    i, n = 0, len(text)

    def fail(why: str) -> ValueError:
        return ValueError(f"opt {len(opts)} of {text!r}: {why}")

    while True:
        while i < n and (text[i].isspace() or text[i] == ","):
            i += 1
        if i == n:
            return opts
        match = re.compile(r"[A-Za-z]*").match(text, i)
        name = match.group(0) if match else ""
        if name not in OPT_OPS:
            raise fail(f"unknown opt op {name!r}")
        i += len(name)
        if i < n and text[i] == "(":
            depth, close = 0, i
            while close < n:
                depth += 1 if text[close] == "(" else -1 if text[close] == ")" else 0
                if depth == 0:
                    break
                close += 1
            if close == n:
                raise fail("no closing parenthesis")
            fields = [f for f in re.split(r"[,\s()]+", text[i + 1:close]) if f]
            try:
                numbers = [int(f) for f in fields]
            except ValueError:
                raise fail(f"{fields} are not all integers") from None
            if not numbers:
                raise fail("no axis")
            if name == "TC":
                if len(numbers) != 4:
                    raise fail("TC takes (axis, (tc_select, tc_opt, use_tc))")
                opts.append(_make(name, numbers[0], 0, numbers[1:]))
            elif len(numbers) > 2:
                raise fail("takes an axis and an amount")
            else:
                opts.append(_make(name, numbers[0], numbers[1] if len(numbers) == 2 else 0))
            i = close + 1
        elif name != "NOLOCALS":
            raise fail(f"{name} needs (axis, amount)")
        else:
            opts.append(_make(name, None))


def opt_of(opt: OptLike) -> graph_pb2.Opt:
    """One opt as the wire's ``Opt`` (see OptLike)."""
    if isinstance(opt, graph_pb2.Opt):
        return opt
    if isinstance(opt, str):
        parsed = parse_opts(opt)
        if len(parsed) != 1:
            raise ValueError(f"{opt!r} is {len(parsed)} opts, not one")
        return parsed[0]
    if isinstance(opt, Mapping):
        arg = opt.get("arg", 0)
        if isinstance(arg, (list, tuple)):
            return _make(str(opt["op"]), opt.get("axis"), 0, arg)
        return _make(str(opt["op"]), opt.get("axis"), arg if arg is not None else 0)
    if isinstance(opt, tuple):
        if not opt or not isinstance(opt[0], str):
            raise ValueError(f"an opt tuple starts with its op name, not {opt!r}")
        op, rest = opt[0], opt[1:]
        axis = rest[0] if rest else None
        if op.upper() == "TC":
            tc = rest[1] if len(rest) == 2 else rest[1:]
            return _make(op, axis, 0, tc)
        if len(rest) > 2:
            raise ValueError(f"{opt!r}: an opt is (op, axis, amount)")
        return _make(op, axis, rest[1] if len(rest) == 2 else 0)
    tinygrad_op = getattr(opt, "op", None)  # tinygrad's Opt(op=OptOps.UPCAST, axis=1, arg=4)
    if tinygrad_op is not None and hasattr(opt, "axis"):
        name = getattr(tinygrad_op, "name", tinygrad_op)
        arg = getattr(opt, "arg", 0)
        if isinstance(arg, (list, tuple)):
            return _make(str(name), opt.axis, 0, arg)
        return _make(str(name), opt.axis, arg if arg is not None else 0)
    raise TypeError(f"cannot use {opt!r} as an opt")


def optimization_of(spec: OptimizationLike) -> kernel_service_pb2.Optimization | None:
    """The ``Optimization`` message for ``spec`` (see OptimizationLike); None leaves it unset."""
    if spec is None:
        return None
    if isinstance(spec, kernel_service_pb2.Optimization):
        return spec
    if isinstance(spec, str):
        mode = _MODES.get(spec.strip().lower())
        if mode is not None:
            return kernel_service_pb2.Optimization(mode=mode)
        return kernel_service_pb2.Optimization(mode=_OPTS, opts=parse_opts(spec))
    if (isinstance(spec, tuple) and len(spec) >= 2 and isinstance(spec[0], str)
            and (spec[1] is None or isinstance(spec[1], int))):
        spec = [spec]  # one opt tuple, ("UPCAST", 1, 4), rather than a list of them
    if isinstance(spec, (Mapping, graph_pb2.Opt)):
        spec = [spec]
    try:
        items = list(spec)
    except TypeError:
        raise TypeError(f"cannot use {spec!r} as an optimization") from None
    return kernel_service_pb2.Optimization(mode=_OPTS,
                                           opts=[opt_of(o) for o in items])


def opts_to_string(opts: Iterable[graph_pb2.Opt]) -> str:
    """Opts in tinygrad's spelling, as the server writes them: "UPCAST(1, 16) UNROLL(0, 4)"."""
    parts = []
    for opt in opts:
        if opt.op == "NOLOCALS":
            parts.append("NOLOCALS")
            continue
        axis = str(opt.axis) if opt.HasField("axis") else "None"
        if opt.op == "TC":
            tc = ", ".join(str(v) for v in opt.tc)
            parts.append(f"TC({axis}, ({tc}))")
        else:
            parts.append(f"{opt.op}({axis}, {opt.arg})")
    return " ".join(parts)
