# mypy: ignore-errors
# (tinygrad is an optional dependency without type information that mypy --strict accepts.)
"""What the UOPD device is on every tinygrad release it speaks (0.12: device.py, 0.14:
device14.py): which server, the process's client of it, and tinygrad's buffers as daemon buffers."""
from __future__ import annotations

import os
import re
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import uopd
from uopd._opts import optimization_of
from uopd.v1 import kernel_service_pb2 as ks

from tinygrad.codegen.opt import KernelOptError
from tinygrad.device import LRUAllocator, BufferSpec
from tinygrad.uop.ops import Ops, UOp, UPat, PatternMatcher, graph_rewrite

DEFAULT_ADDRESS = "127.0.0.1:50051"

def server_address() -> str:
    env = os.environ.get("UOPD", "")
    if env and env not in ("0", "1"):
        return env
    return os.environ.get("UOPD_ADDRESS", DEFAULT_ADDRESS)


_clients: dict[str, uopd.Client] = {}
_clients_lock = threading.Lock()


def client_for(address: Optional[str] = None) -> uopd.Client:
    """The process's client of the server at ``address`` (default: server_address()), made once."""
    address = address or server_address()
    with _clients_lock:
        client = _clients.get(address)
        if client is None:
            timeout = os.environ.get("UOPD_TIMEOUT")
            # In a session: the daemon frees this process's buffers and plans when it ends,
            # however it ends, rather than keeping them until they are idle past --idle_ttl.
            client = uopd.Client(address, session=True, token=os.environ.get("UOPD_TOKEN") or None,
                                 token_file=os.environ.get("UOPD_TOKEN_FILE") or None,
                                 timeout=float(timeout) if timeout else None,
                                 local_socket=False if os.environ.get("UOPD_LOCAL_SOCKET") == "0" else None)
            _clients[address] = client
        return client


def remote_device(device: str) -> str:
    """The server's device for a tinygrad device name: UOPD -> $UOPD_DEVICE or CPU, UOPD:X -> X,
    and UOPD:n (tinygrad's second, third... device of a kind, as its multi-device code names
    them) -> device n of the default's kind (CUDA:n; the one CPU for CPU)."""
    _, _, rest = device.partition(":")
    default = (os.environ.get("UOPD_DEVICE", "") or "CPU").upper()
    if rest.isdigit():
        kind = default.split(":")[0]
        return kind if kind == "CPU" else f"{kind}:{rest}"
    return (rest or default).upper()


# ---------------------------------------------------------------------------------------------
# Buffers


@dataclass(frozen=True)
class UopdBuf:
    """tinygrad's opaque buffer: a daemon UINT8 buffer (handle) and a byte window of it."""
    handle: str
    nbytes: int
    offset: int = 0


class UopdAllocator(LRUAllocator["UopdDevice"]):
    def __init__(self, dev: UopdDevice):
        super().__init__(dev, supports_copy_from_disk=False, supports_transfer=False)

    def _alloc(self, size: int, options: BufferSpec) -> UopdBuf:
        buf = self.dev.client.create_buffer("UINT8", size, device=self.dev.remote)
        return UopdBuf(buf.handle, size)

    def _free(self, opaque: UopdBuf, options: BufferSpec) -> None:
        _plans_over.release_over(opaque.handle)
        try:
            self.dev.client.free_buffer(opaque.handle)
        except Exception:  # at interpreter exit the channel may be gone; the server frees on disconnect
            pass

    def _copyin(self, dest: UopdBuf, src: memoryview) -> None:
        self.dev.client.write_buffer(dest.handle, bytes(src.cast("B") if src.ndim != 1 or src.format != "B"
                                                        else src), offset=dest.offset)

    def _copyout(self, dest: memoryview, src: UopdBuf) -> None:
        data = self.dev.client.read_buffer(src.handle, src.offset, src.nbytes)
        dest.cast("B")[:] = data

    def _offset(self, buf: UopdBuf, size: int, offset: int) -> UopdBuf:
        return UopdBuf(buf.handle, size, buf.offset + offset)


# How the daemon names an opt of a kernel's opts_to_apply that does not apply (core/opt/optimize.cc):
# "kernel 0 (name, ast ...): opts_to_apply[1] (PADTO(1, 8)): cannot pad upcasted ...".
_OPT_REFUSED = re.compile(r"\bopts_to_apply(\[\d+\] \(.*?\))?: ")


@contextmanager
def kernel_opt_errors() -> Iterator[None]:
    """The daemon's refusal of a kernel's opts as tinygrad's own devices refuse them: a
    KernelOptError (what tinygrad's tests and its beam search catch), not an RPC error."""
    try:
        yield
    except uopd.InvalidArgument as e:
        if _OPT_REFUSED.search(e.message):
            raise KernelOptError(e.message) from e
        raise


def daemon_source(graph: Any, remote: str, optimization: Optional[ks.Optimization]) -> str:
    """The daemon's rendered source of a kernel AST (Compile with want_source: the daemon compiles
    it then, once, as it would for its first run)."""
    with kernel_opt_errors():
        return client_for().compile(graph, device=remote, optimization=optimization, want_source=True).source


def optimization_for(opts: Any, beam: int = 0, noopt: bool = False) -> Optional[ks.Optimization]:
    """What the daemon optimizes a kernel with, in tinygrad's order of choice: the AST's
    opts_to_apply; else with BEAM (``beam`` >= 1) the daemon's timed search (SEARCH: candidates
    run on the device, as tinygrad's beam search does); else with NOOPT the kernel as written;
    else the daemon's default (its heuristics). And fused multiply-adds where tinygrad's own
    devices have them: its clang and NVRTC contract a multiply and an add into one FMA, so
    kernels run at their speed and round as they do. ``$UOPD_FMA=0`` asks for every operation
    rounded (the same bits on every device)."""
    allow_fma = os.environ.get("UOPD_FMA", "1") != "0"
    if opts is not None:
        optimization = optimization_of(opts)
    elif beam >= 1:
        optimization = ks.Optimization(mode=ks.Optimization.SEARCH)
    elif noopt:
        optimization = ks.Optimization(mode=ks.Optimization.NONE)
    else:
        return ks.Optimization(allow_fma=True) if allow_fma else None
    optimization.allow_fma = allow_fma
    return optimization


def mode_tag(beam: int, noopt: bool) -> bytes:
    """What tells one AST's kernels apart when BEAM or NOOPT chose their optimization (tinygrad
    keys its own compiled programs by both)."""
    return (b":beam" if beam >= 1 else b"") + (b":noopt" if noopt else b"")


def read_through(root: UOp, staged_op: Any) -> UOp:
    """`root` with each read of a kernel-local buffer that tinygrad's partial-contiguous
    scheduling (PCONTIG) makes (``staged_op``: 0.12's BUFFERIZE, 0.14's STAGE; OP(v, r...) holds
    v at every value of the ranges r, and INDEX(OP, i...) reads it at i) replaced by the value
    itself at those indices, v with r substituted by i: the same values, computed where they are
    read instead of held (tinygrad removes a removable one the same way when it is cheap). A read
    with another shape than staged is left, for the encoder to refuse. The same UOp when there
    are none."""
    if not any(u.op is staged_op for u in root.toposort()):
        return root

    def read(idx: UOp, staged: UOp) -> Optional[UOp]:
        ranges, indices = staged.src[1:], idx.src[1:]
        if len(ranges) != len(indices):
            return None
        return staged.src[0].substitute(dict(zip(ranges, indices)))

    reads = PatternMatcher([(UPat(Ops.INDEX, src=(UPat(staged_op, name="staged"),), allow_any_len=True, name="idx"), read)])
    return graph_rewrite(root, reads, name="read through kernel-local buffers")


# ---------------------------------------------------------------------------------------------
# Runs of kernels: TinyJit's batches and single programs


class BatchReplay:
    """How a list of kernels runs again and again (TinyJit's batch on a UOPD graph, or one program),
    on every tinygrad release: the first run with a given set of buffers is one Execute; when the
    same buffers come again (tinygrad hands the same daemon buffers back, and intermediates stay
    put), the kernels are prepared once as a plan (compiled and bound in the daemon) and every later
    run with those buffers is a RunPlan carrying only the variables' values, which skips decoding
    and binding the kernels (a one-kernel Execute from tinygrad took 130 us, its RunPlan 50). At most
    PLANS plans are kept (least recently used released first; the process keeps at most
    _PlansOverBuffers.LIMIT), and a plan goes when the allocator frees one of its buffers: a plan
    holds its buffers' memory in the daemon."""

    PLANS = 4
    SEEN = 64  # buffer sets remembered from their first run

    def __init__(self) -> None:
        self.plans: OrderedDict[tuple, uopd.Plan] = OrderedDict()
        self.seen: OrderedDict[tuple, None] = OrderedDict()
        # The graphs pass the same list of kernels while their buffers stay: its key is kept.
        self._keyed: tuple[Optional[list], tuple] = (None, ())

    def run(self, client: uopd.Client, remote: str, kernels: list[uopd.Kernel], variables: dict[str, int],
            wait: bool) -> Optional[float]:
        """Runs the kernels; with ``wait``, their time on the device (else host time), in seconds."""
        if self._keyed[0] is not kernels:
            self._keyed = (kernels, tuple((v.base, v.offset, v.size) for k in kernels for v in k.buffers))
        key = self._keyed[1]
        st = time.perf_counter()
        plan = self.plans.get(key)
        with kernel_opt_errors():
            if plan is None and key in self.seen:
                plan = self.plans[key] = client.prepare(kernels, device=remote)
                _plans_over.add(self, key)
                while len(self.plans) > self.PLANS:
                    self.forget(next(iter(self.plans)))
            if plan is not None:
                self.plans.move_to_end(key)
                _plans_over.touch(self, key)
                result = plan.run(vars=variables)
            else:
                self.seen[key] = None
                while len(self.seen) > self.SEEN:
                    self.seen.popitem(last=False)
                result = client.execute(kernels, vars=variables, device=remote)
        if not wait:
            return None
        if result.timings:
            return (max(t.end_ns for t in result.timings) - min(t.start_ns for t in result.timings)) * 1e-9
        return time.perf_counter() - st

    def forget(self, key: tuple) -> None:
        """Releases the plan of one set of buffers, and forgets that they ran."""
        self.seen.pop(key, None)
        if self._keyed[1] == key:
            self._keyed = (None, ())
        plan = self.plans.pop(key, None)
        if plan is not None:
            _plans_over.remove(self, key)
            _release(plan)

    def release(self) -> None:
        for key in list(self.plans):
            self.forget(key)


class _PlansOverBuffers:
    """The process's plans: which replays hold a plan over each daemon buffer, so that freeing the
    buffer releases them (freeing a handle a plan holds frees no memory in the daemon), and at
    most LIMIT plans in all (least recently run released first), however many kernels ran."""

    LIMIT = 1024

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: dict[Any, set[tuple[BatchReplay, tuple]]] = {}
        self._recent: OrderedDict[tuple[BatchReplay, tuple], None] = OrderedDict()

    @staticmethod
    def _bases(key: tuple) -> set[Any]:
        return {base for base, _, _ in key}

    def add(self, replay: BatchReplay, key: tuple) -> None:
        with self._lock:
            for base in self._bases(key):
                self._holders.setdefault(base, set()).add((replay, key))
            self._recent[(replay, key)] = None
            over = len(self._recent) - self.LIMIT
            excess = list(self._recent)[:over] if over > 0 else []
        for old_replay, old_key in excess:
            old_replay.forget(old_key)

    def touch(self, replay: BatchReplay, key: tuple) -> None:
        with self._lock:
            if (replay, key) in self._recent:
                self._recent.move_to_end((replay, key))

    def remove(self, replay: BatchReplay, key: tuple) -> None:
        with self._lock:
            self._recent.pop((replay, key), None)
            for base in self._bases(key):
                holders = self._holders.get(base)
                if holders is not None:
                    holders.discard((replay, key))
                    if not holders:
                        del self._holders[base]

    def release_over(self, base: Any) -> None:
        with self._lock:
            holders = list(self._holders.get(base, ()))
        for replay, key in holders:
            replay.forget(key)


_plans_over = _PlansOverBuffers()


def _release(plan: uopd.Plan) -> None:
    try:
        plan.release()
    except Exception:  # at interpreter exit the channel may be gone; the session frees it with the client
        pass
