"""Element types: the wire's ``DType.Scalar`` and their numpy counterparts.

numpy is optional (``pip install uopd[numpy]``); it is imported only where an array is made or read.
numpy has no bfloat16 or fp8: with ``ml_dtypes`` installed those map to its types, otherwise to
their raw bits (uint16, uint8).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union, cast

from uopd.v1 import graph_pb2

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DTypeLike", "Scalar", "scalar_of", "scalar_name", "itemsize", "numpy_dtype", "SCALARS"]

#: A dtype as the API takes it: a scalar name ("FLOAT32", "float32", tinygrad's "float"), the
#: ``DType.Scalar`` value, a numpy dtype or type, or a tinygrad DType (anything with ``.name``).
DTypeLike = Union[str, int, Any]

_Scalar = graph_pb2.DType.Scalar
#: A ``DType.Scalar`` value (an int at run time).
Scalar = graph_pb2.DType.Scalar

#: Every scalar a buffer can hold, by wire name, with its size in bytes.
SCALARS: dict[str, int] = {
    "BOOL": 1, "INT8": 1, "UINT8": 1, "INT16": 2, "UINT16": 2, "INT32": 4, "UINT32": 4,
    "INT64": 8, "UINT64": 8, "FP8E4M3": 1, "FP8E5M2": 1, "FLOAT16": 2, "BFLOAT16": 2,
    "FLOAT32": 4, "FLOAT64": 8, "FP8E4M3FNUZ": 1, "FP8E5M2FNUZ": 1,
}

# Other spellings: numpy's, tinygrad's (DType.name), C's, ml_dtypes'.
_ALIASES: dict[str, str] = {
    "bool_": "BOOL", "char": "INT8", "uchar": "UINT8", "short": "INT16", "ushort": "UINT16",
    "int": "INT32", "uint": "UINT32", "long": "INT64", "ulong": "UINT64", "half": "FLOAT16",
    "float": "FLOAT32", "double": "FLOAT64", "float8_e4m3fn": "FP8E4M3",
    "float8_e5m2": "FP8E5M2", "fp8e4m3": "FP8E4M3", "fp8e5m2": "FP8E5M2",
    "float8_e4m3fnuz": "FP8E4M3FNUZ", "float8_e5m2fnuz": "FP8E5M2FNUZ",
    "fp8e4m3fnuz": "FP8E4M3FNUZ", "fp8e5m2fnuz": "FP8E5M2FNUZ",
}

_NUMPY: dict[str, str] = {
    "BOOL": "bool", "INT8": "i1", "UINT8": "u1", "INT16": "<i2", "UINT16": "<u2",
    "INT32": "<i4", "UINT32": "<u4", "INT64": "<i8", "UINT64": "<u8", "FLOAT16": "<f2",
    "FLOAT32": "<f4", "FLOAT64": "<f8",
}
# Types numpy lacks: the ml_dtypes type when installed, else the raw bits.
_EXTENDED: dict[str, tuple[str, str]] = {
    "BFLOAT16": ("bfloat16", "<u2"),
    "FP8E4M3": ("float8_e4m3fn", "u1"),
    "FP8E5M2": ("float8_e5m2", "u1"),
    "FP8E4M3FNUZ": ("float8_e4m3fnuz", "u1"),
    "FP8E5M2FNUZ": ("float8_e5m2fnuz", "u1"),
}


def _by_name(name: str) -> Scalar:
    upper = name.upper()
    if upper in SCALARS:
        return cast(Scalar, _Scalar.Value(upper))
    if name.lower() in _ALIASES:
        return cast(Scalar, _Scalar.Value(_ALIASES[name.lower()]))
    raise ValueError(f"unknown dtype {name!r}: expected one of {', '.join(SCALARS)} "
                     "(or a numpy dtype)")


def scalar_of(dtype: DTypeLike) -> Scalar:
    """The ``DType.Scalar`` value of ``dtype``; ValueError for one no buffer can hold."""
    if isinstance(dtype, bool):
        raise TypeError("a dtype, not a bool")
    if isinstance(dtype, int):
        name = _Scalar.Name(dtype) if dtype in _Scalar.values() else None
        if name not in SCALARS:
            raise ValueError(f"DType.Scalar {dtype} ({name}) is not a buffer element type")
        return cast(Scalar, dtype)
    if isinstance(dtype, str):
        return _by_name(dtype)
    numpy_name = _numpy_name(dtype)
    if numpy_name is not None:
        return _by_name(numpy_name)
    name = getattr(dtype, "name", None)  # a tinygrad DType
    if isinstance(name, str):
        return _by_name(name)
    raise TypeError(f"cannot use {dtype!r} as a dtype")


def _numpy_name(dtype: Any) -> str | None:
    """The numpy name ("float32", "bfloat16") of a numpy dtype or scalar type, else None."""
    module = type(dtype).__module__ if not isinstance(dtype, type) else dtype.__module__
    if not module.startswith(("numpy", "ml_dtypes")):
        return None
    import numpy as np

    resolved = np.dtype(dtype)
    if resolved.byteorder == ">":
        raise ValueError(f"big-endian {resolved} is not supported: convert to little-endian first")
    return str(resolved.name)


def require_numpy() -> Any:
    """The numpy module; ImportError saying how to install it when it is missing."""
    try:
        import numpy
    except ImportError:
        raise ImportError("this needs numpy: pip install 'uopd[numpy]'") from None
    return numpy


def scalar_name(scalar: int) -> str:
    """The wire name of a ``DType.Scalar`` value: "FLOAT32"."""
    return str(_Scalar.Name(scalar))


def itemsize(scalar: int) -> int:
    return SCALARS[scalar_name(scalar)]


def numpy_dtype(dtype: DTypeLike) -> np.dtype[Any]:
    """The numpy dtype that holds ``dtype``'s elements (little-endian). BFLOAT16 and the fp8 types
    are ml_dtypes' types when ml_dtypes is installed, else their raw bits (uint16, uint8)."""
    require_numpy()
    import numpy as np

    name = scalar_name(scalar_of(dtype))
    if name in _EXTENDED:
        extended, raw = _EXTENDED[name]
        try:
            import ml_dtypes
        except ImportError:
            return np.dtype(raw)
        return cast("np.dtype[Any]", np.dtype(getattr(ml_dtypes, extended)))
    return np.dtype(_NUMPY[name])
