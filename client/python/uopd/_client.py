"""The blocking client."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

import grpc

from uopd import _core
from uopd._connection import (DEFAULT_ADDRESS, PemLike, Settings, open_channel, remaining,
                              stubs)
from uopd._core import (AstLike, BufferArg, BufferBase, CacheEntry, Call, KernelLike, PlanBase,
                        RunResult)
from uopd._dtypes import DTypeLike, Scalar
from uopd._errors import NotFound, UopdError, error_from_rpc
from uopd._local_channel import LOCAL_METHODS, ClosedBeforeSending, LocalChannel, LocalState
from uopd._opts import OptimizationLike
from uopd._session import SESSION_METHODS, SessionState, go_on_without, metadata_with
from uopd.v1 import kernel_service_pb2 as ks, program_pb2

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

__all__ = ["Client", "Buffer", "Plan"]


class Buffer(BufferBase):
    """A buffer on the server (see ``Client.create_buffer``); frees itself when its ``with``
    block ends. ``offset`` and ``length`` are in bytes."""

    __slots__ = ("client",)

    def __init__(self, client: Client, handle: str, scalar: Scalar, size: int, device: str) -> None:
        super().__init__(handle, scalar, size, device)
        self.client = client

    def write(self, data: Any, offset: int = 0, *, timeout: Optional[float] = None) -> None:
        """Stores ``data`` (bytes, a numpy array of this dtype, a list) from byte ``offset``."""
        self.client._run(_core.op_write(self.client._state, self.handle,
                                        _core.bytes_of(data, self.scalar), offset), timeout)

    def read(self, offset: int = 0, length: Optional[int] = None, *,
             timeout: Optional[float] = None) -> bytes:
        """``length`` bytes from byte ``offset`` (None: to the end)."""
        return self.client._run(_core.op_read(self.client._state, self.handle, offset, length,
                                              self.nbytes), timeout)

    def numpy(self, *, timeout: Optional[float] = None) -> np.ndarray:
        """The whole buffer as a new 1-D array of its dtype, shape ``(size,)``."""
        return _core.array_of(self.read(timeout=timeout), self.scalar)

    def free(self, *, timeout: Optional[float] = None) -> None:
        """Frees the buffer on the server (once; later calls do nothing)."""
        if not self.freed:
            self.client._run(_core.op_free(self.handle), timeout)
            self.freed = True

    def __enter__(self) -> Buffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()


class Plan(PlanBase):
    """Kernels bound to buffers, prepared once (``Client.prepare``) and run many times."""

    def __init__(self, client: Client, response: ks.PrepareResponse,
                 bindings: _core.Bindings) -> None:
        super().__init__(response, bindings)
        self.client = client

    def run(self, vars: Optional[Mapping[str, int]] = None,
            return_buffers: Optional[Iterable[Any]] = None, *,
            timeout: Optional[float] = None) -> RunResult:
        """Runs the plan with these variable values; returns timings and the bytes of
        ``return_buffers`` (indices or the objects bound at prepare)."""
        return self.client.run_plan(self, vars, return_buffers, timeout=timeout)

    def release(self, *, timeout: Optional[float] = None) -> None:
        """Releases the plan and what it holds on the server (once)."""
        if not self.released:
            self.client.release_plan(self.plan_id, timeout=timeout)
            self.released = True

    def __enter__(self) -> Plan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Client:
    """A connection to one uopd server; safe to share between threads.

    ``address`` is ``host:port`` or ``unix:/path``. The client acts as the identity of its
    bearer ``token`` (or the token in ``token_file``), else as an anonymous identity that is this
    connection: buffers and plans belong to it. TLS is on when any ``tls_*`` is given (PEM
    bytes or text, or a file path) or ``tls=True`` (the system's roots). ``timeout`` is the
    default deadline of every call in seconds (None: none); each method takes its own
    ``timeout=`` too (``math.inf``: none). Failures raise ``uopd.UopdError`` subclasses.

    With a daemon on this machine, the hot calls (``run_plan``, ``execute``, buffer creation,
    frees and small copies) go over its local socket instead of gRPC, as the same identity:
    ``local_socket=None`` (the default) does so for ``unix:`` and loopback addresses when the
    daemon has one, ``True`` requires it (for any address), ``False`` never. ``local_socket``
    (the property) says which.

    With ``session=True`` (the default) the buffers and plans the client makes belong to a
    session, opened on the first of them: the daemon frees them all when the client is closed,
    or its process exits or is killed, or its connection to the daemon breaks (later calls then
    make a new session). ``session=False`` keeps them until freed (or idle past the daemon's
    ``--idle_ttl``), also after the client goes: with a token, another client (a reconnect) can
    go on using them. Daemons without sessions are used without.
    """

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
        self._channel = open_channel(self._settings, grpc)
        self._stubs = stubs(self._channel)
        self._state = _core.ClientState()
        self._local = LocalState(local_socket, address)
        self._session = SessionState(session)
        self._session.lock = threading.Lock()

    @property
    def address(self) -> str:
        return self._settings.address

    @property
    def timeout(self) -> Optional[float]:
        """The default deadline of calls, seconds."""
        return self._settings.timeout

    @property
    def local_socket(self) -> Optional[str]:
        """The daemon's local socket this client's hot calls go over (opened on first use), or
        None: they go over gRPC."""
        channel = self._local_channel()
        return channel.path if channel is not None else None

    @property
    def session_id(self) -> Optional[str]:
        """The id of the session this client's buffers and plans are made in while it is open,
        else None (none made yet, ``session=False``, or a daemon without sessions)."""
        return self._session.open_id()

    def close(self) -> None:
        """Ends the session (the daemon frees what was made in it) and closes the connection."""
        self._session.wanted = False
        if self._session.call is not None:
            self._session.call.cancel()
        if self._local.channel is not None:
            self._local.channel.close()
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<uopd.Client {self.address}>"

    # The driver -----------------------------------------------------------------------------

    def _run(self, op: _core.Op[T], timeout: Optional[float]) -> T:
        deadline = self._settings.deadline(timeout)

        def send(call: Call, session: Optional[str]) -> Any:
            if call.method in LOCAL_METHODS and call.service == "kernels":
                channel = self._local_channel()
                if channel is not None:
                    try:
                        return channel.call(call.method, call.request, remaining(deadline),
                                            session)
                    except ClosedBeforeSending:  # idle too long: it goes on a new channel
                        channel = self._local_channel()
                        if channel is not None:
                            return channel.call(call.method, call.request, remaining(deadline),
                                                session)
            method = getattr(self._stubs[call.service], call.method)
            metadata = metadata_with(self._settings.metadata, session)
            try:
                if call.shape == "unary_stream":
                    return list(method(call.request, timeout=remaining(deadline),
                                       metadata=metadata))
                return method(call.request, timeout=remaining(deadline), metadata=metadata)
            except grpc.RpcError as error:
                raise error_from_rpc(error) from None

        def invoke(call: Call) -> Any:
            if call.method not in SESSION_METHODS or call.service != "kernels":
                return send(call, None)
            session = self._session_id(deadline)
            try:
                return send(call, session)
            except NotFound:
                # The session ended under the call (the daemon restarted, the connection broke):
                # what it held is gone already; this goes in a new one.
                if session is None or not self._session.ended(session):
                    raise
                return send(call, self._session_id(deadline))

        return _core.run_sync(op, invoke)

    def _session_id(self, deadline: Optional[float]) -> Optional[str]:
        """The open session's id, opening one if there is none (None: no session)."""
        state = self._session
        session = state.open_id()
        if session is not None or not state.wanted:
            return session
        with state.lock:
            session = state.open_id()
            if session is not None or not state.wanted:
                return session
            # No deadline on the call: it is the session. Waiting for its first message is
            # bounded by the operation's deadline, which cancels it.
            wait = remaining(deadline)
            timer: Optional[threading.Timer] = None
            try:
                call = self._stubs["kernels"].OpenSession(ks.OpenSessionRequest(),
                                                          metadata=self._settings.metadata)
                if wait is not None:
                    timer = threading.Timer(wait, call.cancel)
                    timer.daemon = True
                    timer.start()
                first = next(call)
            except grpc.RpcError as rpc_error:
                error = error_from_rpc(rpc_error)
                if error.code == grpc.StatusCode.CANCELLED and timer is not None:
                    error = UopdError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                      f"no session within {wait:.3g} s")
                if go_on_without(state, error):
                    return None
                raise error from None
            except StopIteration:
                raise UopdError(grpc.StatusCode.INTERNAL,
                                "OpenSession ended without a session id") from None
            finally:
                if timer is not None:
                    timer.cancel()
            state.id, state.call = first.session_id, call
            return state.id

    def _local_channel(self) -> Optional[LocalChannel]:
        local = self._local
        channel: Optional[LocalChannel] = local.channel
        if local.decided and (channel is None or not channel.broken):
            return channel
        with local.lock:
            if local.channel is not None and local.channel.broken:
                # An earlier call failed mid-way: this one gets a new connection.
                local.channel.close()
                local.channel, local.decided = None, False
            if not local.decided:
                if local.wanted:
                    try:
                        response = self._run(_core.op_open_local_channel(), None)
                        local.channel = LocalChannel(response.path, response.ticket)
                    except UopdError:
                        if local.required:
                            raise
                local.decided = True
        channel = local.channel
        return channel

    def wait_ready(self, timeout: Optional[float] = None) -> None:
        """Waits until the channel is connected; ``uopd.Unavailable`` after ``timeout`` s."""
        from uopd._errors import UopdError

        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise UopdError(grpc.StatusCode.UNAVAILABLE,
                            f"{self.address} did not answer within {timeout} s") from None

    # Devices and compilation ----------------------------------------------------------------

    def devices(self, *, timeout: Optional[float] = None) -> list[ks.DeviceInfo]:
        """The server's devices (``DeviceInfo``: name, compile_target, memory, ...)."""
        return self._run(_core.op_devices(), timeout)

    def compile(self, ast: Union[AstLike, ks.RenderedSource], *, device: Optional[str] = None,
                target: Optional[str] = None, optimization: OptimizationLike = None,
                want_source: bool = False, want_binary: bool = False,
                timeout: Optional[float] = None) -> ks.CompileResponse:
        """Compiles a kernel (or finds it in the cache) without running it. ``device``: "CPU",
        "CUDA:0" (default: the server's choice); ``target``: compile for "sm_90" etc. instead;
        ``optimization``: see ``uopd.OptimizationLike``. The response has cache_key,
        cache_tier, metadata, applied_opts, and source/binary when asked for."""
        return self._run(_core.op_compile(_core.compile_request(
            ast, device, target, optimization, want_source, want_binary)), timeout)

    # Buffers ----------------------------------------------------------------------------------

    def create_buffer(self, dtype: DTypeLike, size: int, device: str = "CPU", data: Any = None,
                      *, timeout: Optional[float] = None) -> Buffer:
        """A new buffer of ``size`` elements of ``dtype``, zero-filled or holding ``data``
        (bytes or a numpy array, at most its size)."""
        scalar, size, payload = _core.buffer_args(dtype, size, data)
        handle = self._run(_core.op_create_buffer(self._state, scalar, size, device, payload),
                           timeout)
        return Buffer(self, handle, scalar, size, device)

    def from_numpy(self, array: Any, device: str = "CPU", *, dtype: Optional[DTypeLike] = None,
                   timeout: Optional[float] = None) -> Buffer:
        """A new buffer holding ``array`` (flattened, C order); ``dtype`` overrides the array's
        (e.g. "BFLOAT16" for an array of its uint16 bits)."""
        scalar, size, payload = _core.numpy_args(array, dtype)
        handle = self._run(_core.op_create_buffer(self._state, scalar, size, device, payload),
                           timeout)
        return Buffer(self, handle, scalar, size, device)

    def write_buffer(self, buffer: Union[Buffer, str], data: Any, offset: int = 0, *,
                     timeout: Optional[float] = None) -> None:
        """Stores ``data`` into a buffer or handle from byte ``offset``."""
        if isinstance(buffer, Buffer):
            return buffer.write(data, offset, timeout=timeout)
        self._run(_core.op_write(self._state, buffer, _core.bytes_of(data), offset), timeout)

    def read_buffer(self, buffer: Union[Buffer, str], offset: int = 0,
                    length: Optional[int] = None, *, timeout: Optional[float] = None) -> bytes:
        """``length`` bytes (None: to the end) from byte ``offset`` of a buffer or handle."""
        if isinstance(buffer, Buffer):
            return buffer.read(offset, length, timeout=timeout)
        return self._run(_core.op_read(self._state, buffer, offset, length), timeout)

    def free_buffer(self, buffer: Union[Buffer, str], *, timeout: Optional[float] = None) -> None:
        if isinstance(buffer, Buffer):
            return buffer.free(timeout=timeout)
        self._run(_core.op_free(buffer), timeout)

    # Execution ------------------------------------------------------------------------------

    def execute(self, kernels: Union[KernelLike, Sequence[KernelLike]],
                buffers: Optional[Sequence[BufferArg]] = None,
                vars: Optional[Mapping[str, int]] = None,
                return_buffers: Optional[Iterable[Any]] = None, *, device: Optional[str] = None,
                timeout: Optional[float] = None) -> RunResult:
        """Runs kernels in order over buffers with variable values, in one call.

        ``kernels``: ``uopd.Kernel(ast, [buffer for each slot])`` (or tuples, dicts); a kernel's
        buffers are indices into ``buffers`` or buffer objects (Buffer, handle, ViewRef, Inline,
        numpy array), which are added to the request once each. ``return_buffers`` (indices or
        objects) come back in the result, up to 4 MiB together."""
        request, bindings = _core.execute_request(kernels, buffers, vars, return_buffers, device)
        return self._run(_core.op_execute(request, bindings), timeout)

    def prepare(self, kernels: Union[KernelLike, Sequence[KernelLike]],
                buffers: Optional[Sequence[BufferArg]] = None, *, device: Optional[str] = None,
                timeout: Optional[float] = None) -> Plan:
        """Compiles kernels bound to buffers (as for ``execute``) into a plan to run many times
        with ``plan.run(vars=...)``; release it (``with``, or ``plan.release()``) when done."""
        request, bindings = _core.prepare_request(kernels, buffers, device)
        return Plan(self, self._run(_core.op_prepare(request), timeout), bindings)

    def run_plan(self, plan: Union[Plan, str], vars: Optional[Mapping[str, int]] = None,
                 return_buffers: Optional[Iterable[Any]] = None, *,
                 timeout: Optional[float] = None) -> RunResult:
        plan_id, bindings = ((plan.plan_id, plan.bindings) if isinstance(plan, PlanBase)
                             else (plan, _core.Bindings(known=False)))
        return self._run(_core.op_run_plan(plan_id, bindings, vars, return_buffers), timeout)

    def release_plan(self, plan: Union[Plan, str], *, timeout: Optional[float] = None) -> None:
        if isinstance(plan, Plan):
            return plan.release(timeout=timeout)
        self._run(_core.op_release_plan(plan), timeout)

    # The compiled-byte cache ----------------------------------------------------------------

    def cache_stats(self, *, timeout: Optional[float] = None) -> ks.CacheStatsResponse:
        """Counters of every cache tier (``tiers``) and of compilations (``compiles``)."""
        return self._run(_core.op_cache_stats(), timeout)

    def cache_find_missing(self, keys: Iterable[str], *,
                           timeout: Optional[float] = None) -> list[str]:
        """The keys no cache tier holds (needs the cache_read right)."""
        return self._run(_core.op_cache_find_missing(keys), timeout)

    def cache_get(self, key: str, *, timeout: Optional[float] = None) -> Optional[CacheEntry]:
        """The entry under ``key`` with its signature, or None (needs cache_read)."""
        return self._run(_core.op_cache_get(key), timeout)

    def cache_put(self, key: str, value: Union[bytes, program_pb2.CachedKernel],
                  signature: bytes = b"", *, timeout: Optional[float] = None) -> None:
        """Stores an entry signed with the cluster key (``uopd.sign_cache_entry``, or the
        signature another server's ``cache_get`` returned); needs cache_write."""
        self._run(_core.op_cache_put(key, value, signature), timeout)

