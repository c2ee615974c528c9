# mypy: ignore-errors
# (tinygrad is an optional dependency without type information that mypy --strict accepts; the
# package's type check covers the rest of uopd, and tests/tinygrad runs these modules.)
"""tinygrad.runtime.ops_uopd: the UOPD device of tinygrad 0.12 (see uopd/tinygrad/__init__.py).

Device names: ``UOPD`` is the server's default device (``$UOPD_DEVICE``, else CPU); ``UOPD:CUDA``
(any ``UOPD:<name>``) is the server's device <name>. The server: ``$UOPD`` when it is an address
(``host:port`` or ``unix:/path``), else ``$UOPD_ADDRESS``, else 127.0.0.1:50051; ``$UOPD_TOKEN``
or ``$UOPD_TOKEN_FILE`` as the bearer token; ``$UOPD_TIMEOUT`` (seconds) the deadline of each
call.

How tinygrad's pieces map onto uopd:
 - Allocator: each tinygrad allocation (bytes) is a UINT8 buffer in the daemon; copies in and out
   are the client's WriteBuffer/ReadBuffer (the unary *Small calls for small payloads); a
   sub-buffer (tinygrad's ``offset`` views) is the same handle at a byte offset.
 - Kernels: ``tinygrad.engine.realize.get_runner`` is wrapped so that for a UOPD device it returns
   a UopdRunner (a CompiledRunner, so ExecItem and TinyJit treat it as any compiled kernel)
   instead of lowering and rendering the AST locally. The runner holds the scheduled kernel AST,
   encoded once to a wire Graph, and runs it with Execute, binding each DEFINE_GLOBAL slot to a
   ViewRef {handle, byte offset, slot dtype, slot size} and passing symbolic variables as vars.
   The daemon compiles each AST once (its cache is keyed by the AST hash).
 - TinyJit: the device's graph (UopdGraph) replays a captured batch of kernels as one Execute
   call (one round trip for the whole batch) with the current input buffers and variables; a
   batch that comes again with the same buffers is prepared once and replayed with RunPlan.
 - With a daemon on this machine (``unix:/path`` or loopback), Execute, RunPlan and the buffer
   calls go over its local socket rather than gRPC (the client's ``local_socket``;
   ``$UOPD_LOCAL_SOCKET=0`` keeps them on gRPC).
 - Compiling ahead: when tinygrad runs a schedule, every UOPD kernel of it is sent to the daemon
   to compile at once, from background threads (``Compile``; ``$UOPD_PRECOMPILE=0`` turns it
   off), so the daemon's compile workers work in parallel while the kernels run one by one;
   each Execute then finds its kernel compiled or being compiled (the daemon compiles a kernel
   once however many ask).
"""
from __future__ import annotations

import functools
from contextvars import ContextVar
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
import os
import threading
from dataclasses import dataclass, replace
from typing import Any, Optional

from google.protobuf import json_format

import uopd
from uopd.tinygrad import ir
from uopd.tinygrad.estimates import kernel_estimates
from uopd.tinygrad._common import (BatchReplay, UopdAllocator, UopdBuf, client_for, daemon_source,
                                   mode_tag, optimization_for, read_through, remote_device, server_address)
from uopd.v1 import graph_pb2
from uopd.v1 import kernel_service_pb2 as ks

from tinygrad.device import Compiled, Compiler, CompilerPair, CompilerSet, Buffer, Device
from tinygrad.dtype import PtrDType, DType
from tinygrad import codegen
from tinygrad.engine import realize
from tinygrad.engine.jit import GraphRunner, GraphException
from tinygrad.engine.realize import CompiledRunner, Runner, ExecItem
from tinygrad.helpers import BEAM, DEBUG, NOOPT
from tinygrad.renderer import ProgramSpec, Renderer
from tinygrad.uop.ops import Ops, UOp, KernelInfo, PatternMatcher, UPat

__all__ = ["UopdDevice", "UopdAllocator", "UopdRunner", "UopdGraph", "client_for", "server_address"]


# ---------------------------------------------------------------------------------------------
# Kernels


class UopdRenderer(Renderer):
    """What the scheduler and tinygrad's inspection see of the device. UOPD kernels run without
    any local lowering (get_runner below); when a program is asked for (``get_program(ast,
    renderer)``: tinygrad's tests, DEBUG>=2), tinygrad lowers the AST for this renderer as for
    any other, so its uops and FLOP/byte estimates are tinygrad's own, and the source is the
    daemon's rendering of that AST (get_program below sets what is being rendered)."""
    has_local = False
    has_shared = False
    supports_float4 = False

    def __init__(self, device: str = "UOPD"):
        self.device = device

    def __reduce__(self) -> Any:
        return self.__class__, (self.device,)

    def render(self, uops: list[UOp]) -> str:
        runner = _rendering.get()
        if runner is None:
            raise RuntimeError("the UOPD daemon renders kernel ASTs, not uops: ask get_program(ast, renderer) "
                               "for a UOPD kernel's program")
        return runner.source()


class UopdCompiler(Compiler):
    def compile(self, src: str) -> bytes:
        runner = _rendering.get()
        if runner is None:
            raise RuntimeError("the UOPD device compiles kernel ASTs in the daemon, not source")
        return runner.lib


# The UOPD kernel whose program get_program is making (its render and compile ask the daemon).
_rendering: ContextVar[Optional["UopdRunner"]] = ContextVar("uopd_rendering", default=None)
MAGIC = b"uopd-kernel:"


def _global_of(u: UOp) -> Optional[UOp]:
    while u.op is not Ops.DEFINE_GLOBAL:
        if not u.src or u.op not in (Ops.INDEX, Ops.AFTER, Ops.RESHAPE, Ops.CAST, Ops.BITCAST, Ops.LOAD):
            return None
        u = u.src[0]
    return u


@dataclass(frozen=True)
class Slot:
    index: int          # the DEFINE_GLOBAL slot
    scalar: str         # wire dtype name of the element
    size: int           # elements (-1: as many as the buffer holds)
    itemsize: int


def _kernel_parts(ast: UOp) -> tuple[UOp, Any, str]:
    """The AST to send (SINK's KernelInfo reduced to its name), its opts (or None) and its name."""
    info = ast.arg
    name = f"uopd_{ast.key.hex()[:10]}"  # scheduled ASTs are unnamed (tinygrad names kernels when it renders)
    opts = None
    if isinstance(info, KernelInfo):
        name = info.name or name
        if info.opts_to_apply is not None:
            opts = list(info.opts_to_apply)
        if info != KernelInfo(name=info.name):
            ast = ast.replace(arg=KernelInfo(name=info.name))
    inlined = read_through(ast, Ops.BUFFERIZE)
    if inlined is not ast:
        # Its opts name axes of the kernel with its local buffers, which it no longer has: the
        # daemon's default optimizes the inlined kernel instead (the same values).
        opts = None
    return inlined, opts, name


class UopdRunner(CompiledRunner):
    """A kernel AST on a UOPD device: encoded once, run by the daemon with Execute."""

    def __init__(self, device: str, ast: UOp, beam: int = 0, noopt: bool = False):
        if ast.op is not Ops.SINK:
            raise NotImplementedError(f"the UOPD device runs kernel ASTs (SINK), not {ast.op}")
        sent, opts, name = _kernel_parts(ast)
        self.graph: graph_pb2.Graph = json_format.ParseDict(ir.encode_graph(sent, kernel_ast_only=False), graph_pb2.Graph())
        self.optimization = optimization_for(opts, beam, noopt)
        self._mode = (beam, noopt)
        nodes = sent.toposort()
        globs = sorted({u.arg: u for u in nodes if u.op is Ops.DEFINE_GLOBAL}.items())
        outs: set[int] = set()
        ins: set[int] = set()
        targets = {u.src[0] for u in nodes if u.op is Ops.STORE}
        loaded = {s for u in nodes if u.op is not Ops.STORE for s in u.src} | {u.src[0] for u in nodes if u.op is Ops.LOAD}
        for u in nodes:
            if u.op is Ops.STORE and (g := _global_of(u.src[0])) is not None:
                outs.add(g.arg)
            elif u.op is Ops.INDEX and (u not in targets or u in loaded) and (g := _global_of(u)) is not None:
                ins.add(g.arg)
        self.slots: list[Slot] = []
        for slot, g in globs:
            dt: PtrDType = g.dtype  # type: ignore[assignment]
            base: DType = dt.base
            count = base.count
            self.slots.append(Slot(slot, ir.scalar_name(base.scalar()), dt.size * count if dt.size >= 0 else -1,
                                   base.scalar().itemsize))
        variables = sorted({u for u in nodes if u.op is Ops.DEFINE_VAR}, key=lambda v: v.arg)
        self.remote = remote_device(device)
        self.replay = BatchReplay()  # its runs, Executes then RunPlans once the buffers repeat
        p = ProgramSpec(name, "", device, ast, None, b"", global_size=[1, 1, 1], local_size=None,
                        vars=variables, globals=[s.index for s in self.slots], outs=sorted(outs),
                        ins=sorted(ins))
        self.p = p
        self._prg = None
        # What compiling its program gives (UopdProgram finds this runner by it).
        self.lib = MAGIC + ast.key + mode_tag(beam, noopt)
        self._source: Optional[str] = None
        Runner.__init__(self, f"uopd {name}", device, kernel_estimates(ast, name))

    def source(self) -> str:
        """The daemon's rendering of this kernel (asked once; the daemon compiles it then)."""
        if self._source is None:
            self._source = daemon_source(self.graph, self.remote, self.optimization)
        return self._source

    def inspect(self, p: ProgramSpec) -> None:
        """Takes tinygrad's estimates (and name) from its program of this kernel, for DEBUG>=2."""
        self.estimates, self.display_name = p.estimates, p.name
        if DEBUG >= 4:
            print(p.src)

    def __reduce__(self) -> Any:
        return self.__class__, (self.p.device, self.p.ast, *self._mode)

    def views(self, bufs: list[UopdBuf]) -> list[uopd.ViewRef]:
        out = []
        for s, ob in zip(self.slots, bufs):
            size = s.size if s.size >= 0 else ob.nbytes // s.itemsize
            out.append(uopd.ViewRef(ob.handle, ob.offset, s.scalar, size))
        return out

    def kernel(self, rawbufs: list[Buffer]) -> uopd.Kernel:
        return uopd.Kernel(self.graph, self.views([b._buf for b in rawbufs]), optimization=self.optimization)

    def run(self, bufs: list[UopdBuf], variables: dict[str, int], wait: bool) -> Optional[float]:
        kernel = uopd.Kernel(self.graph, self.views(bufs), optimization=self.optimization)
        return self.replay.run(client_for(), self.remote, [kernel], variables, wait)

    def var_values(self, var_vals: Optional[dict[str, int]]) -> dict[str, int]:
        return {v.expr: (var_vals or {})[v.expr] for v in self.p.vars}

    def __call__(self, rawbufs: list[Buffer], var_vals: Optional[dict[str, int]] = None,
                 wait: bool = False) -> Optional[float]:
        return self.run([b._buf for b in rawbufs], self.var_values(var_vals), wait)


class UopdProgram:
    """The device's runtime: runs the program get_program made for a UOPD kernel (CompiledRunner
    calls it with the program's buffers and variable values, in the order of its globals and
    vars, which get_program takes from the kernel's runner)."""

    def __init__(self, device: str, name: str, lib: bytes, *aux: Any):
        self.name = name
        self.runner = _runners.get((device, lib[len(MAGIC):])) if lib.startswith(MAGIC) else None
        if self.runner is None:
            raise RuntimeError(f"kernel {name} was not made for the UOPD device {device} in this process")

    def __call__(self, *bufs: UopdBuf, global_size: Any = None, local_size: Any = None, vals: tuple = (),
                 wait: bool = False) -> Optional[float]:
        variables = {v.expr: int(x) for v, x in zip(self.runner.p.vars, vals)}
        return self.runner.run(list(bufs), variables, wait)


class UopdGraph(GraphRunner):
    """TinyJit's batch of UOPD kernels, replayed as one call per run (BatchReplay: one Execute,
    then one RunPlan of a prepared plan once the buffers repeat)."""

    def __init__(self, jit_cache: list[ExecItem], input_buffers: list[Buffer], var_vals: dict[str, int]):
        if not all(isinstance(ji.prg, UopdRunner) for ji in jit_cache):
            raise GraphException("UopdGraph runs UopdRunner kernels only")
        super().__init__(jit_cache, input_buffers, var_vals)
        self.replay = BatchReplay()
        # The last run's buffers and the kernels bound to them: a JIT runs its batch on the same
        # buffers call after call, and binding every kernel anew took a tenth of a LLaMA token.
        self._bound: Optional[tuple[tuple, list[uopd.Kernel]]] = None

    @property
    def plans(self) -> OrderedDict[tuple, uopd.Plan]:
        return self.replay.plans

    def __call__(self, input_buffers: list[Buffer], var_vals: dict[str, int], wait: bool = False) -> Optional[float]:
        for (j, i), input_idx in self.input_replace.items():
            self.jit_cache[j].bufs[i] = input_buffers[input_idx]
        buffers = tuple(tuple(ji.bufs[i]._buf for i in ji.prg.p.globals) for ji in self.jit_cache)  # type: ignore[union-attr]
        if self._bound is None or self._bound[0] != buffers:
            self._bound = (buffers, [ji.prg.kernel([ji.bufs[i] for i in ji.prg.p.globals])  # type: ignore[attr-defined]
                                     for ji in self.jit_cache])
        kernels, allvars = self._bound[1], {}
        for ji in self.jit_cache:
            prg: UopdRunner = ji.prg  # type: ignore[assignment]
            allvars.update(prg.var_values(var_vals | ji.fixedvars))
        for (j, i) in self.input_replace.keys():
            self.jit_cache[j].bufs[i] = None
        dev: UopdDevice = self.dev  # type: ignore[assignment]
        return self.replay.run(dev.client, dev.remote, kernels, allvars, wait)

    def __del__(self) -> None:
        if hasattr(self, "replay"):
            self.replay.release()


# ---------------------------------------------------------------------------------------------
# The device


class UopdDevice(Compiled):
    def __init__(self, device: str):
        self.client = client_for()
        self.remote = remote_device(device)
        super().__init__(device, UopdAllocator(self),
                         CompilerSet([CompilerPair(functools.partial(UopdRenderer, device), UopdCompiler)]),
                         runtime=functools.partial(UopdProgram, device), graph=UopdGraph)
        if DEBUG >= 1:
            print(f"UOPD: {device} is {self.remote} on {self.client.address}")


# ---------------------------------------------------------------------------------------------
# The hook: get_runner for UOPD devices


_runners: dict[tuple[str, bytes], UopdRunner] = {}
_get_runner = realize.get_runner


def _is_uopd(device: str) -> bool:
    return device.split(":", 1)[0].upper() == "UOPD"


@functools.wraps(_get_runner)
def get_runner(device: str, ast: UOp) -> CompiledRunner:
    if not _is_uopd(device):
        return _get_runner(device, ast)
    beam, noopt = BEAM.value, bool(NOOPT)
    key = (device, ast.key + mode_tag(beam, noopt))
    runner = _runners.get(key)
    if runner is None:
        runner = _runners[key] = UopdRunner(device, ast, beam, noopt)
        if DEBUG >= 2:  # tinygrad's estimates for its GFLOP/s, and the daemon's source at DEBUG>=4
            try:
                runner.inspect(get_program(ast, Device[device].renderer))
            except Exception as e:  # only the statistics are lost: the kernel still runs in the daemon
                print(f"UOPD: no local program of {runner.display_name} for statistics: {e}")
    return runner


_get_program = codegen.get_program


@functools.wraps(_get_program)
def get_program(ast: UOp, renderer: Renderer, opts: Optional[list] = None) -> ProgramSpec:
    """tinygrad's program of a kernel, for a UOPD renderer: tinygrad's own lowering (uops,
    estimates, launch sizes) with the daemon's source, and a lib that the device's runtime
    (UopdProgram) runs as the kernel AST in the daemon, bound as get_runner's runner binds it."""
    if not isinstance(renderer, UopdRenderer) or ast.op is not Ops.SINK:
        return _get_program(ast, renderer, opts)
    sent = ast.replace(arg=KernelInfo(opts_to_apply=tuple(opts))) if opts is not None and ast.arg is None else ast
    runner = get_runner(renderer.device, sent)
    token = _rendering.set(runner)
    try:
        p = _get_program(ast, renderer, opts)
    finally:
        _rendering.reset(token)
    return replace(p, device=renderer.device, lib=runner.lib, vars=runner.p.vars, globals=runner.p.globals,
                   outs=runner.p.outs, ins=runner.p.ins)


def _lower_uopd(ctx: list[Buffer], sink: UOp) -> Optional[Runner]:
    if ctx and ctx[0] is not None and _is_uopd(ctx[0].device):
        return get_runner(ctx[0].device, sink)
    return None


# ---------------------------------------------------------------------------------------------
# Compiling a schedule's kernels ahead of running them


_precompiled: set[tuple[str, bytes]] = set()
_precompile_pool: Optional[ThreadPoolExecutor] = None
_precompile_lock = threading.Lock()


def _compile_quietly(runner: UopdRunner) -> None:
    try:
        runner.dev.client.compile(runner.graph, device=runner.remote, optimization=runner.optimization)
    except Exception:  # the Execute that needs the kernel reports what went wrong
        pass


def precompile(schedule: list[ExecItem]) -> None:
    """Asks the daemon to compile every UOPD kernel of `schedule` not asked for before, without
    waiting: two at a time (the daemon's compile workers; more would only queue)."""
    global _precompile_pool
    if os.environ.get("UOPD_PRECOMPILE") == "0":
        return
    for si in schedule:
        if si.ast.op is not Ops.SINK or not si.bufs or si.bufs[0] is None or not _is_uopd(si.bufs[0].device):
            continue
        key = (si.bufs[0].device, si.ast.key)
        with _precompile_lock:
            if key in _precompiled:
                continue
            _precompiled.add(key)
            if _precompile_pool is None:
                _precompile_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="uopd-precompile")
        try:
            runner = get_runner(si.bufs[0].device, si.ast)
        except Exception:  # lowering it again when it runs raises the error where tinygrad expects it
            continue
        _precompile_pool.submit(_compile_quietly, runner)


_run_schedule = realize.run_schedule


@functools.wraps(_run_schedule)
def run_schedule(schedule: list[ExecItem], var_vals: Optional[dict[str, int]] = None, do_update_stats: bool = True):
    precompile(schedule)
    return _run_schedule(schedule, var_vals, do_update_stats)


# ExecItem.lower rewrites the AST with realize.si_lowerer, whose rules captured the original
# get_runner when they were compiled: the UOPD rule goes in front of them.
if getattr(realize.get_runner, "__uopd__", False) is False:
    get_runner.__uopd__ = True  # type: ignore[attr-defined]
    realize.get_runner = get_runner
    codegen.get_program = realize.get_program = get_program
    realize.si_lowerer = PatternMatcher([(UPat(Ops.SINK, name="sink"), _lower_uopd)]) + realize.si_lowerer
    # tinygrad.tensor imported run_schedule by name.
    import tinygrad.tensor as _tensor
    realize.run_schedule = run_schedule
    _tensor.run_schedule = run_schedule
