"""uopd: the Python client of uopd, the kernel compilation and execution server.

    import uopd

    with uopd.Client("127.0.0.1:50051") as client:
        print(client.devices())
        with client.from_numpy(numpy.arange(16, dtype=numpy.float32)) as a, \\
                client.create_buffer("FLOAT32", 16) as out:
            client.execute([uopd.Kernel(ast, [out, a])])
            print(out.numpy())

``uopd.aio.AsyncClient`` is the same client for asyncio. The wire contract's generated modules
are ``uopd.v1.graph_pb2``, ``uopd.v1.kernel_service_pb2`` (and ``_grpc``), ``uopd.v1.program_pb2``
and ``uopd.v1.corpus_pb2``. See README.md for the whole API.
"""

from uopd._client import Buffer, Client, Plan
from uopd._connection import PemLike
from uopd._core import (MAX_INLINE_RETURN_BYTES, SMALL_BYTES, AstLike, BufferArg, BufferBase,
                        CacheEntry, Inline, Kernel, KernelLike, PlanBase, RunResult, ViewRef,
                        as_graph, sign_cache_entry)
from uopd._dtypes import SCALARS, DTypeLike, numpy_dtype, scalar_name, scalar_of
from uopd._errors import (AlreadyExists, Cancelled, DeadlineExceeded, FailedPrecondition,
                          Internal, InvalidArgument, NotFound, OutOfRange, PermissionDenied,
                          ResourceExhausted, Unauthenticated, Unavailable, Unimplemented,
                          UopdError)
from uopd._opts import OptimizationLike, OptLike, opts_to_string, parse_opts

__version__ = "0.2.0"

__all__ = [
    "Client", "Buffer", "Plan", "BufferBase", "PlanBase", "Kernel", "Inline", "ViewRef",
    "RunResult", "CacheEntry", "as_graph", "sign_cache_entry", "parse_opts", "opts_to_string",
    "numpy_dtype", "scalar_of", "scalar_name", "SCALARS", "SMALL_BYTES",
    "MAX_INLINE_RETURN_BYTES", "AstLike", "BufferArg", "KernelLike", "DTypeLike", "OptLike",
    "OptimizationLike", "PemLike",
    "UopdError", "InvalidArgument", "NotFound", "AlreadyExists", "ResourceExhausted",
    "PermissionDenied", "Unauthenticated", "FailedPrecondition", "Unavailable",
    "DeadlineExceeded", "OutOfRange", "Unimplemented", "Internal", "Cancelled",
]
