"""The benchmark workloads, shared by export_workloads.py and time_tinygrad.py.

Each workload is a small tinygrad tensor program over float32 inputs. `build(name, size)` returns the
seeded numpy inputs and a function that turns the (realized) input Tensors into the output Tensor, so
that both scripts run exactly the same program.

This module does not import tinygrad at load time; call setup_env() before anything imports it.
"""
from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

SIZES = ("full", "small")
NAMES = ("matmul", "conv2d", "colsum", "rowsum", "softmax")


def setup_env() -> None:
    """Select tinygrad's CPU device (clang backend) with default options. Call before importing tinygrad."""
    os.environ["CPU"] = "1"
    # Options that would change what tinygrad schedules, how it optimizes or what it prints on stdout:
    # keep tinygrad's defaults.
    for var in ("BEAM", "NOOPT", "CPU_LLVM", "CPU_LVP", "DEBUG", "SPLIT_REDUCEOP", "NO_MEMORY_PLANNER",
                "DEFAULT_FLOAT"):
        os.environ.pop(var, None)


@dataclass
class Workload:
    name: str
    family: str                              # corpus family of the plan
    program: str                             # human-readable description (plan "program" field)
    inputs: dict[str, np.ndarray]            # name -> float32 array, in argument order of `fn`
    fn: Callable                             # fn(*input Tensors) -> output Tensor
    flops: int | None = None                 # useful floating-point operations (matmul, conv2d)
    bytes: int | None = None                 # minimum bytes moved (reductions, softmax)


def _rng(name: str, size: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{name}/{size}".encode()))


def _rand(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform float32 in [-1, 1), like most of the reference corpus's inputs."""
    return (rng.random(shape, dtype=np.float32) * 2 - 1).astype(np.float32)


def build(name: str, size: str) -> Workload:
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, not {size!r}")
    full = size == "full"
    rng = _rng(name, size)
    if name == "matmul":
        m, k, n = (1024, 1024, 1024) if full else (64, 48, 32)
        return Workload(
            name, "matmul", f"a @ b, a: float32 ({m}, {k}), b: float32 ({k}, {n})",
            {"a": _rand(rng, (m, k)), "b": _rand(rng, (k, n))},
            lambda a, b: a @ b, flops=2 * m * n * k)
    if name == "conv2d":
        (bs, cin, h, w), cout = ((1, 32, 64, 64), 32) if full else ((1, 4, 10, 10), 4)
        kh = kw = 3
        oh, ow = h - kh + 1, w - kw + 1
        return Workload(
            name, "conv",
            f"x.conv2d(w), x: float32 ({bs}, {cin}, {h}, {w}), w: float32 ({cout}, {cin}, {kh}, {kw}), "
            "no padding, stride 1",
            {"x": _rand(rng, (bs, cin, h, w)), "w": _rand(rng, (cout, cin, kh, kw))},
            lambda x, wt: x.conv2d(wt), flops=2 * bs * cout * oh * ow * cin * kh * kw)
    if name in ("colsum", "rowsum"):
        r, c = (4096, 4096) if full else (64, 48)
        axis = 0 if name == "colsum" else 1
        n_out = c if axis == 0 else r
        return Workload(
            name, "reduce", f"a.sum({axis}), a: float32 ({r}, {c})", {"a": _rand(rng, (r, c))},
            lambda a: a.sum(axis), bytes=4 * (r * c + n_out))
    if name == "softmax":
        r, c = (2048, 2048) if full else (32, 40)
        return Workload(
            name, "nn", f"a.softmax(-1), a: float32 ({r}, {c})", {"a": _rand(rng, (r, c))},
            lambda a: a.softmax(-1), bytes=4 * 2 * r * c)
    raise ValueError(f"unknown workload {name!r}; known: {', '.join(NAMES)}")


def reference(wl: Workload) -> np.ndarray:
    """float64 numpy result of the workload (a diagnostic: how far float32 results are from exact)."""
    x = [v.astype(np.float64) for v in wl.inputs.values()]
    if wl.name == "matmul":
        return x[0] @ x[1]
    if wl.name == "conv2d":
        inp, wt = x
        kh, kw = wt.shape[2:]
        win = np.lib.stride_tricks.sliding_window_view(inp, (kh, kw), axis=(2, 3))  # (n, cin, oh, ow, kh, kw)
        return np.einsum("nchwij,ocij->nohw", win, wt)
    if wl.name == "colsum":
        return x[0].sum(0)
    if wl.name == "rowsum":
        return x[0].sum(1)
    if wl.name == "softmax":
        e = np.exp(x[0] - x[0].max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    raise ValueError(wl.name)


def realized_inputs(wl: Workload) -> list:
    """The workload's inputs as realized tinygrad CPU Tensors (real buffers, so the schedule has no COPY)."""
    from tinygrad import Tensor, Device
    return [Tensor(arr, device=Device.DEFAULT).realize() for arr in wl.inputs.values()]
