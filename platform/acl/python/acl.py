"""kctx.acl: lend an Ascend framework's current NPU and its streams to kctx
(docs/acl.md is the platform's guide).

An Ascend framework (torch_npu, vLLM-Ascend) owns the ACL runtime: it calls
``aclInit`` and ``aclrtSetDevice`` and makes a device current on its threads.
kctx never initialises ACL, sets a device or creates, switches or destroys a
context (K4): ``kctx.acl.Context()`` borrows the device current on the
calling thread when it is made (kctx_kernel_init: ``aclrtGetDevice``), as
``torch.npu.set_device`` or a first NPU tensor leaves it. Each thread that
calls the context must have the same device current (K5: another is
InvalidState), as a framework's threads do.

Importing this module loads no ACL library: the library is loaded on first
use (``availability()``, ``Context()``), from $KCTX_ACL_LIBRARY, else
``libascendcl.so`` (docs/acl.md, "The adapter"). Without it, the first use
raises a kctx exception with the platform's reason. Only the ACL driver
double (platform/acl/double) has run it: on a real NPU kernel init is
Unsupported until kctx's runtime programs are built with CANN's compilers.

Streams (``AclStreamLike``, ``stream_handle_of``): torch_npu's
``torch_npu.npu.Stream`` (``.npu_stream``, the ``aclrtStream`` as an int,
e.g. ``torch.npu.current_stream().npu_stream``), an ``aclrtStream`` as an
int (or anything with ``__index__``), or an object with ``.handle`` giving
one. ACL's default stream (0, NULL) is no caller stream on this platform
(the capabilities say ``has_null_stream`` False): the library refuses it
with InvalidArgument. Refused with KctxTypeError before any C call: a CUDA
stream (``.cuda_stream``, ``__cuda_stream__``, CuPy's ``.ptr``), a PyOpenCL
queue (``.int_ptr``), a ``kctx.sim.Stream`` (the sim's stream is no
``aclrtStream``, not even on the double: make one with ``aclrtCreateStream``),
bool, anything else.

Tensors: NPU tensors (a torch tensor on ``npu``: ``data_ptr()``,
``numel() * element_size()`` bytes, ``kctx.interop.npu_tensor``),
``kctx.Tensor`` or ``(address, nbytes)`` of ``aclrtMalloc`` memory. Refused
before any C call: a CUDA array (``__cuda_array_interface__``) or a torch
tensor on another device type (KctxValueError: it is no NPU memory), a
non-contiguous view or one on another NPU (KctxValueError), and, as the
library refuses them (K18), a tensor whose storage was released
(``untyped_storage().nbytes()`` is 0), at address 0 or of 0 bytes
(InvalidArgument).

There is no ``driver_calls``: the adapter's call counters are not public
(the double counts every call it receives: ``kacl_double_calls``, a test
hook of platform/acl/double, docs/acl.md).
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Union

from .caps import Capabilities, Platform, Strategy, StrategyLike, platform
from .context import BaseContext, PathLike
from .errors import InvalidArgument, KctxTypeError, KctxValueError, NotFound, Unsupported
from .sim import Stream as _SimStream
from .interop import Arg, HasHandle, NpuStreamLike, StreamLike, SupportsIndex, Tensor, is_npu_tensor, stream_handle
from ._util import U64_MAX, check_int

PLATFORM = "acl"

__all__ = ["PLATFORM", "AclStreamLike", "Context", "availability", "require", "stream_handle_of"]

#: An ACL stream: an ``aclrtStream`` as an int, torch_npu's stream object,
#: or an object with ``.handle``.
AclStreamLike = Union[int, SupportsIndex, NpuStreamLike, HasHandle]


def availability() -> Platform:
    """kctx_get_platform_caps("acl"): ``built``, ``available`` and the
    ``reason`` when not, with ``caps`` when available. The first call in a
    process loads the ACL library (the registry's probe, once); it makes no
    ACL call. Never raises a kctx status."""
    return platform(PLATFORM)


def require() -> Capabilities:
    """The acl platform's capabilities, or the reason it cannot be used:
    NotFound (libkctx was built without it), Unsupported (built, but no
    usable ACL library here: not found, or one lacking a required entry).
    Each message names kctx.acl and gives the registry's reason."""
    p = availability()
    if p.caps is not None:
        return p.caps
    if not p.built:
        raise NotFound(f"kctx.acl: the acl platform is not built into this libkctx: {p.reason}")
    raise Unsupported(f"kctx.acl: the acl platform is unavailable on this machine: {p.reason}")


_ACCEPTED = "pass an aclrtStream (int), a torch_npu.npu.Stream (.npu_stream) or an object with .handle"


def stream_handle_of(stream: StreamLike) -> int:
    """The ``aclrtStream`` of `stream` as an int (the module docstring lists
    what is accepted). KctxTypeError for a CUDA stream, a PyOpenCL queue, a
    kctx.sim.Stream, bool, or anything that is no stream; InvalidArgument
    for a handle that is no u64. Makes no C call."""
    if isinstance(stream, bool):
        raise KctxTypeError(f"stream must be an ACL stream, not bool: {_ACCEPTED}")
    npu = getattr(stream, "npu_stream", None)
    if npu is not None:  # torch_npu.npu.Stream
        if isinstance(npu, bool) or not isinstance(npu, int):
            raise KctxTypeError(f"{type(stream).__name__}.npu_stream must be an int (the aclrtStream), not "
                                f"{type(npu).__name__}")
        return check_int("stream", npu, 0, U64_MAX, InvalidArgument)
    if isinstance(stream, _SimStream):
        raise KctxTypeError(f"stream is a kctx.sim.Stream: the sim's stream is no aclrtStream (not on the ACL "
                            f"driver double either: create one with aclrtCreateStream); {_ACCEPTED}")
    for attr, what in (("cuda_stream", "a torch.cuda.Stream"), ("__cuda_stream__", "a CUDA stream"),
                       ("ptr", "a cupy.cuda.Stream"), ("int_ptr", "a PyOpenCL queue")):
        if getattr(stream, attr, None) is not None:
            raise KctxTypeError(f"stream is a {type(stream).__name__} with .{attr} ({what}?), not an ACL stream: "
                                f"{_ACCEPTED}")
    try:
        return stream_handle(stream)
    except KctxTypeError:
        raise KctxTypeError(f"stream must be an ACL stream, not {type(stream).__name__}: {_ACCEPTED}") from None


def _args(args: Iterable[Arg]) -> List[Arg]:
    """The arguments, with what is no NPU memory refused before any C call
    (KctxValueError): a CUDA array, a torch tensor on another device type.
    NPU tensors and the rest go to the resolver (kctx.interop) unchanged."""
    if isinstance(args, (str, bytes, bytearray, memoryview)) or not hasattr(args, "__iter__"):
        raise KctxTypeError(f"args must be a sequence of tensors and scalars, not {type(args).__name__}")
    out: List[Arg] = []
    for i, a in enumerate(args):
        if not isinstance(a, (Tensor, int, float, tuple)) and not is_npu_tensor(a):
            if getattr(a, "__cuda_array_interface__", None) is not None:
                raise KctxValueError(f"args[{i}] is a CUDA array ({type(a).__name__}): on the acl platform a tensor "
                                     f"is NPU memory (a torch tensor on npu, or aclrtMalloc's address)")
            d = getattr(a, "device", None)
            kind = getattr(d, "type", None)
            if isinstance(kind, str) and callable(getattr(a, "data_ptr", None)):
                raise KctxValueError(f"args[{i}] is a tensor on {kind!r}, not on the NPU: move it first "
                                     f"(tensor.npu())")
        out.append(a)
    return out


class Context(BaseContext):
    """A kernel context on the ``acl`` platform borrowing the NPU current on
    the calling thread (K4). The constructor checks the platform
    (``require``), creates the context and kernel-initialises it with these
    keyword arguments (those of ``kctx.Context.kernel``); if the init fails
    the new context is released as ``kctx.Context.kernel`` releases it
    (closed first when the init left it CLOSING; what cannot be released
    rides on the error as ``.context``) and the error raised.

    A ``kctx.BaseContext`` (prepare, launch, check, capturable, flush_trace,
    close, destroy, the queries, with their contracts), not a
    ``kctx.Context``: it is never mode-less (ACL has kernel mode only), so
    it has no ``create``, ``kernel``, ``program``, ``kernel_init`` or
    ``program_init``; ``run`` is InvalidState as on any kernel context (K3).

    Errors of the constructor, in this order: KctxValueError / KctxTypeError
    (a strategy that is none, before any C call); NotFound / Unsupported
    (``require``: the platform is not built, or no usable ACL library, with
    the reason); Capacity (too many live handles); then kctx_kernel_init's:
    Unsupported (the runtime cannot load kctx's runtime programs: a real
    NPU until they are built with CANN's compilers, naming what is missing),
    Busy (another kernel context holds the device, K6), InvalidArgument (a
    bad capacity), the mapped ACL status otherwise (the ACL code and
    ``aclGetRecentErrMsg`` in the message)."""

    _kind = "kctx.acl.Context"

    def __init__(self, strategy: StrategyLike = None, *, args_capacity: int = 4096, token_capacity: int = 256,
                 prepare_timeout_ms: int = 10000, trace_path: Optional[PathLike] = None,
                 trace_device_records: int = 65536, trace_host_records: int = 16384) -> None:
        self._init_fields()
        Strategy.parse(strategy)  # refused before the platform is asked for
        require()
        self._borrow_and_init(PLATFORM, strategy, args_capacity=args_capacity, token_capacity=token_capacity,
                              prepare_timeout_ms=prepare_timeout_ms, trace_path=trace_path,
                              trace_device_records=trace_device_records, trace_host_records=trace_host_records)

    def launch(self, id: int, args: Iterable[Arg], stream: StreamLike) -> None:
        """``kctx.BaseContext.launch`` onto an ACL stream of the borrowed
        device (an ``AclStreamLike``; ``stream_handle_of``: KctxTypeError,
        among launch's errors, for a CUDA stream, a PyOpenCL queue, a
        kctx.sim.Stream or a non-stream, before any C call), with NPU
        tensors (the module docstring; a CUDA array or a tensor on another
        device type is KctxValueError before any C call). Stream 0 (ACL's
        default stream) is InvalidArgument; a launch into a capture of the
        context's own streams is CaptureActive (K34)."""
        super().launch(id, _args(args), stream_handle_of(stream))
