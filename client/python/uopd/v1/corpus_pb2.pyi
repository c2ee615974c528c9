from google.protobuf import struct_pb2 as _struct_pb2
from uopd.v1 import graph_pb2 as _graph_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CorpusTolerance(_message.Message):
    __slots__ = ("rtol", "atol")
    RTOL_FIELD_NUMBER: _ClassVar[int]
    ATOL_FIELD_NUMBER: _ClassVar[int]
    rtol: float
    atol: float
    def __init__(self, rtol: _Optional[float] = ..., atol: _Optional[float] = ...) -> None: ...

class CorpusBuffer(_message.Message):
    __slots__ = ("slot", "id", "dtype", "size", "init")
    SLOT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    INIT_FIELD_NUMBER: _ClassVar[int]
    slot: int
    id: int
    dtype: _graph_pb2.DType.Scalar
    size: int
    init: bytes
    def __init__(self, slot: _Optional[int] = ..., id: _Optional[int] = ..., dtype: _Optional[_Union[_graph_pb2.DType.Scalar, str]] = ..., size: _Optional[int] = ..., init: _Optional[bytes] = ...) -> None: ...

class CorpusOutput(_message.Message):
    __slots__ = ("slot", "id", "expected")
    SLOT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    slot: int
    id: int
    expected: bytes
    def __init__(self, slot: _Optional[int] = ..., id: _Optional[int] = ..., expected: _Optional[bytes] = ...) -> None: ...

class CorpusOpt(_message.Message):
    __slots__ = ("op", "axis", "arg")
    OP_FIELD_NUMBER: _ClassVar[int]
    AXIS_FIELD_NUMBER: _ClassVar[int]
    ARG_FIELD_NUMBER: _ClassVar[int]
    op: str
    axis: _struct_pb2.Value
    arg: _struct_pb2.Value
    def __init__(self, op: _Optional[str] = ..., axis: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., arg: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class CorpusCase(_message.Message):
    __slots__ = ("name", "family", "program", "ast", "buffers", "vars", "outputs", "tolerance", "target", "opts_source", "opts", "ast_preopt", "ast_scheduled")
    class VarsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    AST_FIELD_NUMBER: _ClassVar[int]
    BUFFERS_FIELD_NUMBER: _ClassVar[int]
    VARS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    OPTS_SOURCE_FIELD_NUMBER: _ClassVar[int]
    OPTS_FIELD_NUMBER: _ClassVar[int]
    AST_PREOPT_FIELD_NUMBER: _ClassVar[int]
    AST_SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    name: str
    family: str
    program: str
    ast: _graph_pb2.Graph
    buffers: _containers.RepeatedCompositeFieldContainer[CorpusBuffer]
    vars: _containers.ScalarMap[str, int]
    outputs: _containers.RepeatedCompositeFieldContainer[CorpusOutput]
    tolerance: CorpusTolerance
    target: str
    opts_source: str
    opts: _containers.RepeatedCompositeFieldContainer[CorpusOpt]
    ast_preopt: _graph_pb2.Graph
    ast_scheduled: _graph_pb2.Graph
    def __init__(self, name: _Optional[str] = ..., family: _Optional[str] = ..., program: _Optional[str] = ..., ast: _Optional[_Union[_graph_pb2.Graph, _Mapping]] = ..., buffers: _Optional[_Iterable[_Union[CorpusBuffer, _Mapping]]] = ..., vars: _Optional[_Mapping[str, int]] = ..., outputs: _Optional[_Iterable[_Union[CorpusOutput, _Mapping]]] = ..., tolerance: _Optional[_Union[CorpusTolerance, _Mapping]] = ..., target: _Optional[str] = ..., opts_source: _Optional[str] = ..., opts: _Optional[_Iterable[_Union[CorpusOpt, _Mapping]]] = ..., ast_preopt: _Optional[_Union[_graph_pb2.Graph, _Mapping]] = ..., ast_scheduled: _Optional[_Union[_graph_pb2.Graph, _Mapping]] = ...) -> None: ...

class CorpusKernel(_message.Message):
    __slots__ = ("ast", "bufs", "vars")
    class VarsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    AST_FIELD_NUMBER: _ClassVar[int]
    BUFS_FIELD_NUMBER: _ClassVar[int]
    VARS_FIELD_NUMBER: _ClassVar[int]
    ast: _graph_pb2.Graph
    bufs: _containers.RepeatedScalarFieldContainer[int]
    vars: _containers.ScalarMap[str, int]
    def __init__(self, ast: _Optional[_Union[_graph_pb2.Graph, _Mapping]] = ..., bufs: _Optional[_Iterable[int]] = ..., vars: _Optional[_Mapping[str, int]] = ...) -> None: ...

class CorpusPlan(_message.Message):
    __slots__ = ("name", "family", "program", "buffers", "kernels", "vars", "outputs", "tolerance")
    class VarsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    BUFFERS_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    VARS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    family: str
    program: str
    buffers: _containers.RepeatedCompositeFieldContainer[CorpusBuffer]
    kernels: _containers.RepeatedCompositeFieldContainer[CorpusKernel]
    vars: _containers.ScalarMap[str, int]
    outputs: _containers.RepeatedCompositeFieldContainer[CorpusOutput]
    tolerance: CorpusTolerance
    def __init__(self, name: _Optional[str] = ..., family: _Optional[str] = ..., program: _Optional[str] = ..., buffers: _Optional[_Iterable[_Union[CorpusBuffer, _Mapping]]] = ..., kernels: _Optional[_Iterable[_Union[CorpusKernel, _Mapping]]] = ..., vars: _Optional[_Mapping[str, int]] = ..., outputs: _Optional[_Iterable[_Union[CorpusOutput, _Mapping]]] = ..., tolerance: _Optional[_Union[CorpusTolerance, _Mapping]] = ...) -> None: ...
