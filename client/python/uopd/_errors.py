"""Errors: every failed RPC raises a UopdError carrying the gRPC status code and the server's
message (which names the kernel and node at fault for a bad graph)."""

from __future__ import annotations

from typing import Any, ClassVar, Optional

import grpc

__all__ = [
    "UopdError",
    "InvalidArgument",
    "NotFound",
    "AlreadyExists",
    "ResourceExhausted",
    "PermissionDenied",
    "Unauthenticated",
    "FailedPrecondition",
    "Unavailable",
    "DeadlineExceeded",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Cancelled",
]


class UopdError(Exception):
    """An RPC failed. ``code`` is the ``grpc.StatusCode``, ``message`` the server's explanation.

    ``UopdError(code, message)`` builds the subclass for ``code`` where there is one, so
    ``except uopd.NotFound`` catches ``UopdError(grpc.StatusCode.NOT_FOUND, "...")``. Several
    subclasses are also the builtin exception Python code expects (``DeadlineExceeded`` is a
    ``TimeoutError``, ``InvalidArgument`` a ``ValueError``, ``NotFound`` a ``LookupError``...).
    """

    #: The status code a subclass stands for (None on UopdError itself).
    CODE: ClassVar[Optional[grpc.StatusCode]] = None
    code: grpc.StatusCode
    message: str

    def __new__(cls, code: grpc.StatusCode, message: str = "") -> UopdError:
        if cls is UopdError:
            cls = _BY_CODE.get(code, UopdError)
        return super().__new__(cls)

    def __init__(self, code: grpc.StatusCode, message: str = "") -> None:
        # BaseException's own __init__, not OSError's (TimeoutError, ...): no errno here.
        BaseException.__init__(self, code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return _unpickle, (self.code.name, self.message)


class InvalidArgument(UopdError, ValueError):
    """INVALID_ARGUMENT: A bad graph, binding or value (the message names the kernel and node)."""

    CODE = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(UopdError, LookupError):
    """NOT_FOUND: An unknown buffer handle or plan id (or one that belongs to another identity)."""

    CODE = grpc.StatusCode.NOT_FOUND


class AlreadyExists(UopdError):
    """ALREADY_EXISTS: The thing to create exists already."""

    CODE = grpc.StatusCode.ALREADY_EXISTS


class ResourceExhausted(UopdError):
    """RESOURCE_EXHAUSTED: A limit: a quota, a message size, a compile past its time or memory."""

    CODE = grpc.StatusCode.RESOURCE_EXHAUSTED


class PermissionDenied(UopdError, PermissionError):
    """PERMISSION_DENIED: The caller's identity lacks the right the call needs (the message names it)."""

    CODE = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(UopdError, PermissionError):
    """UNAUTHENTICATED: An unknown token, or none where the server needs a credential."""

    CODE = grpc.StatusCode.UNAUTHENTICATED


class FailedPrecondition(UopdError):
    """FAILED_PRECONDITION: A device this server does not have, or a state the call cannot run in."""

    CODE = grpc.StatusCode.FAILED_PRECONDITION


class Unavailable(UopdError, ConnectionError):
    """UNAVAILABLE: The server cannot be reached, or is shutting down."""

    CODE = grpc.StatusCode.UNAVAILABLE


class DeadlineExceeded(UopdError, TimeoutError):
    """DEADLINE_EXCEEDED: The call's deadline passed (the server abandons its work)."""

    CODE = grpc.StatusCode.DEADLINE_EXCEEDED


class OutOfRange(UopdError, IndexError):
    """OUT_OF_RANGE: An offset or size past a buffer, or a run-time bounds check that stopped a kernel."""

    CODE = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(UopdError, NotImplementedError):
    """UNIMPLEMENTED: IR or a method this server does not support (yet)."""

    CODE = grpc.StatusCode.UNIMPLEMENTED


class Internal(UopdError):
    """INTERNAL: A bug in the server."""

    CODE = grpc.StatusCode.INTERNAL


class Cancelled(UopdError):
    """CANCELLED: The call was cancelled."""

    CODE = grpc.StatusCode.CANCELLED


_BY_CODE: dict[grpc.StatusCode, type[UopdError]] = {
    cls.CODE: cls
    for cls in (InvalidArgument, NotFound, AlreadyExists, ResourceExhausted, PermissionDenied,
                Unauthenticated, FailedPrecondition, Unavailable, DeadlineExceeded, OutOfRange,
                Unimplemented, Internal, Cancelled)
}


for _cls in (UopdError, *_BY_CODE.values()):
    _cls.__module__ = "uopd"  # tracebacks say uopd.NotFound, where users find it


def _unpickle(code_name: str, message: str) -> UopdError:
    return UopdError(grpc.StatusCode[code_name], message)


def error_from_rpc(error: grpc.RpcError) -> UopdError:
    """The UopdError for a failed call (sync ``grpc.RpcError`` or ``grpc.aio.AioRpcError``)."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    return UopdError(code or grpc.StatusCode.UNKNOWN, details or "")
