"""Targeted tests of the UOPD tinygrad device, written device-agnostic: run.sh runs this file on
tinygrad's CPU device and on UOPD (python -m uopd.tinygrad), and compares the outcomes.

Every test checks values against numpy; where a test is UOPD-specific it says so and skips on CPU.
"""
import os
import unittest

import numpy as np

from tinygrad import Device, Tensor, TinyJit, UOp, Variable, dtypes
from tinygrad.uop.ops import AxisType, KernelInfo

ON_UOPD = Device.DEFAULT.split(":")[0] == "UOPD"


def custom_eye_kernel(C: UOp) -> UOp:
    i = UOp.range(C.shape[0], 0)
    j = UOp.range(C.shape[1], 1)
    return C[i, j].store((i.eq(j)).cast(C.dtype.base)).end(i, j).sink(arg=KernelInfo(name=f"custom_eye_{C.size}"))


def custom_gemm(C: UOp, A: UOp, B: UOp) -> UOp:
    i, j, k = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1), UOp.range(A.shape[1], 2, axis_type=AxisType.REDUCE)
    C = C[i, j].set(0.0)
    C = C[i, j].set(C.after(k)[i, j] + A[i, k] * B[k, j], end=k)
    return C.end(i, j).sink(arg=KernelInfo(name=f"custom_gemm_{C.shape[0]}_{C.shape[1]}", opts_to_apply=()))


def custom_transpose_add(C: UOp, A: UOp, B: UOp) -> UOp:
    i, j = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1)
    return C[i, j].store(A[j, i] + B[i, j]).end(i, j).sink(arg=KernelInfo(name="custom_transpose_add"))


class TestDevice(unittest.TestCase):
    def test_default_device(self):
        self.assertEqual(Device.DEFAULT.split(":")[0], os.environ.get("EXPECT_DEVICE", Device.DEFAULT).split(":")[0])

    def test_roundtrip_dtypes(self):
        for dt, npdt in [(dtypes.float32, np.float32), (dtypes.int32, np.int32), (dtypes.uint8, np.uint8),
                         (dtypes.int64, np.int64), (dtypes.float64, np.float64), (dtypes.bool, np.bool_)]:
            a = (np.arange(37) % 5).astype(npdt)
            np.testing.assert_equal(Tensor(a, dtype=dt).numpy(), a)

    def test_large_copy(self):  # past one unary call (4 MiB): the streamed path
        a = np.random.default_rng(0).standard_normal(1 << 21).astype(np.float32)  # 8 MiB
        t = Tensor(a)
        np.testing.assert_allclose((t * 2).numpy(), a * 2)

    def test_kernel_compiled_once(self):
        a = Tensor.arange(8).float().realize()
        outs = [(a * 3 + 1).numpy() for _ in range(3)]
        for o in outs:
            np.testing.assert_allclose(o, np.arange(8) * 3 + 1)


class TestBuffers(unittest.TestCase):
    def test_to_and_from_cpu(self):
        x = Tensor.arange(6, device="CPU").float().to(Device.DEFAULT)
        self.assertEqual((x * 2).to("CPU").tolist(), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0])

    def test_subbuffers(self):
        # tinygrad's sub-buffers (Buffer(base=, offset=), what its memory planner makes): copies and
        # kernels through byte offsets into one allocation (on UOPD: ViewRefs at those offsets).
        from tinygrad.device import Buffer
        arena = Buffer(Device.DEFAULT, 16, dtypes.float32).allocate()
        arena.copyin(memoryview(bytearray(np.arange(16, dtype=np.float32).tobytes())))
        src = Buffer(Device.DEFAULT, 4, dtypes.float32, base=arena, offset=16).allocate()   # elements 4..7
        dst = Buffer(Device.DEFAULT, 4, dtypes.float32, base=arena, offset=40).allocate()   # elements 10..13
        np.testing.assert_equal(np.frombuffer(src.as_buffer(), np.float32), [4, 5, 6, 7])
        if not ON_UOPD:
            return  # an ExecItem run over hand-made sub-buffers crashes tinygrad 0.12's own CPU runtime (HCQ)
        sched = (Tensor.empty(4) * 10 + 1).schedule()
        ei = [si for si in sched if si.ast.op.name == "SINK"][-1]
        ei.bufs = [dst, src]
        ei.run()
        want = np.arange(16, dtype=np.float32)
        want[10:14] = want[4:8] * 10 + 1
        np.testing.assert_equal(np.frombuffer(arena.as_buffer(), np.float32), want)


class TestSetitem(unittest.TestCase):
    def test_setitem_scalar(self):
        t = Tensor.zeros(10).contiguous().realize()
        t[3] = 5.0
        want = np.zeros(10, np.float32); want[3] = 5
        np.testing.assert_equal(t.numpy(), want)

    def test_setitem_slice(self):
        t = Tensor.arange(10).float().contiguous().realize()
        t[2:4] = Tensor([7.0, 8.0])
        want = np.arange(10, dtype=np.float32); want[2:4] = [7, 8]
        np.testing.assert_equal(t.numpy(), want)

    def test_setitem_2d_row(self):
        t = Tensor.zeros(4, 5).contiguous().realize()
        t[1] = Tensor.ones(5)
        want = np.zeros((4, 5), np.float32); want[1] = 1
        np.testing.assert_equal(t.numpy(), want)


class TestAssign(unittest.TestCase):
    def test_assign_inplace(self):
        a = Tensor.ones(8).contiguous().realize()
        for _ in range(3):
            a.assign(a * 2).realize()
        np.testing.assert_equal(a.numpy(), np.full(8, 8, np.float32))

    def test_kv_cache_assign(self):
        max_len, heads, dim = 8, 2, 4
        cache = Tensor.zeros(heads, max_len, dim).contiguous().realize()
        want = np.zeros((heads, max_len, dim), np.float32)
        for pos in range(3):
            x = Tensor.full((heads, 1, dim), float(pos + 1))
            cache[:, pos:pos + 1, :].assign(x).realize()
            want[:, pos:pos + 1, :] = pos + 1
        np.testing.assert_equal(cache.numpy(), want)

    def test_kv_cache_assign_symbolic(self):
        max_len, dim = 8, 4
        cache = Tensor.zeros(max_len, dim).contiguous().realize()
        want = np.zeros((max_len, dim), np.float32)
        for pos in range(4):
            vpos = Variable("start_pos", 0, max_len - 1).bind(pos)
            cache[vpos:vpos + 1, :].assign(Tensor.full((1, dim), float(pos + 10))).realize()
            want[pos] = pos + 10
        np.testing.assert_equal(cache.numpy(), want)


class TestJit(unittest.TestCase):
    def test_jit_replay(self):
        @TinyJit
        def f(x: Tensor, y: Tensor) -> Tensor:
            return ((x * 2 + y).relu().sum(axis=1) + 1).realize()

        rng = np.random.default_rng(1)
        for _ in range(5):
            x = rng.standard_normal((4, 6)).astype(np.float32)
            y = rng.standard_normal((4, 6)).astype(np.float32)
            got = f(Tensor(x), Tensor(y)).numpy()
            np.testing.assert_allclose(got, np.maximum(x * 2 + y, 0).sum(axis=1) + 1, rtol=1e-5, atol=1e-5)
        self.assertGreaterEqual(f.cnt, 5)

    def test_jit_same_buffers_new_contents(self):
        # Same input buffers every call (on UOPD: replayed as a prepared plan after the second call),
        # new contents each time: every replay must read what is in the buffers now.
        x = Tensor.zeros(8).contiguous().realize()

        @TinyJit
        def f(x: Tensor) -> Tensor:
            y = (x * 2).realize()
            return (y + x).realize()

        for i in range(6):
            x.assign(Tensor.full((8,), float(i))).realize()
            np.testing.assert_equal(f(x).numpy(), np.full(8, 3.0 * i, np.float32))
        if ON_UOPD:
            from uopd.tinygrad.device import UopdGraph
            graphs = [ei.prg for ei in f.captured._jit_cache if isinstance(ei.prg, UopdGraph)]
            self.assertTrue(graphs and graphs[0].plans, "the replays went through a prepared plan")
            from uopd.tinygrad.device import client_for
            if client_for().address.startswith("unix:"):
                self.assertIsNotNone(client_for().local_socket, "a local daemon's local socket")

    def test_jit_symbolic(self):
        @TinyJit
        def f(a: Tensor) -> Tensor:
            return (a + 1).sum().realize()

        for n in range(1, 6):
            vn = Variable("n", 1, 10).bind(n)
            a = Tensor.arange(10).float().contiguous().realize()
            got = f(a[:vn]).item()
            self.assertEqual(got, float(sum(range(n)) + n))


class TestCustomKernel(unittest.TestCase):
    def test_empty(self):
        a = Tensor.empty(1)
        a = Tensor.custom_kernel(a, fxn=lambda _: UOp.sink())[0]
        a.realize()

    def test_eye_2d_placeholder(self):
        c = Tensor.custom_kernel(Tensor.empty(5, 5), fxn=custom_eye_kernel)[0]
        np.testing.assert_equal(c.numpy(), np.eye(5, dtype=np.float32))

    def test_transpose_add_2d(self):
        a = np.arange(12, dtype=np.float32).reshape(4, 3)
        b = np.ones((3, 4), np.float32)
        c = Tensor.custom_kernel(Tensor.empty(3, 4), Tensor(a), Tensor(b), fxn=custom_transpose_add)[0]
        np.testing.assert_equal(c.numpy(), a.T + b)

    def test_gemm(self):
        rng = np.random.default_rng(2)
        a = rng.standard_normal((8, 5)).astype(np.float32)
        b = rng.standard_normal((5, 3)).astype(np.float32)
        c = Tensor.custom_kernel(Tensor.empty(8, 3), Tensor(a), Tensor(b), fxn=custom_gemm)[0]
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)


class TestNumerics(unittest.TestCase):
    def test_sigmoid_extreme(self):
        np.testing.assert_equal(Tensor([1e4, -1e4]).sigmoid().numpy(), np.array([1.0, 0.0], np.float32))

    def test_gelu_tanh_extreme(self):
        out = Tensor([1e4, -1e4, 0.0]).tanh().numpy()
        np.testing.assert_allclose(out, [1.0, -1.0, 0.0])
        self.assertFalse(np.isnan(Tensor([1e4, -1e4]).gelu().numpy()).any())

    def test_sigmoid_alt_gradient_extreme(self):  # test_ops' test_sigmoid_alt_extreme
        for v in (300.0, -300.0):
            x = Tensor([v])
            g = (x.exp() / (1 + x.exp()))[0].gradient(x)[0].item()
            self.assertEqual(g, 0.0)

    @unittest.skipUnless(" fma " in open("/proc/cpuinfo").read().replace("\n", " "), "no FMA on this CPU")
    def test_multiply_add_rounds_once(self):  # tinygrad's clang contracts a*b+c into one FMA
        a, c = 1 + 2**-13, -(1 + 2**-12)  # (1 + 2^-13)^2 - (1 + 2^-12): 2^-26 fused, 0 unfused
        x, y = Tensor.full((40,), a).contiguous(), Tensor.full((40,), c).contiguous()
        np.testing.assert_array_equal((x * x + y).numpy(), np.full(40, 2**-26, np.float32))

    def test_rand_deterministic(self):  # threefry, uint64 arithmetic (CONSTs past 64 bits wrap)
        Tensor.manual_seed(1337)
        a = Tensor.rand(64).numpy()
        self.assertTrue(((a >= 0) & (a < 1)).all())
        self.assertGreater(len(np.unique(a)), 32)

    def test_uint64_wrap(self):
        a = Tensor([2**64 - 1, 5], dtype=dtypes.uint64)
        np.testing.assert_equal((a + 2).numpy(), np.array([1, 7], np.uint64))


class TestSymbolic(unittest.TestCase):
    def test_symbolic_shape(self):
        a = Tensor.arange(10).float().contiguous().realize()
        for i in range(1, 5):
            vi = Variable("i", 1, 10).bind(i)
            got = (a[:vi] * 2).sum().item()
            self.assertEqual(got, float(2 * sum(range(i))))


class TestEncoding(unittest.TestCase):
    """uopd.tinygrad.ir (pure Python, no daemon): what the backend sends."""

    def test_roundtrip_keys(self):
        from uopd.tinygrad import ir
        for si in (Tensor.arange(12).reshape(3, 4).float().sum(1) + Tensor.rand(3)).schedule():
            if si.ast.op.name == "SINK":
                self.assertEqual(ir.decode_graph(ir.encode_graph(si.ast)).key, si.ast.key)

    def test_reshape_placeholder(self):
        from uopd.tinygrad import ir
        ast = custom_transpose_add(UOp.placeholder((3, 4), dtypes.float32, 0), UOp.placeholder((4, 3), dtypes.float32, 1),
                                   UOp.placeholder((3, 4), dtypes.float32, 2)).replace(arg=None)
        g = ir.encode_graph(ast)
        reshapes = [n for n in g["nodes"] if n["op"] == "RESHAPE"]
        self.assertEqual(sorted(tuple(n["arg"]["ints"]) for n in reshapes), [("3", "4"), ("3", "4"), ("4", "3")])
        self.assertTrue(all(len(n["src"]) == 1 for n in reshapes))
        self.assertFalse(any(n["op"] == "VCONST" for n in g["nodes"]))
        self.assertEqual(ir.decode_graph(g).key, ast.key)

    def test_consts_wrap_modulo_2_64(self):
        from uopd.tinygrad import ir
        self.assertEqual(ir.encode_const_arg(UOp.const(dtypes.uint64, 2**64 + 1)), {"i64": "1"})
        self.assertEqual(ir.encode_const_arg(UOp.const(dtypes.int64, 2**64 - 1)), {"i64": "-1"})
        self.assertEqual(ir.encode_const_arg(UOp.const(dtypes.uint64, 2**64 - 1)), {"u64": str(2**64 - 1)})
        self.assertEqual(ir.encode_const_arg(UOp.const(dtypes.uint32, -3)), {"i64": "-3"})


class TestIntrospection(unittest.TestCase):
    """tinygrad's program of a kernel (get_program), as its tests and DEBUG>=2 use it: uops and
    estimates from its lowering, a source, and a runner that runs it (on UOPD: the daemon's source,
    run as the kernel AST in the daemon)."""

    def _program(self, t: Tensor):
        from tinygrad.engine.realize import get_program
        sched = t.schedule()
        self.assertEqual(len(sched), 1)
        return sched[-1], get_program(sched[-1].ast, renderer=Device[Device.DEFAULT].renderer)

    def test_program_runs_and_counts(self):
        from tinygrad.engine.realize import CompiledRunner
        from tinygrad.engine.schedule import ExecItem
        a, b = Tensor(np.arange(1024, dtype=np.float32)).realize(), Tensor.ones(1024).contiguous().realize()
        t = a * b + 2
        si, p = self._program(t)
        self.assertEqual(p.estimates.ops, 2 * 1024)  # tinygrad's own count: a multiply and an add per element
        self.assertGreater(len(p.src), 0)
        ExecItem(si.ast, list(si.bufs), prg=CompiledRunner(p)).run()
        np.testing.assert_equal(t.numpy(), np.arange(1024, dtype=np.float32) + 2)

    def test_symbolic_program_binds_its_variable(self):
        from tinygrad.engine.realize import CompiledRunner
        from tinygrad.engine.schedule import ExecItem
        n = Variable("n", 1, 16).bind(5)
        a = Tensor(np.arange(16, dtype=np.float32)).realize()
        t = (a[:n] * 3).sum()
        sched, var_vals = t.schedule_with_vars()
        from tinygrad.engine.realize import get_program
        p = get_program(sched[-1].ast, renderer=Device[Device.DEFAULT].renderer)
        self.assertEqual([v.expr for v in p.vars], ["n"])
        ExecItem(sched[-1].ast, list(sched[-1].bufs), prg=CompiledRunner(p)).run(var_vals)
        self.assertEqual(t.item(), 30.0)  # 3 * (0 + 1 + 2 + 3 + 4)

    @unittest.skipUnless(ON_UOPD, "UOPD only")
    def test_source_is_the_daemons(self):
        from uopd.tinygrad.device import get_runner
        si, p = self._program(Tensor.ones(64, 64).contiguous().realize().sum(1))
        runner = get_runner(Device.DEFAULT, si.ast)
        want = runner.dev.client.compile(runner.graph, device=runner.remote, optimization=runner.optimization,
                                         want_source=True).source
        self.assertEqual(p.src, want)
        self.assertIn("define", p.src)  # the daemon's CPU source is LLVM IR

    @unittest.skipUnless(ON_UOPD, "UOPD only")
    def test_debug_shows_gflops_and_the_source(self):
        import subprocess
        import sys
        # This process's environment selects UOPD (DEV=UOPD, UOPD=address) for the child too.
        prog = ("import uopd.tinygrad\nfrom tinygrad import Tensor\n"
                "a = Tensor.ones(128, 128).contiguous().realize()\nprint((a @ a).sum().item())")
        out = subprocess.run([sys.executable, "-c", prog], env={**os.environ, "DEBUG": "4"},
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        self.assertIn("2097152.0", out.stdout)
        kernels = [line for line in out.stdout.splitlines() if "*** UOPD" in line and "GFLOPS" in line]
        self.assertGreater(len(kernels), 0, out.stdout[:6000])
        gflops = max(float(line.split("(")[-1].split("GFLOPS")[0]) for line in kernels)
        self.assertGreater(gflops, 0)  # tinygrad's estimates, not 0
        self.assertIn("define", out.stdout)  # DEBUG>=4 prints the daemon's source


@unittest.skipUnless(ON_UOPD, "UOPD only")
class TestOptimizationChoice(unittest.TestCase):
    """BEAM and NOOPT choose how the daemon optimizes a kernel, as they choose tinygrad's own
    (they were ignored: every kernel got the daemon's heuristics)."""

    def _new_runners(self, fn):
        from uopd.tinygrad.device import _runners
        before = set(_runners)
        fn()
        return [r for key, r in _runners.items() if key not in before]

    def test_beam_searches_and_noopt_runs_as_written(self):
        from tinygrad.helpers import Context
        from uopd.v1 import kernel_service_pb2 as ks
        a = Tensor(np.arange(24 * 20, dtype=np.float32).reshape(24, 20) / 100).realize()
        b = Tensor(np.arange(20 * 12, dtype=np.float32).reshape(20, 12) / 100).realize()
        for context, mode in (({"BEAM": 1}, ks.Optimization.SEARCH), ({"NOOPT": 1}, ks.Optimization.NONE)):
            out = {}
            with Context(**context):
                runners = self._new_runners(lambda: out.setdefault("c", (a @ b).realize()))
            self.assertEqual([r.optimization.mode for r in runners], [mode], context)
            np.testing.assert_allclose(out["c"].numpy(), a.numpy() @ b.numpy(), rtol=1e-5)
        runners = self._new_runners(lambda: (a @ b + 1).realize())
        self.assertGreater(len(runners), 0)
        self.assertTrue(all(r.optimization.mode == ks.Optimization.DEFAULT for r in runners))


class TestKernelOptErrors(unittest.TestCase):
    """An opt of a kernel's opts_to_apply that does not apply raises tinygrad's KernelOptError on
    every device, which tinygrad's tests and tools catch (on UOPD it was the daemon's
    InvalidArgument)."""

    def test_padding_an_upcasted_axis_is_a_kernel_opt_error(self):
        from tinygrad.codegen.opt import KernelOptError, Opt, OptOps

        def eye(C: UOp) -> UOp:
            i, j = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1)
            opts = (Opt(OptOps.UPCAST, 1, 0), Opt(OptOps.PADTO, 1, 8))
            return C[i, j].store(i.eq(j).cast(C.dtype.base)).end(i, j).sink(
                arg=KernelInfo(name="eye_padded_after_upcast", opts_to_apply=opts))
        with self.assertRaises(KernelOptError) as raised:
            Tensor.custom_kernel(Tensor.empty(4, 4), fxn=eye)[0].realize()
        if Device.DEFAULT.split(":")[0] == "UOPD":
            self.assertIn("opts_to_apply[1] (PADTO(1, 8))", str(raised.exception))
        np.testing.assert_equal(Tensor.custom_kernel(Tensor.empty(4, 4), fxn=custom_eye_kernel)[0].numpy(),
                                np.eye(4, dtype=np.float32))


@unittest.skipUnless(ON_UOPD, "UOPD only")
class TestUopdOnly(unittest.TestCase):
    def test_runner_is_uopd(self):
        from tinygrad.engine.realize import get_runner
        from uopd.tinygrad.device import UopdRunner
        sched = (Tensor.arange(4).float() + 1).schedule()
        ast = [si.ast for si in sched if si.ast.op.name == "SINK"][0]
        r = get_runner(Device.DEFAULT, ast)
        self.assertIsInstance(r, UopdRunner)
        self.assertIs(r, get_runner(Device.DEFAULT, ast))  # encoded once
        self.assertEqual(r.p.src, "")  # nothing rendered


if __name__ == "__main__":
    unittest.main()
