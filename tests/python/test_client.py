"""Proof that another language can use uopd: the Python client against a real daemon."""

import base64
import glob
import json
import os
import struct
import subprocess
import tempfile
import time

import pytest

from uopd_client import Client, UopdError, graph_from_json

DAEMON = os.environ["UOPD_DAEMON"]
CORPUS = os.environ["UOPD_CORPUS_DIR"]


@pytest.fixture(scope="module")
def server():
    workdir = tempfile.mkdtemp(prefix="uopd-python-")
    port_file = os.path.join(workdir, "port")
    process = subprocess.Popen([DAEMON, "--listen=127.0.0.1:0", "--metrics=127.0.0.1:0",
                                f"--cache_dir={workdir}/cache", f"--port_file={port_file}",
                                "--log_level=warning"])
    for _ in range(400):
        if os.path.exists(port_file):
            break
        time.sleep(0.05)
    with open(port_file) as f:
        address = f.readline().strip()
    yield address
    process.terminate()
    assert process.wait(timeout=30) == 0


def test_lists_the_cpu_device(server):
    with Client(server) as client:
        devices = client.list_devices()
    assert [d.name for d in devices] == ["CPU"]
    assert devices[0].compile_target.startswith(("x86_64", "aarch64"))
    assert devices[0].description.split(" ")[0] in ("x86_64", "aarch64")


def test_buffers_round_trip(server):
    data = bytes(range(256)) * 5000  # over a MiB: several chunks each way
    with Client(server) as client:
        handle = client.create_buffer("UINT8", len(data), data)
        assert client.read_buffer(handle) == data
        assert client.read_buffer(handle, offset=10, length=5) == data[10:15]
        client.free_buffer(handle)
        with pytest.raises(UopdError) as error:
            client.read_buffer(handle)
        assert error.value.code.name == "NOT_FOUND"


def _compare_float32(got: bytes, expected: bytes, rtol: float, atol: float) -> None:
    count = len(expected) // 4
    for g, e in zip(struct.unpack(f"<{count}f", got), struct.unpack(f"<{count}f", expected)):
        assert abs(g - e) <= atol + rtol * abs(e), (g, e)


def test_runs_a_corpus_case_and_matches_tinygrad(server):
    with open(os.path.join(CORPUS, "cases", "hw_masked_shift_9.json")) as f:
        case = json.load(f)
    with Client(server) as client:
        handles = {}
        for buffer in sorted(case["buffers"], key=lambda b: b["slot"]):
            handles[buffer["slot"]] = client.create_buffer(
                buffer["dtype"], buffer["size"], base64.b64decode(buffer["init"]))
        slots = sorted(handles)
        response = client.execute([{"ast": graph_from_json(case["ast"]), "buffers": slots}],
                                  [handles[s] for s in slots], case["vars"])
        assert len(response.timings) == 1
        for output in case["outputs"]:
            got = client.read_buffer(handles[output["slot"]])
            _compare_float32(got, base64.b64decode(output["expected"]),
                             case["tolerance"]["rtol"], case["tolerance"]["atol"])


def test_bad_graph_is_invalid_argument_naming_the_node(server):
    with open(os.path.join(CORPUS, "cases", "hw_masked_shift_9.json")) as f:
        case = json.load(f)
    case["ast"]["nodes"][5]["src"] = [99]
    with Client(server) as client:
        with pytest.raises(UopdError) as error:
            client.compile(graph_from_json(case["ast"]))
    assert error.value.code.name == "INVALID_ARGUMENT"
    assert "node 5" in error.value.message


def _long_sum_ast(iterations: int) -> dict:
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


def test_a_call_past_its_deadline_stops_its_kernel(server):
    # Every call of this client has a 2 s deadline (buffers belong to the connection).
    with Client(server, timeout=2.0) as client:
        out = client.create_buffer("INT32", 1)
        data = client.create_buffer("INT32", 4, struct.pack("<4i", 1, 2, 3, 4))
        # Let finish, the kernel is right: 250 rounds of 1 + 2 + 3 + 4.
        client.execute([{"ast": graph_from_json(_long_sum_ast(1000)), "buffers": [0, 1]}],
                       [out, data])
        assert struct.unpack("<i", client.read_buffer(out))[0] == 2500
        start = time.monotonic()
        with pytest.raises(UopdError) as error:
            client.execute([{"ast": graph_from_json(_long_sum_ast(1 << 44)), "buffers": [0, 1]}],
                           [out, data])
        assert error.value.code.name == "DEADLINE_EXCEEDED"
        assert time.monotonic() - start < 30
        # The daemon serves on, this connection too; the module's teardown checks that it still
        # drains and exits cleanly, which it could not with the kernel still running.
        assert client.list_devices()
