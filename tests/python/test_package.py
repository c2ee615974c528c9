"""The package itself, without a daemon: the shipped generated modules match proto/, the install
carries its types, and the conversions (opts, dtypes, ASTs, bindings) do what they say."""

from __future__ import annotations

import filecmp
import hashlib
import hmac
import importlib.metadata
import os
import pathlib
import struct
import subprocess
import sys

import numpy as np
import pytest

import uopd
from uopd import _core
from uopd.v1 import graph_pb2, kernel_service_pb2 as ks

from conftest import SOURCE, load_case

PACKAGE = SOURCE / "client" / "python"


def test_shipped_generated_modules_match_the_protos(tmp_path: pathlib.Path) -> None:
    """Fails while client/python/uopd/v1 is stale: run client/python/regen_proto.sh."""
    if not os.environ.get("UOPD_PROTOC_PYTHON"):
        pytest.skip("UOPD_PROTOC_PYTHON is not set (tests/python/run.sh sets it)")
    out = tmp_path / "v1"
    subprocess.run(["bash", str(PACKAGE / "regen_proto.sh"), str(out)], check=True)
    shipped = PACKAGE / "uopd" / "v1"
    names = sorted(p.name for p in out.iterdir())
    assert sorted(p.name for p in shipped.iterdir() if p.suffix in (".py", ".pyi")) == names, \
        "the generated files differ: run client/python/regen_proto.sh"
    _, mismatch, errors = filecmp.cmpfiles(out, shipped, names, shallow=False)
    assert not mismatch and not errors, \
        f"{mismatch + errors} are stale: run client/python/regen_proto.sh and commit the result"


def test_the_installed_package_is_whole_and_typed() -> None:
    location = pathlib.Path(uopd.__file__).parent
    assert PACKAGE not in location.parents, "tests must import the installed package"
    assert (location / "py.typed").is_file()
    for module in ("graph", "kernel_service", "program", "corpus"):
        assert (location / "v1" / f"{module}_pb2.py").is_file()
        assert (location / "v1" / f"{module}_pb2.pyi").is_file()
    assert importlib.metadata.version("uopd") == uopd.__version__
    requires = importlib.metadata.requires("uopd") or []
    assert any(r.startswith("grpcio") for r in requires)
    assert any(r.startswith("protobuf") for r in requires)
    # The generated modules are this package's own uopd.v1: their imports need no sys.path entry.
    import uopd.v1.kernel_service_pb2_grpc as grpc_module

    assert pathlib.Path(grpc_module.__file__).parent == location / "v1"
    assert ks.DESCRIPTOR.services_by_name["KernelService"].methods_by_name["WriteBufferSmall"]


# --- opts --------------------------------------------------------------------------------------

def test_parse_opts_as_the_server_spells_them() -> None:
    text = "UPCAST(1, 16) UNROLL(0,4), NOLOCALS TC(0, (-1, 2, 1)) LOCAL(2, 0) SWAP(0, 1)"
    opts = uopd.parse_opts(text)
    assert [o.op for o in opts] == ["UPCAST", "UNROLL", "NOLOCALS", "TC", "LOCAL", "SWAP"]
    assert (opts[0].axis, opts[0].arg) == (1, 16)
    assert not opts[2].HasField("axis")
    assert list(opts[3].tc) == [-1, 2, 1] and opts[3].axis == 0
    assert uopd.opts_to_string(opts) == \
        "UPCAST(1, 16) UNROLL(0, 4) NOLOCALS TC(0, (-1, 2, 1)) LOCAL(2, 0) SWAP(0, 1)"
    assert uopd.parse_opts("") == []
    for bad, why in (("FOO(1, 2)", "unknown opt op 'FOO'"), ("UPCAST", "needs \\(axis, amount\\)"),
                     ("UPCAST(1, 2", "no closing parenthesis"), ("UPCAST()", "no axis"),
                     ("UPCAST(1, 2, 3)", "an axis and an amount"), ("TC(0, 1)", "TC takes"),
                     ("UPCAST(a, 1)", "not all integers")):
        with pytest.raises(ValueError, match=why):
            uopd.parse_opts(bad)


def test_optimization_spellings() -> None:
    mode = ks.Optimization.Mode
    assert _core.optimization_of(None) is None
    for name, value in (("heuristic", mode.HEURISTIC), ("NONE", mode.NONE),
                        ("search", mode.SEARCH), ("default", mode.DEFAULT)):
        assert _core.optimization_of(name) == ks.Optimization(mode=value)
    want = ks.Optimization(mode=mode.OPTS, opts=uopd.parse_opts("UPCAST(1, 4) NOLOCALS"))

    class OptOps:  # tinygrad's Opt and OptOps, as duck types
        def __init__(self, name: str) -> None:
            self.name = name

    class Opt:
        def __init__(self, op: str, axis: object, arg: object) -> None:
            self.op, self.axis, self.arg = OptOps(op), axis, arg

    for spec in ("UPCAST(1, 4) NOLOCALS", [("UPCAST", 1, 4), ("NOLOCALS",)],
                 ["UPCAST(1, 4)", "NOLOCALS"], [{"op": "UPCAST", "axis": 1, "arg": 4},
                                                {"op": "NOLOCALS", "axis": None, "arg": None}],
                 [Opt("UPCAST", 1, 4), Opt("NOLOCALS", None, None)], want):
        assert _core.optimization_of(spec) == want, spec
    tc = ks.Optimization(mode=mode.OPTS, opts=uopd.parse_opts("TC(0, (-1, 2, 1))"))
    assert _core.optimization_of([("TC", 0, (-1, 2, 1))]) == tc
    assert _core.optimization_of([{"op": "TC", "axis": 0, "arg": [-1, 2, 1]}]) == tc
    assert _core.optimization_of([Opt("TC", 0, (-1, 2, 1))]) == tc
    assert _core.optimization_of(("UPCAST", 1, 4)).opts[0].arg == 4  # one bare tuple
    with pytest.raises(ValueError, match="needs an axis"):
        _core.optimization_of([("UPCAST",)])
    with pytest.raises(TypeError):
        _core.optimization_of(3.5)  # type: ignore[arg-type]


# --- dtypes ------------------------------------------------------------------------------------

def test_dtype_names_and_numpy_types() -> None:
    scalar = graph_pb2.DType.Scalar
    for name, spellings, numpy_type in (
            ("BOOL", ["bool", np.bool_], np.bool_), ("INT8", ["char", "int8"], np.int8),
            ("UINT8", ["uchar", np.uint8], np.uint8), ("INT16", ["short"], np.int16),
            ("UINT16", ["ushort"], np.uint16), ("INT32", ["int", "Int32"], np.int32),
            ("UINT32", ["uint"], np.uint32), ("INT64", ["long", np.int64], np.int64),
            ("UINT64", ["ulong"], np.uint64), ("FLOAT16", ["half", np.float16], np.float16),
            ("FLOAT32", ["float", "float32", np.dtype("<f4")], np.float32),
            ("FLOAT64", ["double", np.float64], np.float64)):
        for spelling in [name, scalar.Value(name), *spellings]:
            assert uopd.scalar_of(spelling) == scalar.Value(name), spelling
        assert uopd.numpy_dtype(name) == np.dtype(numpy_type)
        assert uopd.scalar_name(uopd.scalar_of(numpy_type)) == name
        assert uopd.SCALARS[name] == np.dtype(numpy_type).itemsize

    class TinygradDType:
        name = "half"

    assert uopd.scalar_of(TinygradDType()) == scalar.Value("FLOAT16")
    for bad in ("VOID", "INDEX", "complex64", np.complex64):
        with pytest.raises(ValueError):
            uopd.scalar_of(bad)
    with pytest.raises(ValueError, match="big-endian"):
        uopd.scalar_of(np.dtype(">f4"))


# --- ASTs and bindings -------------------------------------------------------------------------

def test_as_graph() -> None:
    case = load_case("hw_masked_shift_9")
    graph = uopd.as_graph(case)
    assert isinstance(graph, graph_pb2.Graph) and graph.nodes[-1].op == graph_pb2.Node.SINK
    assert uopd.as_graph(graph) is graph
    assert uopd.as_graph(graph.SerializeToString()) == graph
    with pytest.raises(ValueError, match="not a Graph"):
        uopd.as_graph({"nodes": [{"bogus": 1}]})


def test_bindings_number_buffers_once_and_keep_explicit_positions() -> None:
    a = uopd.Inline("FLOAT32", 4)
    array = np.zeros(3, np.int16)
    bindings = _core.Bindings(["handle-0", a])
    assert [bindings.index_of(x) for x in ("handle-0", a, 1, array, array, "handle-9")] == \
        [0, 1, 1, 2, 2, 3]
    view = uopd.ViewRef(a, 4, "INT32", 2)
    assert bindings.index_of(view) == 4 and bindings.refs[4].view.base == 1
    assert bindings.refs[2].inline.dtype == graph_pb2.DType.INT16
    assert bindings.scalars == [None, graph_pb2.DType.FLOAT32, graph_pb2.DType.INT16, None,
                                graph_pb2.DType.INT32]
    later = uopd.ViewRef(uopd.Inline("INT8", 8), 0, "INT8", 8)  # its base is added first
    assert bindings.index_of(later) == 6 and bindings.refs[6].view.base == 5
    with pytest.raises(ValueError, match="before the view"):
        _core.Bindings([uopd.ViewRef(a, 0, "INT8", 1), a])
    with pytest.raises(TypeError):
        bindings.index_of(3.0)


def test_sign_cache_entry() -> None:
    key, value, cluster = "ab" * 32, b"entry", b"k" * 32
    expected = hmac.new(cluster, struct.pack("<Q", 64) + key.encode() + value,
                        hashlib.sha256).digest()
    assert uopd.sign_cache_entry(cluster, key, value) == expected


def test_the_package_type_checks(tmp_path: pathlib.Path) -> None:
    """mypy --strict passes on the package, and code using the installed package sees its types
    (py.typed and the generated .pyi files are installed)."""
    pytest.importorskip("mypy")
    import sys

    cache = os.environ.get("UOPD_MYPY_CACHE", str(tmp_path / "cache"))
    check = [sys.executable, "-m", "mypy", "--cache-dir", cache]
    own = subprocess.run([*check, "--config-file", str(PACKAGE / "pyproject.toml"),
                          str(PACKAGE / "uopd")], capture_output=True, text=True)
    assert own.returncode == 0, own.stdout + own.stderr
    user = tmp_path / "user.py"
    user.write_text(
        "import numpy as np\nimport uopd\nimport uopd.aio\n\n\n"
        "def use(client: uopd.Client) -> tuple[str, int, bytes]:\n"
        "    buffer = client.create_buffer('FLOAT32', 4)\n"
        "    array: np.ndarray = buffer.numpy()\n"
        "    key: str = client.compile({'nodes': []}).cache_key\n"
        "    result: uopd.RunResult = client.execute([uopd.Kernel({'nodes': []}, [buffer])])\n"
        "    return client.devices()[0].name + key, buffer.size + len(array), result[0]\n\n\n"
        "async def use_async(client: uopd.aio.AsyncClient) -> int:\n"
        "    buffer = await client.create_buffer('INT8', 1)\n"
        "    return len(await buffer.read())\n\n\n"
        "def wrong(client: uopd.Client) -> str:\n"
        "    return client.create_buffer('INT8', 1).size\n")
    checked = subprocess.run([*check, "--strict", "--ignore-missing-imports", str(user)],
                             capture_output=True, text=True, cwd=tmp_path)
    # Exactly the one wrong line: the package's annotations reach its users.
    assert checked.stdout.count("error:") == 1, checked.stdout
    assert "user.py:20: error: Incompatible return value type (got \"int\", expected \"str\")" \
        in checked.stdout, checked.stdout


# --- uopd.tinygrad on a tinygrad it does not speak ---------------------------------------------

def _fake_tinygrad(root: pathlib.Path, version: str) -> pathlib.Path:
    """A package named tinygrad with `version` in its metadata and none of 0.12's modules: what
    uopd.tinygrad meets next to a tinygrad it does not speak."""
    site = root / f"site-{version}"
    (site / "tinygrad" / "runtime").mkdir(parents=True)
    (site / "tinygrad" / "__init__.py").write_text(
        "import importlib\nVALUE = 14\n"
        "def device(name):\n"
        "    return importlib.import_module(f'tinygrad.runtime.ops_{name.lower()}')\n")
    (site / "tinygrad" / "runtime" / "__init__.py").write_text("")
    info = site / f"tinygrad-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tinygrad\nVersion: {version}\n")
    return site


def _python(site: pathlib.Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("UOPD", "DEV")}
    environ.update(env, PYTHONPATH=str(site))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=environ,
                          cwd=site, timeout=60)


def test_an_unsupported_tinygrad_still_imports_and_refuses_uopd_in_one_sentence(
        tmp_path: pathlib.Path) -> None:
    site = _fake_tinygrad(tmp_path, "0.13.0")
    # Importing uopd.tinygrad used to hook tinygrad's own import with a module that needs 0.12:
    # `import tinygrad` failed with an ImportError from inside it.
    plain = _python(site, "-c", "import uopd.tinygrad, tinygrad, sys; print(tinygrad.VALUE, "
                    "'tinygrad.runtime.ops_uopd' in sys.modules)")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.split() == ["14", "False"]  # the fake package's VALUE

    asked = _python(site, "-c", "import uopd.tinygrad, tinygrad\ntry:\n    tinygrad.device('UOPD')\n"
                    "except ImportError as e:\n    print(type(e).__name__, '|', e)")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.startswith("UnsupportedTinygradError | ")
    assert "tinygrad 0.13.0" in asked.stdout and "0.12.x and 0.14.x" in asked.stdout

    (site / "prog.py").write_text("print('ran')\n")
    run = _python(site, "-m", "uopd.tinygrad", "prog.py")
    assert run.returncode == 2 and run.stdout == ""
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert "tinygrad 0.13.0" in run.stderr

    # The .pth hook runs in every process of the environment: it says why and lets it run.
    hook = _python(site, "-c", "import uopd.tinygrad as h, os; h._pth_hook(); "
                   "print(os.environ.get('DEV', '-'))", UOPD="1")
    assert hook.returncode == 0, hook.stderr
    assert hook.stdout.strip() == "-" and "UOPD is ignored" in hook.stderr


def test_tinygrad_012_and_014_are_spoken_each_by_its_device_module(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import uopd.tinygrad as hook

    assert hook.SUPPORTED == ("0.12", "0.14")
    for version, module in (("0.12.0", "uopd.tinygrad.device"), ("0.12.3", "uopd.tinygrad.device"),
                            ("0.120.0", None), ("0.13.0", None),
                            ("0.14.0", "uopd.tinygrad.device14"), ("0.15.0", None)):
        monkeypatch.setattr(hook, "tinygrad_version", lambda: version)
        reason = hook.unsupported_reason()
        assert (reason is None) == (module is not None), (version, reason)
        if module is not None:
            assert hook._impl() == module
