"""Targeted tests of the UOPD device on tinygrad 0.14, written device-agnostic like
test_uopd_backend.py (0.12's): run.sh runs this file on tinygrad's CPU device and on UOPD and
compares the outcomes. Every test checks values against numpy; UOPD-only checks say so."""
import os
import unittest

import numpy as np

from tinygrad import Device, Tensor, TinyJit, Variable

ON_UOPD = Device.DEFAULT.split(":")[0] == "UOPD"


def uopd_graphs() -> list:
    """The UOPD graph runners tinygrad has built in this process (UOPD only)."""
    from tinygrad.engine.realize import graph_cache
    from uopd.tinygrad.device14 import UopdGraph
    return [g for g in list(graph_cache.values()) if isinstance(g, UopdGraph)]


class TestDevice(unittest.TestCase):
    def test_default_device(self):
        self.assertEqual(Device.DEFAULT.split(":")[0], os.environ.get("EXPECT_DEVICE", Device.DEFAULT).split(":")[0])


class TestDevices(unittest.TestCase):
    def test_second_device_of_the_kind(self):
        # tinygrad's multi-device code names a kind's second device DEFAULT:1.
        second = f"{Device.DEFAULT.split(':')[0]}:1"
        a = Tensor([1.0, 2.0, 3.0]).to(second)
        self.assertEqual(a.device, second)
        np.testing.assert_equal((a * 2).numpy(), [2.0, 4.0, 6.0])
        np.testing.assert_equal((a.to(Device.DEFAULT) + 1).numpy(), [2.0, 3.0, 4.0])


class TestJit(unittest.TestCase):
    def test_jit_replay(self):
        w = Tensor(np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)).realize()

        @TinyJit
        def f(x: Tensor) -> Tensor:
            return ((x @ w).relu() @ w).sum(axis=1).exp()

        rng = np.random.default_rng(1)
        for _ in range(5):
            x = rng.standard_normal((4, 16)).astype(np.float32) * 0.1
            want = np.exp((np.maximum(x @ w.numpy(), 0) @ w.numpy()).sum(axis=1))
            np.testing.assert_allclose(f(Tensor(x)).numpy(), want, rtol=1e-4)
        if ON_UOPD:
            self.assertTrue(uopd_graphs(), "TinyJit batched UOPD kernels into a UopdGraph")

    def test_jit_same_buffers_new_contents(self):
        # Same input buffers every call (on UOPD: replayed as a prepared plan from the second
        # call), new contents each time: every replay must read what is in the buffers now.
        x = Tensor.zeros(8).contiguous().realize()

        @TinyJit
        def f(x: Tensor) -> Tensor:
            y = (x * 2).realize()
            return (y + x).realize()

        for i in range(6):
            x.assign(Tensor.full((8,), float(i))).realize()
            np.testing.assert_equal(f(x).numpy(), np.full(8, 3.0 * i, np.float32))
        if ON_UOPD:
            self.assertTrue(any(g.plans for g in uopd_graphs()), "the replays went through a prepared plan")

    def test_jit_symbolic(self):
        @TinyJit
        def f(a: Tensor, n: Variable) -> Tensor:
            b = (a[:n] + 1).realize()
            return (b * 2).sum().realize()

        a = Tensor(np.arange(10, dtype=np.float32)).realize()
        for n in range(1, 7):
            self.assertEqual(f(a, Variable("n", 1, 10).bind(n)).item(), float(2 * (sum(range(n)) + n)))

    def test_kv_cache_assign_symbolic(self):
        # A decoder's cache: written at a symbolic position, read up to it, inside the JIT.
        cache = Tensor.zeros(8, 4).contiguous().realize()

        @TinyJit
        def step(x: Tensor, pos: Variable) -> Tensor:
            cache[pos:pos + 1].assign(x).realize()
            return cache[:pos + 1].sum(axis=0).realize()

        want = np.zeros((8, 4), np.float32)
        for p in range(6):
            row = np.full((1, 4), p + 1, np.float32)
            want[p] = row
            got = step(Tensor(row), Variable("pos", 0, 7).bind(p)).numpy()
            np.testing.assert_allclose(got, want[:p + 1].sum(axis=0))



class TestCustomKernels(unittest.TestCase):
    """Kernels a user writes as UOps (Tensor.custom_kernel): their placeholders are shaped (a
    RESHAPE of a flat PARAM) and sliced (SHRINK), movement ops tinygrad's codegen folds into the
    INDEX first ("early movement ops"). Before, UOPD refused them: "op RESHAPE is not in the
    tinygrad 0.14 dialect"."""

    def test_shaped_placeholders(self):
        from tinygrad.uop.ops import AxisType, KernelInfo, UOp

        def gemm(C: UOp, A: UOp, B: UOp) -> UOp:
            i, j = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1)
            k = UOp.range(A.shape[1], 2, axis_type=AxisType.REDUCE)
            C = C[i, j].set(0.0)
            C = C[i, j].set(C.after(k)[i, j] + A[i, k] * B[k, j], end=k)
            return C.end(i, j).sink(arg=KernelInfo(name="shaped_gemm", opts_to_apply=()))

        rng = np.random.default_rng(2)
        a, b = (rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32))
        c = Tensor.custom_kernel(Tensor.empty(6, 3), Tensor(a), Tensor(b), fxn=gemm)[0]
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)

    def test_sliced_placeholder(self):
        from tinygrad.uop.ops import KernelInfo, UOp

        def middle_columns(dest: UOp, src: UOp) -> UOp:
            i, j = UOp.range(dest.shape[0], 0), UOp.range(dest.shape[1], 1)
            return dest[i, j].set(src[:, 1:3][i, j] * 2.0).end(i, j).sink(
                arg=KernelInfo(name="middle_columns", opts_to_apply=()))

        x = np.arange(20, dtype=np.float32).reshape(4, 5)
        out = Tensor.custom_kernel(Tensor.empty(4, 2), Tensor(x), fxn=middle_columns)[0]
        np.testing.assert_equal(out.numpy(), x[:, 1:3] * 2)


class TestAliasedSlots(unittest.TestCase):
    def test_one_tensor_read_and_written_in_place(self):
        # tinygrad passes one buffer to a custom kernel's input and output slots; the daemon
        # refuses aliased written slots whose accesses overlap, so the plugin merges them.
        from tinygrad.uop.ops import KernelInfo, UOp

        def add_one(B: UOp, A: UOp) -> UOp:
            A, B = A.flatten(), B.flatten()
            i = UOp.range(A.numel(), 0)
            return B[i].store(A[i] + 1).end(i).sink(arg=KernelInfo(name=f"aliased_add_one_{A.numel()}"))

        x = Tensor.arange(6).clone().realize()
        x = Tensor.custom_kernel(x, x, fxn=add_one)[0]
        self.assertEqual(x.tolist(), [1, 2, 3, 4, 5, 6])
        # The same kernel on two buffers still takes both slots.
        a, b = Tensor.arange(6).clone().realize(), Tensor.zeros(6, dtype=Tensor.arange(6).dtype).contiguous().realize()
        b = Tensor.custom_kernel(b, a, fxn=add_one)[0]
        self.assertEqual(b.tolist(), [1, 2, 3, 4, 5, 6])
        self.assertEqual(a.tolist(), [0, 1, 2, 3, 4, 5])

    def test_three_slots_two_aliased(self):
        # C = A + B called as (x, x, y): the slot renumbered from 2 to 1 must not be taken for
        # the original slot 1 (also aliased to 0) and merged again.
        from tinygrad.uop.ops import KernelInfo, UOp

        def add(C: UOp, A: UOp, B: UOp) -> UOp:
            i = UOp.range(C.shape[0], 0)
            return C[i].store(A[i] + B[i]).end(i).sink(arg=KernelInfo(name=f"aliased_add_{C.shape[0]}"))

        x = Tensor([1.0, 2.0, 3.0]).contiguous().realize()
        y = Tensor([10.0, 20.0, 30.0]).contiguous().realize()
        x = Tensor.custom_kernel(x, x, y, fxn=add)[0]
        self.assertEqual(x.tolist(), [11.0, 22.0, 33.0])


class TestFp8(unittest.TestCase):
    def test_e5m2_saturates_as_tinygrad_converts(self):
        # tinygrad 0.14 converts to fp8 saturating at the largest finite value (57344 for e5m2,
        # 0x7b), infinities included; UOPD gave infinity (0x7c), failing tinygrad's
        # test_dtype_alu::test_fp8e5m2 on 57344 + 57344.
        from tinygrad import dtypes
        a = Tensor([57344.0, -57344.0, 1.0], dtype=dtypes.fp8e5m2)
        self.assertEqual((a + a).bitcast(dtypes.uint8).tolist(), [0x7b, 0xfb, 0x40])
        big = Tensor([1e6, float("inf"), -float("inf")]).cast(dtypes.fp8e5m2)
        self.assertEqual(big.bitcast(dtypes.uint8).tolist(), [0x7b, 0x7b, 0xfb])
        e4 = Tensor([448.0, 1e6], dtype=dtypes.float).cast(dtypes.fp8e4m3) * 2
        self.assertEqual(e4.bitcast(dtypes.uint8).tolist(), [0x7e, 0x7e])

    def test_e5m2_infinity_is_still_infinity(self):
        # A stored infinity (0x7c) compares equal to an infinity constant, as on tinygrad's CPU.
        from tinygrad import dtypes
        b = Tensor([0x7c, 0x7b, 0xfc, 0x3c], dtype=dtypes.uint8).bitcast(dtypes.fp8e5m2)
        self.assertEqual(b.isinf().tolist(), [True, False, True, False])
        self.assertEqual((b == float("inf")).tolist(), [True, False, False, False])

    @unittest.skipUnless(ON_UOPD, "UOPD only: tinygrad's CPU emulates fp8 with denormals flushed to zero")
    def test_fnuz_sums_of_every_pair_round_as_tinygrad_converts(self):
        # The fnuz types were refused ("not supported yet"): test_dtype_alu's six fnuz tests
        # failed on UOPD. Every pair of encodings, summed and multiplied, against tinygrad's own
        # conversion (dtype.py) of the float32 result.
        from tinygrad import dtypes
        from tinygrad.dtype import float_to_fp8, fp8_to_float
        for dt in (dtypes.fp8e4m3fnuz, dtypes.fp8e5m2fnuz):
            bits = np.arange(256, dtype=np.uint8)
            a_bits, b_bits = np.repeat(bits, 256), np.tile(bits, 256)
            a = Tensor(a_bits).bitcast(dt)
            b = Tensor(b_bits).bitcast(dt)
            values = {x: fp8_to_float(x, dt) for x in range(256)}
            for op in (lambda x, y: x + y, lambda x, y: x * y):
                got = op(a, b).bitcast(dtypes.uint8).numpy()
                f32 = op(np.array([values[x] for x in a_bits], np.float32),
                         np.array([values[x] for x in b_bits], np.float32))
                want = np.array([0x80 if np.isnan(v) else float_to_fp8(float(np.clip(v, -1e9, 1e9)), dt)
                                 for v in f32], np.uint8)
                np.testing.assert_array_equal(got, want, err_msg=str(dt))


class TestShardedKernels(unittest.TestCase):
    """Tensors sharded over devices: tinygrad 0.14 writes a kernel over the DEVICE axis once and
    binds the axis per device at launch (_device_num); the daemon refused the axis before."""

    def test_a_kernel_over_the_device_axis_runs_once_per_device(self):
        from tinygrad.uop.ops import AxisType, UOp
        devices = tuple(f"{Device.DEFAULT.split(':')[0]}:{i}" for i in range(4))
        axis = UOp.range(4, -1, AxisType.DEVICE)
        ref = Tensor.arange(16).reshape(4, 4).contiguous().realize()
        u = ref.uop.copy_to_device(devices)._shard(0, axis // 2)._shard(1, axis % 2).unshard((0, 1), (axis // 2, axis % 2))
        np.testing.assert_equal((Tensor(u) * 3 + 1).contiguous().realize().numpy(), ref.numpy() * 3 + 1)
        np.testing.assert_equal(Tensor(u).sum().contiguous().realize().numpy(), ref.numpy().sum())

    def test_data_parallel_matmul(self):
        devices = tuple(f"{Device.DEFAULT.split(':')[0]}:{i}" for i in range(2))
        a = np.arange(32, dtype=np.float32).reshape(8, 4) / 7
        w = np.arange(12, dtype=np.float32).reshape(4, 3) / 5
        x = Tensor(a).shard(devices, axis=0)
        y = x @ Tensor(w).shard(devices)
        np.testing.assert_allclose(y.numpy(), a @ w, rtol=1e-6)


@unittest.skipUnless(ON_UOPD, "UOPD only")
class TestOptimizationChoice(unittest.TestCase):
    """BEAM and NOOPT choose how the daemon optimizes a kernel, as they choose tinygrad's own
    (they were ignored: every kernel got the daemon's heuristics)."""

    def _new_kernels(self, fn):
        from uopd.tinygrad.device14 import _kernels
        before = set(_kernels)
        fn()
        return [k for key, k in _kernels.items() if key not in before]

    def test_beam_searches_and_noopt_runs_as_written(self):
        from tinygrad.helpers import Context
        from uopd.v1 import kernel_service_pb2 as ks
        a = Tensor(np.arange(24 * 20, dtype=np.float32).reshape(24, 20) / 100).realize()
        b = Tensor(np.arange(20 * 12, dtype=np.float32).reshape(20, 12) / 100).realize()
        for context, mode in (({"BEAM": 1}, ks.Optimization.SEARCH), ({"NOOPT": 1}, ks.Optimization.NONE)):
            out = {}
            with Context(**context):
                kernels = self._new_kernels(lambda: out.setdefault("c", (a @ b).realize()))
            self.assertEqual([k.optimization.mode for k in kernels], [mode], context)
            np.testing.assert_allclose(out["c"].numpy(), a.numpy() @ b.numpy(), rtol=1e-5)
        kernels = self._new_kernels(lambda: (a @ b + 1).realize())
        self.assertGreater(len(kernels), 0)
        self.assertTrue(all(k.optimization.mode == ks.Optimization.DEFAULT for k in kernels))

    def test_jitbeam_searches_the_kernels_a_jit_captures(self):
        from unittest.mock import patch
        from tinygrad.helpers import getenv
        from uopd.v1 import kernel_service_pb2 as ks

        @TinyJit
        def add(x: Tensor, y: Tensor) -> Tensor:
            return (x + y).realize()
        a, b = Tensor.ones(10, 10).contiguous().realize(), Tensor.ones(10, 10).contiguous().realize()
        self.assertEqual([k.optimization.mode for k in self._new_kernels(lambda: add(a, b))],
                         [ks.Optimization.DEFAULT])
        jitbeam = patch("tinygrad.engine.jit.getenv",
                        side_effect=lambda k, d=0: 1 if k == "JITBEAM" else getenv(k, d))
        with jitbeam:
            kernels = self._new_kernels(lambda: add(a, b))  # the second call captures
        self.assertEqual([k.optimization.mode for k in kernels], [ks.Optimization.SEARCH])
        np.testing.assert_equal(add(a, b).numpy(), np.full((10, 10), 2.0, np.float32))


class TestKernelOptErrors(unittest.TestCase):
    """An opt of a kernel's opts_to_apply that does not apply raises tinygrad's KernelOptError on
    every device, which tinygrad's tests and tools catch (on UOPD it was the daemon's
    InvalidArgument)."""

    def test_padding_an_upcasted_axis_is_a_kernel_opt_error(self):
        from tinygrad.codegen.opt import KernelOptError, Opt, OptOps
        from tinygrad.uop.ops import KernelInfo, UOp

        def eye(*opts: Opt):
            def kernel(C: UOp) -> UOp:
                i, j = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1)
                return C[i, j].store(i.eq(j).cast(C.dtype)).end(i, j).sink(
                    arg=KernelInfo(name=f"eye_{len(opts)}_opts", opts_to_apply=opts))
            return Tensor.custom_kernel(Tensor.empty(4, 4), fxn=kernel)[0]
        with self.assertRaises(KernelOptError) as raised:
            eye(Opt(OptOps.UPCAST, 1, 0), Opt(OptOps.PADTO, 1, 8)).realize()
        if Device.DEFAULT.split(":")[0] == "UOPD":
            self.assertIn("opts_to_apply[1] (PADTO(1, 8))", str(raised.exception))
        np.testing.assert_equal(eye(Opt(OptOps.UPCAST, 1, 0)).numpy(), np.eye(4, dtype=np.float32))


@unittest.skipUnless(ON_UOPD, "UOPD only")
class TestReplays(unittest.TestCase):
    """A kernel run again on the same buffers runs as a prepared plan (a RunPlan, not an Execute:
    130 -> 50 us a call from tinygrad), and a plan goes when the allocator frees one of its
    buffers: a plan holds its buffers' memory in the daemon."""

    def test_a_plan_goes_with_a_buffer_the_allocator_frees(self):
        import uopd
        from tinygrad.device import BufferSpec
        from uopd.tinygrad._common import BatchReplay
        from uopd.tinygrad.device14 import _kernels
        dev = Device[Device.DEFAULT]
        a = Tensor(np.arange(1 << 16, dtype=np.float32)).realize()
        before = set(_kernels)
        (a * 7.25 + 0.5).realize()  # a kernel no other test makes
        kernel = [k for key, k in _kernels.items() if key not in before][-1]
        nbytes = 4 << 16
        bufs = tuple(dev.allocator._alloc(nbytes, BufferSpec()) for _ in kernel.slots)
        k, views = kernel.bound(dev.device, bufs)
        replay = BatchReplay()
        for _ in range(3):
            replay.run(dev.client, dev.remote, [uopd.Kernel(k.graph, views, optimization=k.optimization)], {}, False)
        self.assertEqual(len(replay.plans), 1)

        def in_use() -> int:
            return next(d.bytes_in_use for d in dev.client.devices() if d.name == dev.remote)
        held = in_use()
        dev.allocator._free(bufs[0], BufferSpec())
        self.assertEqual(len(replay.plans), 0)
        self.assertLessEqual(in_use(), held - nbytes)  # the memory went with the handle
        for b in bufs[1:]:
            dev.allocator._free(b, BufferSpec())

    def test_the_process_keeps_at_most_its_limit_of_plans(self):
        import uopd
        from tinygrad.device import BufferSpec
        from uopd.tinygrad._common import BatchReplay, _plans_over
        from uopd.tinygrad.device14 import _kernels
        dev = Device[Device.DEFAULT]
        a = Tensor(np.arange(64, dtype=np.float32)).realize()
        before = set(_kernels)
        (a * 3.25 - 0.5).realize()  # a kernel no other test makes
        kernel = [k for key, k in _kernels.items() if key not in before][-1]
        replays = [BatchReplay() for _ in range(3)]
        bufs = [tuple(dev.allocator._alloc(256, BufferSpec()) for _ in kernel.slots) for _ in replays]
        limit = _plans_over.LIMIT
        _plans_over.LIMIT = 2
        try:
            for replay, b in zip(replays, bufs):
                k, views = kernel.bound(dev.device, b)
                for _ in range(2):
                    replay.run(dev.client, dev.remote, [uopd.Kernel(k.graph, views, optimization=k.optimization)],
                               {}, False)
            self.assertEqual([len(r.plans) for r in replays], [0, 1, 1])  # the first one made went
        finally:
            _plans_over.LIMIT = limit
            for r in replays:
                r.release()
            for b in bufs:
                for x in b:
                    dev.allocator._free(x, BufferSpec())


class TestGlobalCounters(unittest.TestCase):
    """What a run adds to GlobalCounters below DEBUG=2, as tinygrad's own devices count it: the
    bytes of memory its kernels touch, and their operations (UOPD counted 0 of both before)."""

    def _counted(self, fn):
        from tinygrad.helpers import GlobalCounters
        GlobalCounters.reset()
        fn()
        return GlobalCounters.global_ops, GlobalCounters.global_mem

    def test_a_slice_assignment_touches_its_slice(self):
        from tinygrad import dtypes
        t = Tensor.zeros(100, dtype=dtypes.int32).contiguous().realize()
        v = Tensor(np.arange(30, dtype=np.int32)).realize()

        def assign() -> None:
            t[20:50] = v
            t.realize()
        _, mem = self._counted(assign)
        self.assertEqual(mem, 30 * 4 * 2)  # 30 elements read, 30 written
        np.testing.assert_array_equal(t.numpy()[20:50], np.arange(30))

    def test_elementwise_and_reduction_count_their_operations(self):
        a = Tensor(np.arange(1024, dtype=np.float32)).realize()
        b = Tensor.ones(1024).contiguous().realize()
        ops, mem = self._counted(lambda: (a * b + 2).realize())
        self.assertEqual((ops, mem), (2 * 1024, 3 * 1024 * 4))  # a multiply and an add each
        m = Tensor.ones(32, 64).contiguous().realize()
        ops, mem = self._counted(lambda: m.sum(1).realize())
        self.assertGreaterEqual(ops, 32 * 63)  # an add per element beyond each row's first
        self.assertLessEqual(ops, 32 * 64)
        self.assertEqual(mem, (32 * 64 + 32) * 4)

    def test_a_symbolic_kernel_counts_for_its_bound_size(self):
        v = Tensor(np.arange(16, dtype=np.float32)).realize()
        n = Variable("n", 1, 16)
        for size in (3, 9):
            result = Tensor.empty(1)
            _, mem = self._counted(lambda: result.assign((v[:n.bind(size)] * 3).sum().reshape(1)).realize())
            self.assertEqual(mem, (size + 1) * 4)  # size elements read, one written
            self.assertEqual(result.item(), 3 * sum(range(size)))


class TestIntrospection(unittest.TestCase):
    """tinygrad's program of a kernel (to_program), as its tests and DEBUG>=2 use it: uops and
    estimates from its lowering, a source and a binary the device runs (on UOPD: the daemon's
    source, run as the kernel AST in the daemon)."""

    def _program(self, t: Tensor):
        from tinygrad.codegen import to_program
        from tinygrad.uop.ops import Ops
        linear, _ = t.linear_with_vars()
        sinks = [si.src[0] for si in linear.src if si.src[0].op is Ops.SINK]
        self.assertEqual(len(sinks), 1)
        return sinks[0], to_program(sinks[0], Device[Device.DEFAULT].renderer)

    def test_program_counts_and_has_a_source(self):
        a, b = Tensor(np.arange(1024, dtype=np.float32)).realize(), Tensor.ones(1024).contiguous().realize()
        _, prg = self._program(a * b + 2)
        self.assertEqual(prg.src[0].arg.estimates.ops, 2 * 1024)  # tinygrad's count: a multiply and an add each
        self.assertGreater(len(prg.src[2].arg), 0)  # SOURCE
        self.assertGreater(len(prg.src[3].arg), 0)  # BINARY

    @unittest.skipUnless(ON_UOPD, "UOPD only")
    def test_source_is_the_daemons(self):
        from uopd.tinygrad._common import client_for
        from uopd.tinygrad.device14 import _kernel_for
        sink, prg = self._program(Tensor.ones(64, 64).contiguous().realize().sum(1))
        k = _kernel_for(Device.DEFAULT, sink)
        want = client_for().compile(k.graph, device=k.remote, optimization=k.optimization, want_source=True).source
        self.assertEqual(prg.src[2].arg, want)
        self.assertIn("define", want)  # the daemon's CPU source is LLVM IR
        self.assertEqual(prg.src[3].arg, k.key)  # the runtime finds the kernel by its binary

    @unittest.skipUnless(ON_UOPD, "UOPD only")
    def test_debug_shows_gflops_and_the_source(self):
        import subprocess
        import sys
        # This process's environment selects UOPD (DEV=UOPD, UOPD=address) for the child too. The
        # programs tinygrad makes at DEBUG>=2 run: a matmul, and a kernel with a variable to bind.
        prog = ("import uopd.tinygrad\nfrom tinygrad import Tensor, Variable\n"
                "a = Tensor.ones(128, 128).contiguous().realize()\nprint((a @ a).sum().item())\n"
                "v = Tensor.arange(16).float().contiguous().realize()\n"
                "print((v[:Variable('n', 1, 16).bind(5)] * 3).sum().item())")
        out = subprocess.run([sys.executable, "-c", prog], env={**os.environ, "DEBUG": "4"},
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        self.assertIn("2097152.0", out.stdout)
        self.assertIn("30.0", out.stdout)
        kernels = [line for line in out.stdout.splitlines() if "*** UOPD" in line and "GFLOPS" in line]
        self.assertGreater(len(kernels), 0, out.stdout[:6000])
        gflops = max(float(line.split("(")[-1].split("GFLOPS")[0]) for line in kernels)
        self.assertGreater(gflops, 0)  # tinygrad's estimates, not 0
        self.assertIn("define", out.stdout)  # DEBUG>=4 prints the daemon's source

if __name__ == "__main__":
    unittest.main()
