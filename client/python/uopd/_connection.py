"""Connection settings the sync and asyncio clients share: credentials, channel options,
metadata and deadlines."""

from __future__ import annotations

import math
import os
import time
from typing import Any, Optional, Union

import grpc

#: PEM as bytes or text, or the path of a PEM file.
PemLike = Union[bytes, str, "os.PathLike[str]"]

DEFAULT_ADDRESS = "127.0.0.1:50051"


def _pem(value: Optional[PemLike], what: str) -> Optional[bytes]:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, str) and "-----BEGIN" in value:
        return value.encode()
    try:
        with open(value, "rb") as f:
            return f.read()
    except OSError as error:
        raise ValueError(f"cannot read {what} from {value!r}: {error}") from None


class Settings:
    """How a client reaches its server and what it sends with every call."""

    def __init__(self, address: str, *, token: Optional[str], token_file: Optional[PemLike],
                 tls: Optional[bool], tls_root_certs: Optional[PemLike],
                 tls_cert_chain: Optional[PemLike], tls_private_key: Optional[PemLike],
                 tls_server_name: Optional[str], timeout: Optional[float],
                 options: Optional[list[tuple[str, Any]]]) -> None:
        if token is not None and token_file is not None:
            raise ValueError("pass token or token_file, not both")
        if token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.read()
        token = token.strip() if token is not None else None
        if (tls_cert_chain is None) != (tls_private_key is None):
            raise ValueError("a client certificate needs both tls_cert_chain and tls_private_key")
        self.address = address
        self.timeout = timeout
        self.metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ())
        use_tls = tls if tls is not None else any(
            v is not None for v in (tls_root_certs, tls_cert_chain, tls_private_key))
        self.credentials: Optional[grpc.ChannelCredentials] = None
        if use_tls:
            self.credentials = grpc.ssl_channel_credentials(
                root_certificates=_pem(tls_root_certs, "tls_root_certs"),
                private_key=_pem(tls_private_key, "tls_private_key"),
                certificate_chain=_pem(tls_cert_chain, "tls_cert_chain"))
        elif tls_server_name is not None:
            raise ValueError("tls_server_name needs TLS")
        # A connection of this client's own: on the server an anonymous identity is one
        # connection, so two clients in one process must not share one. Replies (compiled
        # bytes, inline outputs) may exceed gRPC's default 4 MiB receive limit.
        self.options: list[tuple[str, Any]] = [
            ("grpc.use_local_subchannel_pool", 1),
            ("grpc.max_receive_message_length", -1),
            ("grpc.max_send_message_length", -1),
        ]
        if tls_server_name is not None:
            self.options.append(("grpc.ssl_target_name_override", tls_server_name))
        self.options.extend(options or ())

    def deadline(self, timeout: Optional[float]) -> Optional[float]:
        """The monotonic deadline of an operation: ``timeout`` seconds from now, the client's
        default when None, none when infinite."""
        seconds = self.timeout if timeout is None else timeout
        if seconds is None or math.isinf(seconds):
            return None
        return time.monotonic() + seconds


def remaining(deadline: Optional[float]) -> Optional[float]:
    """Seconds left to ``deadline`` (0 once passed: the call then fails DEADLINE_EXCEEDED)."""
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)


def open_channel(settings: Settings, channels: Any) -> Any:
    """A channel to ``settings.address`` from ``channels`` (``grpc`` or ``grpc.aio``), secure when
    the settings carry credentials."""
    if settings.credentials is not None:
        return channels.secure_channel(settings.address, settings.credentials,
                                       options=settings.options)
    return channels.insecure_channel(settings.address, options=settings.options)


def stubs(channel: Any) -> dict[str, Any]:
    """The services' stubs on a sync or ``grpc.aio`` channel, by the name ``Call`` uses. (The
    generated stubs are untyped: every call goes through the clients' typed ``_run``.)"""
    from uopd.v1 import kernel_service_pb2_grpc

    generated: Any = kernel_service_pb2_grpc
    return {"kernels": generated.KernelServiceStub(channel),
            "cache": generated.CacheServiceStub(channel)}
