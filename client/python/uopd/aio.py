"""The uopd client for asyncio, on ``grpc.aio``: the same API as ``uopd.Client`` with
coroutines. Requests are built and multi-step operations decided by the same code as the sync
client's (``uopd._core``); only the calls differ.

    async with uopd.aio.AsyncClient("127.0.0.1:50051") as client:
        devices = await client.devices()
        async with await client.from_numpy(array) as buffer:
            print(await buffer.numpy())

Make the client inside the event loop that uses it.
"""

from __future__ import annotations

import asyncio

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

import grpc
import grpc.aio

from uopd import _core
from uopd._connection import (DEFAULT_ADDRESS, PemLike, Settings, open_channel, remaining,
                              stubs)
from uopd._core import (AstLike, BufferArg, BufferBase, CacheEntry, Call, KernelLike, PlanBase,
                        RunResult)
from uopd._dtypes import DTypeLike, Scalar
from uopd._errors import NotFound, UopdError, error_from_rpc
from uopd._local_channel import LOCAL_METHODS, AsyncLocalChannel, ClosedBeforeSending, LocalState
from uopd._opts import OptimizationLike
from uopd._session import SESSION_METHODS, SessionState, go_on_without, metadata_with
from uopd.v1 import kernel_service_pb2 as ks, program_pb2

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

__all__ = ["AsyncClient", "AsyncBuffer", "AsyncPlan"]


class AsyncBuffer(BufferBase):
    """A buffer on the server (``AsyncClient.create_buffer``); ``async with`` frees it."""

    __slots__ = ("client",)

    def __init__(self, client: AsyncClient, handle: str, scalar: Scalar, size: int,
                 device: str) -> None:
        super().__init__(handle, scalar, size, device)
        self.client = client

    async def write(self, data: Any, offset: int = 0, *, timeout: Optional[float] = None) -> None:
        await self.client._run(_core.op_write(self.client._state, self.handle,
                                              _core.bytes_of(data, self.scalar), offset), timeout)

    async def read(self, offset: int = 0, length: Optional[int] = None, *,
                   timeout: Optional[float] = None) -> bytes:
        return await self.client._run(_core.op_read(self.client._state, self.handle, offset,
                                                    length, self.nbytes), timeout)

    async def numpy(self, *, timeout: Optional[float] = None) -> np.ndarray:
        return _core.array_of(await self.read(timeout=timeout), self.scalar)

    async def free(self, *, timeout: Optional[float] = None) -> None:
        if not self.freed:
            await self.client._run(_core.op_free(self.handle), timeout)
            self.freed = True

    async def __aenter__(self) -> AsyncBuffer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.free()


class AsyncPlan(PlanBase):
    """A prepared plan (``AsyncClient.prepare``); ``async with`` releases it."""

    def __init__(self, client: AsyncClient, response: ks.PrepareResponse,
                 bindings: _core.Bindings) -> None:
        super().__init__(response, bindings)
        self.client = client

    async def run(self, vars: Optional[Mapping[str, int]] = None,
                  return_buffers: Optional[Iterable[Any]] = None, *,
                  timeout: Optional[float] = None) -> RunResult:
        return await self.client.run_plan(self, vars, return_buffers, timeout=timeout)

    async def release(self, *, timeout: Optional[float] = None) -> None:
        if not self.released:
            await self.client.release_plan(self.plan_id, timeout=timeout)
            self.released = True

    async def __aenter__(self) -> AsyncPlan:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.release()


class AsyncClient:
    """``uopd.Client`` for asyncio: same arguments, coroutine methods (see ``uopd.Client``,
    sessions included: ``close()`` ends the client's session)."""

    def __init__(self, address: str = DEFAULT_ADDRESS, *, token: Optional[str] = None,
                 token_file: Optional[PemLike] = None, tls: Optional[bool] = None,
                 tls_root_certs: Optional[PemLike] = None,
                 tls_cert_chain: Optional[PemLike] = None,
                 tls_private_key: Optional[PemLike] = None,
                 tls_server_name: Optional[str] = None, timeout: Optional[float] = None,
                 options: Optional[list[tuple[str, Any]]] = None,
                 local_socket: Optional[bool] = None, session: bool = True) -> None:
        self._settings = Settings(
            address, token=token, token_file=token_file, tls=tls, tls_root_certs=tls_root_certs,
            tls_cert_chain=tls_cert_chain, tls_private_key=tls_private_key,
            tls_server_name=tls_server_name, timeout=timeout, options=options)
        self._channel = open_channel(self._settings, grpc.aio)
        self._stubs = stubs(self._channel)
        self._state = _core.ClientState()
        self._local = LocalState(local_socket, address)
        self._local_lock: Optional[asyncio.Lock] = None  # made in the loop that first needs it
        self._session = SessionState(session)  # its lock too

    @property
    def address(self) -> str:
        return self._settings.address

    @property
    def timeout(self) -> Optional[float]:
        return self._settings.timeout

    @property
    def local_socket(self) -> Optional[str]:
        """The daemon's local socket this client's hot calls go over, or None: gRPC (or no hot
        call made yet)."""
        channel = self._local.channel
        return channel.path if channel is not None else None

    @property
    def session_id(self) -> Optional[str]:
        """The id of the open session (see ``uopd.Client.session_id``), else None."""
        return self._session.open_id()

    async def close(self) -> None:
        self._session.wanted = False
        if self._session.call is not None:
            self._session.call.cancel()
        if self._local.channel is not None:
            await self._local.channel.close()
        await self._channel.close(grace=None)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<uopd.aio.AsyncClient {self.address}>"

    async def _run(self, op: _core.Op[T], timeout: Optional[float]) -> T:
        deadline = self._settings.deadline(timeout)

        async def send(call: Call, session: Optional[str]) -> Any:
            if call.method in LOCAL_METHODS and call.service == "kernels":
                channel = await self._local_channel()
                if channel is not None:
                    try:
                        return await channel.call(call.method, call.request,
                                                  remaining(deadline), session)
                    except ClosedBeforeSending:  # idle too long: it goes on a new channel
                        channel = await self._local_channel()
                        if channel is not None:
                            return await channel.call(call.method, call.request,
                                                      remaining(deadline), session)
            method = getattr(self._stubs[call.service], call.method)
            metadata = metadata_with(self._settings.metadata, session)
            try:
                if call.shape == "unary_stream":
                    stream = method(call.request, timeout=remaining(deadline), metadata=metadata)
                    return [response async for response in stream]
                return await method(call.request, timeout=remaining(deadline), metadata=metadata)
            except grpc.RpcError as error:
                raise error_from_rpc(error) from None

        async def invoke(call: Call) -> Any:
            if call.method not in SESSION_METHODS or call.service != "kernels":
                return await send(call, None)
            session = await self._session_id(deadline)
            try:
                return await send(call, session)
            except NotFound:
                # The session ended under the call: this goes in a new one (see Client).
                if session is None or not self._session.ended(session):
                    raise
                return await send(call, await self._session_id(deadline))

        return await _core.run_async(op, invoke)

    async def _session_id(self, deadline: Optional[float]) -> Optional[str]:
        """The open session's id, opening one if there is none (None: no session)."""
        state = self._session
        session = state.open_id()
        if session is not None or not state.wanted:
            return session
        if state.lock is None:
            state.lock = asyncio.Lock()
        async with state.lock:
            session = state.open_id()
            if session is not None or not state.wanted:
                return session
            # No deadline on the call: it is the session (see Client._session_id).
            wait = remaining(deadline)
            try:
                call = self._stubs["kernels"].OpenSession(ks.OpenSessionRequest(),
                                                          metadata=self._settings.metadata)
                first = await asyncio.wait_for(call.read(), wait)
            except asyncio.TimeoutError:
                call.cancel()
                raise UopdError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                f"no session within {wait:.3g} s") from None
            except grpc.RpcError as rpc_error:
                error = error_from_rpc(rpc_error)
                if go_on_without(state, error):
                    return None
                raise error from None
            if not isinstance(first, ks.OpenSessionResponse):  # grpc.aio.EOF
                raise UopdError(grpc.StatusCode.INTERNAL,
                                "OpenSession ended without a session id")
            state.id, state.call = first.session_id, call
            return state.id

    async def _local_channel(self) -> Optional[AsyncLocalChannel]:
        local = self._local
        channel: Optional[AsyncLocalChannel] = local.channel
        if local.decided and (channel is None or not channel.broken):
            return channel
        if self._local_lock is None:
            self._local_lock = asyncio.Lock()
        async with self._local_lock:
            if local.channel is not None and local.channel.broken:
                # An earlier call failed mid-way: this one gets a new connection.
                await local.channel.close()
                local.channel, local.decided = None, False
            if not local.decided:
                try:
                    response = await self._run(_core.op_open_local_channel(), None)
                    local.channel = await AsyncLocalChannel.connect(response.path,
                                                                    response.ticket)
                except UopdError:
                    if local.required:
                        raise
                local.decided = True
        channel = local.channel
        return channel

    async def wait_ready(self, timeout: Optional[float] = None) -> None:
        try:
            await asyncio.wait_for(self._channel.channel_ready(), timeout)
        except asyncio.TimeoutError:
            raise UopdError(grpc.StatusCode.UNAVAILABLE,
                            f"{self.address} did not answer within {timeout} s") from None

    async def devices(self, *, timeout: Optional[float] = None) -> list[ks.DeviceInfo]:
        return await self._run(_core.op_devices(), timeout)

    async def compile(self, ast: Union[AstLike, ks.RenderedSource], *,
                      device: Optional[str] = None, target: Optional[str] = None,
                      optimization: OptimizationLike = None, want_source: bool = False,
                      want_binary: bool = False,
                      timeout: Optional[float] = None) -> ks.CompileResponse:
        return await self._run(_core.op_compile(_core.compile_request(
            ast, device, target, optimization, want_source, want_binary)), timeout)

    async def create_buffer(self, dtype: DTypeLike, size: int, device: str = "CPU",
                            data: Any = None, *,
                            timeout: Optional[float] = None) -> AsyncBuffer:
        scalar, size, payload = _core.buffer_args(dtype, size, data)
        handle = await self._run(
            _core.op_create_buffer(self._state, scalar, size, device, payload), timeout)
        return AsyncBuffer(self, handle, scalar, size, device)

    async def from_numpy(self, array: Any, device: str = "CPU", *,
                         dtype: Optional[DTypeLike] = None,
                         timeout: Optional[float] = None) -> AsyncBuffer:
        scalar, size, payload = _core.numpy_args(array, dtype)
        handle = await self._run(
            _core.op_create_buffer(self._state, scalar, size, device, payload), timeout)
        return AsyncBuffer(self, handle, scalar, size, device)

    async def write_buffer(self, buffer: Union[AsyncBuffer, str], data: Any, offset: int = 0, *,
                           timeout: Optional[float] = None) -> None:
        if isinstance(buffer, AsyncBuffer):
            return await buffer.write(data, offset, timeout=timeout)
        await self._run(_core.op_write(self._state, buffer, _core.bytes_of(data), offset),
                        timeout)

    async def read_buffer(self, buffer: Union[AsyncBuffer, str], offset: int = 0,
                          length: Optional[int] = None, *,
                          timeout: Optional[float] = None) -> bytes:
        if isinstance(buffer, AsyncBuffer):
            return await buffer.read(offset, length, timeout=timeout)
        return await self._run(_core.op_read(self._state, buffer, offset, length), timeout)

    async def free_buffer(self, buffer: Union[AsyncBuffer, str], *,
                          timeout: Optional[float] = None) -> None:
        if isinstance(buffer, AsyncBuffer):
            return await buffer.free(timeout=timeout)
        await self._run(_core.op_free(buffer), timeout)

    async def execute(self, kernels: Union[KernelLike, Sequence[KernelLike]],
                      buffers: Optional[Sequence[BufferArg]] = None,
                      vars: Optional[Mapping[str, int]] = None,
                      return_buffers: Optional[Iterable[Any]] = None, *,
                      device: Optional[str] = None,
                      timeout: Optional[float] = None) -> RunResult:
        request, bindings = _core.execute_request(kernels, buffers, vars, return_buffers, device)
        return await self._run(_core.op_execute(request, bindings), timeout)

    async def prepare(self, kernels: Union[KernelLike, Sequence[KernelLike]],
                      buffers: Optional[Sequence[BufferArg]] = None, *,
                      device: Optional[str] = None,
                      timeout: Optional[float] = None) -> AsyncPlan:
        request, bindings = _core.prepare_request(kernels, buffers, device)
        return AsyncPlan(self, await self._run(_core.op_prepare(request), timeout), bindings)

    async def run_plan(self, plan: Union[AsyncPlan, str],
                       vars: Optional[Mapping[str, int]] = None,
                       return_buffers: Optional[Iterable[Any]] = None, *,
                       timeout: Optional[float] = None) -> RunResult:
        plan_id, bindings = ((plan.plan_id, plan.bindings) if isinstance(plan, PlanBase)
                             else (plan, _core.Bindings(known=False)))
        return await self._run(_core.op_run_plan(plan_id, bindings, vars, return_buffers),
                               timeout)

    async def release_plan(self, plan: Union[AsyncPlan, str], *,
                           timeout: Optional[float] = None) -> None:
        if isinstance(plan, AsyncPlan):
            return await plan.release(timeout=timeout)
        await self._run(_core.op_release_plan(plan), timeout)

    async def cache_stats(self, *, timeout: Optional[float] = None) -> ks.CacheStatsResponse:
        return await self._run(_core.op_cache_stats(), timeout)

    async def cache_find_missing(self, keys: Iterable[str], *,
                                 timeout: Optional[float] = None) -> list[str]:
        return await self._run(_core.op_cache_find_missing(keys), timeout)

    async def cache_get(self, key: str, *,
                        timeout: Optional[float] = None) -> Optional[CacheEntry]:
        return await self._run(_core.op_cache_get(key), timeout)

    async def cache_put(self, key: str, value: Union[bytes, program_pb2.CachedKernel],
                        signature: bytes = b"", *, timeout: Optional[float] = None) -> None:
        await self._run(_core.op_cache_put(key, value, signature), timeout)
