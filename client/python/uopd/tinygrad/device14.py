# mypy: ignore-errors
# (tinygrad is an optional dependency without type information that mypy --strict accepts; the
# package's type check covers the rest of uopd, and tests/tinygrad runs these modules.)
"""tinygrad.runtime.ops_uopd: the UOPD device of tinygrad 0.14 (see uopd/tinygrad/__init__.py).

Device names, the server and its credentials are as on tinygrad 0.12 (uopd/tinygrad/device.py);
buffers are daemon buffers the same way (uopd/tinygrad/_common.py).

How tinygrad 0.14's pieces map onto uopd: tinygrad compiles a schedule (a LINEAR of CALLs) with
``lower_and_compile``, which leaves alone every kernel that is already a PROGRAM with a
ProgramInfo and a BINARY. It is wrapped so that each UOPD kernel's SINK becomes such a PROGRAM
without any local lowering: its BINARY names the kernel here, its ProgramInfo says which PARAM
slots it reads and writes and which variables it takes, and every new kernel is sent to the
daemon to compile at once, from background threads. The device's runtime (``UopdProgram``) runs
it with Execute: the AST encoded once in the TINYGRAD_0_14 dialect (``uopd.tinygrad.ir14``),
each PARAM slot bound to a ViewRef of its daemon buffer, the variables' values as vars. The
daemon rewrites the 0.14 spelling into its IR and compiles each AST once (its cache is keyed by
the AST hash, shared with 0.12 clients). TinyJit replays a batch of kernels as one Execute, then
one RunPlan (``UopdGraph``; ``$UOPD_GRAPH=0``: one Execute per kernel).
"""
from __future__ import annotations

import functools
from contextvars import ContextVar
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Optional

from google.protobuf import json_format

import uopd
from uopd.tinygrad import ir14
from uopd.tinygrad.estimates import kernel_estimates
from uopd.tinygrad._common import (BatchReplay, UopdAllocator, UopdBuf, client_for, daemon_source,
                                   mode_tag, optimization_for, read_through, remote_device, server_address)
from uopd.v1 import graph_pb2
from uopd.v1 import kernel_service_pb2 as ks

from tinygrad import codegen
from tinygrad.device import Compiled, Compiler, Device, Program, TinyELF
from tinygrad.dtype import AddrSpace
from tinygrad.engine import realize
from tinygrad.engine.jit import GraphException, GraphRunner
from tinygrad.helpers import DEBUG, NOOPT
from tinygrad.renderer import Renderer
from tinygrad.uop.ops import AxisType, Ops, UOp, KernelInfo, ProgramInfo

__all__ = ["UopdDevice", "UopdAllocator", "UopdProgram", "client_for", "server_address"]

MAGIC = b"uopd-kernel:"


class UopdCompiler(Compiler):
    def compile(self, src: str) -> bytes:
        kernel = _rendering.get()
        if kernel is None:
            raise RuntimeError("the UOPD device compiles kernel ASTs in the daemon, not source")
        return kernel.key


class UopdRenderer(Renderer):
    """What the scheduler and tinygrad's inspection see of the device. UOPD kernels become
    PROGRAMs without local lowering (lower_and_compile below); when a program is asked for
    (``to_program(ast, renderer)``: tinygrad's tests, DEBUG>=2), tinygrad lowers the AST for this
    renderer as for any other, so its uops and estimates are tinygrad's own, the source is the
    daemon's rendering of that AST and the BINARY names the kernel (do_to_program below)."""
    has_local = False
    has_shared = False
    supports_float4 = False
    compiler = UopdCompiler()
    device = "UOPD"  # the tinygrad device; UopdDevice sets its own on the renderer it selects

    def render(self, uops: list[UOp]) -> str:
        kernel = _rendering.get()
        if kernel is None:
            raise RuntimeError("the UOPD daemon renders kernel ASTs, not uops: ask to_program(ast, renderer) "
                               "for a UOPD kernel's program")
        return kernel.source()


@dataclass(frozen=True)
class Slot:
    index: int      # the PARAM slot
    scalar: str     # wire dtype name of the element
    size: int       # elements


class UopdKernel:
    """One kernel AST of a UOPD device: encoded once, with what binding it needs."""

    def __init__(self, device: str, ast: UOp, noopt: bool = False):
        info = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()
        opts = list(info.opts_to_apply) if info.opts_to_apply is not None else None
        lowered = ir14.lower_movement_ops(ast.replace(arg=KernelInfo(name=info.name)))
        sent = read_through(lowered, Ops.STAGE)
        if sent is not lowered:
            # Its opts name axes of the kernel with its STAGEs, which it no longer has: the
            # daemon's default optimizes the inlined kernel instead (the same values).
            opts = None
        self.name = info.name if info.name != "test" else f"uopd_{ast.key.hex()[:10]}"
        self.graph = json_format.ParseDict(ir14.encode_graph(sent), graph_pb2.Graph())
        self.optimization = optimization_for(opts, info.beam, noopt)
        self.remote = remote_device(device)
        nodes = sent.toposort()
        params = {u.arg.slot: u for u in nodes if u.op is Ops.PARAM and u.arg.addrspace is not AddrSpace.ALU}
        self.slots = []
        for slot, p in sorted(params.items()):
            shape = p.src[0].src if p.src[0].op is Ops.STACK else (p.src[0],)
            size = 1
            for d in shape:
                size *= int(d.arg)
            self.slots.append(Slot(slot, ir14.encode_dtype(p.dtype)["scalar"], size))
        targets = {u.src[0] for u in nodes if u.op is Ops.STORE}
        read = {s for u in nodes for i, s in enumerate(u.src) if not (u.op is Ops.STORE and i == 0)}
        self.outs = sorted({t.src[0].arg.slot for t in targets if t.op is Ops.INDEX and t.src[0].op is Ops.PARAM})
        self.ins = sorted({u.src[0].arg.slot for u in nodes
                           if u.op is Ops.INDEX and u in read and u.src[0].op is Ops.PARAM})
        # A sharded kernel's DEVICE range is the variable _device_num in the daemon, as in
        # tinygrad's codegen: tinygrad binds it per device at launch when the program lists it.
        devices = {UOp.variable("_device_num", 0, r.vmax, dtype=r.dtype, param=True)
                   for r in nodes if r.op is Ops.RANGE and r.arg[-1] is AxisType.DEVICE}
        self.vars = tuple(sorted({u for u in nodes if u.op is Ops.PARAM and u.arg.addrspace is AddrSpace.ALU} | devices,
                                 key=lambda v: v.arg.name))
        self.key = MAGIC + ast.key + mode_tag(0, noopt)  # BEAM is in the AST (KernelInfo.beam)
        self._source: Optional[str] = None
        self._ast = ast
        self._sent = sent
        self._estimates = None
        self._merged: dict[tuple[int, ...], UopdKernel] = {}

    def source(self) -> str:
        """The daemon's rendering of this kernel (asked once; the daemon compiles it then)."""
        if self._source is None:
            self._source = daemon_source(self.graph, self.remote, self.optimization)
        return self._source

    def program(self, ast: UOp) -> UOp:
        """The PROGRAM tinygrad takes as compiled: BINARY names this kernel; nothing was lowered.
        Its SINK carries the kernel's Estimates, which GlobalCounters add up on every run."""
        info = ProgramInfo(self.name, (1, 1, 1), None, self.vars, tuple(s.index for s in self.slots),
                           tuple(self.outs), tuple(self.ins))
        if self._estimates is None:
            self._estimates = kernel_estimates(self._sent, self.name)
        kernel_info = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()
        sink = ast.replace(arg=replace(kernel_info, estimates=self._estimates))
        params = tuple(u for u in ast.toposort() if u.op is Ops.PARAM and u.arg.addrspace is not AddrSpace.ALU)
        return UOp(Ops.PROGRAM, src=(sink, UOp(Ops.LINEAR, src=params), UOp(Ops.SOURCE, arg=f"// uopd kernel {self.name}"),
                                     UOp(Ops.BINARY, arg=self.key)), arg=info)

    def views(self, bufs: tuple[UopdBuf, ...]) -> list[uopd.ViewRef]:
        return [uopd.ViewRef(b.handle, b.offset, s.scalar, s.size) for s, b in zip(self.slots, bufs)]

    def bound(self, device: str, bufs: tuple[UopdBuf, ...]) -> tuple[UopdKernel, list[uopd.ViewRef]]:
        """The kernel to run on `bufs` and its views. The daemon refuses one buffer in two slots
        when either is written (its kernels' pointers do not alias); tinygrad passes it (a custom
        kernel's `B[i] = A[i] + 1` on one tensor). Slots bound to the same window of one buffer
        then become one slot, in a kernel made once per such binding: one pointer, read and
        written, means what tinygrad's two aliased pointers mean. Partial overlaps stay refused."""
        first: dict[tuple[str, int, int, str], int] = {}
        same = []  # for each slot, the first slot bound to its window
        for s, b in zip(self.slots, bufs):
            same.append(first.setdefault((b.handle, b.offset, s.size, s.scalar), s.index))
        written = set(self.outs)
        if all(keep == s.index or (keep not in written and s.index not in written)
               for s, keep in zip(self.slots, same)):
            return self, self.views(bufs)
        key, kept = tuple(same), sorted(set(same))
        merged = self._merged.get(key)
        if merged is None:
            params = {u.arg.slot: u for u in self._ast.toposort()
                      if u.op is Ops.PARAM and u.arg.addrspace is not AddrSpace.ALU}
            # Through slots no kernel uses: substitute() rewrites until nothing changes, and a
            # renumbered PARAM can be another slot's original (hash-consed), rewritten again.
            def numbered(old: int, slot: int) -> UOp:
                return params[old].replace(arg=replace(params[old].arg, slot=slot))
            parked = 1 + max(params)
            ast = self._ast.substitute({params[s.index]: numbered(keep, parked + kept.index(keep))
                                        for s, keep in zip(self.slots, same)})
            ast = ast.substitute({numbered(old, parked + new): numbered(old, new) for new, old in enumerate(kept)})
            merged = self._merged[key] = UopdKernel(device, ast)
        by_slot = {s.index: b for s, b in zip(self.slots, bufs)}
        return merged, merged.views(tuple(by_slot[old] for old in kept))


_kernels: dict[bytes, UopdKernel] = {}
_kernels_lock = threading.Lock()
# The UOPD kernel whose program to_program is making (its render and compile ask the daemon).
_rendering: ContextVar[Optional[UopdKernel]] = ContextVar("uopd_rendering", default=None)


class UopdProgram(Program["UopdDevice"]):
    def __init__(self, dev: UopdDevice, obj: TinyELF):
        self.dev, self.name = dev, obj.name
        self.kernel = _kernels.get(obj.lib)
        if self.kernel is None:
            raise RuntimeError(f"kernel {obj.name} was not made for the UOPD device in this process")
        self.replay = BatchReplay()  # its runs, Executes then RunPlans once the buffers repeat

    def __call__(self, *bufs, global_size=(1, 1, 1), local_size=None, vals: tuple = (), wait=False, **kw) -> Optional[float]:
        k = self.kernel
        variables = {v.arg.name: int(x) for v, x in zip(k.vars, vals) if x is not None}
        # On this device: a kernel is made once per process, for whichever UOPD device lowered it first.
        k, views = k.bound(self.dev.device, bufs)
        kernel = uopd.Kernel(k.graph, views, optimization=k.optimization)
        return self.replay.run(self.dev.client, self.dev.remote, [kernel], variables, wait)


class UopdGraph(GraphRunner):
    """TinyJit's batch of UOPD kernels, replayed as one call per run, as on tinygrad 0.12
    (BatchReplay: one Execute, then one RunPlan of a prepared plan once the buffers repeat; the
    JIT's memory plan keeps intermediates in place, and inputs are often the same buffers)."""

    def __init__(self, linear: UOp, input_uops: tuple[UOp, ...] = ()):
        super().__init__(linear, input_uops)
        if not all(isinstance(rt, UopdProgram) for rt in self.runtimes):
            raise GraphException("UopdGraph runs UOPD kernels only")
        self.replay = BatchReplay()
        # The last run's buffers and the kernels bound to them: a JIT runs its batch on the same
        # buffers call after call, and binding 45 kernels anew took a tenth of a LLaMA token.
        self._bound: Optional[tuple[tuple, list[uopd.Kernel]]] = None
        self._var_names = tuple(dict.fromkeys(v.arg.name for rt in self.runtimes for v in rt.kernel.vars))
        # A graph's kernels run on one device (GraphRunner.supports_uop), so their values agree.
        self._device_vars = {k: v for _, _, _, device_vars in self.calls for k, v in device_vars.items()}

    @property
    def plans(self) -> OrderedDict[tuple, uopd.Plan]:
        return self.replay.plans

    def _buffers(self, j: int, input_uops: tuple[UOp, ...]) -> list[Any]:
        _, program, bufs, _ = self.calls[j]
        if self.uop_replace[j]:
            bufs = list(bufs)
            for pos, slot in self.uop_replace[j]:
                bufs[pos] = input_uops[slot].buffer
        return [bufs[i].ensure_allocated()._buf for i in program.arg.globals]

    def __call__(self, input_uops: tuple[UOp, ...], var_vals: dict[str, int], wait: bool = False) -> Optional[float]:
        buffers = tuple(tuple(self._buffers(j, input_uops)) for j in range(len(self.calls)))
        if self._bound is None or self._bound[0] != buffers:
            kernels = []
            for runtime, bufs in zip(self.runtimes, buffers):
                k, views = runtime.kernel.bound(runtime.dev.device, bufs)
                kernels.append(uopd.Kernel(k.graph, views, optimization=k.optimization))
            self._bound = (buffers, kernels)
        values = {**var_vals, **self._device_vars} if self._device_vars else var_vals
        variables = {name: int(values[name]) for name in self._var_names if name in values}
        dev: UopdDevice = Device[self.calls[0][2][0].device]
        return self.replay.run(dev.client, dev.remote, self._bound[1], variables, wait)

    def __del__(self) -> None:
        if hasattr(self, "replay"):
            self.replay.release()


class UopdDevice(Compiled):
    def __init__(self, device: str):
        self.client = client_for()
        self.remote = remote_device(device)
        graph = None if os.environ.get("UOPD_GRAPH") == "0" else UopdGraph
        super().__init__(device, UopdAllocator(self), [UopdRenderer], UopdProgram, graph)
        self.renderer.device = device
        if DEBUG >= 1:
            print(f"UOPD: {device} is {self.remote} on {self.client.address}")


# ---------------------------------------------------------------------------------------------
# The hook: UOPD kernels become compiled PROGRAMs without local lowering


def _is_uopd(device: Any) -> bool:
    first = device if isinstance(device, str) else (device[0] if device else "")
    return isinstance(first, str) and first.split(":", 1)[0].upper() == "UOPD"


_precompile_pool: Optional[ThreadPoolExecutor] = None


def _compile_quietly(kernel: UopdKernel, client: uopd.Client) -> None:
    try:
        client.compile(kernel.graph, device=kernel.remote, optimization=kernel.optimization)
    except Exception:  # the Execute that needs the kernel reports what went wrong
        pass


def _kernel_for(device: str, ast: UOp) -> UopdKernel:
    """The kernel of `ast` on `device`, made once per process; a new one starts compiling in the
    daemon at once (``$UOPD_PRECOMPILE=0``: when first run)."""
    global _precompile_pool
    noopt = bool(NOOPT)
    key = MAGIC + ast.key + mode_tag(0, noopt)
    with _kernels_lock:
        kernel = _kernels.get(key)
        if kernel is not None:
            return kernel
        kernel = _kernels[key] = UopdKernel(device, ast, noopt)
        if os.environ.get("UOPD_PRECOMPILE") != "0":
            if _precompile_pool is None:
                _precompile_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="uopd-precompile")
            _precompile_pool.submit(_compile_quietly, kernel, client_for())
    return kernel


_lower_and_compile = realize.lower_and_compile


def _program(device: str, ast: UOp) -> UOp:
    """The PROGRAM of a UOPD kernel: without local lowering, but at DEBUG>=2 tinygrad's own
    (to_program: its estimates for GFLOP/s, the daemon's source printed at DEBUG>=4)."""
    if DEBUG >= 2:
        try:
            return codegen.to_program(ast if isinstance(ast.arg, KernelInfo) else ast.replace(arg=KernelInfo()),
                                      Device[device].renderer)
        except Exception as e:  # only the statistics are lost: the kernel still runs in the daemon
            print(f"UOPD: no local program of a kernel for statistics: {e}")
    return _kernel_for(device, ast).program(ast)


@functools.wraps(_lower_and_compile)
def lower_and_compile(linear: UOp) -> UOp:
    swaps = {}
    for c in linear.toposort():
        if c.op is Ops.CALL and c.src and c.src[0].op is Ops.SINK and _is_uopd(c.device):
            device = c.device if isinstance(c.device, str) else c.device[0]
            swaps[c] = c.replace(src=(_program(device, c.src[0]), *c.src[1:]))
    if swaps:
        linear = linear.substitute(swaps, name="uopd kernels")
    return _lower_and_compile(linear)


_do_to_program = codegen.do_to_program


@functools.wraps(_do_to_program)
def do_to_program(ast: UOp, renderer: Renderer) -> UOp:
    """tinygrad's program of a kernel, for a UOPD renderer: tinygrad's own lowering (uops,
    estimates) with the daemon's source and a BINARY naming the kernel, which the device's runtime
    (UopdProgram) runs as the kernel AST in the daemon, bound as the kernel binds it."""
    if not isinstance(renderer, UopdRenderer) or ast.op is not Ops.SINK:
        return _do_to_program(ast, renderer)
    kernel = _kernel_for(renderer.device, ast)
    token = _rendering.set(kernel)
    try:
        prg = _do_to_program(ast, renderer)
    finally:
        _rendering.reset(token)
    return prg.replace(arg=replace(prg.arg, vars=kernel.vars, globals=tuple(s.index for s in kernel.slots),
                                   outs=tuple(kernel.outs), ins=tuple(kernel.ins)))


realize.lower_and_compile = lower_and_compile
codegen.do_to_program = do_to_program
