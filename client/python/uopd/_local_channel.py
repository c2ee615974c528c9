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
import os
import select
import socket
import struct
import threading
import time
from typing import Any, Optional

import grpc

from uopd._errors import Unavailable, UopdError
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


def _call_frame(method: str, request: Any, timeout: Optional[float],
                session: Optional[str] = None) -> bytes:
    call = ks.LocalCall()
    getattr(call, LOCAL_METHODS[method]).CopyFrom(request)
    if session is not None:
        call.session = session
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


def _late(path: str, what: str) -> UopdError:
    return UopdError(grpc.StatusCode.DEADLINE_EXCEEDED, f"the local socket {path}: {what}")


def _limit(timeout: Optional[float]) -> Optional[float]:
    return None if timeout is None or math.isinf(timeout) else max(timeout, 0.0)


# How long past a call's deadline to wait for its reply: the daemon ends the call at the
# deadline itself and answers DEADLINE_EXCEEDED, which keeps the connection; past this the
# client gives up on the reply (as gRPC would at the deadline) and the channel is broken.
_SLACK_SECONDS = 0.25
_HELLO_SECONDS = 10.0  # the daemon's own limit is 5 s


def _reply_spin_seconds() -> float:
    try:
        return min(max(float(os.environ.get("UOPD_LOCAL_SPIN_US", "50")), 0.0), 10_000.0) * 1e-6
    except ValueError:
        return 50e-6


# How long a call polls for its reply before it sleeps: a small call's reply comes sooner than a
# sleeping thread wakes on a small machine ($UOPD_LOCAL_SPIN_US, microseconds; 0: never).
_REPLY_SPIN_SECONDS = _reply_spin_seconds()
_WAITING_FOR_TURN = "the deadline passed while this client's other calls held the channel"
_BROKEN = "the connection was closed after an earlier call on it failed"
# A channel is looked at for the daemon's hang-up before a call only after this long without
# one: the daemon closes only connections idle for minutes, and back-to-back calls skip a poll.
_IDLE_CHECK_SECONDS = 1.0
_CLOSED_BY_DAEMON = ("the daemon closed the connection (idle past --local_socket_idle_timeout, "
                     "or stopping); the call was not sent")


class ClosedBeforeSending(Unavailable):
    """The channel was found closed by the daemon before the call was sent on it (the daemon
    closes connections idle past ``--local_socket_idle_timeout``): the call may go again on a
    new channel, and ``Client`` sends it so itself."""


def _closed_before_sending(path: str) -> ClosedBeforeSending:
    return ClosedBeforeSending(grpc.StatusCode.UNAVAILABLE,
                               f"the local socket {path}: {_CLOSED_BY_DAEMON}")


class LocalChannel:
    """A connection to the local socket acting as the identity whose ticket opened it. Safe to
    share between threads (calls take turns, within their deadlines). A call that fails mid-way
    (a deadline passed, the daemon went away) leaves the channel ``broken``: the next call
    fails at once, and ``Client`` opens a new channel instead."""

    def __init__(self, path: str, ticket: bytes) -> None:
        self.path = path
        self.broken = False
        self._lock = threading.Lock()
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket_timeout: Optional[float] = None
        self._last_reply = time.monotonic()
        self._poller = select.poll()
        self._poller.register(self._socket.fileno(), select.POLLIN)
        try:
            self._socket.connect(path)
        except OSError as error:
            self._socket.close()
            raise _unavailable(path, error) from None
        try:
            self._exchange(_frame(ks.LocalHello(ticket=ticket)), _HELLO_SECONDS)
        except BaseException:
            self._socket.close()
            raise

    def call(self, method: str, request: Any, timeout: Optional[float] = None,
             session: Optional[str] = None) -> Any:
        """``method``'s response to ``request`` (a method of ``LOCAL_METHODS``), within
        ``timeout`` seconds (None: no deadline); a buffer it creates belongs to ``session``
        (an open session of this identity's) too."""
        reply = self._exchange(_call_frame(method, request, timeout, session), timeout)
        return getattr(reply, LOCAL_METHODS[method])

    def close(self) -> None:
        self.broken = True
        self._socket.close()

    def __repr__(self) -> str:
        return f"<uopd.LocalChannel {self.path}>"

    def _exchange(self, frame: bytes, timeout: Optional[float]) -> ks.LocalReply:
        limit = _limit(timeout)
        if not self._lock.acquire(timeout=-1 if limit is None else limit):
            raise _late(self.path, _WAITING_FOR_TURN)
        try:
            if self.broken:
                raise _unavailable(self.path, _BROKEN)
            if time.monotonic() - self._last_reply > _IDLE_CHECK_SECONDS and self._poller.poll(0):
                # Nothing is owed to us between calls: what can be read is the daemon's hang-up.
                self.close()
                raise _closed_before_sending(self.path)
            wait = None if limit is None else limit + _SLACK_SECONDS
            if wait != self._socket_timeout:
                self._socket.settimeout(wait)
                self._socket_timeout = wait
            try:
                self._socket.sendall(frame)
                if _REPLY_SPIN_SECONDS > 0:
                    end = time.perf_counter() + _REPLY_SPIN_SECONDS
                    while not self._poller.poll(0) and time.perf_counter() < end:
                        pass
                payload = self._receive(_reply_size(self._receive(_HEADER.size)))
            except socket.timeout:
                self.close()
                raise _late(self.path, f"no reply within {wait:.3g} s") from None
            except OSError as error:
                self.close()
                raise _unavailable(self.path, error) from None
            except BaseException:  # e.g. KeyboardInterrupt mid-reply: the next frame is unknown
                self.close()
                raise
            self._last_reply = time.monotonic()
        finally:
            self._lock.release()
        return _checked(payload)

    def _receive(self, size: int) -> bytes:
        data = self._socket.recv(size, socket.MSG_WAITALL)
        while len(data) < size:  # MSG_WAITALL returns early on a signal or with a timeout set
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
        self.broken = False
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
            await channel._exchange(_frame(ks.LocalHello(ticket=ticket)), _HELLO_SECONDS)
        except BaseException:
            await channel.close()
            raise
        return channel

    async def call(self, method: str, request: Any, timeout: Optional[float] = None,
                   session: Optional[str] = None) -> Any:
        reply = await self._exchange(_call_frame(method, request, timeout, session), timeout)
        return getattr(reply, LOCAL_METHODS[method])

    async def close(self) -> None:
        self._break()
        try:
            await self._writer.wait_closed()
        except OSError:
            pass

    def __repr__(self) -> str:
        return f"<uopd.aio.AsyncLocalChannel {self.path}>"

    def _break(self) -> None:
        self.broken = True
        self._writer.close()

    async def _exchange(self, frame: bytes, timeout: Optional[float]) -> ks.LocalReply:
        limit = _limit(timeout)
        if limit is None or not self._lock.locked():
            await self._lock.acquire()
        else:
            try:
                await asyncio.wait_for(self._lock.acquire(), limit)
            except asyncio.TimeoutError:
                raise _late(self.path, _WAITING_FOR_TURN) from None
        try:
            if self.broken:
                raise _unavailable(self.path, _BROKEN)
            if self._reader.at_eof():
                # Nothing is owed to us between calls: the daemon hung up while we were idle.
                self._break()
                raise _closed_before_sending(self.path)
            wait = None if limit is None else limit + _SLACK_SECONDS
            try:
                payload = await asyncio.wait_for(self._round_trip(frame), wait)
            except asyncio.TimeoutError:
                self._break()
                raise _late(self.path, f"no reply within {wait:.3g} s") from None
            except (OSError, asyncio.IncompleteReadError) as error:
                self._break()
                raise _unavailable(self.path, error) from None
            except BaseException:  # cancelled mid-reply: the next frame is unknown
                self._break()
                raise
        finally:
            self._lock.release()
        return _checked(payload)

    async def _round_trip(self, frame: bytes) -> bytes:
        self._writer.write(frame)
        await self._writer.drain()
        header = await self._reader.readexactly(_HEADER.size)
        return await self._reader.readexactly(_reply_size(header))


def is_local_address(address: str) -> bool:
    """Whether a gRPC target names this machine: a unix socket or a loopback address."""
    if address.startswith(("unix:", "unix-abstract:")):
        return True
    for scheme in ("dns:///", "dns:", "ipv4:", "ipv6:"):
        if address.startswith(scheme):
            address = address[len(scheme):]
            break
    host = address.rsplit(":", 1)[0] if not address.startswith("[") else address
    return (host.startswith("127.") or host in ("localhost", "ip6-localhost")
            or address.startswith("[::1]"))


class LocalState:
    """Whether a client's hot calls go over the daemon's local socket: ``local_socket`` True
    (required: opening it fails loudly), None (when the address is on this machine, a ``unix:``
    socket or loopback, if the daemon has one) or False (never). Decided on the first hot
    call."""

    def __init__(self, local_socket: Optional[bool], address: str) -> None:
        self.required = local_socket is True
        self.wanted = local_socket is True or (local_socket is None
                                               and is_local_address(address))
        self.decided = not self.wanted
        self.channel: Any = None  # a LocalChannel (an AsyncLocalChannel for AsyncClient)
        self.lock = threading.Lock()
