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


if __name__ == "__main__":
    unittest.main()
