"""RunPlan over the daemon's run socket: the same call without gRPC, for clients on the daemon's
machine. A gRPC round trip costs more than a small plan's whole run; here a call is one frame
each way over a unix socket (the frames are described in proto/uopd/v1/kernel_service.proto,
``RunChannelHello``). ``Client.open_run_channel()`` asks the daemon for the socket's path and a
one-use ticket over gRPC, so the channel acts as the client's own identity."""

from __future__ import annotations

import asyncio
import math
import socket
import struct
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Optional, Union

import grpc

from uopd import _core
from uopd._core import PlanBase, RunResult
from uopd._errors import UopdError
from uopd.v1 import kernel_service_pb2 as ks

_HEADER = struct.Struct("=IQ")  # a frame of one part: the part count (1), then its length
_MAX_REPLY_BYTES = 64 << 20
_CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}


def _frame(message: Any) -> bytes:
    payload: bytes = message.SerializeToString()
    return _HEADER.pack(1, len(payload)) + payload


def _reply_size(header: bytes) -> int:
    count, size = _HEADER.unpack(header)
    if count != 1 or size > _MAX_REPLY_BYTES:
        raise UopdError(grpc.StatusCode.INTERNAL,
                        f"the run socket sent a frame of {count} parts, {size} bytes")
    return int(size)


def _checked(payload: bytes) -> ks.RunChannelReply:
    reply = ks.RunChannelReply.FromString(payload)
    if reply.code != 0:
        raise UopdError(grpc.StatusCode[_CODE_NAMES.get(reply.code, "UNKNOWN")], reply.message)
    return reply


def _call_of(plan: Union[PlanBase, str], vars: Optional[Mapping[str, int]],
             return_buffers: Optional[Iterable[Any]],
             timeout: Optional[float]) -> tuple[ks.RunChannelCall, _core.Bindings]:
    plan_id, bindings = ((plan.plan_id, plan.bindings) if isinstance(plan, PlanBase)
                         else (plan, _core.Bindings(known=False)))
    call = ks.RunChannelCall(run=_core.run_plan_request(plan_id, bindings, vars, return_buffers))
    if timeout is not None and not math.isinf(timeout):
        call.timeout_us = max(1, int(timeout * 1e6))
    return call, bindings


def _unavailable(path: str, error: OSError) -> UopdError:
    return UopdError(grpc.StatusCode.UNAVAILABLE, f"the run socket {path}: {error}")


class RunChannel:
    """A connection to the run socket acting as the identity that opened it. ``run_plan`` is
    ``Client.run_plan`` with the same arguments, results and errors (``timeout`` stops the run
    on the daemon). Safe to share between threads (calls take turns); close it (or use
    ``with``) when done."""

    def __init__(self, path: str, ticket: bytes) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._socket.connect(path)
        except OSError as error:
            self._socket.close()
            raise _unavailable(path, error) from None
        try:
            self._call(_frame(ks.RunChannelHello(ticket=ticket)))
        except BaseException:
            self._socket.close()
            raise

    def run_plan(self, plan: Union[PlanBase, str], vars: Optional[Mapping[str, int]] = None,
                 return_buffers: Optional[Iterable[Any]] = None, *,
                 timeout: Optional[float] = None) -> RunResult:
        call, bindings = _call_of(plan, vars, return_buffers, timeout)
        return _core.run_result(self._call(_frame(call)).response, bindings)

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> RunChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<uopd.RunChannel {self.path}>"

    def _call(self, frame: bytes) -> ks.RunChannelReply:
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


class AsyncRunChannel:
    """``RunChannel`` for asyncio (``AsyncClient.open_run_channel``): coroutine ``run_plan``;
    ``async with`` closes it."""

    def __init__(self, path: str, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.path = path
        self._reader, self._writer = reader, writer
        self._lock = asyncio.Lock()

    @classmethod
    async def connect(cls, path: str, ticket: bytes) -> AsyncRunChannel:
        try:
            reader, writer = await asyncio.open_unix_connection(path)
        except OSError as error:
            raise _unavailable(path, error) from None
        channel = cls(path, reader, writer)
        try:
            await channel._call(_frame(ks.RunChannelHello(ticket=ticket)))
        except BaseException:
            await channel.close()
            raise
        return channel

    async def run_plan(self, plan: Union[PlanBase, str],
                       vars: Optional[Mapping[str, int]] = None,
                       return_buffers: Optional[Iterable[Any]] = None, *,
                       timeout: Optional[float] = None) -> RunResult:
        call, bindings = _call_of(plan, vars, return_buffers, timeout)
        return _core.run_result((await self._call(_frame(call))).response, bindings)

    async def close(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except OSError:
            pass

    async def __aenter__(self) -> AsyncRunChannel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<uopd.aio.AsyncRunChannel {self.path}>"

    async def _call(self, frame: bytes) -> ks.RunChannelReply:
        async with self._lock:
            try:
                self._writer.write(frame)
                await self._writer.drain()
                header = await self._reader.readexactly(_HEADER.size)
                payload = await self._reader.readexactly(_reply_size(header))
            except (OSError, asyncio.IncompleteReadError) as error:
                raise _unavailable(self.path, OSError(str(error))) from None
        return _checked(payload)
