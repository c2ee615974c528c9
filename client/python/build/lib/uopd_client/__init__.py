"""Python client for uopd.

The generated protobuf and gRPC modules (``uopd.v1.*_pb2``) must be importable: generate them
from ``proto/`` with ``python -m grpc_tools.protoc -I proto --python_out=OUT --grpc_python_out=OUT
proto/uopd/v1/*.proto`` and put OUT on ``sys.path`` (the test set-up does this).
"""

from __future__ import annotations

import json
from typing import Dict, Iterable, List, Optional

import grpc
from google.protobuf import json_format

from uopd.v1 import graph_pb2, kernel_service_pb2, kernel_service_pb2_grpc

__all__ = ["Client", "graph_from_json", "UopdError"]

CHUNK_BYTES = 1 << 20


class UopdError(Exception):
    """An RPC failed; ``code`` is the grpc.StatusCode, ``message`` the server's explanation."""

    def __init__(self, error: grpc.RpcError):
        self.code = error.code()
        self.message = error.details()
        super().__init__(f"{self.code.name}: {self.message}")


def graph_from_json(ast: dict) -> graph_pb2.Graph:
    """A kernel AST in the IR.md JSON form (a corpus file's "ast") as a Graph message."""
    return json_format.ParseDict(ast, graph_pb2.Graph())


class Client:
    """A connection to one uopd server. Buffers and plans belong to this connection."""

    def __init__(self, address: str = "127.0.0.1:50051", timeout: float = 60.0):
        options = [("grpc.use_local_subchannel_pool", 1)]
        self._channel = grpc.insecure_channel(address, options=options)
        self._stub = kernel_service_pb2_grpc.KernelServiceStub(self._channel)
        self._timeout = timeout

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method, request):
        try:
            return method(request, timeout=self._timeout)
        except grpc.RpcError as error:
            raise UopdError(error) from None

    def list_devices(self) -> List[kernel_service_pb2.DeviceInfo]:
        return list(self._call(self._stub.ListDevices, kernel_service_pb2.ListDevicesRequest()).devices)

    def compile(self, ast: graph_pb2.Graph, device: str = "CPU", want_source: bool = False):
        request = kernel_service_pb2.CompileRequest(ast=ast, device=device, want_source=want_source)
        return self._call(self._stub.Compile, request)

    def create_buffer(self, dtype: str, size: int, data: bytes = b"", device: str = "CPU") -> str:
        """Creates a buffer of ``size`` elements of ``dtype`` ("FLOAT32", ...); returns its handle.
        Data of any size is streamed in after creation."""
        request = kernel_service_pb2.CreateBufferRequest(
            device=device, dtype=graph_pb2.DType.Scalar.Value(dtype), size=size)
        handle = self._call(self._stub.CreateBuffer, request).handle
        if data:
            self.write_buffer(handle, data)
        return handle

    def write_buffer(self, handle: str, data: bytes, offset: int = 0) -> None:
        def chunks() -> Iterable[kernel_service_pb2.WriteBufferChunk]:
            for start in range(0, max(len(data), 1), CHUNK_BYTES):
                yield kernel_service_pb2.WriteBufferChunk(
                    handle=handle if start == 0 else "", offset=offset + start,
                    data=data[start:start + CHUNK_BYTES])
        try:
            self._stub.WriteBuffer(chunks(), timeout=self._timeout)
        except grpc.RpcError as error:
            raise UopdError(error) from None

    def read_buffer(self, handle: str, offset: int = 0, length: int = 0) -> bytes:
        request = kernel_service_pb2.ReadBufferRequest(handle=handle, offset=offset, length=length)
        try:
            return b"".join(chunk.data for chunk in self._stub.ReadBuffer(request, timeout=self._timeout))
        except grpc.RpcError as error:
            raise UopdError(error) from None

    def free_buffer(self, handle: str) -> None:
        self._call(self._stub.FreeBuffer, kernel_service_pb2.FreeBufferRequest(handle=handle))

    def execute(self, kernels: List[dict], buffers: List[str], variables: Optional[Dict[str, int]] = None,
                device: str = "CPU") -> kernel_service_pb2.ExecuteResponse:
        """Runs kernels in order. ``buffers`` are handles; each kernel is
        ``{"ast": Graph, "buffers": [index into buffers for each slot]}``."""
        request = kernel_service_pb2.ExecuteRequest(device=device)
        for handle in buffers:
            request.buffers.add(handle=handle)
        for kernel in kernels:
            request.kernels.add(ast=kernel["ast"], buffers=kernel["buffers"])
        for name, value in (variables or {}).items():
            request.vars[name] = value
        return self._call(self._stub.Execute, request)
