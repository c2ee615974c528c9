from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Dialect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DIALECT_UNSPECIFIED: _ClassVar[Dialect]
    TINYGRAD_0_12: _ClassVar[Dialect]
    TINYGRAD_0_14: _ClassVar[Dialect]
DIALECT_UNSPECIFIED: Dialect
TINYGRAD_0_12: Dialect
TINYGRAD_0_14: Dialect

class DType(_message.Message):
    __slots__ = ("scalar", "count", "ptr", "size", "addrspace")
    class Scalar(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SCALAR_UNSPECIFIED: _ClassVar[DType.Scalar]
        VOID: _ClassVar[DType.Scalar]
        INDEX: _ClassVar[DType.Scalar]
        BOOL: _ClassVar[DType.Scalar]
        INT8: _ClassVar[DType.Scalar]
        UINT8: _ClassVar[DType.Scalar]
        INT16: _ClassVar[DType.Scalar]
        UINT16: _ClassVar[DType.Scalar]
        INT32: _ClassVar[DType.Scalar]
        UINT32: _ClassVar[DType.Scalar]
        INT64: _ClassVar[DType.Scalar]
        UINT64: _ClassVar[DType.Scalar]
        FP8E4M3: _ClassVar[DType.Scalar]
        FP8E5M2: _ClassVar[DType.Scalar]
        FLOAT16: _ClassVar[DType.Scalar]
        BFLOAT16: _ClassVar[DType.Scalar]
        FLOAT32: _ClassVar[DType.Scalar]
        FLOAT64: _ClassVar[DType.Scalar]
        WEAKINT: _ClassVar[DType.Scalar]
        WEAKFLOAT: _ClassVar[DType.Scalar]
        FP8E4M3FNUZ: _ClassVar[DType.Scalar]
        FP8E5M2FNUZ: _ClassVar[DType.Scalar]
    SCALAR_UNSPECIFIED: DType.Scalar
    VOID: DType.Scalar
    INDEX: DType.Scalar
    BOOL: DType.Scalar
    INT8: DType.Scalar
    UINT8: DType.Scalar
    INT16: DType.Scalar
    UINT16: DType.Scalar
    INT32: DType.Scalar
    UINT32: DType.Scalar
    INT64: DType.Scalar
    UINT64: DType.Scalar
    FP8E4M3: DType.Scalar
    FP8E5M2: DType.Scalar
    FLOAT16: DType.Scalar
    BFLOAT16: DType.Scalar
    FLOAT32: DType.Scalar
    FLOAT64: DType.Scalar
    WEAKINT: DType.Scalar
    WEAKFLOAT: DType.Scalar
    FP8E4M3FNUZ: DType.Scalar
    FP8E5M2FNUZ: DType.Scalar
    class AddrSpace(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        GLOBAL: _ClassVar[DType.AddrSpace]
        LOCAL: _ClassVar[DType.AddrSpace]
        REG: _ClassVar[DType.AddrSpace]
    GLOBAL: DType.AddrSpace
    LOCAL: DType.AddrSpace
    REG: DType.AddrSpace
    SCALAR_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    PTR_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ADDRSPACE_FIELD_NUMBER: _ClassVar[int]
    scalar: DType.Scalar
    count: int
    ptr: bool
    size: int
    addrspace: DType.AddrSpace
    def __init__(self, scalar: _Optional[_Union[DType.Scalar, str]] = ..., count: _Optional[int] = ..., ptr: bool = ..., size: _Optional[int] = ..., addrspace: _Optional[_Union[DType.AddrSpace, str]] = ...) -> None: ...

class RangeArg(_message.Message):
    __slots__ = ("axis", "type")
    class AxisType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        AXIS_TYPE_UNSPECIFIED: _ClassVar[RangeArg.AxisType]
        GLOBAL: _ClassVar[RangeArg.AxisType]
        WARP: _ClassVar[RangeArg.AxisType]
        LOCAL: _ClassVar[RangeArg.AxisType]
        LOOP: _ClassVar[RangeArg.AxisType]
        GROUP_REDUCE: _ClassVar[RangeArg.AxisType]
        REDUCE: _ClassVar[RangeArg.AxisType]
        UPCAST: _ClassVar[RangeArg.AxisType]
        UNROLL: _ClassVar[RangeArg.AxisType]
        THREAD: _ClassVar[RangeArg.AxisType]
        OUTER: _ClassVar[RangeArg.AxisType]
        PLACEHOLDER: _ClassVar[RangeArg.AxisType]
        WEAK: _ClassVar[RangeArg.AxisType]
        DEVICE: _ClassVar[RangeArg.AxisType]
    AXIS_TYPE_UNSPECIFIED: RangeArg.AxisType
    GLOBAL: RangeArg.AxisType
    WARP: RangeArg.AxisType
    LOCAL: RangeArg.AxisType
    LOOP: RangeArg.AxisType
    GROUP_REDUCE: RangeArg.AxisType
    REDUCE: RangeArg.AxisType
    UPCAST: RangeArg.AxisType
    UNROLL: RangeArg.AxisType
    THREAD: RangeArg.AxisType
    OUTER: RangeArg.AxisType
    PLACEHOLDER: RangeArg.AxisType
    WEAK: RangeArg.AxisType
    DEVICE: RangeArg.AxisType
    AXIS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    axis: _containers.RepeatedScalarFieldContainer[int]
    type: RangeArg.AxisType
    def __init__(self, axis: _Optional[_Iterable[int]] = ..., type: _Optional[_Union[RangeArg.AxisType, str]] = ...) -> None: ...

class VarArg(_message.Message):
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

class Opt(_message.Message):
    __slots__ = ("op", "axis", "arg", "tc")
    OP_FIELD_NUMBER: _ClassVar[int]
    AXIS_FIELD_NUMBER: _ClassVar[int]
    ARG_FIELD_NUMBER: _ClassVar[int]
    TC_FIELD_NUMBER: _ClassVar[int]
    op: str
    axis: int
    arg: int
    tc: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, op: _Optional[str] = ..., axis: _Optional[int] = ..., arg: _Optional[int] = ..., tc: _Optional[_Iterable[int]] = ...) -> None: ...

class OptList(_message.Message):
    __slots__ = ("opts",)
    OPTS_FIELD_NUMBER: _ClassVar[int]
    opts: _containers.RepeatedCompositeFieldContainer[Opt]
    def __init__(self, opts: _Optional[_Iterable[_Union[Opt, _Mapping]]] = ...) -> None: ...

class KernelInfo(_message.Message):
    __slots__ = ("name", "opts_to_apply", "applied_opts", "dont_use_locals")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTS_TO_APPLY_FIELD_NUMBER: _ClassVar[int]
    APPLIED_OPTS_FIELD_NUMBER: _ClassVar[int]
    DONT_USE_LOCALS_FIELD_NUMBER: _ClassVar[int]
    name: str
    opts_to_apply: OptList
    applied_opts: _containers.RepeatedCompositeFieldContainer[Opt]
    dont_use_locals: bool
    def __init__(self, name: _Optional[str] = ..., opts_to_apply: _Optional[_Union[OptList, _Mapping]] = ..., applied_opts: _Optional[_Iterable[_Union[Opt, _Mapping]]] = ..., dont_use_locals: bool = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("op", "dtype", "src", "arg")
    class Op(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        OP_UNSPECIFIED: _ClassVar[Node.Op]
        SINK: _ClassVar[Node.Op]
        DEFINE_GLOBAL: _ClassVar[Node.Op]
        DEFINE_VAR: _ClassVar[Node.Op]
        CONST: _ClassVar[Node.Op]
        RANGE: _ClassVar[Node.Op]
        END: _ClassVar[Node.Op]
        INDEX: _ClassVar[Node.Op]
        LOAD: _ClassVar[Node.Op]
        STORE: _ClassVar[Node.Op]
        REDUCE: _ClassVar[Node.Op]
        AFTER: _ClassVar[Node.Op]
        GROUP: _ClassVar[Node.Op]
        WHERE: _ClassVar[Node.Op]
        CAST: _ClassVar[Node.Op]
        BITCAST: _ClassVar[Node.Op]
        RESHAPE: _ClassVar[Node.Op]
        EXP2: _ClassVar[Node.Op]
        LOG2: _ClassVar[Node.Op]
        SIN: _ClassVar[Node.Op]
        SQRT: _ClassVar[Node.Op]
        RECIPROCAL: _ClassVar[Node.Op]
        NEG: _ClassVar[Node.Op]
        TRUNC: _ClassVar[Node.Op]
        ADD: _ClassVar[Node.Op]
        SUB: _ClassVar[Node.Op]
        MUL: _ClassVar[Node.Op]
        FDIV: _ClassVar[Node.Op]
        IDIV: _ClassVar[Node.Op]
        MOD: _ClassVar[Node.Op]
        MAX: _ClassVar[Node.Op]
        POW: _ClassVar[Node.Op]
        SHL: _ClassVar[Node.Op]
        SHR: _ClassVar[Node.Op]
        AND: _ClassVar[Node.Op]
        OR: _ClassVar[Node.Op]
        XOR: _ClassVar[Node.Op]
        CMPLT: _ClassVar[Node.Op]
        CMPNE: _ClassVar[Node.Op]
        CMPEQ: _ClassVar[Node.Op]
        MULACC: _ClassVar[Node.Op]
        THREEFRY: _ClassVar[Node.Op]
        SPECIAL: _ClassVar[Node.Op]
        DEFINE_LOCAL: _ClassVar[Node.Op]
        DEFINE_REG: _ClassVar[Node.Op]
        BARRIER: _ClassVar[Node.Op]
        IF: _ClassVar[Node.Op]
        ENDIF: _ClassVar[Node.Op]
        GEP: _ClassVar[Node.Op]
        VECTORIZE: _ClassVar[Node.Op]
        VCONST: _ClassVar[Node.Op]
        WMMA: _ClassVar[Node.Op]
        UNROLL: _ClassVar[Node.Op]
        CONTRACT: _ClassVar[Node.Op]
        CUSTOM: _ClassVar[Node.Op]
        PARAM: _ClassVar[Node.Op]
        CDIV: _ClassVar[Node.Op]
        CMOD: _ClassVar[Node.Op]
        FLOORDIV: _ClassVar[Node.Op]
        FLOORMOD: _ClassVar[Node.Op]
        STACK: _ClassVar[Node.Op]
    OP_UNSPECIFIED: Node.Op
    SINK: Node.Op
    DEFINE_GLOBAL: Node.Op
    DEFINE_VAR: Node.Op
    CONST: Node.Op
    RANGE: Node.Op
    END: Node.Op
    INDEX: Node.Op
    LOAD: Node.Op
    STORE: Node.Op
    REDUCE: Node.Op
    AFTER: Node.Op
    GROUP: Node.Op
    WHERE: Node.Op
    CAST: Node.Op
    BITCAST: Node.Op
    RESHAPE: Node.Op
    EXP2: Node.Op
    LOG2: Node.Op
    SIN: Node.Op
    SQRT: Node.Op
    RECIPROCAL: Node.Op
    NEG: Node.Op
    TRUNC: Node.Op
    ADD: Node.Op
    SUB: Node.Op
    MUL: Node.Op
    FDIV: Node.Op
    IDIV: Node.Op
    MOD: Node.Op
    MAX: Node.Op
    POW: Node.Op
    SHL: Node.Op
    SHR: Node.Op
    AND: Node.Op
    OR: Node.Op
    XOR: Node.Op
    CMPLT: Node.Op
    CMPNE: Node.Op
    CMPEQ: Node.Op
    MULACC: Node.Op
    THREEFRY: Node.Op
    SPECIAL: Node.Op
    DEFINE_LOCAL: Node.Op
    DEFINE_REG: Node.Op
    BARRIER: Node.Op
    IF: Node.Op
    ENDIF: Node.Op
    GEP: Node.Op
    VECTORIZE: Node.Op
    VCONST: Node.Op
    WMMA: Node.Op
    UNROLL: Node.Op
    CONTRACT: Node.Op
    CUSTOM: Node.Op
    PARAM: Node.Op
    CDIV: Node.Op
    CMOD: Node.Op
    FLOORDIV: Node.Op
    FLOORMOD: Node.Op
    STACK: Node.Op
    OP_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SRC_FIELD_NUMBER: _ClassVar[int]
    ARG_FIELD_NUMBER: _ClassVar[int]
    op: Node.Op
    dtype: DType
    src: _containers.RepeatedScalarFieldContainer[int]
    arg: Arg
    def __init__(self, op: _Optional[_Union[Node.Op, str]] = ..., dtype: _Optional[_Union[DType, _Mapping]] = ..., src: _Optional[_Iterable[int]] = ..., arg: _Optional[_Union[Arg, _Mapping]] = ...) -> None: ...

class Arg(_message.Message):
    __slots__ = ("i64", "u64", "f64", "b", "invalid", "range", "var", "op", "kernel", "str", "param", "ints")
    I64_FIELD_NUMBER: _ClassVar[int]
    U64_FIELD_NUMBER: _ClassVar[int]
    F64_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    INVALID_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    VAR_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    KERNEL_FIELD_NUMBER: _ClassVar[int]
    STR_FIELD_NUMBER: _ClassVar[int]
    PARAM_FIELD_NUMBER: _ClassVar[int]
    INTS_FIELD_NUMBER: _ClassVar[int]
    i64: int
    u64: int
    f64: float
    b: bool
    invalid: bool
    range: RangeArg
    var: VarArg
    op: Node.Op
    kernel: KernelInfo
    str: str
    param: ParamArg
    ints: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, i64: _Optional[int] = ..., u64: _Optional[int] = ..., f64: _Optional[float] = ..., b: bool = ..., invalid: bool = ..., range: _Optional[_Union[RangeArg, _Mapping]] = ..., var: _Optional[_Union[VarArg, _Mapping]] = ..., op: _Optional[_Union[Node.Op, str]] = ..., kernel: _Optional[_Union[KernelInfo, _Mapping]] = ..., str: _Optional[str] = ..., param: _Optional[_Union[ParamArg, _Mapping]] = ..., ints: _Optional[_Iterable[int]] = ...) -> None: ...

class ParamArg(_message.Message):
    __slots__ = ("slot", "name", "has_bounds", "min", "max", "multiple_of", "addrspace", "is_value")
    SLOT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    HAS_BOUNDS_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_OF_FIELD_NUMBER: _ClassVar[int]
    ADDRSPACE_FIELD_NUMBER: _ClassVar[int]
    IS_VALUE_FIELD_NUMBER: _ClassVar[int]
    slot: int
    name: str
    has_bounds: bool
    min: int
    max: int
    multiple_of: int
    addrspace: DType.AddrSpace
    is_value: bool
    def __init__(self, slot: _Optional[int] = ..., name: _Optional[str] = ..., has_bounds: bool = ..., min: _Optional[int] = ..., max: _Optional[int] = ..., multiple_of: _Optional[int] = ..., addrspace: _Optional[_Union[DType.AddrSpace, str]] = ..., is_value: bool = ...) -> None: ...

class Graph(_message.Message):
    __slots__ = ("nodes", "dialect")
    NODES_FIELD_NUMBER: _ClassVar[int]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    dialect: Dialect
    def __init__(self, nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ..., dialect: _Optional[_Union[Dialect, str]] = ...) -> None: ...
