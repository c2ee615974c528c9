"""Fixtures of the Python client tests: real uopd daemons on free loopback ports, and the
reference corpus (tests/corpus/README.md).

Environment (tests/python/run.sh sets it): UOPD_DAEMON, the daemon binary; UOPD_CORPUS_DIR,
tests/corpus; UOPD_SOURCE_DIR, the repository; UOPD_PROTOC_PYTHON, a Python with the
grpcio-tools release that client/python/regen_proto.sh pins.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

import grpc
import numpy as np
import pytest

import uopd

DAEMON = os.environ["UOPD_DAEMON"]
CORPUS = Path(os.environ["UOPD_CORPUS_DIR"])
SOURCE = Path(os.environ.get("UOPD_SOURCE_DIR", Path(__file__).resolve().parents[2]))


@dataclass
class Daemon:
    address: str
    process: subprocess.Popen
    workdir: Path
    admin_token: str = ""
    cluster_key: bytes = b""

    def stop(self) -> None:
        self.process.terminate()
        assert self.process.wait(timeout=30) == 0, "the daemon did not drain and exit cleanly"


def pause(process: subprocess.Popen) -> None:
    """Stops `process` (SIGSTOP) and returns once it is stopped: the signal is delivered a moment
    after kill() returns, and a thread of the daemon may answer a call meanwhile."""
    os.kill(process.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(f"/proc/{process.pid}/stat") as stat:
            if stat.read().rsplit(")", 1)[1].split()[0] in "tT":
                return
        time.sleep(0.005)
    raise RuntimeError(f"process {process.pid} did not stop")


def start_daemon(workdir: Path, *flags: str, listen: str = "127.0.0.1:0") -> Daemon:
    """Starts the daemon with `flags`; returns once it serves (it writes --port_file then). On
    TCP it has no local socket unless `flags` ask for one, so the hot calls of the tests of gRPC
    paths stay on gRPC."""
    if not listen.startswith("unix:") and not any(f.startswith("--local_socket") for f in flags):
        flags = (*flags, "--local_socket=")
    workdir.mkdir(parents=True, exist_ok=True)
    port_file = workdir / "port"
    log = open(workdir / "daemon.log", "wb")
    process = subprocess.Popen(
        [DAEMON, f"--listen={listen}", "--metrics=", f"--cache_dir={workdir}/cache",
         f"--port_file={port_file}", "--log_level=warning", "--compile_workers=2", *flags],
        stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if port_file.exists() and port_file.read_text().strip():
            return Daemon(port_file.read_text().splitlines()[0].strip(), process, workdir)
        if process.poll() is not None:
            break
        time.sleep(0.02)
    process.kill()
    process.wait()
    raise RuntimeError(f"{DAEMON} did not start: {(workdir / 'daemon.log').read_text()[-2000:]}")


@pytest.fixture(scope="session")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon with an identity file (an admin token; anonymous callers may compile and run)
    and a cluster key (CacheService.Put), whose searches take at most a second."""
    workdir = tmp_path_factory.mktemp("uopd")
    token = secrets.token_hex(16)
    (workdir / "identities").write_text(f"admin admin token:{token}\n")
    key = secrets.token_bytes(32)
    key_file = workdir / "cluster.key"
    key_file.write_bytes(base64.b64encode(key))
    key_file.chmod(0o600)
    d = start_daemon(workdir, f"--identities={workdir}/identities", "--anonymous_rights=compile,run",
                     f"--cluster_key_file={key_file}", "--search_budget=1s")
    d.admin_token = token
    d.cluster_key = key_file.read_bytes()  # the key is the file's bytes
    yield d
    d.stop()


@pytest.fixture
def client(daemon: Daemon) -> Iterator[uopd.Client]:
    """An anonymous client: a connection, and so an identity, of its own."""
    with uopd.Client(daemon.address, timeout=60) as c:
        yield c


@pytest.fixture
def admin(daemon: Daemon) -> Iterator[uopd.Client]:
    with uopd.Client(daemon.address, token=daemon.admin_token, timeout=60) as c:
        yield c


# --- kernels --------------------------------------------------------------------------------

def plus_one_ast(n: int) -> dict[str, Any]:
    """out[i] = in[i] + 1 over n float32 elements (slots out, in)."""
    f32, index = {"scalar": "FLOAT32"}, {"scalar": "INDEX"}
    ptr = {"scalar": "FLOAT32", "ptr": True, "size": n}
    return {"nodes": [
        {"op": "DEFINE_GLOBAL", "dtype": ptr, "arg": {"i64": "0"}},
        {"op": "CONST", "dtype": index, "arg": {"i64": str(n)}},
        {"op": "RANGE", "dtype": index, "src": [1], "arg": {"range": {"axis": [0], "type": "LOOP"}}},
        {"op": "INDEX", "dtype": ptr, "src": [0, 2]},
        {"op": "DEFINE_GLOBAL", "dtype": ptr, "arg": {"i64": "1"}},
        {"op": "INDEX", "dtype": f32, "src": [4, 2]},
        {"op": "CONST", "dtype": f32, "arg": {"f64": 1.0}},
        {"op": "ADD", "dtype": f32, "src": [5, 6]},
        {"op": "STORE", "dtype": {"scalar": "VOID"}, "src": [3, 7]},
        {"op": "END", "dtype": {"scalar": "VOID"}, "src": [8, 2]},
        {"op": "SINK", "dtype": {"scalar": "VOID"}, "src": [9]},
    ]}


# --- the corpus ---------------------------------------------------------------------------------

def load_case(name: str) -> dict[str, Any]:
    with open(CORPUS / "cases" / f"{name}.json") as f:
        return json.load(f)  # type: ignore[no-any-return]


def load_plan(name: str) -> dict[str, Any]:
    with open(CORPUS / "plans" / f"{name}.json") as f:
        return json.load(f)  # type: ignore[no-any-return]


def expected_of(case: dict[str, Any], key: str, which: int) -> bytes:
    for output in case["outputs"]:
        if output[key] == which:
            return base64.b64decode(output["expected"])
    raise KeyError(which)


def assert_matches(got: bytes, expected: bytes, dtype: str, tolerance: dict[str, float],
                   where: str = "") -> None:
    """The corpus's comparison: floats within atol + rtol * |expected| (NaN matches NaN, an
    infinity matches exactly), integers and bools exactly."""
    assert len(got) == len(expected), where
    if dtype in ("FLOAT16", "FLOAT32", "FLOAT64", "BFLOAT16"):
        if dtype == "BFLOAT16":  # the upper half of a float32
            as_f32 = lambda b: (np.frombuffer(b, "<u2").astype("<u4") << 16).view("<f4")  # noqa
            g, e = as_f32(got), as_f32(expected)
        else:
            g = np.frombuffer(got, uopd.numpy_dtype(dtype)).astype(np.float64)
            e = np.frombuffer(expected, uopd.numpy_dtype(dtype)).astype(np.float64)
        g, e = g.astype(np.float64), e.astype(np.float64)
        nan = np.isnan(e)
        assert (np.isnan(g) == nan).all(), where
        inf = np.isinf(e)
        assert (g[inf] == e[inf]).all(), where
        close = np.abs(g - e) <= tolerance["atol"] + tolerance["rtol"] * np.abs(e)
        assert close[~nan & ~inf].all(), (where, g, e)
    else:
        assert got == expected, where


def case_buffers(client: uopd.Client, case: dict[str, Any]) -> list[uopd.Buffer]:
    """A buffer for each slot of a case, holding its initial bytes."""
    return [client.create_buffer(b["dtype"], b["size"], data=base64.b64decode(b["init"]))
            for b in sorted(case["buffers"], key=lambda b: b["slot"])]


def slot_dtype(case: dict[str, Any], slot: int, key: str = "slot") -> str:
    return next(str(b["dtype"]) for b in case["buffers"] if b[key] == slot)


def long_sum_ast(iterations: int) -> dict[str, Any]:
    """out[0] = sum over k < iterations of in[k % 4] (int32): hours of work over 16 bytes."""
    index = {"scalar": "INDEX"}
    int32 = {"scalar": "INT32"}
    nodes = [
        {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "INT32", "ptr": True, "size": 1},
         "arg": {"i64": "0"}},                                                      # 0
        {"op": "CONST", "dtype": index, "arg": {"i64": "0"}},                       # 1
        {"op": "INDEX", "dtype": {"scalar": "INT32", "ptr": True, "size": 1},
         "src": [0, 1]},                                                            # 2
        {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "INT32", "ptr": True, "size": 4},
         "arg": {"i64": "1"}},                                                      # 3
        {"op": "CONST", "dtype": index, "arg": {"i64": str(iterations)}},           # 4
        {"op": "RANGE", "dtype": index, "src": [4],
         "arg": {"range": {"axis": [0], "type": "REDUCE"}}},                        # 5
        {"op": "CONST", "dtype": index, "arg": {"i64": "4"}},                       # 6
        {"op": "MOD", "dtype": index, "src": [5, 6]},                               # 7
        {"op": "INDEX", "dtype": int32, "src": [3, 7]},                             # 8
        {"op": "REDUCE", "dtype": int32, "src": [8, 5], "arg": {"op": "ADD"}},      # 9
        {"op": "STORE", "dtype": {"scalar": "VOID"}, "src": [2, 9]},                # 10
        {"op": "SINK", "dtype": {"scalar": "VOID"}, "src": [10]},                   # 11
    ]
    return {"nodes": nodes}


@pytest.fixture(scope="session")
def small_calls(daemon: Daemon) -> bool:
    """Whether the daemon has WriteBufferSmall / ReadBufferSmall (UNIMPLEMENTED before them)."""
    from uopd.v1 import kernel_service_pb2 as ks, kernel_service_pb2_grpc

    with grpc.insecure_channel(daemon.address) as channel:
        stub = kernel_service_pb2_grpc.KernelServiceStub(channel)
        try:
            stub.ReadBufferSmall(ks.ReadBufferRequest(handle="probe"), timeout=10)
        except grpc.RpcError as error:
            return error.code() != grpc.StatusCode.UNIMPLEMENTED
    return True


NO_SMALL_CALLS = "this uopd build answers UNIMPLEMENTED for WriteBufferSmall/ReadBufferSmall"


class FakeRpcError(grpc.RpcError):
    """What grpc raises for a failed call (grpc.RpcError with code() and details())."""

    def __init__(self, code: Any, details: str) -> None:
        super().__init__(details)
        self._code, self._details = code, details

    def code(self) -> Any:
        return self._code

    def details(self) -> str:
        return self._details


class RecordingStub:
    """Wraps a client's KernelService stub: records the methods called, and with
    `without_small_calls` answers WriteBufferSmall/ReadBufferSmall UNIMPLEMENTED, as a server
    from before them does (`asynchronous`: as grpc.aio's stubs do)."""

    def __init__(self, stub: Any, without_small_calls: bool, asynchronous: bool = False) -> None:
        self.stub, self.calls = stub, []  # type: ignore[var-annotated]
        self.without_small_calls, self.asynchronous = without_small_calls, asynchronous

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        if self.without_small_calls and name in ("WriteBufferSmall", "ReadBufferSmall"):
            error = FakeRpcError(grpc.StatusCode.UNIMPLEMENTED, f"Method not found: {name}")
            if self.asynchronous:
                async def fail_async(*args: Any, **kwargs: Any) -> None:
                    raise error
                return fail_async

            def fail(*args: Any, **kwargs: Any) -> None:
                raise error
            return fail
        return getattr(self.stub, name)
