# mypy: ignore-errors
# (tinygrad is an optional dependency without type information; see device14.py.)
"""What a UOPD kernel counts in tinygrad's GlobalCounters (0.12 and 0.14): its Estimates
(operations, bytes loaded and stored, bytes of memory touched), made from the kernel AST without
lowering it.

tinygrad estimates a kernel from its lowered, linearized program (``Estimates.from_uops``), which
UOPD kernels skip (the daemon lowers them). Lowering one in Python to count it would take 10-150 ms
per kernel (a ResNet-18's 17 kernels: 0.6 s of a 3.6 s first run), so the count is made on the AST
after the rewrites that change what a kernel touches: tinygrad's movement-op and load-collapse
passes (a gather or an arange-compare sum becomes one indexed load) and its symbolic folding, the
same ones the daemon applies (and on 0.14 the device axis of a sharded kernel, a variable bound
per device). Then, as ``from_uops`` counts with ``ignore_indexing``:

* memory: on 0.14, for each buffer, the bytes its loads and its stores touch, each capped at the
  buffer's size; on 0.12, each buffer loaded or stored whole, as 0.12 assumes. These are the
  figures tinygrad's own count gives (the same on every kernel of tests/corpus14's programs and of
  tinygrad's memory-count tests).
* operations: each ALU op outside index arithmetic, and each step of a reduction, once per
  value of the loops it depends on. tinygrad counts its optimized program, whose rewrites differ
  by kernel (an op that does not depend on an inner loop may be computed in it; a cumulative
  sum's masked reduction shrinks; exp2 is expanded where a renderer lacks it), so this is an
  estimate of the same order, not the same figure, and rather below it: tinygrad's tests bound
  operations from above, to check that its rewrites removed work.
* bytes loaded and stored: each access times the iterations of the loops it runs in: a value
  read inside a reduction counts once per output element and reduction step, as in tinygrad's
  loop nest.

Sizes that depend on a variable stay symbolic, as tinygrad's do: GlobalCounters bind them to the
call's values."""
from __future__ import annotations

from tinygrad.dtype import AddrSpace, dtypes
from tinygrad.helpers import DEBUG
from tinygrad.renderer import Estimates
from tinygrad.uop.ops import GroupOp, Ops, UOp, graph_rewrite, smin

try:  # tinygrad 0.14
    from tinygrad.codegen import multi_pm, pm_flatten_range, pm_load_collapse, pm_mops, sym
    from tinygrad.codegen.gpudims import pm_device_to_var
    _PASSES = [(multi_pm, False), (pm_device_to_var, False), (pm_mops, True), (pm_load_collapse, False),
               (sym + pm_flatten_range, False)]
    _WHOLE_BUFFERS = False
    _BUFFERS = (Ops.PARAM,)  # a buffer's PARAM (a variable's is in AddrSpace.ALU)
    _POINTER = ()  # 0.14's INDEX has its element's dtype
except ImportError:  # tinygrad 0.12
    from tinygrad.codegen import pm_flatten_range, pm_load_collapse, pm_mops, pm_syntactic_sugar, sym
    _PASSES = [(pm_mops + pm_syntactic_sugar, True), (pm_load_collapse, False), (sym + pm_flatten_range, False)]
    _WHOLE_BUFFERS = True  # 0.12's from_uops: "assume all DEFINE_GLOBAL memory is accessed"
    _BUFFERS = (Ops.DEFINE_GLOBAL,)
    from tinygrad.dtype import PtrDType
    _POINTER = PtrDType  # 0.12's INDEX and DEFINE_GLOBAL have pointer dtypes


def kernel_estimates(ast: UOp, name: str) -> Estimates:
    """estimates(ast), or none (zeros) where counting fails: a statistic, the kernel runs
    without it."""
    try:
        return estimates(ast)
    except Exception as e:
        if DEBUG >= 1:
            print(f"UOPD: no estimates for {name}: {type(e).__name__}: {e}")
        return Estimates()


def estimates(ast: UOp) -> Estimates:
    sink = ast
    for passes, bottom_up in _PASSES:
        sink = graph_rewrite(sink, passes, bottom_up=bottom_up, name="uopd estimates")
    nodes = sink.toposort()

    index_math = [s for u in nodes if u.op is Ops.INDEX for s in u.src[1:]]
    indexing = set(UOp.sink(*index_math).toposort(lambda x: x.op is not Ops.END)) if index_math else set()
    # The loops a node runs in: its own ranges and the output ranges of the store it feeds (a
    # load inside a reduction is counted for every output element, as in tinygrad's loop nest).
    # Consumers come before their sources in reverse topological order: one pass hands each
    # store's ranges down to what it stores (a node feeding two stores takes the first's).
    outer: dict[UOp, tuple[UOp, ...]] = {}
    for u in reversed(nodes):
        if u.op is Ops.STORE:
            outer[u] = tuple(r for r in u.ranges if r.op is Ops.RANGE)
        if (scope := outer.get(u)) is not None:
            for src in u.src:
                outer.setdefault(src, scope)
    counts: dict[tuple[UOp, ...], object] = {}

    def iterations(u: UOp, nested: bool = True):
        own = tuple(r for r in u.ranges if r.op is Ops.RANGE)
        loops = tuple(dict.fromkeys((*outer.get(u, ()), *own))) if nested else own
        if (n := counts.get(loops)) is None:
            n = 1
            for r in loops:  # constant sizes multiply as ints: UOp arithmetic is a rewrite each
                if r.dtype == dtypes.void:  # a loop of unknown trip count: tinygrad counts it once
                    continue
                n = n * (r.src[0].arg if r.src[0].op is Ops.CONST else r.src[0])
            counts[loops] = n
        return n

    def buffer_of(u: UOp):
        while u.src and u.op not in _BUFFERS:
            u = u.src[0]
        if u.op in _BUFFERS and (_WHOLE_BUFFERS or u.arg.addrspace is not AddrSpace.ALU):
            return u
        return None

    def size_of(buf: UOp):
        base = buf.dtype
        if _WHOLE_BUFFERS:
            return base.size * base.base.itemsize
        return buf.max_numel() * base.itemsize

    def element_size(dtype) -> int:
        return dtype.base.itemsize if isinstance(dtype, _POINTER) else dtype.itemsize

    read = {s for u in nodes for i, s in enumerate(u.src) if not (u.op is Ops.STORE and i == 0)}
    ops, lds, mem = 0, 0, {}

    def access(u: UOp, buf: UOp, kind: Ops, itemsize: int) -> None:
        nonlocal lds
        n = itemsize * iterations(u)
        if _WHOLE_BUFFERS:
            mem[(buf, kind)] = size_of(buf)
        else:
            mem[(buf, kind)] = smin(mem.get((buf, kind), 0) + n, size_of(buf))
        lds = lds + n

    for u in nodes:
        if u.op is Ops.INDEX and u in read and (buf := buffer_of(u)) is not None:
            access(u, buf, Ops.LOAD, element_size(u.dtype))
        if u.op is Ops.STORE and (buf := buffer_of(u.src[0])) is not None:
            access(u, buf, Ops.STORE, element_size(u.src[1].dtype))
        elif u.op in GroupOp.ALU and u not in indexing:
            ops = ops + iterations(u, nested=False)
        elif u.op is Ops.REDUCE:
            ops = ops + iterations(u.src[0], nested=False)
    return Estimates(ops, lds, sum(mem.values())).simplify()
