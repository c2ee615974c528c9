"""Programs that run on tinygrad 0.12 and 0.14 alike, for measuring how many of their kernels the two
dialects share in the daemon's cache (docs/BENCHMARKS.md, "tinygrad 0.14 through the UOPD device"):
run it with the 0.12 venv, then the 0.14 one, against one daemon, and read uopd_compilations_total
before and after each (argument: program names; none: all)."""
from tinygrad import Tensor, dtypes
import numpy as np
rng = np.random.default_rng(0)
a = Tensor(rng.random((4, 5), dtype=np.float32)).realize()
b = Tensor(rng.random((5, 3), dtype=np.float32)).realize()
ints = Tensor(np.array([7, -7, 5, -5, 0, 9], dtype=np.int32)).realize()
progs = {
 "add": lambda: a + 1, "mul2": lambda: a * a, "matmul": lambda: a @ b, "sum1": lambda: a.sum(1),
 "max0": lambda: a.max(0), "softmax": lambda: a.softmax(1), "layernorm": lambda: a.layernorm(),
 "relu": lambda: a.relu(), "sigmoid": lambda: a.sigmoid(), "exp": lambda: a.exp(), "sqrt": lambda: a.sqrt(),
 "where": lambda: (a > 0.5).where(a, -a), "pad": lambda: a.pad(((1, 1), (2, 0))), "flip": lambda: a.flip(1),
 "cast": lambda: (a * 100).cast(dtypes.int32), "argmax": lambda: a.argmax(1), "cumsum": lambda: a.cumsum(1),
 "conv": lambda: a.reshape(1, 1, 4, 5).conv2d(Tensor.ones(1, 1, 2, 2)), "intadd": lambda: ints + 3,
 "intmul": lambda: ints * ints, "mean": lambda: a.mean(), "transpose": lambda: a.T.contiguous(),
}
import sys
sel = sys.argv[1:] or list(progs)
for k, f in ((k, progs[k]) for k in sel):
    try: f().numpy()
    except Exception as e: print(k, "FAIL", str(e)[:120])
print("ran", len(progs))
