"""What the sync and the asyncio clients share: argument conversion, request building, result
types, and every multi-step operation written once as a generator of RPCs ("sans-IO").

An operation (``op_*``) yields ``Call``s and receives each call's response (a list of messages
for a server stream); a failed call is thrown into it as a UopdError, so it can fall back
(UNIMPLEMENTED from a server without the unary buffer calls) or clean up. ``Client`` drives an
operation with blocking stubs, ``uopd.aio.AsyncClient`` with ``grpc.aio`` ones.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import struct
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, TypeVar, Union

from google.protobuf import json_format

from uopd._dtypes import (SCALARS, DTypeLike, Scalar, itemsize, numpy_dtype, require_numpy,
                          scalar_name, scalar_of)
from uopd._errors import ResourceExhausted, UopdError, Unimplemented
from uopd._opts import OptimizationLike, optimization_of
from uopd.v1 import graph_pb2, kernel_service_pb2 as ks, program_pb2

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

#: The most data one WriteBufferSmall or ReadBufferSmall call carries (4 MiB less room for the
#: message around it); larger copies stream, in chunks of this size.
SMALL_BYTES = (4 << 20) - (64 << 10)
#: The most bytes Execute and RunPlan return inline, all return_buffers together.
MAX_INLINE_RETURN_BYTES = (4 << 20) - (256 << 10)

#: A kernel AST: a ``graph_pb2.Graph``; its JSON form as a dict ({"nodes": [...]}) or a str; a
#: corpus case (a dict or JSON text with an "ast" entry); serialized Graph bytes; or the path
#: (``os.PathLike``) of a JSON file holding any of these.
AstLike = Union[graph_pb2.Graph, Mapping[str, Any], str, bytes, "os.PathLike[str]"]


# ---------------------------------------------------------------------------------------------
# Calls and operations


@dataclass(frozen=True)
class Call:
    """One RPC an operation wants made: ``service`` "kernels" or "cache", the stub's method name,
    the request (an iterable of messages for a client stream) and the call's shape."""

    service: str
    method: str
    request: Any
    shape: str = "unary"  # "unary", "stream_unary" (client stream), "unary_stream"


Op = Generator[Call, Any, T]


class ClientState:
    """What one client learns about its server as it goes."""

    def __init__(self) -> None:
        # False once the server answered UNIMPLEMENTED for WriteBufferSmall/ReadBufferSmall.
        self.small_calls = True


def run_sync(op: Op[T], invoke: Any) -> T:
    """Drives ``op`` with ``invoke(call) -> response`` (which raises UopdError)."""
    try:
        call = next(op)
        while True:
            try:
                response = invoke(call)
            except UopdError as error:
                call = op.throw(error)
            else:
                call = op.send(response)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def run_async(op: Op[T], invoke: Any) -> T:
    """Drives ``op`` with ``await invoke(call)``."""
    try:
        call = next(op)
        while True:
            try:
                response = await invoke(call)
            except UopdError as error:
                call = op.throw(error)
            else:
                call = op.send(response)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# Conversions


def as_graph(ast: AstLike) -> graph_pb2.Graph:
    """A kernel AST as a ``Graph`` message (see AstLike). Converting once and reusing the Graph
    saves parsing its JSON on every call."""
    if isinstance(ast, graph_pb2.Graph):
        return ast
    if isinstance(ast, (bytes, bytearray, memoryview)):
        return graph_pb2.Graph.FromString(bytes(ast))
    if isinstance(ast, os.PathLike):
        with open(ast, encoding="utf-8") as f:
            return as_graph(json.load(f))
    if isinstance(ast, str):
        try:
            parsed = json.loads(ast)
        except json.JSONDecodeError as error:
            raise ValueError(f"the AST is not JSON: {error}") from None
        return as_graph(parsed)
    if isinstance(ast, Mapping):
        if "nodes" not in ast and "ast" in ast:
            return as_graph(ast["ast"])
        try:
            return json_format.ParseDict(dict(ast), graph_pb2.Graph())
        except json_format.ParseError as error:
            raise ValueError(f"the AST is not a Graph: {error}") from None
    raise TypeError(f"cannot use a {type(ast).__name__} as a kernel AST")


def _is_array(data: Any) -> bool:
    return hasattr(data, "__array_interface__") and hasattr(data, "dtype")


def bytes_of(data: Any, scalar: Optional[Scalar] = None) -> bytes:
    """The bytes to store for ``data``: bytes-like as they are; a numpy array (C order) whose
    dtype must be the buffer's, its raw bits for BFLOAT16/fp8 buffers, or anything for a UINT8
    (byte) buffer; a list or scalar converted to the buffer's dtype."""
    if isinstance(data, bytes):
        return data
    if _is_array(data):
        import numpy as np

        array = np.ascontiguousarray(data)
        if scalar is not None and scalar_name(scalar) != "UINT8":
            want = numpy_dtype(scalar)
            if array.dtype != want and not (
                    array.dtype.itemsize == want.itemsize and array.dtype.kind in "uV"
                    and scalar_name(scalar) in ("BFLOAT16", "FP8E4M3", "FP8E5M2", "FP8E4M3FNUZ",
                                                "FP8E5M2FNUZ")):
                raise ValueError(f"an array of {array.dtype} for a {scalar_name(scalar)} buffer: "
                                 f"convert it (.astype({str(want)!r})) or pass its bytes")
        return array.tobytes()
    if isinstance(data, (bytearray, memoryview)) or hasattr(data, "__buffer__"):
        return bytes(memoryview(data).cast("B"))
    if scalar is None:
        raise TypeError(f"cannot write a {type(data).__name__}: pass bytes or a numpy array")
    try:
        numpy = require_numpy()
    except ImportError as error:
        raise TypeError(f"writing a {type(data).__name__} needs numpy: {error}") from None
    return bytes(numpy.asarray(data, dtype=numpy_dtype(scalar)).tobytes())


def array_of(data: bytes, scalar: Scalar, dtype: Optional[DTypeLike] = None) -> np.ndarray:
    """A writable 1-D numpy array of ``data`` read as ``dtype`` (default: the scalar's)."""
    numpy = require_numpy()
    want = numpy_dtype(scalar if dtype is None else dtype)
    if len(data) % want.itemsize:
        raise ValueError(f"{len(data)} bytes are not a whole number of {want} elements")
    array: np.ndarray = numpy.frombuffer(data, dtype=want).copy()
    return array


def _vars(values: Optional[Mapping[str, int]]) -> dict[str, int]:
    return {str(k): int(v) for k, v in (values or {}).items()}


# ---------------------------------------------------------------------------------------------
# Buffers, views, kernels


class BufferBase:
    """A buffer on the server: ``handle``, element ``dtype`` (its wire name, "FLOAT32"), ``size``
    in elements, ``device``. Owned by the identity that created it (an anonymous client: its
    connection)."""

    __slots__ = ("handle", "scalar", "size", "device", "freed")

    def __init__(self, handle: str, scalar: Scalar, size: int, device: str) -> None:
        self.handle = handle
        self.scalar = scalar
        self.size = size
        self.device = device
        self.freed = False

    @property
    def dtype(self) -> str:
        return scalar_name(self.scalar)

    @property
    def itemsize(self) -> int:
        return itemsize(self.scalar)

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def view(self, dtype: DTypeLike, size: Optional[int] = None, offset: int = 0) -> ViewRef:
        """A typed window onto this buffer for an Execute or Prepare: ``size`` elements of
        ``dtype`` from byte ``offset`` (default: as many as fit)."""
        if size is None:
            size = (self.nbytes - offset) // itemsize(scalar_of(dtype))
        return ViewRef(self, offset, dtype, size)

    def __repr__(self) -> str:
        state = " freed" if self.freed else ""
        return (f"<{type(self).__name__} {self.handle[:12]} {self.dtype}[{self.size}] "
                f"on {self.device}{state}>")


@dataclass(frozen=True)
class Inline:
    """A buffer made for one Execute (or held by one plan) and freed with it: ``size`` elements
    of ``dtype``, zero-filled or holding ``data`` (exactly size * itemsize bytes)."""

    dtype: DTypeLike
    size: int
    data: bytes = b""
    device: Optional[str] = None  # None: the request's device

    @classmethod
    def from_numpy(cls, array: Any, device: Optional[str] = None,
                   dtype: Optional[DTypeLike] = None) -> Inline:
        scalar = scalar_of(array.dtype if dtype is None else dtype)
        data = bytes_of(array, scalar)
        return cls(scalar, len(data) // itemsize(scalar), data, device)


@dataclass(frozen=True)
class ViewRef:
    """A typed window onto another buffer of the same request: ``size`` elements of ``dtype``
    from byte ``offset`` of ``base`` (a Buffer, a handle, an Inline, or the index of an earlier
    entry of the request's buffers). Views share their base's storage, so the server orders
    kernels by what they really touch.

    This is how a byte-addressed allocator (tinygrad's, which hands out offsets into large
    allocations) maps onto uopd: it creates UINT8 buffers and binds, for each kernel slot, a view
    of the slot's dtype and size at the allocation's offset::

        arena = client.create_buffer("UINT8", 1 << 20)
        a, out = arena.view("FLOAT32", 256, offset=0), arena.view("FLOAT32", 256, offset=4096)
        client.execute([uopd.Kernel(ast, [out, a])])
    """

    base: Any
    offset: int
    dtype: DTypeLike
    size: int


#: An entry of a request's buffers: a Buffer (or AsyncBuffer), a handle, a ViewRef, an Inline,
#: a numpy array (sent inline), or a ``kernel_service_pb2.BufferRef``.
BufferArg = Any


@dataclass
class Kernel:
    """One kernel of an Execute or Prepare: its AST, and for each DEFINE_GLOBAL slot the buffer
    it runs on (a BufferArg, or the index of an entry of the request's ``buffers``), with
    optional fixed variables, device and optimization (see OptimizationLike)."""

    ast: AstLike
    buffers: Sequence[Any]
    fixedvars: Optional[Mapping[str, int]] = None
    device: Optional[str] = None
    optimization: OptimizationLike = None


#: A kernel as execute/prepare take it: a Kernel, a ``KernelInvocation``, a tuple
#: ``(ast, buffers)``, or a dict with the Kernel's fields.
KernelLike = Union[Kernel, ks.KernelInvocation, "tuple[Any, ...]", Mapping[str, Any]]


class Bindings:
    """A request's buffers: explicit entries keep their positions, and buffers that kernels,
    views or return_buffers name by object are added once each (after the explicit ones)."""

    def __init__(self, buffers: Optional[Sequence[BufferArg]] = None, *,
                 known: bool = True) -> None:
        # known=False: the buffers of a plan known by id only; indices are taken on trust.
        self.known = known
        self.refs: list[ks.BufferRef] = []
        self.scalars: list[Optional[Scalar]] = []
        self._index: dict[Any, int] = {}
        self._keep: list[Any] = []  # objects indexed by id() stay alive
        for entry in buffers or ():
            self._add(entry, explicit=True)

    @staticmethod
    def _key(entry: Any) -> Any:
        if isinstance(entry, str):
            return ("handle", entry)
        if isinstance(entry, BufferBase):
            return ("handle", entry.handle)
        return ("id", id(entry))

    def index_of(self, entry: Any, *, add: bool = True) -> int:
        if isinstance(entry, bool):
            raise TypeError("a buffer entry, not a bool")
        if isinstance(entry, int):
            if entry < 0 or (self.known and entry >= len(self.refs)):
                raise IndexError(f"buffer index {entry} is not one of the request's "
                                 f"{len(self.refs)} buffers")
            return entry
        found = self._index.get(self._key(entry))
        if found is not None:
            return found
        if not add:
            raise ValueError(f"{entry!r} is not one of the buffers of this request")
        return self._add(entry, explicit=False)

    def _add(self, entry: Any, *, explicit: bool) -> int:
        scalar: Optional[Scalar] = None
        if isinstance(entry, ks.BufferRef):
            ref = entry
        elif isinstance(entry, str):
            ref = ks.BufferRef(handle=entry)
        elif isinstance(entry, BufferBase):
            if entry.freed:
                raise ValueError(f"{entry!r} was freed")
            ref, scalar = ks.BufferRef(handle=entry.handle), entry.scalar
        elif isinstance(entry, Inline):
            scalar = scalar_of(entry.dtype)
            ref = ks.BufferRef(inline=ks.InlineBuffer(device=entry.device or "", dtype=scalar,
                                                      size=entry.size, data=entry.data))
        elif isinstance(entry, ViewRef):
            scalar = scalar_of(entry.dtype)
            if isinstance(entry.base, int) and not isinstance(entry.base, bool):
                base = entry.base
            elif explicit and self._key(entry.base) not in self._index:
                raise ValueError("a view's base must come before the view in buffers")
            else:
                base = self.index_of(entry.base)
            ref = ks.BufferRef(view=ks.ViewRef(base=base, offset=entry.offset, dtype=scalar,
                                               size=entry.size))
        elif _is_array(entry):
            inline = Inline.from_numpy(entry)
            scalar = scalar_of(inline.dtype)
            ref = ks.BufferRef(inline=ks.InlineBuffer(dtype=scalar, size=inline.size,
                                                      data=inline.data))
        else:
            raise TypeError(f"cannot use a {type(entry).__name__} as a buffer")
        index = len(self.refs)
        self.refs.append(ref)
        self.scalars.append(scalar)
        self._index.setdefault(self._key(entry), index)
        self._keep.append(entry)
        return index

    def invocation(self, kernel: KernelLike) -> ks.KernelInvocation:
        if isinstance(kernel, ks.KernelInvocation):
            return kernel
        if isinstance(kernel, tuple):
            kernel = Kernel(*kernel)
        elif isinstance(kernel, Mapping):
            kernel = Kernel(**kernel)
        if not isinstance(kernel, Kernel):
            raise TypeError(f"cannot use a {type(kernel).__name__} as a kernel")
        invocation = ks.KernelInvocation(
            ast=as_graph(kernel.ast), buffers=[self.index_of(b) for b in kernel.buffers],
            device=kernel.device or "")
        for name, value in _vars(kernel.fixedvars).items():
            invocation.fixedvars[name] = value
        optimization = optimization_of(kernel.optimization)
        if optimization is not None:
            invocation.optimization.CopyFrom(optimization)
        return invocation

    def indices(self, which: Optional[Iterable[Any]]) -> list[int]:
        # Once each, in order: the server refuses a buffer named twice.
        return list(dict.fromkeys(self.index_of(w, add=False) for w in which or ()))


def kernels_of(kernels: Union[KernelLike, Sequence[KernelLike]]) -> list[KernelLike]:
    if isinstance(kernels, (Kernel, ks.KernelInvocation, Mapping)):
        return [kernels]
    return list(kernels)


@dataclass
class RunResult:
    """What an Execute or RunPlan returns: per-kernel ``timings`` (``KernelTiming``: kernel
    index, start_ns and end_ns from the start of the run) and the bytes of the buffers asked for
    by ``return_buffers``, by index in the request's buffers. Index with the index or with the
    object you bound: ``result[out]``, ``result.numpy(out)``."""

    timings: list[ks.KernelTiming]
    outputs: dict[int, bytes]
    bindings: Bindings = field(repr=False)

    def __getitem__(self, which: Any) -> bytes:
        return self.outputs[self.bindings.index_of(which, add=False)]

    def numpy(self, which: Any, dtype: Optional[DTypeLike] = None) -> np.ndarray:
        """The returned bytes of ``which`` as a 1-D array of its dtype (or ``dtype``)."""
        index = self.bindings.index_of(which, add=False)
        scalar = self.bindings.scalars[index] if index < len(self.bindings.scalars) else None
        if scalar is None and dtype is None:
            raise ValueError(f"the dtype of buffer {index} is unknown (bound by handle, or a plan "
                             "known by id): pass dtype=")
        return array_of(self.outputs[index], scalar if scalar is not None else scalar_of(dtype),
                        dtype)


def run_result(response: Union[ks.ExecuteResponse, ks.RunPlanResponse],
               bindings: Bindings) -> RunResult:
    return RunResult(list(response.timings), {o.buffer: o.data for o in response.outputs},
                     bindings)


class PlanBase:
    """A prepared plan: ``plan_id``, the variables each run must supply (``vars``: name ->
    (min, max)) and its ``kernels`` (``PreparedKernelInfo``: name, cache key, dependencies,
    applied opts). Released on ``release()`` or leaving its ``with`` block."""

    def __init__(self, response: ks.PrepareResponse, bindings: Bindings) -> None:
        self.plan_id: str = response.plan_id
        self.vars: dict[str, tuple[int, int]] = {v.name: (v.min, v.max) for v in response.vars}
        self.kernels: list[ks.PreparedKernelInfo] = list(response.kernels)
        self.bindings = bindings
        self.released = False

    def __repr__(self) -> str:
        state = " released" if self.released else ""
        return f"<{type(self).__name__} {self.plan_id[:12]} {len(self.kernels)} kernels{state}>"


class CacheEntry(NamedTuple):
    """A compiled-byte cache entry: ``value`` (a serialized ``program_pb2.CachedKernel``) and
    its ``signature`` under the server's cluster key (empty when the server has none)."""

    value: bytes
    signature: bytes

    def kernel(self) -> program_pb2.CachedKernel:
        return program_pb2.CachedKernel.FromString(self.value)


def sign_cache_entry(cluster_key: bytes, key: str, value: bytes) -> bytes:
    """The signature ``cache_put`` needs: HMAC-SHA256 under the cluster key of the 64-bit
    little-endian length of ``key``, ``key``, then ``value``."""
    key_bytes = key.encode()
    message = struct.pack("<Q", len(key_bytes)) + key_bytes + value
    return hmac.new(cluster_key, message, hashlib.sha256).digest()


# ---------------------------------------------------------------------------------------------
# Requests and operations


def _unary(method: str, request: Any, service: str = "kernels") -> Call:
    return Call(service, method, request)


def op_devices() -> Op[list[ks.DeviceInfo]]:
    response = yield _unary("ListDevices", ks.ListDevicesRequest())
    return list(response.devices)


def compile_request(ast: Union[AstLike, ks.RenderedSource], device: Optional[str],
                    target: Optional[str], optimization: OptimizationLike, want_source: bool,
                    want_binary: bool) -> ks.CompileRequest:
    request = ks.CompileRequest(device=device or "", target=target or "",
                                want_source=want_source, want_binary=want_binary)
    if isinstance(ast, ks.RenderedSource):
        request.source.CopyFrom(ast)
    else:
        request.ast.CopyFrom(as_graph(ast))
    opt = optimization_of(optimization)
    if opt is not None:
        request.optimization.CopyFrom(opt)
    return request


def op_compile(request: ks.CompileRequest) -> Op[ks.CompileResponse]:
    return (yield _unary("Compile", request))  # type: ignore[no-any-return]


def _chunks(handle: str, data: bytes, offset: int) -> Iterator[ks.WriteBufferChunk]:
    view = memoryview(data)
    for start in range(0, len(data), SMALL_BYTES):
        yield ks.WriteBufferChunk(handle=handle if start == 0 else "", offset=offset + start,
                                  data=bytes(view[start:start + SMALL_BYTES]))


def op_write(state: ClientState, handle: str, data: bytes, offset: int = 0) -> Op[None]:
    if not data:
        return
    if state.small_calls and len(data) <= SMALL_BYTES:
        try:
            yield _unary("WriteBufferSmall",
                         ks.WriteBufferChunk(handle=handle, offset=offset, data=data))
            return
        except Unimplemented:
            state.small_calls = False
    yield Call("kernels", "WriteBuffer", _chunks(handle, data, offset), "stream_unary")


def op_read(state: ClientState, handle: str, offset: int = 0, length: Optional[int] = None,
            total: Optional[int] = None) -> Op[bytes]:
    """Reads ``length`` bytes (None: to the end) from ``offset``; ``total`` is the buffer's size
    in bytes when known."""
    if length == 0:
        return b""
    wanted = length if length is not None else None if total is None else total - offset
    request = ks.ReadBufferRequest(handle=handle, offset=offset, length=length or 0)
    if state.small_calls and (wanted is None or wanted <= SMALL_BYTES):
        try:
            response = yield _unary("ReadBufferSmall", request)
            return response.data  # type: ignore[no-any-return]
        except Unimplemented:
            state.small_calls = False
        except ResourceExhausted:
            if wanted is not None:
                raise  # not the size, then
    request.chunk_bytes = SMALL_BYTES
    chunks = yield Call("kernels", "ReadBuffer", request, "unary_stream")
    return b"".join(chunk.data for chunk in chunks)


def op_create_buffer(state: ClientState, scalar: Scalar, size: int, device: str,
                     data: Optional[bytes]) -> Op[str]:
    """Creates a buffer (with ``data`` in it, when given); returns its handle."""
    nbytes = size * itemsize(scalar)
    if data is not None and len(data) > nbytes:
        raise ValueError(f"{len(data)} bytes do not fit a {scalar_name(scalar)}[{size}] buffer "
                         f"({nbytes} bytes)")
    initial = data if data is not None and len(data) == nbytes <= SMALL_BYTES else b""
    response = yield _unary("CreateBuffer", ks.CreateBufferRequest(
        device=device, dtype=scalar, size=size, initial=initial))
    handle: str = response.handle
    if data and not initial:
        try:
            yield from op_write(state, handle, data)
        except UopdError:
            yield from op_free_quietly(handle)  # no half-written buffer left behind
            raise
    return handle


def op_free(handle: str) -> Op[None]:
    yield _unary("FreeBuffer", ks.FreeBufferRequest(handle=handle))


def op_free_quietly(handle: str) -> Op[None]:
    try:
        yield from op_free(handle)
    except UopdError:
        pass


def execute_request(kernels: Union[KernelLike, Sequence[KernelLike]],
                    buffers: Optional[Sequence[BufferArg]], vars: Optional[Mapping[str, int]],
                    return_buffers: Optional[Iterable[Any]], device: Optional[str],
                    ) -> tuple[ks.ExecuteRequest, Bindings]:
    bindings = Bindings(buffers)
    invocations = [bindings.invocation(k) for k in kernels_of(kernels)]
    request = ks.ExecuteRequest(device=device or "", buffers=bindings.refs, kernels=invocations,
                                return_buffers=bindings.indices(return_buffers))
    for name, value in _vars(vars).items():
        request.vars[name] = value
    return request, bindings


def op_execute(request: ks.ExecuteRequest, bindings: Bindings) -> Op[RunResult]:
    response = yield _unary("Execute", request)
    return run_result(response, bindings)


def prepare_request(kernels: Union[KernelLike, Sequence[KernelLike]],
                    buffers: Optional[Sequence[BufferArg]], device: Optional[str],
                    ) -> tuple[ks.PrepareRequest, Bindings]:
    bindings = Bindings(buffers)
    invocations = [bindings.invocation(k) for k in kernels_of(kernels)]
    return ks.PrepareRequest(device=device or "", buffers=bindings.refs,
                             kernels=invocations), bindings


def op_prepare(request: ks.PrepareRequest) -> Op[ks.PrepareResponse]:
    return (yield _unary("Prepare", request))  # type: ignore[no-any-return]


def run_plan_request(plan_id: str, bindings: Bindings, vars: Optional[Mapping[str, int]],
                     return_buffers: Optional[Iterable[Any]]) -> ks.RunPlanRequest:
    request = ks.RunPlanRequest(plan_id=plan_id, return_buffers=bindings.indices(return_buffers))
    for name, value in _vars(vars).items():
        request.vars[name] = value
    return request


def op_run_plan(plan_id: str, bindings: Bindings, vars: Optional[Mapping[str, int]],
                return_buffers: Optional[Iterable[Any]]) -> Op[RunResult]:
    response = yield _unary("RunPlan", run_plan_request(plan_id, bindings, vars, return_buffers))
    return run_result(response, bindings)


def op_open_local_channel() -> Op[ks.OpenLocalChannelResponse]:
    return (yield _unary("OpenLocalChannel", ks.OpenLocalChannelRequest()))  # type: ignore[no-any-return]


def op_release_plan(plan_id: str) -> Op[None]:
    yield _unary("ReleasePlan", ks.ReleasePlanRequest(plan_id=plan_id))


def op_cache_stats() -> Op[ks.CacheStatsResponse]:
    return (yield _unary("Stats", ks.CacheStatsRequest(), "cache"))  # type: ignore[no-any-return]


def op_cache_find_missing(keys: Iterable[str]) -> Op[list[str]]:
    if isinstance(keys, str):
        keys = [keys]
    response = yield _unary("FindMissing", ks.FindMissingRequest(keys=list(keys)), "cache")
    return list(response.missing)


def op_cache_get(key: str) -> Op[Optional[CacheEntry]]:
    response = yield _unary("Get", ks.CacheGetRequest(key=key), "cache")
    return CacheEntry(response.value, response.signature) if response.found else None


def op_cache_put(key: str, value: Union[bytes, program_pb2.CachedKernel],
                 signature: bytes) -> Op[None]:
    if isinstance(value, program_pb2.CachedKernel):
        value = value.SerializeToString()
    yield _unary("Put", ks.CachePutRequest(key=key, value=value, signature=signature), "cache")


def buffer_args(dtype: DTypeLike, size: int, data: Any) -> tuple[Scalar, int, Optional[bytes]]:
    scalar = scalar_of(dtype)
    if size < 0:
        raise ValueError(f"a buffer of {size} elements")
    return scalar, int(size), None if data is None else bytes_of(data, scalar)


def numpy_args(array: Any, dtype: Optional[DTypeLike]) -> tuple[Scalar, int, bytes]:
    if not _is_array(array):
        raise TypeError(f"from_numpy takes a numpy array, not a {type(array).__name__}")
    scalar = scalar_of(array.dtype if dtype is None else dtype)
    data = bytes_of(array, scalar)
    return scalar, len(data) // itemsize(scalar), data


__all__ = [
    "SMALL_BYTES", "MAX_INLINE_RETURN_BYTES", "AstLike", "BufferArg", "KernelLike", "Call",
    "ClientState", "as_graph", "BufferBase", "Inline", "ViewRef", "Kernel", "Bindings",
    "RunResult", "PlanBase", "CacheEntry", "sign_cache_entry", "SCALARS",
]
