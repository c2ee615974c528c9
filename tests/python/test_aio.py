"""uopd.aio.AsyncClient against a real daemon: the same calls as the blocking client, through
grpc.aio (each test runs its own event loop)."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

import grpc
import numpy as np
import pytest

import uopd
import uopd.aio
from uopd.v1 import kernel_service_pb2 as ks

from conftest import (NO_SMALL_CALLS, Daemon, RecordingStub, assert_matches, expected_of,
                      load_case, load_plan, long_sum_ast, pause, plus_one_ast, slot_dtype,
                      start_daemon)

T = TypeVar("T")


def run(coroutine: Awaitable[T]) -> T:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def test_devices_compile_and_errors(daemon: Daemon) -> None:
    async def main() -> None:
        async with uopd.aio.AsyncClient(daemon.address, timeout=60) as client:
            await client.wait_ready(timeout=10)
            assert repr(client).startswith("<uopd.aio.AsyncClient")
            devices = await client.devices()
            assert devices[0].name == "CPU" and isinstance(devices[0], ks.DeviceInfo)
            case = load_case("hw_masked_shift_9")
            compiled = await client.compile(case, optimization="none", want_source=True)
            assert len(compiled.cache_key) == 64 and compiled.source
            case["ast"]["nodes"][5]["src"] = [99]
            with pytest.raises(uopd.InvalidArgument, match="node 5"):
                await client.compile(case)
            with pytest.raises(uopd.NotFound) as error:
                await client.read_buffer("no-such-handle")
            assert error.value.code == grpc.StatusCode.NOT_FOUND
            assert "no-such-handle" in error.value.message
    run(main())


def test_buffers_and_numpy(daemon: Daemon) -> None:
    async def main() -> None:
        async with uopd.aio.AsyncClient(daemon.address, timeout=60) as client:
            array = np.arange(-5, 5, dtype=np.int64)
            async with await client.from_numpy(array) as buffer:
                assert isinstance(buffer, uopd.aio.AsyncBuffer) and buffer.dtype == "INT64"
                np.testing.assert_array_equal(await buffer.numpy(), array)
                await buffer.write(np.array([42], np.int64), offset=8)
                assert await buffer.read(8, 8) == np.int64(42).tobytes()
                await client.write_buffer(buffer.handle, np.int64(7).tobytes())
                assert (await client.read_buffer(buffer, 0, 8)) == np.int64(7).tobytes()
                handle = buffer.handle
            assert buffer.freed
            with pytest.raises(uopd.NotFound):
                await client.free_buffer(handle)
            big = np.random.default_rng(3).standard_normal(3 << 20).astype(np.float32)  # 12 MiB
            buffer = await client.create_buffer("FLOAT32", big.size, data=big)
            np.testing.assert_array_equal(await buffer.numpy(), big)
            assert len(await client.read_buffer(buffer.handle)) == big.nbytes
            await client.free_buffer(buffer)
            assert buffer.freed
    run(main())


def test_small_copies_and_the_fallback(daemon: Daemon, small_calls: bool) -> None:
    async def main(without_small_calls: bool) -> list[str]:
        async with uopd.aio.AsyncClient(daemon.address, timeout=60) as client:
            stub = RecordingStub(client._stubs["kernels"], without_small_calls, asynchronous=True)
            client._stubs["kernels"] = stub
            buffer = await client.create_buffer("UINT8", 16)
            await buffer.write(b"xyz", offset=3)
            assert await buffer.read(2, 5) == b"\0xyz\0"
            assert client._state.small_calls is not without_small_calls
            # A loopback client first asks for the daemon's local socket (this one has none),
            # and opens its session with its first buffer.
            return [call for call in stub.calls
                    if call not in ("OpenLocalChannel", "OpenSession")]
    calls = run(main(without_small_calls=True))
    # UNIMPLEMENTED once, then streams for this client's life.
    assert calls == ["CreateBuffer", "WriteBufferSmall", "WriteBuffer", "ReadBuffer"]
    if not small_calls:
        pytest.skip(NO_SMALL_CALLS)
    calls = run(main(without_small_calls=False))
    assert calls == ["CreateBuffer", "WriteBufferSmall", "ReadBufferSmall"]


def test_executes_a_corpus_case(daemon: Daemon) -> None:
    case = load_case("cast_f32_to_f16_10")

    async def main() -> None:
        async with uopd.aio.AsyncClient(daemon.address, timeout=60) as client:
            buffers = [await client.create_buffer(b["dtype"], b["size"],
                                                  data=base64.b64decode(b["init"]))
                       for b in sorted(case["buffers"], key=lambda b: b["slot"])]
            result = await client.execute([uopd.Kernel(case["ast"], buffers)],
                                          vars=case["vars"], return_buffers=[buffers[0]])
            assert len(result.timings) == 1
            expected = expected_of(case, "slot", 0)
            assert_matches(result[buffers[0]], expected, slot_dtype(case, 0), case["tolerance"])
            assert result.numpy(buffers[0]).dtype == np.float16
            assert_matches(await buffers[0].read(), expected, "FLOAT16", case["tolerance"])
            # Concurrent calls on one client.
            reads = await asyncio.gather(*(b.read() for b in buffers))
            assert reads[0] == expected
    run(main())


def test_prepare_run_and_release_a_plan(daemon: Daemon) -> None:
    program = load_plan("sym_softmax_n8")

    async def main() -> None:
        async with uopd.aio.AsyncClient(daemon.address, timeout=60) as client:
            buffers = {b["id"]: await client.create_buffer(b["dtype"], b["size"],
                                                           data=base64.b64decode(b["init"]))
                       for b in program["buffers"]}
            kernels = [uopd.Kernel(k["ast"], [buffers[i] for i in k["bufs"]])
                       for k in program["kernels"]]
            async with await client.prepare(kernels) as plan:
                assert isinstance(plan, uopd.aio.AsyncPlan) and plan.vars == {"n": (1, 16)}
                result = await plan.run(vars=program["vars"],
                                        return_buffers=[buffers[o["id"]] for o in
                                                        program["outputs"]])
                for output in program["outputs"]:
                    assert_matches(result[buffers[output["id"]]],
                                   base64.b64decode(output["expected"]), "FLOAT32",
                                   program["tolerance"])
                plan_id = plan.plan_id
            assert plan.released
            with pytest.raises(uopd.NotFound):
                await client.run_plan(plan_id, vars={"n": 8})
            again = await client.prepare(kernels)
            await client.release_plan(again)
            assert again.released
    run(main())


def test_deadlines(daemon: Daemon) -> None:
    async def main() -> None:
        async with uopd.aio.AsyncClient(daemon.address, timeout=2.0) as client:
            out = await client.create_buffer("INT32", 1)
            data = await client.create_buffer("INT32", 4, data=np.arange(4, dtype=np.int32))
            start = time.monotonic()
            with pytest.raises(uopd.DeadlineExceeded):
                await client.execute([uopd.Kernel(long_sum_ast(1 << 44), [out, data])])
            assert time.monotonic() - start < 30
            with pytest.raises(uopd.DeadlineExceeded):
                await client.execute([uopd.Kernel(long_sum_ast(1 << 44), [out, data])],
                                     timeout=0.3)
            assert (await client.devices())[0].name == "CPU"
    run(main())


def test_cache_service_and_tokens(daemon: Daemon) -> None:
    async def main() -> None:
        async with uopd.aio.AsyncClient(daemon.address, token=daemon.admin_token,
                                        timeout=60) as admin:
            key = (await admin.compile(load_case("hw_masked_shift_9"))).cache_key
            assert (await admin.cache_stats()).tiers
            assert await admin.cache_find_missing([key]) == []
            entry = await admin.cache_get(key)
            assert entry is not None and entry.kernel().key == key
            await admin.cache_put(key, entry.value, entry.signature)
            assert await admin.cache_get("f" * 64) is None
        async with uopd.aio.AsyncClient(daemon.address, timeout=60) as anonymous:
            with pytest.raises(uopd.PermissionDenied, match="cache_write"):
                await anonymous.cache_put(key, b"", b"")
        async with uopd.aio.AsyncClient(daemon.address, token="x" * 20, timeout=60) as stranger:
            with pytest.raises(uopd.Unauthenticated):
                await stranger.create_buffer("INT8", 1)
    run(main())


def test_shares_request_building_with_the_sync_client() -> None:
    import inspect

    import uopd._client

    # Every public method of the sync client exists on the async one with the same parameters.
    for name, method in inspect.getmembers(uopd.Client, inspect.isfunction):
        if name.startswith("_") or name == "close":
            continue
        other: Any = getattr(uopd.aio.AsyncClient, name)
        assert inspect.iscoroutinefunction(other), name
        assert (list(inspect.signature(method).parameters)
                == list(inspect.signature(other).parameters)), name
    for name, method in inspect.getmembers(uopd._client.Buffer, inspect.isfunction):
        if not name.startswith("_") and name not in vars(uopd.BufferBase):
            assert inspect.iscoroutinefunction(getattr(uopd.aio.AsyncBuffer, name)), name


def test_local_calls_keep_their_deadlines_when_the_daemon_stalls(tmp_path: Any) -> None:
    socket = f"unix:{tmp_path}/uopd.sock"
    d = start_daemon(tmp_path / "daemon", "--anonymous_rights=compile,run", listen=socket)

    async def main() -> None:
        async with uopd.aio.AsyncClient(socket, timeout=30) as client:
            buffer = await client.create_buffer("uint8", 4)  # opens the local channel
            channel = client._local.channel
            assert channel is not None
            pause(d.process)
            try:
                holder = asyncio.ensure_future(buffer.read(timeout=1.0))
                await asyncio.sleep(0.2)
                start = time.monotonic()
                with pytest.raises(uopd.DeadlineExceeded, match="other calls held the channel"):
                    await client.create_buffer("uint8", 4, timeout=0.3)
                assert time.monotonic() - start < 1.0
                with pytest.raises(uopd.DeadlineExceeded):
                    await asyncio.wait_for(holder, 10)
                assert channel.broken
            finally:
                os.kill(d.process.pid, signal.SIGCONT)
            assert await buffer.read(timeout=10) == bytes(4)
            assert client._local.channel is not None and client._local.channel is not channel
            await buffer.free()

    try:
        run(main())
    finally:
        d.stop()


def test_a_local_channel_the_daemon_closed_while_idle_is_replaced_unseen(tmp_path: Any) -> None:
    socket = f"unix:{tmp_path}/uopd.sock"
    d = start_daemon(tmp_path / "daemon", "--anonymous_rights=compile,run",
                     "--local_socket_idle_timeout=1s", listen=socket)

    async def main() -> None:
        async with uopd.aio.AsyncClient(socket, timeout=30) as client:
            buffer = await client.create_buffer("float32", 4,
                                                data=np.arange(4, dtype=np.float32))
            first = client._local.channel
            assert first is not None
            await asyncio.sleep(2.5)  # the daemon hangs up on the idle channel
            assert await buffer.read() == np.arange(4, dtype=np.float32).tobytes()
            assert first.broken and client._local.channel is not first

    try:
        run(main())
    finally:
        d.stop()


def test_hot_calls_go_over_a_local_daemons_local_socket(tmp_path: Any) -> None:
    socket = f"unix:{tmp_path}/uopd.sock"
    d = start_daemon(tmp_path / "daemon", "--anonymous_rights=compile,run", listen=socket)

    async def main() -> None:
        async with uopd.aio.AsyncClient(socket, timeout=30) as client:
            stub = RecordingStub(client._stubs["kernels"], without_small_calls=False,
                                 asynchronous=True)
            client._stubs["kernels"] = stub
            out = await client.create_buffer("float32", 8)
            src = await client.create_buffer("float32", 8, data=np.arange(8, dtype=np.float32))
            assert client.local_socket == f"{tmp_path}/uopd.sock.local"
            plan = await client.prepare([uopd.Kernel(plus_one_ast(8), [out, src])])
            results = await asyncio.gather(
                *(plan.run(return_buffers=[out]) for _ in range(4)))
            for result in results:
                assert np.array_equal(result.numpy(out), np.arange(8, dtype=np.float32) + 1)
            with pytest.raises(uopd.NotFound):
                await client.run_plan("plan-none")
            await plan.release()
            await out.free()
            await src.free()
            assert set(stub.calls) == {"OpenSession", "OpenLocalChannel", "Prepare",
                                       "ReleasePlan"}, stub.calls

    try:
        run(main())
    finally:
        d.stop()
