#!/usr/bin/env python3
"""Export tinygrad 0.12.0 workloads as uopd plan files (tests/corpus/README.md, "Plan file").

For each workload (workloads.py) this realizes the seeded inputs on tinygrad's CPU device, takes the
schedule of the output Tensor (the SINK of each ExecItem is the kernel AST exactly as tinygrad hands
it to get_program, before any optimization), encodes every kernel AST as IR v1 JSON (uop_ir.py),
fills every buffer that has no data yet with the poison pattern 0xA5, runs the schedule with
tinygrad's default options (BEAM=0, heuristic optimizations on, clang backend) and writes one plan:
buffers with their initial bytes, the kernels in schedule order with their buffer ids, and every
buffer any kernel writes with its bytes after the run. tinygrad's memory planner is off while
scheduling (it would suballocate intermediates from one shared buffer; plans need distinct buffers;
the kernel ASTs do not depend on it). Each exported kernel AST is decoded back and must give
tinygrad's `ast.key` again. One JSON line per workload goes to stdout (kernels, node counts,
tolerance, and tinygrad's own float32 error against a float64 numpy reference in tolerance units).

    build/tinygrad-venv/bin/python bench/tinygrad/export_workloads.py --size small
    build/tinygrad-venv/bin/python bench/tinygrad/export_workloads.py --size full --out build/workloads/full
"""
from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workloads  # noqa: E402

workloads.setup_env()

from tinygrad import Device  # noqa: E402
from tinygrad.device import Buffer  # noqa: E402
from tinygrad.dtype import dtypes  # noqa: E402
from tinygrad.engine import schedule as tg_schedule  # noqa: E402
from tinygrad.helpers import Context  # noqa: E402
from tinygrad.uop.ops import Ops  # noqa: E402

import numpy as np  # noqa: E402

import uop_ir  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
POISON = 0xA5
TRANSCENDENTAL_OR_DIV = {"EXP2", "LOG2", "SIN", "SQRT", "POW", "FDIV", "RECIPROCAL"}


def tolerance_for(kernel_json: dict, out_dtypes: list) -> tuple[float, float]:
    """Corpus rule (tests/corpus/README.md, "Comparing results") for one kernel."""
    ops = {n["op"] for n in kernel_json["nodes"]}
    rtol = atol = 0.0
    for dt in out_dtypes:
        if dt == dtypes.float32:
            r, a = (1e-4, 1e-5) if ops & TRANSCENDENTAL_OR_DIV else (1e-5, 1e-6)
        elif dt in (dtypes.float16, dtypes.bfloat16):
            r, a = 1e-2, 1e-3
        elif dt == dtypes.float64:
            r, a = 1e-12, 1e-12
        elif dtypes.is_float(dt):
            r, a = 1e-1, 1e-1  # fp8: not in the corpus rules; loose
        else:
            r, a = 0.0, 0.0
        rtol, atol = max(rtol, r), max(atol, a)
    return rtol, atol


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def stored_slots(ast) -> set[int]:
    """DEFINE_GLOBAL slots that a STORE of the AST writes (through INDEX / AFTER chains)."""
    slots = set()
    for u in ast.toposort():
        if u.op is not Ops.STORE:
            continue
        t = u.src[0]
        while t.op is not Ops.DEFINE_GLOBAL:
            if not t.src:
                raise ValueError(f"STORE target does not lead to a DEFINE_GLOBAL: {t.op}")
            t = t.src[0]
        slots.add(t.arg)
    return slots


def export(name: str, size: str, out_dir: Path, check_roundtrip: bool = True) -> dict:
    t0 = time.perf_counter()
    wl = workloads.build(name, size)
    tensors = workloads.realized_inputs(wl)
    # A fresh schedule each time: tinygrad's schedule cache is keyed by the graph only.
    tg_schedule.schedule_cache.clear()
    # The memory planner would suballocate intermediates from one arena (aliasing buffers); plans need
    # distinct buffers. It does not change the kernel ASTs.
    with Context(NO_MEMORY_PLANNER=1, BEAM=0, NOOPT=0):
        out = wl.fn(*tensors)
        sched, var_vals = out.schedule_with_vars()
    non_kernels = [si.ast.op.name for si in sched if si.ast.op is not Ops.SINK]
    if non_kernels:
        raise RuntimeError(f"{name}: schedule has non-kernel items {non_kernels}")

    # Buffers by identity, numbered in order of first use.
    ids: dict[int, int] = {}
    bufs: list[Buffer] = []
    for si in sched:
        for b in si.bufs:
            if b is None:
                raise RuntimeError(f"{name}: schedule item with an unassigned buffer")
            if b._base is not None:
                raise RuntimeError(f"{name}: buffer view in the schedule (offset {b.offset})")
            if id(b) not in ids:
                ids[id(b)] = len(bufs)
                bufs.append(b)

    init: list[bytes] = []
    for b in bufs:
        if b.is_allocated():
            init.append(bytes(b.as_buffer()))
        else:
            b.ensure_allocated().copyin(memoryview(bytearray([POISON]) * b.nbytes))
            init.append(bytes([POISON]) * b.nbytes)

    kernels, written, tol = [], [], (0.0, 0.0)
    for k, si in enumerate(sched):
        try:
            g = uop_ir.encode_graph(si.ast)
        except uop_ir.IRError as e:
            raise RuntimeError(f"{name} kernel {k}: {e}") from None
        if check_roundtrip:
            back = uop_ir.decode_graph(g)
            if back.key != si.ast.key:
                raise RuntimeError(f"{name} kernel {k}: decoded AST key differs from tinygrad's")
        nslots = len(si.bufs)
        for n in g["nodes"]:
            if n["op"] == "DEFINE_GLOBAL":
                slot = int(n["arg"]["i64"])
                if not 0 <= slot < nslots:
                    raise RuntimeError(f"{name} kernel {k}: slot {slot} but {nslots} buffers")
                if n["dtype"]["size"] != si.bufs[slot].size:
                    raise RuntimeError(f"{name} kernel {k}: slot {slot} has size {n['dtype']['size']}, "
                                       f"its buffer {si.bufs[slot].size}")
        entry = {"ast": g, "bufs": [ids[id(b)] for b in si.bufs]}
        if si.fixedvars:
            entry["vars"] = dict(si.fixedvars)
        kernels.append(entry)
        outs = stored_slots(si.ast)
        for s in sorted(outs):
            if ids[id(si.bufs[s])] not in written:
                written.append(ids[id(si.bufs[s])])
        r, a = tolerance_for(g, [si.bufs[s].dtype for s in outs])
        tol = (max(tol[0], r), max(tol[1], a))

    # Run the schedule exactly as realize() would, with tinygrad's default options.
    with Context(BEAM=0, NOOPT=0):
        for k, si in enumerate(sched):
            si.lower()
            prg_outs, ast_outs = sorted(si.prg.p.outs), sorted(stored_slots(si.ast))
            if prg_outs != ast_outs:
                raise RuntimeError(f"{name} kernel {k}: ProgramSpec.outs {prg_outs}, stored slots {ast_outs}")
            si.run(var_vals)
    Device[Device.DEFAULT].synchronize()

    # The schedule's result must be what tinygrad computes for the output Tensor.
    out_np = out.numpy()
    plan = {
        "name": name, "family": wl.family, "program": wl.program,
        "buffers": [{"id": i, "dtype": uop_ir.scalar_name(b.dtype), "size": b.size, "init": b64(init[i])}
                    for i, b in enumerate(bufs)],
        "kernels": kernels,
        "vars": {k: int(v) for k, v in var_vals.items()},
        "outputs": [{"id": i, "expected": b64(bytes(bufs[i].as_buffer()))} for i in sorted(written)],
        "tolerance": {"rtol": tol[0], "atol": tol[1]},
    }
    if not any(bytes(bufs[i].as_buffer()) == out_np.tobytes() for i in written):
        raise RuntimeError(f"{name}: no written buffer holds the output Tensor's value")
    # Diagnostic: tinygrad's float32 result against a float64 reference, in units of the plan's tolerance
    # (elementwise |got - ref| / (atol + rtol*|ref|)); near or above 1 means a different summation order
    # can fail the corpus tolerance even when it is as accurate as tinygrad.
    ref = workloads.reference(wl).reshape(out_np.shape)
    ratio = float(np.max(np.abs(out_np.astype(np.float64) - ref) / (tol[1] + tol[0] * np.abs(ref))))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    with open(path, "w") as f:
        json.dump(plan, f, separators=(",", ":"), allow_nan=False)
    return {"name": name, "path": str(path), "kernels": len(kernels), "buffers": len(bufs),
            "nodes": [len(k["ast"]["nodes"]) for k in kernels], "tolerance": plan["tolerance"],
            "tinygrad_vs_f64_in_tol": round(ratio, 3), "seconds": round(time.perf_counter() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=workloads.SIZES, default="small")
    ap.add_argument("--out", type=Path, default=None,
                    help="output directory (default <repo>/build/workloads/<size>)")
    ap.add_argument("--workloads", default=",".join(workloads.NAMES),
                    help="comma-separated subset of " + ",".join(workloads.NAMES))
    ap.add_argument("--no-roundtrip", action="store_true", help="skip the decode-and-compare-ast.key check")
    args = ap.parse_args(argv)
    out_dir = args.out if args.out is not None else REPO / "build" / "workloads" / args.size
    assert Device.DEFAULT == "CPU", Device.DEFAULT
    names = [n for n in args.workloads.split(",") if n]
    for n in names:
        if n not in workloads.NAMES:
            ap.error(f"unknown workload {n!r}")
    for name in names:
        info = export(name, args.size, out_dir, check_roundtrip=not args.no_roundtrip)
        print(json.dumps(info), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
