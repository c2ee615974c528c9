#!/usr/bin/env python3
"""Issue 11's local-path benchmark, in one run: the host time of an empty RPC, a tiny RunPlan and
a tiny Execute (a 16-element float32 `out = in + 1`) and buffer calls, over loopback TCP, over a
unix socket and over the daemon's local socket (no gRPC), from C++ (build/bench/rpc_bench) and
from Python (the `uopd` package), next to tinygrad 0.12's own host time for the same kernel
called locally on its CPU device.

    python bench/local_path_bench.py DAEMON RPC_BENCH [--rounds R] [--iterations N]

Run it with a Python that has the `uopd` package, numpy and tinygrad==0.12.0 (CTest's
build/tinygrad-test-venv has all three). It starts two daemons (one per transport, default
flags plus anonymous compile/run/cache_read rights and a metrics endpoint, as in production) and
alternates every row over R rounds so load on the shared machine falls on all of them alike;
each figure is the median over rounds of a round's median.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from typing import Any, Callable, Optional

import numpy as np
import uopd

RIGHTS = "--anonymous_rights=compile,run,cache_read"


def start_daemons(daemon: str, work: str) -> tuple[list[subprocess.Popen[bytes]], dict[str, str]]:
    sock = os.path.join(work, "uopd.sock")
    port_file = os.path.join(work, "port")
    common = [RIGHTS, "--metrics=127.0.0.1:0", "--log_level=warning"]
    procs = [
        subprocess.Popen([daemon, "--listen=127.0.0.1:0", f"--port_file={port_file}",
                          f"--cache_dir={work}/tcp-cache", *common]),
        subprocess.Popen([daemon, f"--listen=unix:{sock}", f"--cache_dir={work}/unix-cache",
                          *common]),
    ]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (os.path.exists(port_file) and open(port_file).read().count("\n") >= 2
                and os.path.exists(sock)):
            break
        time.sleep(0.05)
    else:
        raise SystemExit("the daemons did not start within 30 s")
    return procs, {"TCP": open(port_file).readline().strip(), "unix": f"unix:{sock}"}


def plus_one_ast(n: int = 16) -> dict[str, Any]:
    """out[i] = in[i] + 1 over a 16-element loop: the kernel rpc_bench and tinygrad run too."""
    f32 = {"scalar": "FLOAT32"}
    index = {"scalar": "INDEX"}
    nodes = [
        {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "FLOAT32", "ptr": True, "size": n},
         "arg": {"i64": "0"}},                                                        # 0
        {"op": "CONST", "dtype": index, "arg": {"i64": str(n)}},                      # 1
        {"op": "RANGE", "dtype": index, "src": [1],
         "arg": {"range": {"axis": [0], "type": "LOOP"}}},                            # 2
        {"op": "INDEX", "dtype": {"scalar": "FLOAT32", "ptr": True, "size": n},
         "src": [0, 2]},                                                              # 3
        {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "FLOAT32", "ptr": True, "size": n},
         "arg": {"i64": "1"}},                                                        # 4
        {"op": "INDEX", "dtype": f32, "src": [4, 2]},                                 # 5
        {"op": "CONST", "dtype": f32, "arg": {"f64": 1.0}},                           # 6
        {"op": "ADD", "dtype": f32, "src": [5, 6]},                                   # 7
        {"op": "STORE", "dtype": {"scalar": "VOID"}, "src": [3, 7]},                  # 8
        {"op": "END", "dtype": {"scalar": "VOID"}, "src": [8, 2]},                    # 9
        {"op": "SINK", "dtype": {"scalar": "VOID"}, "src": [9]},                      # 10
    ]
    return {"nodes": nodes}


def python_rows(address: str, label: str, local_socket: bool) -> tuple[dict[str, Callable[[], Any]], Callable[[], None]]:
    client = uopd.Client(address, local_socket=local_socket)
    ast = uopd.as_graph(plus_one_ast())  # converted once, as a hot loop should (see as_graph)
    out = client.create_buffer("float32", 16)
    src = client.create_buffer("float32", 16, data=np.arange(16, dtype=np.float32))
    kernel = uopd.Kernel(ast, [out, src])
    plan = client.prepare([kernel])
    client.execute([kernel])
    if not np.array_equal(out.numpy(), np.arange(16, dtype=np.float32) + 1):
        raise SystemExit(f"{label}: the kernel computed the wrong values")
    if (client.local_socket is not None) != local_socket:
        raise SystemExit(f"{label}: the client's local socket is {client.local_socket}")
    rows = {
        f"Python, {label}: RunPlan, 16-element kernel": plan.run,
        f"Python, {label}: Execute, same kernel, 2 handles": lambda: client.execute([kernel]),
        f"Python, {label}: create_buffer + free (two calls)":
            lambda: client.create_buffer("float32", 4).free(),
    }
    if not local_socket:
        rows = {f"Python, {label}: empty RPC (cache_find_missing([]))":
                lambda: client.cache_find_missing([]), **rows}

    def close() -> None:
        plan.release()
        client.close()

    return rows, close


def tinygrad_rows() -> Optional[dict[str, Callable[[], Any]]]:
    try:
        from tinygrad import Tensor, TinyJit
    except ImportError:
        return None
    src = Tensor.arange(16, dtype="float32", device="CPU").contiguous().realize()

    @TinyJit
    def plus_one(x: Any) -> Any:
        return (x + 1).realize()

    for _ in range(5):  # TinyJit captures on its second call, replays from the third
        out = plus_one(src)
    if not np.array_equal(out.numpy(), np.arange(16, dtype=np.float32) + 1):
        raise SystemExit("tinygrad computed the wrong values")
    item = (src + 1).schedule()[-1]  # the same kernel, lowered on its first run
    item.run()
    return {
        "tinygrad CPU, local: TinyJit replay of the 1-kernel function": lambda: plus_one(src),
        "tinygrad CPU, local: the compiled kernel's ExecItem.run()": item.run,
    }


def timed(fn: Callable[[], Any], n: int) -> float:
    """The median host time of fn, seconds, over n calls after a warm-up."""
    for _ in range(max(10, n // 10)):
        fn()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cpp_rows(rpc_bench: str, address: str, label: str, n: int) -> dict[str, float]:
    out = subprocess.run([rpc_bench, "--address", address, "--iterations", str(n), "--tsv"],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0] == "row":
            rows[f"C++, {label}: {parts[1]}"] = float(parts[2]) * 1e-6
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("daemon")
    parser.add_argument("rpc_bench")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=400)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="uopd-local-path-")
    procs, addresses = start_daemons(args.daemon, work)
    closers = []
    try:
        py: dict[str, Callable[[], Any]] = {}
        for label, address, local_socket in [("TCP", addresses["TCP"], False),
                                             ("unix", addresses["unix"], False),
                                             ("unix, local socket", addresses["unix"], True)]:
            rows, close = python_rows(address, label, local_socket)
            py.update(rows)
            closers.append(close)
        local = tinygrad_rows()
        rounds: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for label, address in addresses.items():
                for name, t in cpp_rows(args.rpc_bench, address, label, args.iterations).items():
                    rounds.setdefault(name, []).append(t)
            for name, fn in {**py, **(local or {})}.items():
                rounds.setdefault(name, []).append(timed(fn, args.iterations))
        median = {name: statistics.median(ts) for name, ts in rounds.items()}
        print(f"{args.rounds} rounds x {args.iterations} calls per row; µs of host time per call")
        print()
        print("| call | median µs | vs empty RPC (same client, transport) |")
        print("|---|---|---|")
        for name, t in median.items():
            client_transport = name.split(":")[0].replace(", local socket", "")
            empty = next((v for k, v in median.items()
                          if k.startswith(client_transport + ":") and "empty RPC" in k), None)
            ratio = f"{t / empty:.2f}x" if empty and "tinygrad" not in name else ""
            print(f"| {name} | {t * 1e6:.1f} | {ratio} |")
        if local is None:
            print("\n(tinygrad is not installed in this Python: its rows are missing)")
        else:
            tiny = median["tinygrad CPU, local: TinyJit replay of the 1-kernel function"]
            print()
            for client, fast_row in (("C++", "C++, unix: local socket: RunPlan"),
                                     ("Python", "Python, unix, local socket: RunPlan, 16-element kernel")):
                t = median[f"{client}, unix: RunPlan, 16-element kernel"]
                print(f"{client} RunPlan / tinygrad's local TinyJit replay: over the unix gRPC "
                      f"socket {t / tiny:.2f}x, over the local socket {median[fast_row] / tiny:.2f}x")
        empty = median["Python, unix: empty RPC (cache_find_missing([]))"]
        pair = median["Python, unix, local socket: create_buffer + free (two calls)"]
        print(f"Python create_buffer + free over the local socket / an empty gRPC call over the "
              f"unix socket: {pair / empty:.2f}x")
    finally:
        for close in closers:
            close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait()


if __name__ == "__main__":
    main()
