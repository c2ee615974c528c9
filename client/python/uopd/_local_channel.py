"""The hot calls over the daemon's local socket, without gRPC, for clients on the daemon's
machine. A gRPC round trip costs more than a small kernel's whole run; here a call is one frame
each way over a unix socket (the frames are described in proto/uopd/v1/kernel_service.proto,
``LocalHello``). A client opens a channel by asking the daemon, over gRPC, for the socket's path
and a one-use ticket (``OpenLocalChannel``), so the channel acts as the client's own identity;
``Client`` then sends the methods of ``LOCAL_METHODS`` over it, with the same answers and
errors as their RPCs."""

from __future__ import annotations

import asyncio
import math
import socket
import struct
import threading
from typing import Any, Optional

import grpc

from uopd._errors import UopdError
from uopd.v1 import kernel_service_pb2 as ks

#: KernelService methods the local socket serves, by their field in ``LocalCall``/``LocalReply``.
LOCAL_METHODS = {
    "RunPlan": "run_plan",
    "Execute": "execute",
    "CreateBuffer": "create_buffer",
    "FreeBuffer": "free_buffer",
    "WriteBufferSmall": "write_buffer_small",
    "ReadBufferSmall": "read_buffer_small",
}

_HEADER = struct.Struct("=IQ")  # a frame of one part: the part count (1), then its length
_MAX_REPLY_BYTES = 64 << 20
_CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}


def _frame(message: Any) -> bytes:
    payload: bytes = message.SerializeToString()
    return _HEADER.pack(1, len(payload)) + payload


def _call_frame(method: str, request: Any, timeout: Optional[float]) -> bytes:
    call = ks.LocalCall()
    getattr(call, LOCAL_METHODS[method]).CopyFrom(request)
    if timeout is not None and not math.isinf(timeout):
        call.timeout_us = max(1, int(timeout * 1e6))
    return _frame(call)


def _reply_size(header: bytes) -> int:
    count, size = _HEADER.unpack(header)
    if count != 1 or size > _MAX_REPLY_BYTES:
        raise UopdError(grpc.StatusCode.INTERNAL,
                        f"the local socket sent a frame of {count} parts, {size} bytes")
    return int(size)


def _checked(payload: bytes) -> ks.LocalReply:
    reply = ks.LocalReply.FromString(payload)
    if reply.code != 0:
        raise UopdError(grpc.StatusCode[_CODE_NAMES.get(reply.code, "UNKNOWN")], reply.message)
    return reply


def _unavailable(path: str, error: object) -> UopdError:
    return UopdError(grpc.StatusCode.UNAVAILABLE, f"the local socket {path}: {error}")


class LocalChannel:
    """A connection to the local socket acting as the identity whose ticket opened it. Safe to
    share between threads (calls take turns)."""

    def __init__(self, path: str, ticket: bytes) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._socket.connect(path)
            self._exchange(_frame(ks.LocalHello(ticket=ticket)))
        except OSError as error:
            self._socket.close()
            raise _unavailable(path, error) from None
        except BaseException:
            self._socket.close()
            raise

    def call(self, method: str, request: Any, timeout: Optional[float] = None) -> Any:
        """``method``'s response to ``request`` (a method of ``LOCAL_METHODS``)."""
        reply = self._exchange(_call_frame(method, request, timeout))
        return getattr(reply, LOCAL_METHODS[method])

    def close(self) -> None:
        self._socket.close()

    def __repr__(self) -> str:
        return f"<uopd.LocalChannel {self.path}>"

    def _exchange(self, frame: bytes) -> ks.LocalReply:
        with self._lock:
            try:
                self._socket.sendall(frame)
                payload = self._receive(_reply_size(self._receive(_HEADER.size)))
            except OSError as error:
                raise _unavailable(self.path, error) from None
        return _checked(payload)

    def _receive(self, size: int) -> bytes:
        data = self._socket.recv(size, socket.MSG_WAITALL)
        while len(data) < size:  # MSG_WAITALL returns early on a signal
            more = self._socket.recv(size - len(data))
            if not more:
                raise OSError("the daemon closed the connection")
            data += more
        return data


class AsyncLocalChannel:
    """``LocalChannel`` for asyncio."""

    def __init__(self, path: str, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.path = path
        self._reader, self._writer = reader, writer
        self._lock = asyncio.Lock()

    @classmethod
    async def connect(cls, path: str, ticket: bytes) -> AsyncLocalChannel:
        try:
            reader, writer = await asyncio.open_unix_connection(path)
        except OSError as error:
            raise _unavailable(path, error) from None
        channel = cls(path, reader, writer)
        try:
            await channel._exchange(_frame(ks.LocalHello(ticket=ticket)))
        except BaseException:
            await channel.close()
            raise
        return channel

    async def call(self, method: str, request: Any, timeout: Optional[float] = None) -> Any:
        reply = await self._exchange(_call_frame(method, request, timeout))
        return getattr(reply, LOCAL_METHODS[method])

    async def close(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except OSError:
            pass

    def __repr__(self) -> str:
        return f"<uopd.aio.AsyncLocalChannel {self.path}>"

    async def _exchange(self, frame: bytes) -> ks.LocalReply:
        async with self._lock:
            try:
                self._writer.write(frame)
                await self._writer.drain()
                header = await self._reader.readexactly(_HEADER.size)
                payload = await self._reader.readexactly(_reply_size(header))
            except (OSError, asyncio.IncompleteReadError) as error:
                raise _unavailable(self.path, error) from None
        return _checked(payload)


class LocalState:
    """Whether a client's hot calls go over the daemon's local socket: ``local_socket`` True
    (required: opening it fails loudly), None (when the address is ``unix:``, if the daemon has
    one) or False (never). Decided on the first hot call."""

    def __init__(self, local_socket: Optional[bool], address: str) -> None:
        self.required = local_socket is True
        self.wanted = local_socket is True or (local_socket is None
                                               and address.startswith("unix:"))
        self.decided = not self.wanted
        self.channel: Any = None  # a LocalChannel (an AsyncLocalChannel for AsyncClient)
        self.lock = threading.Lock()
