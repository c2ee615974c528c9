"""One backend of one model, driven by bench/model_bench.py over stdin/stdout (one JSON object per
line), so each backend runs in a process of its own (its own threads, no shared GIL) while the
driver interleaves their samples.

    python -m models.worker MODEL BACKEND          BACKEND: tinygrad | uopd | torch1 | torch2

Commands: {"cmd": "init"} builds the model and runs the first sample (the first-run time, with
whatever caches the driver set up), {"cmd": "sample"} runs one more, {"cmd": "kernels", "reps": N}
times each kernel of the model's TinyJit on its own (tinygrad and uopd only), {"cmd": "quit"}."""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Optional


def _tinygrad_is_014() -> bool:
    try:
        from importlib.metadata import version
        return tuple(int(x) for x in version("tinygrad").split(".")[:2]) >= (0, 14)
    except Exception:
        return False


TINYGRAD_14 = _tinygrad_is_014()


def ir_name(name: str) -> str:
    """A tinygrad kernel name without its terminal colours."""
    import re
    return re.sub(r"\x1b\[[0-9;]*m", "", name)


def _median_after_first(samples: list[float]) -> float:
    """The median of `samples` without the first (which warms caches and compiles)."""
    rest = sorted(samples[1:])
    return rest[len(rest) // 2]


def _daemon_us(client: Any, kernel: Any, values: dict, remote: str, reps: int, what: str) -> Optional[float]:
    """`kernel` run alone in the daemon reps + 1 times: the median of its kernel timings in µs,
    or None where the daemon refuses it (an opt it cannot apply)."""
    times = []
    try:
        for _ in range(reps + 1):
            t = client.execute([kernel], vars=values, device=remote).timings[0]
            times.append((t.end_ns - t.start_ns) * 1e-3)
    except Exception as e:
        print(f"{what}: {e}", file=sys.stderr)
        return None
    return _median_after_first(times)


def _opt_str(op: str, axis: Any, arg: Any) -> str:
    return f"{op}({axis}, {arg})" if axis is not None else f"{op}({arg})"


class TinygradBackend:
    def __init__(self, model: str, device: str):
        if device == "UOPD":
            import uopd.tinygrad  # noqa: F401  (the UOPD device)
        from . import tinygrad_models
        self.device = device
        self.model = tinygrad_models.MODELS[model](device)

    def sample(self) -> dict:
        return self.model.run_sample()

    def kernels(self, reps: int, alt_opts: Optional[dict[str, str]] = None) -> list[dict]:
        if TINYGRAD_14:
            return self._kernels14(reps, alt_opts)
        return self._kernels12(reps, alt_opts)

    def _kernels12(self, reps: int, alt_opts: Optional[dict[str, str]] = None) -> list[dict]:
        """Each kernel of the captured JIT run alone `reps` times on the current inputs: its AST key,
        name, opts and median device time (tinygrad: the CPU queue's timestamps; UOPD: the daemon's
        kernel timing). On UOPD, `alt_opts` (AST key -> opts in tinygrad's spelling) also times each
        kernel as the daemon runs it with those opts ("alt_us")."""
        from tinygrad.engine.jit import _prepare_jit_inputs
        from tinygrad.engine.realize import CompiledRunner
        jit = self.model.jit()
        captured = jit.captured
        input_buffers, var_vals, _, _ = _prepare_jit_inputs(self.model.jit_args(), {})
        for (j, i), idx in captured.input_replace.items():
            captured.jit_cache[j].bufs[i] = input_buffers[idx]
        out = []
        for ei in captured.jit_cache:
            prg = ei.prg
            if not isinstance(prg, CompiledRunner):
                continue
            times = []
            for _ in range(reps + 1):
                times.append(ei.run(var_vals, wait=True))
            row = {"key": ei.ast.key.hex()[:16], "name": prg.p.name, "opts": self._opts(prg),
                   "us": _median_after_first(times) * 1e6}
            if alt_opts and row["key"] in alt_opts:
                row["alt_us"] = self._time_with(ei, var_vals, alt_opts[row["key"]], reps)
            out.append(row)
        for (j, i) in captured.input_replace:
            captured.jit_cache[j].bufs[i] = None
        return out

    def _programs14(self) -> list[Any]:
        """tinygrad 0.14: the kernel CALLs of the captured JIT in the order it runs them, the ones
        the device's graph batches taken out of their batch (their PARAMs name JIT inputs)."""
        from tinygrad.uop.ops import Ops
        calls = []
        for call in self.model.jit().captured.linear.src:
            if call.src[0].op is Ops.CUSTOM_FUNCTION and call.src[0].arg == "graph":
                calls.extend(call.src[0].src[0].src)
            else:
                calls.append(call)
        return [c for c in calls if c.src[0].op is Ops.PROGRAM]

    def _kernels14(self, reps: int, alt_opts: Optional[dict[str, str]] = None) -> list[dict]:
        """kernels() on tinygrad 0.14, whose JIT holds a linear of CALLs: each kernel run alone
        through tinygrad's own exec_kernel. Keyed by name: 0.14 names a kernel while optimizing
        it, so UOPD's (optimized in the daemon) are matched to tinygrad's by their place in the
        JIT, after both sides ran; `alt_opts` (keyed by tinygrad's names) finds none of them, so
        --tinygrad-opts times nothing more on 0.14."""
        from tinygrad.engine.jit import _prepare_jit_inputs
        from tinygrad.engine.realize import ExecContext, exec_kernel
        input_uops, var_vals, _, _ = _prepare_jit_inputs(self.model.jit_args(), {})
        ctx = ExecContext(var_vals, tuple(input_uops), update_stats=False, wait=True)
        out = []
        for call in self._programs14():
            prg = call.src[0]
            times = [sum(t or 0.0 for t in exec_kernel(ctx, call, prg)) for _ in range(reps + 1)]
            row = {"key": ir_name(prg.arg.name), "name": prg.arg.name, "opts": self._opts14(call),
                   "us": _median_after_first(times) * 1e6}
            out.append(row)
        return out

    def _runtime14(self, call: Any) -> Any:
        from tinygrad.engine.realize import get_runtime
        device = call.src[1].device
        return get_runtime(device if isinstance(device, str) else device[0], call.src[0])

    def _opts14(self, call: Any) -> str:
        if self.device == "UOPD":
            rt = self._runtime14(call)
            k = rt.kernel
            if not hasattr(self, "_opts_cache"):
                self._opts_cache: dict[bytes, str] = {}
            if k.key not in self._opts_cache:
                reply = rt.dev.client.compile(k.graph, device=k.remote, optimization=k.optimization)
                self._opts_cache[k.key] = " ".join(_opt_str(o.op, o.axis if o.HasField("axis") else None, o.arg)
                                                   for o in reply.applied_opts)
            return self._opts_cache[k.key]
        info = call.src[0].src[0].arg  # the CPU program's rewritten SINK: its KernelInfo
        return " ".join(_opt_str(o.op.name, o.axis, o.arg) for o in (getattr(info, "applied_opts", None) or ()))

    def _call_breakdown14(self, reps: int) -> dict:
        from tinygrad.engine.jit import _prepare_jit_inputs
        from tinygrad.engine.realize import run_linear
        captured = self.model.jit().captured
        input_uops, var_vals, _, _ = _prepare_jit_inputs(self.model.jit_args(), {})
        walls = []
        for _ in range(reps + 1):
            st = time.perf_counter()
            run_linear(captured.linear, var_vals, input_uops=input_uops, update_stats=False, jit=True, wait=True)
            walls.append(time.perf_counter() - st)
        return {"wall_ms": _median_after_first(walls) * 1e3, "device_ms": float("nan"),
                "batches": len(captured.linear.src), "kernels": len(self._programs14())}

    def call_breakdown(self, reps: int) -> dict:
        if TINYGRAD_14:
            return self._call_breakdown14(reps)
        return self._call_breakdown12(reps)

    def _call_breakdown12(self, reps: int) -> dict:
        """One JIT call, `reps` times: its wall time from Python and the device's own time for the
        batches it runs (tinygrad: the CPU graph's queue timestamps; UOPD: first kernel start to
        last kernel end of each RunPlan, as the daemon reports them)."""
        from tinygrad.engine.jit import _prepare_jit_inputs
        jit = self.model.jit()
        captured = jit.captured
        input_buffers, var_vals, _, _ = _prepare_jit_inputs(self.model.jit_args(), {})
        walls, spans = [], []
        for _ in range(reps + 1):
            for (j, i), idx in captured._input_replace.items():
                captured._jit_cache[j].bufs[i] = input_buffers[idx]
            st = time.perf_counter()
            span = 0.0
            for ei in captured._jit_cache:
                span += ei.run(var_vals, wait=True, jit=True) or 0.0
            walls.append(time.perf_counter() - st)
            spans.append(span)
            for (j, i) in captured._input_replace:
                captured._jit_cache[j].bufs[i] = None
        return {"wall_ms": _median_after_first(walls) * 1e3, "device_ms": _median_after_first(spans) * 1e3,
                "batches": len(captured._jit_cache), "kernels": len(captured.jit_cache)}

    def export(self, out_dir: str, model: str) -> list[str]:
        """Each distinct kernel of the captured JIT as a corpus case file (tests/corpus/README.md) in
        out_dir: its AST, its buffers' current bytes, and the outputs tinygrad's CPU device computes
        from them. For trying opts on real model kernels (bench/opt_bench, bench/corpus_opt_bench)."""
        if TINYGRAD_14:
            raise RuntimeError("--export writes tinygrad 0.12's kernels only (corpus cases are 0.12 ASTs)")
        import base64
        from tinygrad.device import Buffer
        from tinygrad.engine.jit import _prepare_jit_inputs
        from tinygrad.engine.realize import CompiledRunner
        from uopd.tinygrad import ir
        assert self.device == "CPU", "export runs the kernels on tinygrad's CPU device"
        os.makedirs(out_dir, exist_ok=True)
        captured = self.model.jit().captured
        input_buffers, var_vals, _, _ = _prepare_jit_inputs(self.model.jit_args(), {})
        for (j, i), idx in captured.input_replace.items():
            captured.jit_cache[j].bufs[i] = input_buffers[idx]
        seen: set[bytes] = set()
        paths = []
        for n, ei in enumerate(captured.jit_cache):
            prg = ei.prg
            if not isinstance(prg, CompiledRunner) or ei.ast.key in seen:
                continue
            seen.add(ei.ast.key)
            copies = []
            for b in ei.bufs:
                c = Buffer("CPU", b.size, b.dtype).ensure_allocated()
                c.copyin(b.as_buffer())
                copies.append(c)
            init = [base64.b64encode(bytes(c.as_buffer())).decode() for c in copies]
            prg([copies[i] for i in prg.p.globals], var_vals | ei.fixedvars, wait=True)
            graph = ir.encode_graph(ei.ast)
            ops = {x["op"] for x in graph["nodes"]}
            loose = ops & {"EXP2", "LOG2", "SIN", "SQRT", "POW", "FDIV", "RECIPROCAL"} or "REDUCE" in ops
            case = {"name": f"{model}_{n:03d}", "family": model, "program": ir_name(prg.p.name),
                    "ast": graph,
                    "buffers": [{"slot": s, "dtype": ir.scalar_name(b.dtype), "size": b.size, "init": init[s]}
                                for s, b in enumerate(copies)],
                    "vars": {v.expr: (var_vals | ei.fixedvars)[v.expr] for v in prg.p.vars},
                    "outputs": [{"slot": s, "expected": base64.b64encode(bytes(copies[s].as_buffer())).decode()}
                                for s in prg.p.outs],
                    "tolerance": {"rtol": 1e-4, "atol": 1e-4} if loose else {"rtol": 1e-5, "atol": 1e-6}}
            path = os.path.join(out_dir, case["name"] + ".json")
            with open(path, "w") as f:
                json.dump(case, f, separators=(",", ":"))
            paths.append(path)
        for (j, i) in captured.input_replace:
            captured.jit_cache[j].bufs[i] = None
        return paths

    def _time_with(self, ei: Any, var_vals: dict, opts: str, reps: int) -> Optional[float]:
        import uopd
        prg = ei.prg
        views = prg.views([ei.bufs[i]._buf for i in prg.p.globals])
        kernel = uopd.Kernel(prg.graph, views, optimization=opts or "none")
        return _daemon_us(prg.dev.client, kernel, prg.var_values(var_vals | ei.fixedvars), prg.remote, reps,
                          f"alt opts {opts!r} for {prg.p.name}")

    def _opts(self, prg: Any) -> str:
        if self.device == "UOPD":
            if not hasattr(self, "_opts_cache"):
                self._opts_cache: dict[bytes, str] = {}
            key = prg.p.ast.key
            if key not in self._opts_cache:
                reply = prg.dev.client.compile(prg.graph, device=prg.remote)
                self._opts_cache[key] = " ".join(
                    _opt_str(o.op, o.axis if o.HasField("axis") else None, o.arg) if hasattr(o, "HasField") else str(o)
                    for o in reply.applied_opts)
            return self._opts_cache[key]
        opts = prg.p.applied_opts or ()
        return " ".join(_opt_str(o.op.name, o.axis, o.arg) for o in opts)


class TorchBackend:
    def __init__(self, model: str, threads: int):
        import torch
        torch.set_num_threads(threads)
        from . import torch_models
        self.model = torch_models.MODELS[model]()

    def sample(self) -> dict:
        return self.model.run_sample()


def main() -> None:
    model, backend = sys.argv[1], sys.argv[2]
    impl: Any = None
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever the libraries print stays off the protocol
    for line in sys.stdin:
        cmd = json.loads(line)
        reply: dict[str, Any] = {}
        try:
            if cmd["cmd"] == "init":
                st = time.perf_counter()
                if backend in ("tinygrad", "uopd"):
                    impl = TinygradBackend(model, "CPU" if backend == "tinygrad" else "UOPD")
                else:
                    impl = TorchBackend(model, int(backend[len("torch"):] or 1))
                reply["output"] = impl.sample()
                reply["seconds"] = time.perf_counter() - st
                reply["units"] = impl.model.units()
            elif cmd["cmd"] == "sample":
                st = time.perf_counter()
                reply["output"] = impl.sample()
                reply["seconds"] = time.perf_counter() - st
            elif cmd["cmd"] == "kernels":
                reply["kernels"] = impl.kernels(int(cmd.get("reps", 5)), cmd.get("alt_opts"))
            elif cmd["cmd"] == "call":
                reply["call"] = impl.call_breakdown(int(cmd.get("reps", 5)))
            elif cmd["cmd"] == "export":
                reply["paths"] = impl.export(cmd["out"], model)
            elif cmd["cmd"] == "quit":
                break
        except Exception as e:  # the driver reports it and goes on without this backend
            import traceback
            reply = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
