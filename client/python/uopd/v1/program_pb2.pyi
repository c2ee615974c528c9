from uopd.v1 import graph_pb2 as _graph_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LaunchDim(_message.Message):
    __slots__ = ("constant", "expr")
    CONSTANT_FIELD_NUMBER: _ClassVar[int]
    EXPR_FIELD_NUMBER: _ClassVar[int]
    constant: int
    expr: _graph_pb2.Graph
    def __init__(self, constant: _Optional[int] = ..., expr: _Optional[_Union[_graph_pb2.Graph, _Mapping]] = ...) -> None: ...

class VarBounds(_message.Message):
    __slots__ = ("name", "min", "max", "multiple_of")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_OF_FIELD_NUMBER: _ClassVar[int]
    name: str
    min: int
    max: int
    multiple_of: int
    def __init__(self, name: _Optional[str] = ..., min: _Optional[int] = ..., max: _Optional[int] = ..., multiple_of: _Optional[int] = ...) -> None: ...

class BufferSlot(_message.Message):
    __slots__ = ("slot", "dtype", "size", "access_begin", "access_end")
    SLOT_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ACCESS_BEGIN_FIELD_NUMBER: _ClassVar[int]
    ACCESS_END_FIELD_NUMBER: _ClassVar[int]
    slot: int
    dtype: _graph_pb2.DType.Scalar
    size: int
    access_begin: int
    access_end: int
    def __init__(self, slot: _Optional[int] = ..., dtype: _Optional[_Union[_graph_pb2.DType.Scalar, str]] = ..., size: _Optional[int] = ..., access_begin: _Optional[int] = ..., access_end: _Optional[int] = ...) -> None: ...

class ProgramMetadata(_message.Message):
    __slots__ = ("name", "device", "global_size", "local_size", "vars", "var_names", "globals", "outs", "ins", "buf_count", "proven_accesses", "guarded_accesses")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    LOCAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    VARS_FIELD_NUMBER: _ClassVar[int]
    VAR_NAMES_FIELD_NUMBER: _ClassVar[int]
    GLOBALS_FIELD_NUMBER: _ClassVar[int]
    OUTS_FIELD_NUMBER: _ClassVar[int]
    INS_FIELD_NUMBER: _ClassVar[int]
    BUF_COUNT_FIELD_NUMBER: _ClassVar[int]
    PROVEN_ACCESSES_FIELD_NUMBER: _ClassVar[int]
    GUARDED_ACCESSES_FIELD_NUMBER: _ClassVar[int]
    name: str
    device: str
    global_size: _containers.RepeatedCompositeFieldContainer[LaunchDim]
    local_size: _containers.RepeatedCompositeFieldContainer[LaunchDim]
    vars: _containers.RepeatedCompositeFieldContainer[VarBounds]
    var_names: _containers.RepeatedScalarFieldContainer[str]
    globals: _containers.RepeatedCompositeFieldContainer[BufferSlot]
    outs: _containers.RepeatedScalarFieldContainer[int]
    ins: _containers.RepeatedScalarFieldContainer[int]
    buf_count: int
    proven_accesses: int
    guarded_accesses: int
    def __init__(self, name: _Optional[str] = ..., device: _Optional[str] = ..., global_size: _Optional[_Iterable[_Union[LaunchDim, _Mapping]]] = ..., local_size: _Optional[_Iterable[_Union[LaunchDim, _Mapping]]] = ..., vars: _Optional[_Iterable[_Union[VarBounds, _Mapping]]] = ..., var_names: _Optional[_Iterable[str]] = ..., globals: _Optional[_Iterable[_Union[BufferSlot, _Mapping]]] = ..., outs: _Optional[_Iterable[int]] = ..., ins: _Optional[_Iterable[int]] = ..., buf_count: _Optional[int] = ..., proven_accesses: _Optional[int] = ..., guarded_accesses: _Optional[int] = ...) -> None: ...

class CachedKernel(_message.Message):
    __slots__ = ("binary", "entry", "metadata", "source", "ptx", "key", "ast_hash", "tuned_opts", "search")
    BINARY_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    PTX_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    AST_HASH_FIELD_NUMBER: _ClassVar[int]
    TUNED_OPTS_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    binary: bytes
    entry: str
    metadata: ProgramMetadata
    source: str
    ptx: bytes
    key: str
    ast_hash: str
    tuned_opts: _containers.RepeatedCompositeFieldContainer[_graph_pb2.Opt]
    search: SearchSummary
    def __init__(self, binary: _Optional[bytes] = ..., entry: _Optional[str] = ..., metadata: _Optional[_Union[ProgramMetadata, _Mapping]] = ..., source: _Optional[str] = ..., ptx: _Optional[bytes] = ..., key: _Optional[str] = ..., ast_hash: _Optional[str] = ..., tuned_opts: _Optional[_Iterable[_Union[_graph_pb2.Opt, _Mapping]]] = ..., search: _Optional[_Union[SearchSummary, _Mapping]] = ...) -> None: ...

class SearchSummary(_message.Message):
    __slots__ = ("seconds", "heuristic_seconds", "candidates", "budget_seconds", "converged")
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    HEURISTIC_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    BUDGET_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CONVERGED_FIELD_NUMBER: _ClassVar[int]
    seconds: float
    heuristic_seconds: float
    candidates: int
    budget_seconds: float
    converged: bool
    def __init__(self, seconds: _Optional[float] = ..., heuristic_seconds: _Optional[float] = ..., candidates: _Optional[int] = ..., budget_seconds: _Optional[float] = ..., converged: bool = ...) -> None: ...
