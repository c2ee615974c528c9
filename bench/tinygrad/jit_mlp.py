"""A TinyJit'd 6-layer MLP (256 wide, batch 1, GELU, softmax): host time per JIT call, median of 5
rounds of 100 calls, on whatever device tinygrad selects. Runs on tinygrad 0.12 and 0.14.

    DEV=CPU python bench/tinygrad/jit_mlp.py cpu
    UOPD=unix:/path python -m uopd.tinygrad bench/tinygrad/jit_mlp.py uopd
    UOPD=unix:/path UOPD_GRAPH=0 python -m uopd.tinygrad bench/tinygrad/jit_mlp.py uopd-no-graph  (0.14)
"""
import sys
import time

import numpy as np

from tinygrad import Device, Tensor, TinyJit

rng = np.random.default_rng(0)
weights = [Tensor(rng.standard_normal((256, 256)).astype(np.float32) * 0.05).realize() for _ in range(6)]


@TinyJit
def forward(x: Tensor) -> Tensor:
    for w in weights:
        x = (x @ w).gelu()
    return x.softmax().realize()


x = Tensor(rng.standard_normal((1, 256)).astype(np.float32)).realize()
for _ in range(5):
    forward(x)
Device[Device.DEFAULT].synchronize()
rounds = []
for _ in range(5):
    start = time.perf_counter()
    for _ in range(100):
        forward(x)
    Device[Device.DEFAULT].synchronize()
    rounds.append((time.perf_counter() - start) / 100)
print(f"{sys.argv[1] if len(sys.argv) > 1 else Device.DEFAULT}: {np.median(rounds) * 1e6:.0f} us per call, "
      f"out[:3] {forward(x).numpy()[0, :3]}")
