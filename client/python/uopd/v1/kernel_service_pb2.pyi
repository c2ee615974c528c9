from uopd.v1 import graph_pb2 as _graph_pb2
from uopd.v1 import program_pb2 as _program_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListDevicesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeviceInfo(_message.Message):
    __slots__ = ("name", "base_key", "compile_target", "compiler", "memory_bytes", "bytes_in_use", "threads", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BASE_KEY_FIELD_NUMBER: _ClassVar[int]
    COMPILE_TARGET_FIELD_NUMBER: _ClassVar[int]
    COMPILER_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    BYTES_IN_USE_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    base_key: str
    compile_target: str
    compiler: str
    memory_bytes: int
    bytes_in_use: int
    threads: int
    description: str
    def __init__(self, name: _Optional[str] = ..., base_key: _Optional[str] = ..., compile_target: _Optional[str] = ..., compiler: _Optional[str] = ..., memory_bytes: _Optional[int] = ..., bytes_in_use: _Optional[int] = ..., threads: _Optional[int] = ..., description: _Optional[str] = ...) -> None: ...

class ListDevicesResponse(_message.Message):
    __slots__ = ("devices",)
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    devices: _containers.RepeatedCompositeFieldContainer[DeviceInfo]
    def __init__(self, devices: _Optional[_Iterable[_Union[DeviceInfo, _Mapping]]] = ...) -> None: ...

class RenderedSource(_message.Message):
    __slots__ = ("src", "entry", "metadata")
    SRC_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    src: str
    entry: str
    metadata: _program_pb2.ProgramMetadata
    def __init__(self, src: _Optional[str] = ..., entry: _Optional[str] = ..., metadata: _Optional[_Union[_program_pb2.ProgramMetadata, _Mapping]] = ...) -> None: ...

class CompileRequest(_message.Message):
    __slots__ = ("ast", "source", "device", "want_source", "want_binary", "target", "optimization")
    AST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    WANT_SOURCE_FIELD_NUMBER: _ClassVar[int]
    WANT_BINARY_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZATION_FIELD_NUMBER: _ClassVar[int]
    ast: _graph_pb2.Graph
    source: RenderedSource
    device: str
    want_source: bool
    want_binary: bool
    target: str
    optimization: Optimization
    def __init__(self, ast: _Optional[_Union[_graph_pb2.Graph, _Mapping]] = ..., source: _Optional[_Union[RenderedSource, _Mapping]] = ..., device: _Optional[str] = ..., want_source: bool = ..., want_binary: bool = ..., target: _Optional[str] = ..., optimization: _Optional[_Union[Optimization, _Mapping]] = ...) -> None: ...

class CompileResponse(_message.Message):
    __slots__ = ("cache_key", "cache_tier", "metadata", "source", "binary", "entry", "ptx", "target", "applied_opts")
    CACHE_KEY_FIELD_NUMBER: _ClassVar[int]
    CACHE_TIER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    BINARY_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    PTX_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    APPLIED_OPTS_FIELD_NUMBER: _ClassVar[int]
    cache_key: str
    cache_tier: str
    metadata: _program_pb2.ProgramMetadata
    source: str
    binary: bytes
    entry: str
    ptx: str
    target: str
    applied_opts: _containers.RepeatedCompositeFieldContainer[_graph_pb2.Opt]
    def __init__(self, cache_key: _Optional[str] = ..., cache_tier: _Optional[str] = ..., metadata: _Optional[_Union[_program_pb2.ProgramMetadata, _Mapping]] = ..., source: _Optional[str] = ..., binary: _Optional[bytes] = ..., entry: _Optional[str] = ..., ptx: _Optional[str] = ..., target: _Optional[str] = ..., applied_opts: _Optional[_Iterable[_Union[_graph_pb2.Opt, _Mapping]]] = ...) -> None: ...

class CreateBufferRequest(_message.Message):
    __slots__ = ("device", "dtype", "size", "initial")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    INITIAL_FIELD_NUMBER: _ClassVar[int]
    device: str
    dtype: _graph_pb2.DType.Scalar
    size: int
    initial: bytes
    def __init__(self, device: _Optional[str] = ..., dtype: _Optional[_Union[_graph_pb2.DType.Scalar, str]] = ..., size: _Optional[int] = ..., initial: _Optional[bytes] = ...) -> None: ...

class CreateBufferResponse(_message.Message):
    __slots__ = ("handle", "bytes")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    handle: str
    bytes: int
    def __init__(self, handle: _Optional[str] = ..., bytes: _Optional[int] = ...) -> None: ...

class WriteBufferChunk(_message.Message):
    __slots__ = ("handle", "offset", "data")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    handle: str
    offset: int
    data: bytes
    def __init__(self, handle: _Optional[str] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class WriteBufferResponse(_message.Message):
    __slots__ = ("bytes_written",)
    BYTES_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    bytes_written: int
    def __init__(self, bytes_written: _Optional[int] = ...) -> None: ...

class ReadBufferRequest(_message.Message):
    __slots__ = ("handle", "offset", "length", "chunk_bytes")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    CHUNK_BYTES_FIELD_NUMBER: _ClassVar[int]
    handle: str
    offset: int
    length: int
    chunk_bytes: int
    def __init__(self, handle: _Optional[str] = ..., offset: _Optional[int] = ..., length: _Optional[int] = ..., chunk_bytes: _Optional[int] = ...) -> None: ...

class ReadBufferChunk(_message.Message):
    __slots__ = ("offset", "data")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    offset: int
    data: bytes
    def __init__(self, offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class FreeBufferRequest(_message.Message):
    __slots__ = ("handle",)
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    handle: str
    def __init__(self, handle: _Optional[str] = ...) -> None: ...

class FreeBufferResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BufferRef(_message.Message):
    __slots__ = ("handle", "inline", "view")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    INLINE_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    handle: str
    inline: InlineBuffer
    view: ViewRef
    def __init__(self, handle: _Optional[str] = ..., inline: _Optional[_Union[InlineBuffer, _Mapping]] = ..., view: _Optional[_Union[ViewRef, _Mapping]] = ...) -> None: ...

class InlineBuffer(_message.Message):
    __slots__ = ("device", "dtype", "size", "data")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    device: str
    dtype: _graph_pb2.DType.Scalar
    size: int
    data: bytes
    def __init__(self, device: _Optional[str] = ..., dtype: _Optional[_Union[_graph_pb2.DType.Scalar, str]] = ..., size: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class ViewRef(_message.Message):
    __slots__ = ("base", "offset", "dtype", "size")
    BASE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    base: int
    offset: int
    dtype: _graph_pb2.DType.Scalar
    size: int
    def __init__(self, base: _Optional[int] = ..., offset: _Optional[int] = ..., dtype: _Optional[_Union[_graph_pb2.DType.Scalar, str]] = ..., size: _Optional[int] = ...) -> None: ...

class Optimization(_message.Message):
    __slots__ = ("mode", "opts", "allow_fma")
    class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DEFAULT: _ClassVar[Optimization.Mode]
        HEURISTIC: _ClassVar[Optimization.Mode]
        NONE: _ClassVar[Optimization.Mode]
        OPTS: _ClassVar[Optimization.Mode]
        SEARCH: _ClassVar[Optimization.Mode]
    DEFAULT: Optimization.Mode
    HEURISTIC: Optimization.Mode
    NONE: Optimization.Mode
    OPTS: Optimization.Mode
    SEARCH: Optimization.Mode
    MODE_FIELD_NUMBER: _ClassVar[int]
    OPTS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_FMA_FIELD_NUMBER: _ClassVar[int]
    mode: Optimization.Mode
    opts: _containers.RepeatedCompositeFieldContainer[_graph_pb2.Opt]
    allow_fma: bool
    def __init__(self, mode: _Optional[_Union[Optimization.Mode, str]] = ..., opts: _Optional[_Iterable[_Union[_graph_pb2.Opt, _Mapping]]] = ..., allow_fma: bool = ...) -> None: ...

class KernelInvocation(_message.Message):
    __slots__ = ("ast", "buffers", "fixedvars", "device", "optimization")
    class FixedvarsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    AST_FIELD_NUMBER: _ClassVar[int]
    BUFFERS_FIELD_NUMBER: _ClassVar[int]
    FIXEDVARS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZATION_FIELD_NUMBER: _ClassVar[int]
    ast: _graph_pb2.Graph
    buffers: _containers.RepeatedScalarFieldContainer[int]
    fixedvars: _containers.ScalarMap[str, int]
    device: str
    optimization: Optimization
    def __init__(self, ast: _Optional[_Union[_graph_pb2.Graph, _Mapping]] = ..., buffers: _Optional[_Iterable[int]] = ..., fixedvars: _Optional[_Mapping[str, int]] = ..., device: _Optional[str] = ..., optimization: _Optional[_Union[Optimization, _Mapping]] = ...) -> None: ...

class KernelTiming(_message.Message):
    __slots__ = ("kernel", "start_ns", "end_ns")
    KERNEL_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    kernel: int
    start_ns: int
    end_ns: int
    def __init__(self, kernel: _Optional[int] = ..., start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ...) -> None: ...

class BufferData(_message.Message):
    __slots__ = ("buffer", "data")
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    buffer: int
    data: bytes
    def __init__(self, buffer: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ("device", "buffers", "kernels", "vars", "return_buffers")
    class VarsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    BUFFERS_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    VARS_FIELD_NUMBER: _ClassVar[int]
    RETURN_BUFFERS_FIELD_NUMBER: _ClassVar[int]
    device: str
    buffers: _containers.RepeatedCompositeFieldContainer[BufferRef]
    kernels: _containers.RepeatedCompositeFieldContainer[KernelInvocation]
    vars: _containers.ScalarMap[str, int]
    return_buffers: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, device: _Optional[str] = ..., buffers: _Optional[_Iterable[_Union[BufferRef, _Mapping]]] = ..., kernels: _Optional[_Iterable[_Union[KernelInvocation, _Mapping]]] = ..., vars: _Optional[_Mapping[str, int]] = ..., return_buffers: _Optional[_Iterable[int]] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ("timings", "outputs")
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    timings: _containers.RepeatedCompositeFieldContainer[KernelTiming]
    outputs: _containers.RepeatedCompositeFieldContainer[BufferData]
    def __init__(self, timings: _Optional[_Iterable[_Union[KernelTiming, _Mapping]]] = ..., outputs: _Optional[_Iterable[_Union[BufferData, _Mapping]]] = ...) -> None: ...

class PrepareRequest(_message.Message):
    __slots__ = ("device", "buffers", "kernels")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    BUFFERS_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    device: str
    buffers: _containers.RepeatedCompositeFieldContainer[BufferRef]
    kernels: _containers.RepeatedCompositeFieldContainer[KernelInvocation]
    def __init__(self, device: _Optional[str] = ..., buffers: _Optional[_Iterable[_Union[BufferRef, _Mapping]]] = ..., kernels: _Optional[_Iterable[_Union[KernelInvocation, _Mapping]]] = ...) -> None: ...

class PreparedKernelInfo(_message.Message):
    __slots__ = ("name", "cache_key", "dependencies", "applied_opts")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CACHE_KEY_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCIES_FIELD_NUMBER: _ClassVar[int]
    APPLIED_OPTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    cache_key: str
    dependencies: _containers.RepeatedScalarFieldContainer[int]
    applied_opts: _containers.RepeatedCompositeFieldContainer[_graph_pb2.Opt]
    def __init__(self, name: _Optional[str] = ..., cache_key: _Optional[str] = ..., dependencies: _Optional[_Iterable[int]] = ..., applied_opts: _Optional[_Iterable[_Union[_graph_pb2.Opt, _Mapping]]] = ...) -> None: ...

class PrepareResponse(_message.Message):
    __slots__ = ("plan_id", "vars", "kernels")
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    VARS_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    vars: _containers.RepeatedCompositeFieldContainer[_program_pb2.VarBounds]
    kernels: _containers.RepeatedCompositeFieldContainer[PreparedKernelInfo]
    def __init__(self, plan_id: _Optional[str] = ..., vars: _Optional[_Iterable[_Union[_program_pb2.VarBounds, _Mapping]]] = ..., kernels: _Optional[_Iterable[_Union[PreparedKernelInfo, _Mapping]]] = ...) -> None: ...

class RunPlanRequest(_message.Message):
    __slots__ = ("plan_id", "vars", "return_buffers")
    class VarsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    VARS_FIELD_NUMBER: _ClassVar[int]
    RETURN_BUFFERS_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    vars: _containers.ScalarMap[str, int]
    return_buffers: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, plan_id: _Optional[str] = ..., vars: _Optional[_Mapping[str, int]] = ..., return_buffers: _Optional[_Iterable[int]] = ...) -> None: ...

class RunPlanResponse(_message.Message):
    __slots__ = ("timings", "outputs")
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    timings: _containers.RepeatedCompositeFieldContainer[KernelTiming]
    outputs: _containers.RepeatedCompositeFieldContainer[BufferData]
    def __init__(self, timings: _Optional[_Iterable[_Union[KernelTiming, _Mapping]]] = ..., outputs: _Optional[_Iterable[_Union[BufferData, _Mapping]]] = ...) -> None: ...

class ReleasePlanRequest(_message.Message):
    __slots__ = ("plan_id",)
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    def __init__(self, plan_id: _Optional[str] = ...) -> None: ...

class ReleasePlanResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class OpenLocalChannelRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OpenLocalChannelResponse(_message.Message):
    __slots__ = ("path", "ticket", "ticket_seconds")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TICKET_FIELD_NUMBER: _ClassVar[int]
    TICKET_SECONDS_FIELD_NUMBER: _ClassVar[int]
    path: str
    ticket: bytes
    ticket_seconds: int
    def __init__(self, path: _Optional[str] = ..., ticket: _Optional[bytes] = ..., ticket_seconds: _Optional[int] = ...) -> None: ...

class LocalHello(_message.Message):
    __slots__ = ("ticket",)
    TICKET_FIELD_NUMBER: _ClassVar[int]
    ticket: bytes
    def __init__(self, ticket: _Optional[bytes] = ...) -> None: ...

class LocalCall(_message.Message):
    __slots__ = ("run_plan", "execute", "create_buffer", "free_buffer", "write_buffer_small", "read_buffer_small", "timeout_us", "session")
    RUN_PLAN_FIELD_NUMBER: _ClassVar[int]
    EXECUTE_FIELD_NUMBER: _ClassVar[int]
    CREATE_BUFFER_FIELD_NUMBER: _ClassVar[int]
    FREE_BUFFER_FIELD_NUMBER: _ClassVar[int]
    WRITE_BUFFER_SMALL_FIELD_NUMBER: _ClassVar[int]
    READ_BUFFER_SMALL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_US_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    run_plan: RunPlanRequest
    execute: ExecuteRequest
    create_buffer: CreateBufferRequest
    free_buffer: FreeBufferRequest
    write_buffer_small: WriteBufferChunk
    read_buffer_small: ReadBufferRequest
    timeout_us: int
    session: str
    def __init__(self, run_plan: _Optional[_Union[RunPlanRequest, _Mapping]] = ..., execute: _Optional[_Union[ExecuteRequest, _Mapping]] = ..., create_buffer: _Optional[_Union[CreateBufferRequest, _Mapping]] = ..., free_buffer: _Optional[_Union[FreeBufferRequest, _Mapping]] = ..., write_buffer_small: _Optional[_Union[WriteBufferChunk, _Mapping]] = ..., read_buffer_small: _Optional[_Union[ReadBufferRequest, _Mapping]] = ..., timeout_us: _Optional[int] = ..., session: _Optional[str] = ...) -> None: ...

class LocalReply(_message.Message):
    __slots__ = ("code", "message", "run_plan", "execute", "create_buffer", "free_buffer", "write_buffer_small", "read_buffer_small")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RUN_PLAN_FIELD_NUMBER: _ClassVar[int]
    EXECUTE_FIELD_NUMBER: _ClassVar[int]
    CREATE_BUFFER_FIELD_NUMBER: _ClassVar[int]
    FREE_BUFFER_FIELD_NUMBER: _ClassVar[int]
    WRITE_BUFFER_SMALL_FIELD_NUMBER: _ClassVar[int]
    READ_BUFFER_SMALL_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    run_plan: RunPlanResponse
    execute: ExecuteResponse
    create_buffer: CreateBufferResponse
    free_buffer: FreeBufferResponse
    write_buffer_small: WriteBufferResponse
    read_buffer_small: ReadBufferChunk
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., run_plan: _Optional[_Union[RunPlanResponse, _Mapping]] = ..., execute: _Optional[_Union[ExecuteResponse, _Mapping]] = ..., create_buffer: _Optional[_Union[CreateBufferResponse, _Mapping]] = ..., free_buffer: _Optional[_Union[FreeBufferResponse, _Mapping]] = ..., write_buffer_small: _Optional[_Union[WriteBufferResponse, _Mapping]] = ..., read_buffer_small: _Optional[_Union[ReadBufferChunk, _Mapping]] = ...) -> None: ...

class CacheStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TierStatsInfo(_message.Message):
    __slots__ = ("tier", "hits", "misses", "corrupt", "evictions", "puts", "errors", "entries", "bytes", "rejected", "read_bytes", "written_bytes", "published", "publish_failed", "publish_dropped", "publish_queue_bytes", "breaker_open", "breaker_trips")
    TIER_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    MISSES_FIELD_NUMBER: _ClassVar[int]
    CORRUPT_FIELD_NUMBER: _ClassVar[int]
    EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    PUTS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    READ_BYTES_FIELD_NUMBER: _ClassVar[int]
    WRITTEN_BYTES_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_FAILED_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_DROPPED_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_QUEUE_BYTES_FIELD_NUMBER: _ClassVar[int]
    BREAKER_OPEN_FIELD_NUMBER: _ClassVar[int]
    BREAKER_TRIPS_FIELD_NUMBER: _ClassVar[int]
    tier: str
    hits: int
    misses: int
    corrupt: int
    evictions: int
    puts: int
    errors: int
    entries: int
    bytes: int
    rejected: int
    read_bytes: int
    written_bytes: int
    published: int
    publish_failed: int
    publish_dropped: int
    publish_queue_bytes: int
    breaker_open: bool
    breaker_trips: int
    def __init__(self, tier: _Optional[str] = ..., hits: _Optional[int] = ..., misses: _Optional[int] = ..., corrupt: _Optional[int] = ..., evictions: _Optional[int] = ..., puts: _Optional[int] = ..., errors: _Optional[int] = ..., entries: _Optional[int] = ..., bytes: _Optional[int] = ..., rejected: _Optional[int] = ..., read_bytes: _Optional[int] = ..., written_bytes: _Optional[int] = ..., published: _Optional[int] = ..., publish_failed: _Optional[int] = ..., publish_dropped: _Optional[int] = ..., publish_queue_bytes: _Optional[int] = ..., breaker_open: bool = ..., breaker_trips: _Optional[int] = ...) -> None: ...

class CompileStatsInfo(_message.Message):
    __slots__ = ("backend", "compilations", "seconds", "failures")
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    COMPILATIONS_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    backend: str
    compilations: int
    seconds: float
    failures: int
    def __init__(self, backend: _Optional[str] = ..., compilations: _Optional[int] = ..., seconds: _Optional[float] = ..., failures: _Optional[int] = ...) -> None: ...

class CacheStatsResponse(_message.Message):
    __slots__ = ("tiers", "compiles")
    TIERS_FIELD_NUMBER: _ClassVar[int]
    COMPILES_FIELD_NUMBER: _ClassVar[int]
    tiers: _containers.RepeatedCompositeFieldContainer[TierStatsInfo]
    compiles: _containers.RepeatedCompositeFieldContainer[CompileStatsInfo]
    def __init__(self, tiers: _Optional[_Iterable[_Union[TierStatsInfo, _Mapping]]] = ..., compiles: _Optional[_Iterable[_Union[CompileStatsInfo, _Mapping]]] = ...) -> None: ...

class FindMissingRequest(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, keys: _Optional[_Iterable[str]] = ...) -> None: ...

class FindMissingResponse(_message.Message):
    __slots__ = ("missing",)
    MISSING_FIELD_NUMBER: _ClassVar[int]
    missing: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, missing: _Optional[_Iterable[str]] = ...) -> None: ...

class CacheGetRequest(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: str
    def __init__(self, key: _Optional[str] = ...) -> None: ...

class CacheGetResponse(_message.Message):
    __slots__ = ("found", "value", "signature")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    found: bool
    value: bytes
    signature: bytes
    def __init__(self, found: bool = ..., value: _Optional[bytes] = ..., signature: _Optional[bytes] = ...) -> None: ...

class CachePutRequest(_message.Message):
    __slots__ = ("key", "value", "signature")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    signature: bytes
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ..., signature: _Optional[bytes] = ...) -> None: ...

class CachePutResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
