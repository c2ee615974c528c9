"""Per-kernel host overhead of a tiny kernel: tinygrad's local CPU device vs UOPD.

    python -m uopd.tinygrad tests/tinygrad/measure.py     (UOPD=host:port)

Times, after warm-up, (a) one realized tiny elementwise kernel per iteration (schedule + lower +
run + no copy-out), (b) the same through TinyJit (replay), (c) a 16-byte copy-out (.numpy()),
on CPU and on UOPD, and prints microseconds per iteration.
"""
import time

from tinygrad import Device, Tensor, TinyJit


def per_iter(fn, n):
    for _ in range(10):
        fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def measure(dev, n=300):
    a = Tensor.ones(4, device=dev).contiguous().realize()
    b = Tensor.ones(4, device=dev).contiguous().realize()

    def eager():
        (a + b).realize()

    @TinyJit
    def jf(x, y):
        return (x * y + 1).realize()

    def jitted():
        jf(a, b)

    def jit3():
        j3(a, b)

    @TinyJit
    def j3(x, y):
        z = (x * y + 1).realize()
        z = (z * 2).realize()
        return (z - y).realize()

    out = (a + b).realize()

    def copyout():
        out.numpy()

    return {"eager kernel": per_iter(eager, n), "TinyJit 1 kernel": per_iter(jitted, n),
            "TinyJit 3 kernels": per_iter(jit3, n), "copy-out 16 B": per_iter(copyout, n)}


if __name__ == "__main__":
    devs = ["CPU"] + ([Device.DEFAULT] if Device.DEFAULT.startswith("UOPD") else [])
    res = {d: measure(d) for d in devs}
    print(f"{'us per iteration':<20}" + "".join(f"{d:>12}" for d in devs))
    for k in res["CPU"]:
        print(f"{k:<20}" + "".join(f"{res[d][k]:>12.1f}" for d in devs))
