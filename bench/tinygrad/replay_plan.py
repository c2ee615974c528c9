#!/usr/bin/env python3
"""Replay uopd plan files with tinygrad itself: a check of the plan file, independent of uopd.

Each kernel's IR v1 AST is decoded back into tinygrad UOps (uop_ir.decode_graph), compiled by
tinygrad's CPU device with default options (or NOOPT=1 with --noopt), and run in plan order on
buffers made from the plan's `init` bytes; every `outputs` buffer is then compared with `expected`,
bit for bit and with the plan's tolerance (tests/corpus/README.md, "Comparing results").

    build/tinygrad-venv/bin/python bench/tinygrad/replay_plan.py build/workloads/small/*.json
"""
from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workloads  # noqa: E402

workloads.setup_env()

import numpy as np  # noqa: E402
from tinygrad import Device  # noqa: E402
from tinygrad.codegen import get_program  # noqa: E402
from tinygrad.device import Buffer  # noqa: E402
from tinygrad.engine.realize import CompiledRunner  # noqa: E402
from tinygrad.helpers import Context  # noqa: E402

import uop_ir  # noqa: E402

NP_DTYPES = {"FLOAT32": np.float32, "FLOAT64": np.float64, "FLOAT16": np.float16,
             "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "UINT16": np.uint16,
             "INT32": np.int32, "UINT32": np.uint32, "INT64": np.int64, "UINT64": np.uint64, "BOOL": np.bool_}


def replay(path: Path, noopt: bool = False) -> tuple[bool, str]:
    plan = json.loads(path.read_text())
    dev = Device.DEFAULT
    bufs = {}
    for b in plan["buffers"]:
        buf = Buffer(dev, b["size"], uop_ir.SCALARS_BY_NAME[b["dtype"]]).allocate()
        buf.copyin(memoryview(bytearray(base64.b64decode(b["init"]))))
        bufs[b["id"]] = buf
    with Context(NOOPT=int(noopt), BEAM=0):
        for k in plan["kernels"]:
            ast = uop_ir.decode_graph(k["ast"])
            prg = CompiledRunner(get_program(ast, Device[dev].renderer))
            args = [bufs[k["bufs"][slot]] for slot in prg.p.globals]
            prg(args, plan["vars"] | k.get("vars", {}), wait=True)
    Device[dev].synchronize()
    rtol, atol = plan["tolerance"]["rtol"], plan["tolerance"]["atol"]
    notes, ok = [], True
    for o in plan["outputs"]:
        b = next(x for x in plan["buffers"] if x["id"] == o["id"])
        got_b, exp_b = bytes(bufs[o["id"]].as_buffer()), base64.b64decode(o["expected"])
        if got_b == exp_b:
            continue
        if b["dtype"] not in NP_DTYPES:
            notes.append(f"buffer {o['id']}: not bit-identical ({b['dtype']} not compared with tolerance)")
            ok = False
            continue
        got, exp = np.frombuffer(got_b, NP_DTYPES[b["dtype"]]), np.frombuffer(exp_b, NP_DTYPES[b["dtype"]])
        if np.issubdtype(exp.dtype, np.floating):
            g64, e64 = got.astype(np.float64), exp.astype(np.float64)
            bad = ~((np.isnan(g64) & np.isnan(e64)) | (np.isinf(e64) & (g64 == e64)) |
                            (np.isfinite(e64) & (np.abs(g64 - e64) <= atol + rtol * np.abs(e64))))
        else:
            bad = got != exp
        notes.append(f"buffer {o['id']}: not bit-identical, {int(bad.sum())} of {bad.size} outside tolerance")
        ok = ok and not bad.any()
    return ok, "; ".join(notes) or "bit-identical"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("plans", nargs="+", type=Path)
    ap.add_argument("--noopt", action="store_true", help="compile with NOOPT=1 (no heuristic optimizations)")
    args = ap.parse_args(argv)
    failed = 0
    for p in args.plans:
        ok, note = replay(p, args.noopt)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {p}: {note}", flush=True)
    print(f"{len(args.plans) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
