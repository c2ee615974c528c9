"""Capture real tinygrad 0.14 kernels as corpus cases (tests/corpus14/), in the TINYGRAD_0_14 dialect.

Run with tinygrad 0.14.0 installed (not 0.12: `pip install tinygrad==0.14.0 numpy` in a venv of its own):

    python bench/tinygrad/capture_014.py OUT_DIR

Each small tensor program runs on tinygrad's CPU device. For every kernel tinygrad runs we keep the
kernel AST exactly as tinygrad handed it to `to_program` (before optimization), encoded by
`uopd.tinygrad.ir14`, the bytes of every buffer before the run (written-only buffers filled with
the poison pattern 0xA5 first, as in tests/corpus), the variable values, and every output's bytes
after the run: tinygrad's own results, an external test of the server's 0.14 decoding.
"""
from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

os.environ["PARALLEL"] = "0"  # compile in this process, so the hook below sees every kernel
os.environ.setdefault("DEV", "CPU")

import importlib.util  # noqa: E402

from tinygrad import Tensor, Variable, dtypes  # noqa: E402
from tinygrad.engine import realize  # noqa: E402
from tinygrad.uop.ops import Ops  # noqa: E402

# The encoder alone, by path: the uopd package itself needs grpc, which this venv need not have.
_spec = importlib.util.spec_from_file_location(
    "ir14", Path(__file__).resolve().parents[2] / "client" / "python" / "uopd" / "tinygrad" / "ir14.py")
ir14 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ir14)

asts: dict = {}       # PROGRAM -> the kernel AST it was compiled from
current_bufs: list = []
captured: list[dict] = []
program_name = "setup"

_to_program = realize.to_program
_unwrap_multi = realize.unwrap_multi
_get_runtime = realize.get_runtime


def to_program(ast, renderer):
    prg = _to_program(ast, renderer)
    asts[prg] = ast
    return prg


def unwrap_multi(call, resolved):
    for bufs, device_vars in _unwrap_multi(call, resolved):
        current_bufs[:] = bufs
        yield bufs, device_vars


def scalar_name(dt) -> str:
    return ir14.encode_dtype(dt)["scalar"]


def get_runtime(device, prg, cache=True):
    rt = _get_runtime(device, prg, cache)
    sink = asts.get(prg)
    if sink is None:
        return rt
    params = {u.arg.slot: u for u in sink.toposort() if u.op is Ops.PARAM and u.arg.slot >= 0}
    globals_ = prg.arg.globals
    outs, ins = set(prg.arg.outs), set(prg.arg.ins)

    def run(*args, vals=(), **kwargs):
        bufs = list(current_bufs)
        buffers, outputs = [], []
        for slot, buf in zip(globals_, bufs):
            param = params[slot]
            size = 1
            for d in (param.src[0].src if param.src[0].op is Ops.STACK else (param.src[0],)):
                size *= int(d.arg)
            nbytes = size * param.dtype.itemsize
            if slot in outs and slot not in ins:
                view = buf.as_memoryview(force_zero_copy=True).cast("B")  # the CPU buffer itself
                view[:] = b"\xa5" * len(view)
            init = bytes(buf.as_memoryview())[:nbytes]
            buffers.append({"slot": slot, "dtype": scalar_name(param.dtype), "size": size,
                            "init": base64.b64encode(init).decode()})
        var_values = {v.arg.name: int(x) for v, x in zip(prg.arg.vars, vals) if x is not None}
        ret = rt(*args, vals=vals, **kwargs)
        for slot, buf in zip(globals_, bufs):
            if slot in outs:
                nbytes = next(b["size"] for b in buffers if b["slot"] == slot) * params[slot].dtype.itemsize
                outputs.append({"slot": slot, "expected": base64.b64encode(bytes(buf.as_memoryview())[:nbytes]).decode()})
        try:
            graph = ir14.encode_graph(sink)
        except ir14.IRError as e:
            print(f"  skipped a kernel of {program_name}: {e}", file=sys.stderr)
            return ret
        k = sum(1 for c in captured if c["program"] == program_name)
        captured.append({"name": f"{program_name}__k{k}", "family": "tinygrad014", "program": program_name,
                         "ast": graph, "buffers": buffers, "vars": var_values, "outputs": outputs,
                         "tolerance": {"rtol": 1e-5, "atol": 1e-6}})
        return ret

    return run


realize.to_program = to_program
realize.unwrap_multi = unwrap_multi
realize.get_runtime = get_runtime


def programs() -> dict:
    Tensor.manual_seed(0)
    a = Tensor.rand(4, 5).realize()
    b = Tensor.rand(5, 3).realize()
    ints = Tensor([7, -7, 5, -5, 0, 9]).realize()
    divs = Tensor([2, 2, -3, -3, 4, -4]).realize()
    arange = Tensor.arange(10).float().contiguous().realize()
    rows = Tensor.rand(10, 4).realize()

    def setitem():
        t = Tensor.zeros(6).contiguous().realize()
        t[1:3] = 5.0
        return t

    def assign():
        t = Tensor.ones(4).contiguous().realize()
        return t.assign(t * 3 + 1)

    return {
        "add": lambda: a + 1,
        "matmul": lambda: a @ b,
        "sum_axis1": lambda: a.sum(1),
        "max_axis0": lambda: a.max(0),
        "softmax": lambda: a.softmax(1),
        "layernorm": lambda: a.layernorm(),
        "conv2d_pad1": lambda: Tensor.rand(1, 2, 6, 6).conv2d(Tensor.rand(3, 2, 3, 3), padding=1),
        "argmax": lambda: a.argmax(1),
        "cumsum": lambda: a.cumsum(1),
        "gather": lambda: a.gather(1, Tensor([[0, 1], [1, 2], [2, 3], [3, 4]])),
        "cast_half_int8": lambda: (a * 100).cast(dtypes.half).cast(dtypes.int8),
        "where_relu": lambda: (a > 0.5).where(a, -a),
        "floordiv_int": lambda: ints // divs,
        "floormod_int": lambda: ints % divs,
        "floordiv_const": lambda: ints // 3,
        "truncdiv_int": lambda: ints.div(divs, rounding_mode="trunc"),
        "sym_sum": lambda: arange[:Variable("n", 1, 10).bind(4)].sum(),
        "sym_rows": lambda: (rows[:Variable("m", 1, 10).bind(3)] * 2).sum(1),
        "pad": lambda: a.pad(((1, 1), (2, 0))),
        "bool_and": lambda: (a > 0.3) & (a < 0.7),
        "arange_mul": lambda: Tensor.arange(7) * 3,
        "setitem": setitem,
        "assign": assign,
        "flip": lambda: a.flip(1),
        "strided": lambda: Tensor.rand(8, 8)[::2, 1::3],
        "rand": lambda: Tensor.rand(3, 4),
        "sigmoid_exp": lambda: a.sigmoid() + a.exp(),
        "sqrt_log": lambda: (a + 1).sqrt() * (a + 1).log(),
        "truediv_int": lambda: ints / divs,
        "cummax_grad": lambda: a.cummax(1)[0].sum().gradient(a)[0],
        "max_pool2d_grad": lambda: (lambda x: x.max_pool2d().sum().gradient(x)[0])(Tensor.rand(1, 2, 6, 6).realize()),
        "strided_conv2d_grad": lambda: (lambda x: x.conv2d(Tensor.ones(1, 2, 3, 3), stride=2).sum().gradient(x)[0])(
            Tensor.rand(1, 2, 7, 7).realize()),
    }


def main() -> int:
    global program_name
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/corpus14/cases")
    out.mkdir(parents=True, exist_ok=True)
    for name, make in programs().items():
        program_name = name
        try:
            make().realize()
        except Exception as e:  # a program tinygrad itself cannot run here is left out, said so
            print(f"  {name}: tinygrad failed: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
    for case in captured:
        (out / f"{case['name']}.json").write_text(json.dumps(case, indent=None) + "\n")
    print(f"captured {len(captured)} kernels of {len({c['program'] for c in captured})} programs into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
