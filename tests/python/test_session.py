"""Sessions: the buffers and plans a client makes are freed by the daemon when the client goes:
closed, exited, or killed (a tinygrad process through the UOPD device is such a client)."""

from __future__ import annotations

import asyncio
import pathlib
import signal
import subprocess
import sys
import time
import urllib.request
from typing import Any, Callable

import grpc
import numpy as np
import pytest

import uopd
import uopd.aio
from conftest import Daemon, FakeRpcError, start_daemon

BUFFER_BYTES = 300_000

# A client process: makes three buffers of BUFFER_BYTES (over the local socket when the daemon
# has one and argv[2] is "local") and a plan over two of them, says where its buffers went and
# "ready", then sleeps until it is killed, or with argv[3] "exit", exits without closing.
CHILD = """
import sys, time, uopd
address, transport, ending = sys.argv[1:4]
client = uopd.Client(address, timeout=60, local_socket=transport == "local")
n = %d // 4
out, src, _ = (client.create_buffer("FLOAT32", n) for _ in range(3))
ast = {"nodes": [
    {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "FLOAT32", "ptr": True, "size": n}, "arg": {"i64": "0"}},
    {"op": "CONST", "dtype": {"scalar": "INDEX"}, "arg": {"i64": str(n)}},
    {"op": "RANGE", "dtype": {"scalar": "INDEX"}, "src": [1],
     "arg": {"range": {"axis": [0], "type": "LOOP"}}},
    {"op": "INDEX", "dtype": {"scalar": "FLOAT32", "ptr": True, "size": n}, "src": [0, 2]},
    {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "FLOAT32", "ptr": True, "size": n}, "arg": {"i64": "1"}},
    {"op": "INDEX", "dtype": {"scalar": "FLOAT32"}, "src": [4, 2]},
    {"op": "STORE", "dtype": {"scalar": "VOID"}, "src": [3, 5]},
    {"op": "END", "dtype": {"scalar": "VOID"}, "src": [6, 2]},
    {"op": "SINK", "dtype": {"scalar": "VOID"}, "src": [7]}]}
client.prepare([uopd.Kernel(ast, [out, src])])
print(client.local_socket, client.session_id, flush=True)
print("ready", flush=True)
if ending == "exit":
    sys.exit(0)
time.sleep(600)
""" % BUFFER_BYTES


def metric(d: Daemon, series: str) -> float:
    """A sample of the daemon's /metrics (started with --metrics=127.0.0.1:0), -1 if absent."""
    address = (d.workdir / "port").read_text().splitlines()[1].strip()
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[1])
    return -1


def eventually(done: Callable[[], bool], seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def unix_daemon(tmp_path: pathlib.Path) -> Any:
    """A daemon on a unix socket (so with a local socket) whose anonymous clients of this host
    share 1 MB."""
    d = start_daemon(tmp_path / "daemon", "--anonymous_rights=compile,run",
                     "--max_client_bytes=1000000", "--metrics=127.0.0.1:0",
                     listen=f"unix:{tmp_path}/uopd.sock")
    yield d
    d.stop()


@pytest.mark.parametrize("transport,ending", [("grpc", "kill"), ("local", "kill"),
                                              ("local", "exit")])
def test_a_client_process_that_ends_leaves_nothing_behind(unix_daemon: Daemon, transport: str,
                                                          ending: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, unix_daemon.address, transport, ending],
                             stdout=subprocess.PIPE, text=True)
    try:
        where = child.stdout.readline().split()  # type: ignore[union-attr]
        assert child.stdout.readline() == "ready\n"  # type: ignore[union-attr]
        local_socket, session = where
        assert (local_socket != "None") == (transport == "local"), where
        assert session.startswith("sess-"), where
        if ending == "kill":
            assert metric(unix_daemon, "uopd_buffers") == 3
            assert metric(unix_daemon, "uopd_plans") == 1
            assert metric(unix_daemon, "uopd_sessions") == 1
            with uopd.Client(unix_daemon.address, timeout=30) as other:
                with pytest.raises(uopd.ResourceExhausted, match="over its limit"):
                    other.create_buffer("UINT8", BUFFER_BYTES)  # 900 of the host's 1000 kB held
            child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == (0 if ending == "exit" else -signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert eventually(lambda: metric(unix_daemon, "uopd_buffers") == 0), \
        metric(unix_daemon, "uopd_buffers")
    assert metric(unix_daemon, "uopd_plans") == 0
    assert metric(unix_daemon, "uopd_sessions") == 0
    assert metric(unix_daemon, "uopd_session_freed_total") == 4
    with uopd.Client(unix_daemon.address, timeout=30) as other:
        other.create_buffer("UINT8", BUFFER_BYTES)  # the quota is free again


def test_close_ends_the_session_and_session_false_keeps_resources(unix_daemon: Daemon) -> None:
    client = uopd.Client(unix_daemon.address, timeout=30)
    assert client.session_id is None  # opened with the first buffer
    client.create_buffer("UINT8", 16)
    session = client.session_id
    assert session is not None and session.startswith("sess-")
    client.from_numpy(np.zeros(4, np.float32))
    assert client.session_id == session  # one session for the client's life
    assert metric(unix_daemon, "uopd_buffers") == 2
    client.close()
    assert eventually(lambda: metric(unix_daemon, "uopd_buffers") == 0)

    kept = uopd.Client(unix_daemon.address, timeout=30, session=False)
    kept.create_buffer("UINT8", 16)
    assert kept.session_id is None
    kept.close()
    time.sleep(0.3)
    assert metric(unix_daemon, "uopd_buffers") == 1, "outside a session: kept until freed"
    assert metric(unix_daemon, "uopd_sessions") == 0

    async def main() -> None:
        async with uopd.aio.AsyncClient(unix_daemon.address, timeout=30) as client:
            await client.create_buffer("UINT8", 16)
            await client.create_buffer("UINT8", 16)
            assert client.session_id is not None
            assert metric(unix_daemon, "uopd_buffers") == 3

    asyncio.run(main())
    assert eventually(lambda: metric(unix_daemon, "uopd_buffers") == 1)


def test_a_session_that_ended_is_replaced(unix_daemon: Daemon) -> None:
    with uopd.Client(unix_daemon.address, timeout=30) as client:
        first = client.create_buffer("UINT8", 16)
        session = client.session_id
        client._session.call.cancel()  # as when the connection breaks: the daemon frees it all
        assert eventually(lambda: metric(unix_daemon, "uopd_buffers") == 0)
        with pytest.raises(uopd.NotFound):
            first.read()
        client.create_buffer("UINT8", 16)
        assert client.session_id not in (None, session)
        assert metric(unix_daemon, "uopd_sessions") == 1


class WithoutSessions:
    """A KernelService stub of a daemon from before sessions: OpenSession is UNIMPLEMENTED."""

    def __init__(self, stub: Any, asynchronous: bool = False) -> None:
        self.stub, self.asynchronous = stub, asynchronous

    def __getattr__(self, name: str) -> Any:
        if name != "OpenSession":
            return getattr(self.stub, name)
        error = FakeRpcError(grpc.StatusCode.UNIMPLEMENTED, "Method not found: OpenSession")

        class Call:
            async def read(self) -> None:
                raise error

        def open_session(*args: Any, **kwargs: Any) -> Any:
            if self.asynchronous:
                return Call()
            raise error
        return open_session


def test_a_daemon_without_sessions_is_used_without(unix_daemon: Daemon) -> None:
    with uopd.Client(unix_daemon.address, timeout=30) as client:
        client._stubs["kernels"] = WithoutSessions(client._stubs["kernels"])
        with client.create_buffer("UINT8", 4, data=b"abcd") as buffer:
            assert buffer.read() == b"abcd"
        assert client.session_id is None and not client._session.wanted

    async def main() -> None:
        async with uopd.aio.AsyncClient(unix_daemon.address, timeout=30) as client:
            client._stubs["kernels"] = WithoutSessions(client._stubs["kernels"], True)
            buffer = await client.create_buffer("UINT8", 4, data=b"wxyz")
            assert await buffer.read() == b"wxyz"
            await buffer.free()
            assert client.session_id is None and not client._session.wanted

    asyncio.run(main())


def test_sessions_past_the_bound_go_on_without_one(tmp_path: pathlib.Path) -> None:
    d = start_daemon(tmp_path / "daemon", "--anonymous_rights=compile,run",
                     "--max_sessions_per_client=1")
    try:
        with uopd.Client(d.address, timeout=30) as first, \
                uopd.Client(d.address, timeout=30) as second:
            first.create_buffer("UINT8", 4)
            with pytest.warns(RuntimeWarning, match="no session"):
                second.create_buffer("UINT8", 4)
            assert first.session_id is not None and second.session_id is None
    finally:
        d.stop()
