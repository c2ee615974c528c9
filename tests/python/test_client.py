"""The `uopd` Python package (client/python) against a real daemon: every call of the blocking
client, numpy round trips, corpus kernels compared with tinygrad's outputs, plans with variables,
views, the cache service, credentials, deadlines and errors."""

from __future__ import annotations

import base64
import json
import math
import os
import pathlib
import pickle
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import grpc
import numpy as np
import pytest

import uopd
from uopd.v1 import graph_pb2, kernel_service_pb2 as ks

from conftest import (NO_SMALL_CALLS, Daemon, RecordingStub, assert_matches, case_buffers,
                      expected_of, load_case, load_plan, long_sum_ast, pause, plus_one_ast,
                      slot_dtype, start_daemon)

# --- devices and compilation -------------------------------------------------------------------


def test_lists_the_cpu_device(client: uopd.Client) -> None:
    devices = client.devices()
    assert [d.name for d in devices] == ["CPU"]
    assert isinstance(devices[0], ks.DeviceInfo)
    assert devices[0].compile_target.startswith(("x86_64", "aarch64"))
    assert devices[0].threads > 0


def test_compile_takes_every_form_of_ast(client: uopd.Client, tmp_path: pathlib.Path) -> None:
    case = load_case("hw_masked_shift_9")
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    graph = uopd.as_graph(case["ast"])
    forms: list[Any] = [graph, case["ast"], case, json.dumps(case), json.dumps(case["ast"]),
                        graph.SerializeToString(), path]
    keys = {client.compile(form).cache_key for form in forms}
    assert len(keys) == 1 and len(keys.pop()) == 64
    with pytest.raises(ValueError, match="not JSON"):
        client.compile("{nodes")
    with pytest.raises(ValueError, match="not a Graph"):
        client.compile({"nodes": [{"op": "NOT_AN_OP"}]})
    with pytest.raises(TypeError):
        client.compile(42)  # type: ignore[arg-type]


def test_compile_returns_source_binary_and_metadata(client: uopd.Client) -> None:
    case = load_case("hw_masked_shift_9")
    plain = client.compile(case)
    assert plain.source == "" and plain.binary == b""
    assert plain.cache_tier in ("compiled", "memory", "disk")
    assert plain.metadata.name and len(plain.metadata.globals) == len(case["buffers"])
    full = client.compile(case, want_source=True, want_binary=True, device="CPU")
    assert full.cache_key == plain.cache_key
    assert full.source and full.binary[:4] == b"\x7fELF" and full.entry
    again = client.compile(case)
    assert again.cache_tier == "memory"


def test_optimization_in_every_spelling(client: uopd.Client) -> None:
    case = load_case("mm_square_32")
    heuristic = client.compile(case, optimization="heuristic")
    spelled = uopd.opts_to_string(heuristic.applied_opts)
    assert spelled.startswith("UPCAST("), spelled
    # The opts the heuristics chose, sent back in each spelling, make the same kernel.
    as_tuples = [(o.op, o.axis, o.arg) for o in heuristic.applied_opts]
    as_dicts = [{"op": o.op, "axis": o.axis, "arg": o.arg} for o in heuristic.applied_opts]
    for spec in (spelled, as_tuples, as_dicts, list(heuristic.applied_opts)):
        response = client.compile(case, optimization=spec)
        assert response.cache_key == heuristic.cache_key, spec
        assert uopd.opts_to_string(response.applied_opts) == spelled
    unoptimized = client.compile(case, optimization="none")
    assert list(unoptimized.applied_opts) == [] and unoptimized.cache_key != heuristic.cache_key
    assert client.compile(case, optimization=[]).cache_key == unoptimized.cache_key
    one = client.compile(case, optimization=("UPCAST", 1, 4))  # a single opt tuple
    assert uopd.opts_to_string(one.applied_opts) == "UPCAST(1, 4)"
    searched = client.compile(case, optimization="search", timeout=120)
    assert searched.cache_key and len(searched.applied_opts) >= 0
    # The server names the opt that does not apply; the client rejects what it cannot parse.
    with pytest.raises(uopd.InvalidArgument) as error:
        client.compile(case, optimization="UPCAST(0, 7)")
    assert "UPCAST(0, 7)" in error.value.message
    with pytest.raises(ValueError, match="unknown opt op 'UPCASTX'"):
        client.compile(case, optimization="UPCASTX(0, 4)")


def test_bad_graph_is_invalid_argument_naming_the_node(client: uopd.Client) -> None:
    case = load_case("hw_masked_shift_9")
    case["ast"]["nodes"][5]["src"] = [99]
    with pytest.raises(uopd.InvalidArgument) as error:
        client.compile(case)
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "node 5" in error.value.message
    assert isinstance(error.value, ValueError) and isinstance(error.value, uopd.UopdError)


# --- buffers -----------------------------------------------------------------------------------

ROUND_TRIP_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                     "uint64", "float16", "float32", "float64"]


@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES)
def test_numpy_round_trip(client: uopd.Client, dtype: str) -> None:
    rng = np.random.default_rng(7)
    if dtype == "bool":
        array = rng.integers(0, 2, 37).astype(bool)
    elif dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        array = rng.integers(info.min, info.max, 37, dtype=dtype, endpoint=True)
    else:
        array = rng.standard_normal(37).astype(dtype)
    with client.from_numpy(array) as buffer:
        assert buffer.dtype == uopd.scalar_name(uopd.scalar_of(dtype))
        assert (buffer.size, buffer.nbytes) == (37, array.nbytes)
        back = buffer.numpy()
        assert back.dtype == np.dtype(dtype) and back.shape == (37,)
        np.testing.assert_array_equal(back, array)
        back[0] = back[1]  # a writable copy
        assert buffer.read() == array.tobytes()


@pytest.mark.parametrize("dtype", ["BFLOAT16", "FP8E4M3", "FP8E5M2"])
def test_extended_dtypes_with_ml_dtypes(client: uopd.Client, dtype: str) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    np_dtype = uopd.numpy_dtype(dtype)
    assert np_dtype == np.dtype({"BFLOAT16": ml_dtypes.bfloat16,
                                 "FP8E4M3": ml_dtypes.float8_e4m3fn,
                                 "FP8E5M2": ml_dtypes.float8_e5m2}[dtype])
    array = np.array([0.5, -1.0, 2.0, 0.0, 3.0], dtype=np_dtype)
    with client.from_numpy(array) as buffer:
        assert buffer.dtype == dtype
        np.testing.assert_array_equal(buffer.numpy(), array)


def test_bfloat16_without_ml_dtypes_is_its_bits(client: uopd.Client,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now fails
    assert uopd.numpy_dtype("BFLOAT16") == np.dtype("<u2")
    assert uopd.numpy_dtype("FP8E4M3") == np.dtype("u1")
    bits = np.array([0x3F80, 0xC000, 0x0000], dtype=np.uint16)  # 1.0, -2.0, 0.0
    with client.from_numpy(bits, dtype="BFLOAT16") as buffer:
        assert buffer.dtype == "BFLOAT16"
        np.testing.assert_array_equal(buffer.numpy(), bits)
        buffer.write(bits[::-1].copy())
        np.testing.assert_array_equal(buffer.numpy(), bits[::-1])


def test_buffer_write_read_and_free(client: uopd.Client) -> None:
    buffer = client.create_buffer("float32", 8)
    assert repr(buffer).startswith("<Buffer ") and "FLOAT32[8]" in repr(buffer)
    assert buffer.read() == bytes(32)  # zero-filled
    buffer.write(np.arange(8, dtype=np.float32))
    buffer.write(np.array([-1, -2], dtype=np.float32), offset=8)  # bytes
    buffer.write([7.5], offset=28)  # a list, in the buffer's dtype
    np.testing.assert_array_equal(buffer.numpy(), [0, 1, -1, -2, 4, 5, 6, 7.5])
    assert buffer.read(4, 8) == np.array([1, -1], np.float32).tobytes()
    assert buffer.read(8, 0) == b""
    with pytest.raises(ValueError, match="float64"):
        buffer.write(np.zeros(2))  # float64 into float32: refused, not reinterpreted
    assert client.read_buffer(buffer.handle, 0, 4) == bytes(4)  # by handle
    client.write_buffer(buffer.handle, b"\x00\x00\x80\x3f", 4)
    assert buffer.numpy()[1] == 1.0
    with pytest.raises(uopd.OutOfRange):
        buffer.write(bytes(8), offset=28)
    buffer.free()
    buffer.free()  # once
    assert buffer.freed and "freed" in repr(buffer)
    with pytest.raises(uopd.NotFound) as error:
        client.read_buffer(buffer.handle)
    assert error.value.code == grpc.StatusCode.NOT_FOUND
    assert buffer.handle in error.value.message
    with pytest.raises(uopd.NotFound):
        client.free_buffer(buffer.handle)


def test_create_buffer_arguments(client: uopd.Client) -> None:
    with client.create_buffer(graph_pb2.DType.INT16, 4, "CPU",
                              data=np.array([1, 2], np.int16)) as buffer:
        np.testing.assert_array_equal(buffer.numpy(), [1, 2, 0, 0])  # shorter data: a prefix
    for dtype in (np.float16, np.dtype("float16"), "half", "FLOAT16", "float16"):
        with client.create_buffer(dtype, 1) as buffer:
            assert buffer.dtype == "FLOAT16"
    with pytest.raises(ValueError, match="do not fit"):
        client.create_buffer("INT8", 2, data=b"abc")
    with pytest.raises(ValueError, match="unknown dtype"):
        client.create_buffer("COMPLEX64", 2)
    with pytest.raises(ValueError, match="not a buffer element type"):
        client.create_buffer(graph_pb2.DType.INDEX, 2)
    with pytest.raises(uopd.FailedPrecondition):
        client.create_buffer("FLOAT32", 4, device="CUDA:7")


def test_large_buffers_stream(client: uopd.Client) -> None:
    data = np.random.default_rng(1).integers(0, 255, 9 << 20, dtype=np.uint8)  # > 2 messages
    assert data.nbytes > 2 * uopd.SMALL_BYTES
    with client.from_numpy(data) as buffer:
        assert buffer.read() == data.tobytes()
        assert client.read_buffer(buffer.handle) == data.tobytes()  # length unknown up front
        assert buffer.read(5 << 20, 10) == data[5 << 20:(5 << 20) + 10].tobytes()
        buffer.write(bytes(6 << 20), offset=1 << 20)
        expected = data.copy()
        expected[1 << 20:7 << 20] = 0
        np.testing.assert_array_equal(buffer.numpy(), expected)


def test_small_copies_use_the_unary_calls(client: uopd.Client, small_calls: bool) -> None:
    if not small_calls:
        pytest.skip(NO_SMALL_CALLS)
    stub = RecordingStub(client._stubs["kernels"], without_small_calls=False)
    client._stubs["kernels"] = stub
    with client.create_buffer("UINT8", 4 << 20) as buffer:  # just over SMALL_BYTES
        buffer.write(b"abc", offset=10)
        assert buffer.read(9, 5) == b"\0abc\0"
        assert stub.calls.count("WriteBufferSmall") == 1 and "WriteBuffer" not in stub.calls
        assert stub.calls.count("ReadBufferSmall") == 1 and "ReadBuffer" not in stub.calls
        assert buffer.read()[10:13] == b"abc"  # too big for one message: streamed
        assert "ReadBuffer" in stub.calls
        stub.calls.clear()
        # By handle, the size is unknown: the unary call answers RESOURCE_EXHAUSTED, then the
        # client streams.
        assert len(client.read_buffer(buffer.handle)) == 4 << 20
        assert stub.calls == ["ReadBufferSmall", "ReadBuffer"]
        # Known to be too big for one message: straight to the stream.
        stub.calls.clear()
        assert len(buffer.read(0, 4 << 20)) == 4 << 20
        assert stub.calls == ["ReadBuffer"]
    assert client._state.small_calls


def test_servers_without_the_unary_calls_get_streams(client: uopd.Client) -> None:
    stub = RecordingStub(client._stubs["kernels"], without_small_calls=True)
    client._stubs["kernels"] = stub
    with client.create_buffer("INT32", 4) as buffer:
        buffer.write(np.array([1, 2], np.int32), offset=4)
        assert stub.calls[-2:] == ["WriteBufferSmall", "WriteBuffer"]
        np.testing.assert_array_equal(buffer.numpy(), [0, 1, 2, 0])
        assert client._state.small_calls is False  # learnt once: streams from now on
        stub.calls.clear()
        assert buffer.read(4, 4) == np.int32(1).tobytes()
        buffer.write(b"\x05\0\0\0")
        assert "WriteBufferSmall" not in stub.calls and "ReadBufferSmall" not in stub.calls


def test_buffers_belong_to_their_identity(daemon: Daemon, client: uopd.Client) -> None:
    mine = client.create_buffer("INT8", 4, data=b"abcd")
    with uopd.Client(daemon.address, timeout=30) as other:  # another anonymous connection
        with pytest.raises(uopd.NotFound):
            other.read_buffer(mine.handle)
    # A token's identity spans connections: outside a session, its handles survive a reconnect.
    with uopd.Client(daemon.address, token=daemon.admin_token, timeout=30,
                     session=False) as first:
        kept = first.create_buffer("INT8", 4, data=b"wxyz")
    with uopd.Client(daemon.address, token=daemon.admin_token, timeout=30) as second:
        assert second.read_buffer(kept.handle) == b"wxyz"
        second.free_buffer(kept.handle)


# --- execution ---------------------------------------------------------------------------------

CASES = ["hw_masked_shift_9", "cast_f16_to_bool_10", "cast_f16_to_i64_10", "cast_f32_to_f16_10",
         "ew_bf16_add_mul_6", "tr_exp_f64_9", "bit_not_u64_8", "sym_cat_i2"]


@pytest.mark.parametrize("name", CASES)
def test_runs_a_corpus_case_and_matches_tinygrad(client: uopd.Client, name: str) -> None:
    case = load_case(name)
    buffers = case_buffers(client, case)
    result = client.execute([uopd.Kernel(case["ast"], buffers)], vars=case["vars"])
    assert [t.kernel for t in result.timings] == [0]
    assert result.timings[0].end_ns >= result.timings[0].start_ns
    for output in case["outputs"]:
        slot = output["slot"]
        assert_matches(buffers[slot].read(), base64.b64decode(output["expected"]),
                       slot_dtype(case, slot), case["tolerance"], f"{name} slot {slot}")
    for buffer in buffers:
        buffer.free()


def test_execute_with_inline_buffers_and_returned_outputs(client: uopd.Client) -> None:
    case = load_case("hw_masked_shift_9")
    initial = {b["slot"]: np.frombuffer(base64.b64decode(b["init"]), uopd.numpy_dtype(b["dtype"]))
               for b in case["buffers"]}
    out = uopd.Inline("FLOAT32", initial[0].size)
    inputs = [initial[slot] for slot in range(1, len(initial))]
    result = client.execute(uopd.Kernel(uopd.as_graph(case["ast"]), [out, *inputs]),
                            return_buffers=[out])
    assert list(result.outputs) == [0]
    expected = expected_of(case, "slot", 0)
    assert_matches(result[out], expected, "FLOAT32", case["tolerance"])
    assert_matches(result.numpy(0).tobytes(), expected, "FLOAT32", case["tolerance"])
    assert result.numpy(out).dtype == np.float32
    assert result.numpy(out, dtype="UINT8").tobytes() == expected  # the same bytes, reread
    # The same with explicit buffers and indices, kernels as tuples and dicts.
    buffers = [out, *inputs]
    slots = list(range(len(buffers)))
    for kernel in ((case["ast"], slots), {"ast": case["ast"], "buffers": slots}):
        result = client.execute([kernel], buffers, return_buffers=[0])
        assert_matches(result.outputs[0], expected, "FLOAT32", case["tolerance"])
    with pytest.raises(IndexError):
        client.execute([(case["ast"], [0, 9])], buffers)
    with pytest.raises(ValueError, match="not one of the buffers"):
        client.execute([(case["ast"], slots)], buffers, return_buffers=[np.zeros(1)])


def test_views_onto_a_byte_buffer(client: uopd.Client) -> None:
    """tinygrad's allocator is byte-addressed: one UINT8 allocation, a typed view per slot."""
    case = load_case("hw_masked_shift_9")
    slots = sorted(case["buffers"], key=lambda b: b["slot"])
    offsets, at = [], 0
    for b in slots:
        offsets.append(at)
        at += -(-b["size"] * uopd.SCALARS[b["dtype"]] // 64) * 64  # 64-byte aligned
    with client.create_buffer("UINT8", at) as arena:
        for b, offset in zip(slots, offsets):
            arena.write(base64.b64decode(b["init"]), offset=offset)
        views = [arena.view(b["dtype"], b["size"], offset) for b, offset in zip(slots, offsets)]
        assert views[1] == uopd.ViewRef(arena, offsets[1], slots[1]["dtype"], slots[1]["size"])
        result = client.execute([uopd.Kernel(case["ast"], views)], return_buffers=[views[0]])
        expected = expected_of(case, "slot", 0)
        assert_matches(result[views[0]], expected, "FLOAT32", case["tolerance"])
        assert_matches(arena.read(offsets[0], len(expected)), expected, "FLOAT32",
                       case["tolerance"])
        # Views by index of an earlier entry, the wire's own form.
        buffers = [arena] + [uopd.ViewRef(0, o, b["dtype"], b["size"])
                             for b, o in zip(slots, offsets)]
        client.execute([(case["ast"], list(range(1, len(buffers))))], buffers)
        with pytest.raises(ValueError, match="before the view"):
            client.execute([(case["ast"], [0])], [views[0], arena])
        with pytest.raises(uopd.OutOfRange):
            client.execute([uopd.Kernel(case["ast"], [arena.view("FLOAT32", at, 4)] + views[1:])])


def test_prepare_and_run_a_plan_with_a_variable(client: uopd.Client) -> None:
    small, large = load_plan("sym_softmax_n3"), load_plan("sym_softmax_n8")
    assert [k["ast"] for k in small["kernels"]] == [k["ast"] for k in large["kernels"]]
    buffers = {b["id"]: client.create_buffer(b["dtype"], b["size"]) for b in small["buffers"]}
    kernels = [uopd.Kernel(k["ast"], [buffers[i] for i in k["bufs"]]) for k in small["kernels"]]
    with client.prepare(kernels) as plan:
        assert plan.vars == {"n": (1, 16)}
        assert len(plan.kernels) == 3 and all(len(k.cache_key) == 64 for k in plan.kernels)
        assert list(plan.kernels[2].dependencies)  # the last kernel waits for the others
        for program in (small, large, small):
            for b in program["buffers"]:  # inputs, and the poison pattern in outputs
                buffers[b["id"]].write(base64.b64decode(b["init"]))
            result = plan.run(vars=program["vars"], return_buffers=[buffers[3]])
            assert len(result.timings) == 3
            for output in program["outputs"]:
                got = buffers[output["id"]].read()
                assert_matches(got, base64.b64decode(output["expected"]), "FLOAT32",
                               program["tolerance"], f"{program['name']} buffer {output['id']}")
            assert result[buffers[3]] == buffers[3].read()
        with pytest.raises(uopd.InvalidArgument, match="n"):
            plan.run(vars={"n": 17})  # past its bounds
        plan_id = plan.plan_id
    assert plan.released
    with pytest.raises(uopd.NotFound):
        client.run_plan(plan_id, vars={"n": 3})
    for buffer in buffers.values():
        buffer.free()


def test_plans_by_id_and_explicit_release(client: uopd.Client) -> None:
    case = load_case("sym_cat_i2")
    inputs = {b["slot"]: base64.b64decode(b["init"]) for b in case["buffers"]}
    buffers = [uopd.Inline(b["dtype"], b["size"], inputs[b["slot"]])
               for b in sorted(case["buffers"], key=lambda b: b["slot"])]
    plan = client.prepare([(case["ast"], [0, 1, 2])], buffers)
    assert "i" in plan.vars and repr(plan).startswith("<Plan ")
    result = client.run_plan(plan.plan_id, vars=case["vars"], return_buffers=[0])
    assert_matches(result.outputs[0], expected_of(case, "slot", 0), "FLOAT32", case["tolerance"])
    with pytest.raises(ValueError, match="dtype"):
        result.numpy(0)  # by id: the client has no bindings to know the dtype from
    assert result.numpy(0, dtype="FLOAT32").size == 36
    client.release_plan(plan.plan_id)
    with pytest.raises(uopd.NotFound):
        client.release_plan(plan.plan_id)


# --- deadlines ---------------------------------------------------------------------------------

def test_a_call_past_its_deadline_stops_its_kernel(daemon: Daemon) -> None:
    with uopd.Client(daemon.address, timeout=2.0) as client:  # the default of every call
        assert client.timeout == 2.0
        out = client.create_buffer("INT32", 1)
        data = client.create_buffer("INT32", 4, data=np.array([1, 2, 3, 4], np.int32))
        client.execute([uopd.Kernel(long_sum_ast(1000), [out, data])])
        assert out.numpy()[0] == 2500  # 250 rounds of 1 + 2 + 3 + 4
        start = time.monotonic()
        with pytest.raises(uopd.DeadlineExceeded) as error:
            client.execute([uopd.Kernel(long_sum_ast(1 << 44), [out, data])])
        assert isinstance(error.value, TimeoutError)
        assert time.monotonic() - start < 30
        # A call's own deadline beats the client's.
        start = time.monotonic()
        with pytest.raises(uopd.DeadlineExceeded):
            client.execute([uopd.Kernel(long_sum_ast(1 << 44), [out, data])], timeout=0.5)
        assert time.monotonic() - start < 10
        assert client.devices(timeout=math.inf)  # no deadline at all
        # The daemon serves on, this connection too; the session's teardown checks that it
        # still drains and exits cleanly, which it could not with a kernel still running.
        assert out.numpy()[0] == 2500


# --- credentials -------------------------------------------------------------------------------

def test_tokens(daemon: Daemon, tmp_path: pathlib.Path) -> None:
    with uopd.Client(daemon.address, token="not-a-token-of-this-server", timeout=30) as client:
        with pytest.raises(uopd.Unauthenticated):
            client.create_buffer("INT8", 1)
    token_file = tmp_path / "token"
    token_file.write_text(daemon.admin_token + "\n")
    with uopd.Client(daemon.address, token_file=token_file, timeout=30) as client:
        assert client.cache_stats().tiers
        assert client.cache_find_missing([]) == []
    with pytest.raises(ValueError, match="not both"):
        uopd.Client(daemon.address, token="a", token_file=token_file)


def _openssl(*args: str, cwd: pathlib.Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def test_tls_with_client_certificates(tmp_path: pathlib.Path) -> None:
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make certificates with")
    ca, ext = ["-days", "2"], tmp_path / "ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.pem", "-subj", "/CN=uopd test CA", *ca, cwd=tmp_path)
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
                 f"{name}.csr", "-subj", f"/CN={name}", cwd=tmp_path)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.pem", "-extfile", "ext", *ca, cwd=tmp_path)
    d = start_daemon(tmp_path / "daemon", f"--tls_cert={tmp_path}/server.pem",
                     f"--tls_key={tmp_path}/server.key", f"--tls_client_ca={tmp_path}/ca.pem")
    try:
        # Paths, and PEM text: both work.
        with uopd.Client(d.address, tls_root_certs=tmp_path / "ca.pem",
                         tls_cert_chain=(tmp_path / "client.pem").read_text(),
                         tls_private_key=(tmp_path / "client.key").read_bytes(),
                         timeout=30) as client:
            assert client.devices()[0].name == "CPU"
            with client.create_buffer("INT8", 3, data=b"tls") as buffer:
                assert buffer.read() == b"tls"
        with uopd.Client(d.address, tls_root_certs=tmp_path / "ca.pem", timeout=10) as client:
            with pytest.raises(uopd.Unavailable):  # no client certificate
                client.devices()
        with uopd.Client(d.address, timeout=10) as client:
            with pytest.raises(uopd.Unavailable):  # plaintext to a TLS port
                client.devices()
    finally:
        d.stop()
    with pytest.raises(ValueError, match="both"):
        uopd.Client(d.address, tls_cert_chain=tmp_path / "client.pem")


def test_unix_socket_address(tmp_path: pathlib.Path) -> None:
    socket = f"unix:{tmp_path}/uopd.sock"
    d = start_daemon(tmp_path / "daemon", listen=socket)
    try:
        with uopd.Client(socket, timeout=30) as client:
            client.wait_ready(timeout=10)
            assert client.address == socket
            assert client.devices()[0].name == "CPU"
    finally:
        d.stop()
    with uopd.Client(socket, timeout=30) as client:
        with pytest.raises(uopd.Unavailable):
            client.wait_ready(timeout=0.5)
        with pytest.raises(uopd.Unavailable):
            client.devices()


def test_hot_calls_go_over_a_local_daemons_local_socket(tmp_path: pathlib.Path,
                                                       daemon: Daemon) -> None:
    socket = f"unix:{tmp_path}/uopd.sock"
    d = start_daemon(tmp_path / "daemon", "--anonymous_rights=compile,run", listen=socket)
    try:
        with uopd.Client(socket, timeout=30) as client:
            stub = RecordingStub(client._stubs["kernels"], without_small_calls=False)
            client._stubs["kernels"] = stub
            assert client.local_socket == f"{tmp_path}/uopd.sock.local"
            with client.create_buffer("float32", 8) as out, \
                    client.from_numpy(np.arange(8, dtype=np.float32)) as src:
                kernel = uopd.Kernel(plus_one_ast(8), [out, src])
                result = client.execute([kernel], return_buffers=[out])
                assert np.array_equal(result.numpy(out), np.arange(8, dtype=np.float32) + 1)
                with client.prepare([kernel]) as plan:
                    for i in range(3):
                        src.write(np.full(8, i, dtype=np.float32))
                        result = plan.run(return_buffers=[out])
                        assert np.array_equal(result.numpy(out), np.full(8, i + 1, np.float32))
                        assert np.array_equal(out.numpy(), np.full(8, i + 1, np.float32))
                    with pytest.raises(uopd.InvalidArgument, match="nope"):
                        plan.run(vars={"nope": 1})  # the RPC's errors, as the RPC says them
                    with pytest.raises(uopd.NotFound):
                        client.run_plan("plan-none")
                    # Another client is another identity, over its own local channel too.
                    with uopd.Client(socket, timeout=30) as other:
                        assert other.local_socket is not None
                        with pytest.raises(uopd.NotFound):
                            other.run_plan(plan.plan_id)
                        with pytest.raises(uopd.NotFound):
                            other.read_buffer(out.handle)
            assert set(stub.calls) == {"OpenSession", "OpenLocalChannel", "Prepare",
                                       "ReleasePlan"}, stub.calls
            with pytest.raises(uopd.NotFound):
                client.free_buffer(out.handle)  # freed once, on leaving the with block
        with uopd.Client(socket, timeout=30, local_socket=False) as client:
            assert client.local_socket is None
            assert client.create_buffer("uint8", 4).read() == bytes(4)
    finally:
        d.stop()
    # A daemon without one (--local_socket=): calls stay on gRPC, or fail if it is required.
    with uopd.Client(daemon.address, timeout=30) as client:
        assert client.local_socket is None
    with uopd.Client(daemon.address, timeout=30, local_socket=True) as client:
        with pytest.raises(uopd.FailedPrecondition, match="local_socket"):
            client.create_buffer("uint8", 4)


def test_a_local_channel_the_daemon_closed_while_idle_is_replaced_unseen(
        tmp_path: pathlib.Path) -> None:
    socket = f"unix:{tmp_path}/uopd.sock"
    d = start_daemon(tmp_path / "daemon", "--anonymous_rights=compile,run",
                     "--local_socket_idle_timeout=1s", listen=socket)
    try:
        with uopd.Client(socket, timeout=30) as client:
            with client.from_numpy(np.arange(4, dtype=np.float32)) as buffer:
                first = client._local.channel
                assert first is not None
                time.sleep(2.5)  # the daemon hangs up on the idle channel
                assert np.array_equal(buffer.numpy(), np.arange(4, dtype=np.float32))
                assert first.broken and client._local.channel is not first
    finally:
        d.stop()


def test_a_loopback_daemon_has_a_private_local_socket(tmp_path: pathlib.Path) -> None:
    # As `make serve` starts it: loopback TCP, --local_socket=auto (the default).
    d = start_daemon(tmp_path / "daemon", "--anonymous_rights=compile,run", "--local_socket=auto")
    try:
        port = d.address.rsplit(":", 1)[1]
        for address in (d.address, f"localhost:{port}", f"ipv4:127.0.0.1:{port}"):
            with uopd.Client(address, timeout=30) as client:
                stub = RecordingStub(client._stubs["kernels"], without_small_calls=False)
                client._stubs["kernels"] = stub
                path = client.local_socket
                assert path is not None and path.endswith(f"/uopd-{d.process.pid}.local"), path
                directory = pathlib.Path(path).parent
                assert directory.stat().st_mode & 0o777 == 0o700
                assert directory.stat().st_uid == os.getuid()
                with client.from_numpy(np.arange(4, dtype=np.float32)) as buffer:
                    assert np.array_equal(buffer.numpy(), np.arange(4, dtype=np.float32))
                assert stub.calls == ["OpenLocalChannel", "OpenSession"], stub.calls
    finally:
        d.stop()
    assert not pathlib.Path(path).exists(), "the daemon removes its socket on exit"
    # A TCP address not on this machine never asks for one.
    with uopd.Client("203.0.113.7:50051") as remote:
        assert not remote._local.wanted


def test_local_calls_keep_their_deadlines_when_the_daemon_stalls(tmp_path: pathlib.Path) -> None:
    socket = f"unix:{tmp_path}/uopd.sock"
    d = start_daemon(tmp_path / "daemon", "--anonymous_rights=compile,run", listen=socket)
    try:
        with uopd.Client(socket, timeout=30) as client:
            buffer = client.create_buffer("uint8", 4)  # opens the local channel
            channel = client._local.channel
            assert channel is not None
            failures: dict[str, BaseException] = {}

            def hold() -> None:  # waits on the stalled daemon, holding the shared channel
                try:
                    buffer.read(timeout=1.0)
                except uopd.UopdError as error:
                    failures["holder"] = error

            pause(d.process)
            try:
                holder = threading.Thread(target=hold)
                holder.start()
                time.sleep(0.2)
                start = time.monotonic()
                # A call behind it ends at its own deadline, not the holder's.
                with pytest.raises(uopd.DeadlineExceeded, match="other calls held the channel"):
                    client.create_buffer("uint8", 4, timeout=0.3)
                assert time.monotonic() - start < 1.0
                holder.join(timeout=10)
                assert not holder.is_alive()
                assert isinstance(failures.get("holder"), uopd.DeadlineExceeded), failures
                assert channel.broken
                with pytest.raises(uopd.Unavailable, match="closed after an earlier call"):
                    channel.call("FreeBuffer", ks.FreeBufferRequest(handle=buffer.handle))
            finally:
                os.kill(d.process.pid, signal.SIGCONT)
            # The daemon is back: the client's next hot call opens a new channel.
            assert buffer.read(timeout=10) == bytes(4)
            assert client._local.channel is not None and client._local.channel is not channel
            buffer.free()
    finally:
        d.stop()


# --- the cache service -------------------------------------------------------------------------

def test_cache_service(daemon: Daemon, client: uopd.Client, admin: uopd.Client) -> None:
    compiled = client.compile(load_case("hw_masked_shift_9"))
    key, absent = compiled.cache_key, "0" * 64
    with pytest.raises(uopd.PermissionDenied) as error:
        client.cache_get(key)  # anonymous callers have compile and run only
    assert "cache_read" in error.value.message and isinstance(error.value, PermissionError)
    stats = admin.cache_stats()
    assert {t.tier for t in stats.tiers} >= {"memory", "disk"}
    assert sum(c.compilations for c in stats.compiles) >= 1
    assert admin.cache_find_missing([key, absent]) == [absent]
    assert admin.cache_get(absent) is None
    entry = admin.cache_get(key)
    assert entry is not None and entry.value and entry.kernel().key == key
    assert entry.signature == uopd.sign_cache_entry(daemon.cluster_key, key, entry.value)
    admin.cache_put(key, entry.value, entry.signature)
    admin.cache_put(key, entry.kernel(), entry.signature)  # the message, serialized for you
    with pytest.raises(uopd.PermissionDenied, match="signature"):
        admin.cache_put(key, entry.value, bytes(32))
    with pytest.raises(uopd.PermissionDenied, match="not signed"):
        admin.cache_put(key, entry.value)
    with pytest.raises(uopd.InvalidArgument, match="hex"):
        admin.cache_get("not-a-key")


# --- errors ------------------------------------------------------------------------------------

def test_errors_are_typed_and_pickle() -> None:
    error = uopd.UopdError(grpc.StatusCode.NOT_FOUND, "no buffer 'x'")
    assert type(error) is uopd.NotFound and isinstance(error, LookupError)
    assert str(error) == "NOT_FOUND: no buffer 'x'"
    assert error.code == grpc.StatusCode.NOT_FOUND and error.message == "no buffer 'x'"
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is uopd.NotFound and again.message == error.message
    other = uopd.UopdError(grpc.StatusCode.DATA_LOSS, "gone")
    assert type(other) is uopd.UopdError and other.code == grpc.StatusCode.DATA_LOSS
    for cls, base in ((uopd.DeadlineExceeded, TimeoutError), (uopd.Unavailable, ConnectionError),
                      (uopd.OutOfRange, IndexError), (uopd.Unimplemented, NotImplementedError)):
        made = uopd.UopdError(cls.CODE, "m")
        assert type(made) is cls and isinstance(made, base) and str(made) == f"{cls.CODE.name}: m"


def test_a_dead_server_is_unavailable() -> None:
    with uopd.Client("127.0.0.1:1", timeout=5) as client:
        with pytest.raises(uopd.Unavailable):
            client.devices()
