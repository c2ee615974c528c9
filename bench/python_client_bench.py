#!/usr/bin/env python3
"""Host time of small calls from the Python package (`uopd`), TCP loopback vs a unix socket, and
16-byte copies by stream vs by the unary calls (issue 11's local path), interleaved so load on
the shared machine falls on every row alike. Starts its own daemon.

    build/pyvenv/bin/python bench/python_client_bench.py build/server/uopd [iterations]
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import grpc
import uopd
from uopd.v1 import kernel_service_pb2 as ks, kernel_service_pb2_grpc as ks_grpc

daemon_path = sys.argv[1]
iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 500
work = tempfile.mkdtemp(prefix="uopd-pybench-")
sock = os.path.join(work, "uopd.sock")
port_file = os.path.join(work, "port")
proc = subprocess.Popen([daemon_path, "--listen=127.0.0.1:0", "--metrics=", f"--cache_dir={work}/c",
                         f"--port_file={port_file}", "--log_level=warning"])
unix_proc = subprocess.Popen([daemon_path, f"--listen=unix:{sock}", "--metrics=",
                              f"--cache_dir={work}/c2", "--log_level=warning"])
try:
    for _ in range(200):
        if os.path.exists(port_file) and open(port_file).read().count("\n") >= 1 and os.path.exists(sock):
            break
        time.sleep(0.05)
    tcp_address = open(port_file).readline().strip()
    clients = {"tcp": uopd.Client(tcp_address), "unix": uopd.Client(f"unix:{sock}")}
    # Buffers belong to their connection: the stream calls go over each client's own channel.
    raw = {name: ks_grpc.KernelServiceStub(c._channel) for name, c in clients.items()}
    sixteen = b"\x01" * 16
    rows: dict[str, list[float]] = {}

    def timed(name: str, fn) -> None:
        start = time.perf_counter()
        fn()
        rows.setdefault(name, []).append(time.perf_counter() - start)

    buffers = {name: c.create_buffer("uint8", 16) for name, c in clients.items()}
    for i in range(iterations + 50):
        for name, c in clients.items():
            stub, buf = raw[name], buffers[name]
            ops = [
                (f"{name}: devices() (a unary call)", lambda: c.devices()),
                (f"{name}: create_buffer + free", lambda: c.create_buffer("float32", 4).free()),
                (f"{name}: write 16 bytes (unary WriteBufferSmall)", lambda: buf.write(sixteen)),
                (f"{name}: write 16 bytes (WriteBuffer stream)",
                 lambda: stub.WriteBuffer(iter([ks.WriteBufferChunk(handle=buf.handle, data=sixteen)]))),
                (f"{name}: read 16 bytes (unary ReadBufferSmall)", lambda: buf.read()),
                (f"{name}: read 16 bytes (ReadBuffer stream)",
                 lambda: b"".join(c.data for c in stub.ReadBuffer(ks.ReadBufferRequest(handle=buf.handle)))),
            ]
            for label, fn in ops:
                if i < 50:
                    fn()
                else:
                    timed(label, fn)
    print(f"{iterations} interleaved iterations per row, one daemon per transport\n")
    print("| call | median µs | p90 µs |")
    print("|---|---|---|")
    for label, samples in rows.items():
        samples.sort()
        print(f"| {label} | {statistics.median(samples) * 1e6:.0f} | {samples[int(0.9 * len(samples))] * 1e6:.0f} |")
finally:
    proc.terminate()
    unix_proc.terminate()
    proc.wait()
    unix_proc.wait()
