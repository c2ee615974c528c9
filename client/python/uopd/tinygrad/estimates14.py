# mypy: ignore-errors
# (tinygrad is an optional dependency without type information; see device14.py.)
"""What a UOPD kernel counts in tinygrad 0.14's GlobalCounters: its Estimates (operations, bytes
loaded and stored, distinct bytes of memory touched), made from the kernel AST without lowering it.

tinygrad estimates a kernel from its lowered, linearized program (``Estimates.from_uops``), which
UOPD kernels skip (the daemon lowers them). Lowering one in Python to count it would take 10-150 ms
per kernel (a ResNet-18's 17 kernels: 0.6 s of a 3.6 s first run), so the count is made on the AST
after the rewrites that change what a kernel touches: tinygrad's movement-op and load-collapse
passes (a gather or an arange-compare sum becomes one indexed load) and its symbolic folding, the
same ones the daemon applies. Then, as ``from_uops`` counts with ``ignore_indexing``:

* memory: for each buffer, the bytes its loads and its stores touch, each capped at the buffer's
  size. This is what tinygrad's own count gives (the same figures on every kernel of
  tests/corpus14's programs and of tinygrad's setitem schedule tests).
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

from tinygrad.codegen import multi_pm, pm_flatten_range, pm_load_collapse, pm_mops, sym
from tinygrad.codegen.gpudims import pm_device_to_var
from tinygrad.dtype import AddrSpace, dtypes
from tinygrad.renderer import Estimates
from tinygrad.uop.ops import GroupOp, Ops, UOp, graph_rewrite, smin


def estimates(ast: UOp) -> Estimates:
    sink = graph_rewrite(ast, multi_pm, name="uopd estimates: multi")
    sink = graph_rewrite(sink, pm_device_to_var, name="uopd estimates: device axis")  # bound per device
    sink = graph_rewrite(sink, pm_mops, bottom_up=True, name="uopd estimates: movement ops")
    sink = graph_rewrite(sink, pm_load_collapse, name="uopd estimates: load collapse")
    sink = graph_rewrite(sink, sym + pm_flatten_range, name="uopd estimates: symbolic")
    nodes = sink.toposort()

    index_math = [s for u in nodes if u.op is Ops.INDEX for s in u.src[1:]]
    indexing = set(UOp.sink(*index_math).toposort(lambda x: x.op is not Ops.END)) if index_math else set()
    # The loops a node runs in: its own ranges and the output ranges of the store it feeds (a
    # load inside a reduction is counted for every output element, as in tinygrad's loop nest).
    outer: dict[UOp, tuple[UOp, ...]] = {}
    for store in nodes:
        if store.op is Ops.STORE:
            ranges = tuple(r for r in store.ranges if r.op is Ops.RANGE)
            for u in store.toposort():
                outer.setdefault(u, ranges)
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
        while u.src and u.op is not Ops.PARAM:
            u = u.src[0]
        return u if u.op is Ops.PARAM and u.arg.addrspace is not AddrSpace.ALU else None

    read = {s for u in nodes for i, s in enumerate(u.src) if not (u.op is Ops.STORE and i == 0)}
    ops, lds, mem = 0, 0, {}

    def access(u: UOp, buf: UOp, kind: Ops, itemsize: int) -> None:
        nonlocal lds
        n = itemsize * iterations(u)
        mem[(buf, kind)] = smin(mem.get((buf, kind), 0) + n, buf.max_numel() * buf.dtype.itemsize)
        lds = lds + n

    for u in nodes:
        if u.op is Ops.INDEX and u in read and (buf := buffer_of(u)) is not None:
            access(u, buf, Ops.LOAD, u.dtype.itemsize)
        if u.op is Ops.STORE and (buf := buffer_of(u.src[0])) is not None:
            access(u, buf, Ops.STORE, u.src[1].dtype.itemsize)
        elif u.op in GroupOp.ALU and u not in indexing:
            ops = ops + iterations(u, nested=False)
        elif u.op is Ops.REDUCE:
            ops = ops + iterations(u.src[0], nested=False)
    return Estimates(ops, lds, sum(mem.values())).simplify()
