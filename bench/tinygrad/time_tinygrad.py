#!/usr/bin/env python3
"""Time tinygrad 0.12.0's own CPU device (clang backend) on the workloads of workloads.py.

For each workload: realize the seeded inputs, take the output Tensor's schedule (default options:
BEAM=0, heuristic optimizations on, memory planner on), compile every kernel once, then run the
whole schedule `--warmup` times and `--reps` times more, each kernel with wait=True. tinygrad's CPU
device is an HCQ device: with wait=True a kernel run returns the time between the timestamps the
device queue wrote around that kernel (what DEBUG=2 prints and GlobalCounters.time_sum_s sums), so
"tinygrad_s" is kernel time only (no scheduling, compiling or Python launch overhead between
kernels); "tinygrad_wall_s" is the wall time of one run of the whole schedule from Python, for
reference. Both are medians over the reps. For matmul, "numpy_s" is numpy's `a @ b` (median, after
warm-up). tinygrad's CPU device runs a kernel on up to CPU_COUNT threads (default: the CPUs this
process may use); numpy on whatever its BLAS uses.

Prints ONE JSON object on stdout:
    {"matmul": {"tinygrad_s": ..., "tinygrad_wall_s": ..., "kernels": 1, "threads": 2, "numpy_s": ...,
              "flops": ...}, "colsum": {..., "bytes": ...}, ...}
("threads" is tinygrad's CPU_COUNT: the most threads one kernel runs on.)

    build/tinygrad-venv/bin/python bench/tinygrad/time_tinygrad.py --size small
    build/tinygrad-venv/bin/python bench/tinygrad/time_tinygrad.py --size full --reps 5 --workloads matmul

Importable: time_workloads(size, names, reps, warmup) returns the same dict.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workloads  # noqa: E402

workloads.setup_env()

from tinygrad import Device  # noqa: E402
from tinygrad.engine import schedule as tg_schedule  # noqa: E402
from tinygrad.helpers import CPU_COUNT, Context  # noqa: E402
from tinygrad.uop.ops import Ops  # noqa: E402


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def time_workload(name: str, size: str, reps: int = 10, warmup: int = 2) -> dict:
    wl = workloads.build(name, size)
    tensors = workloads.realized_inputs(wl)
    dev = Device[Device.DEFAULT]
    tg_schedule.schedule_cache.clear()
    with Context(BEAM=0, NOOPT=0):
        out = wl.fn(*tensors)
        sched, var_vals = out.schedule_with_vars()
        if any(si.ast.op is not Ops.SINK for si in sched):
            raise RuntimeError(f"{name}: schedule has non-kernel items")
        for si in sched:
            si.lower()          # compile once, outside the timing
        kernel_s, wall_s = [], []
        for i in range(warmup + reps):
            dev.synchronize()
            st = time.perf_counter()
            ets = [si.run(var_vals, wait=True, do_update_stats=False) for si in sched]
            dev.synchronize()
            wall = time.perf_counter() - st
            if i >= warmup:
                if any(e is None for e in ets):
                    raise RuntimeError(f"{name}: the device returned no kernel time")
                kernel_s.append(sum(ets))
                wall_s.append(wall)
    res: dict = {"tinygrad_s": _median(kernel_s), "tinygrad_wall_s": _median(wall_s), "kernels": len(sched),
                 "threads": CPU_COUNT.value}
    if name == "matmul":
        a, b = wl.inputs["a"], wl.inputs["b"]
        times = []
        for i in range(warmup + reps):
            st = time.perf_counter()
            a @ b
            if i >= warmup:
                times.append(time.perf_counter() - st)
        res["numpy_s"] = _median(times)
    if wl.flops is not None:
        res["flops"] = wl.flops
    if wl.bytes is not None:
        res["bytes"] = wl.bytes
    return res


def time_workloads(size: str = "small", names: list[str] | tuple[str, ...] = workloads.NAMES,
                   reps: int = 10, warmup: int = 2) -> dict:
    assert Device.DEFAULT == "CPU", Device.DEFAULT
    return {name: time_workload(name, size, reps, warmup) for name in names}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=workloads.SIZES, default="small")
    ap.add_argument("--workloads", default=",".join(workloads.NAMES),
                    help="comma-separated subset of " + ",".join(workloads.NAMES))
    ap.add_argument("--reps", type=int, default=10, help="timed runs per workload (median reported)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs first")
    args = ap.parse_args(argv)
    names = [n for n in args.workloads.split(",") if n]
    for n in names:
        if n not in workloads.NAMES:
            ap.error(f"unknown workload {n!r}")
    print(json.dumps(time_workloads(args.size, names, args.reps, args.warmup)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
