"""Callable images (include/kctx/image.h): the builder and the validator.

The builder is the only writer of images and produces canonical bytes;
``validate`` runs the library's complete validation (structure first, the
checksum last) and reports the first rejection. Both are pure: no device,
no global state.

    b = Builder("fill")
    b.param("out", ParamKind.TENSOR_OUT)
    f = b.child("add", "t_add_u32")
    b.child_param("buf", ParamKind.TENSOR)
    b.child_param("n_value", ParamKind.SCALAR)
    b.variant(VariantKind.SIM_ELF, module_bytes)
    b.task(f, block_dim=2)
    b.bind_tensor(0)             # child param 0 <- callable param 0, byte offset 0
    b.bind_immediate(64 | (7 << 32))
    image = b.finish()           # bytes

How a task's kernel receives its arguments (the worker of the sim runtime):
its parameter block is one u64 per child parameter, in order — a tensor
binding gives the tensor's device address plus the binding's byte offset, a
scalar binding the callable's scalar argument, an immediate its value.
"""
from __future__ import annotations

from ._enum import NamedIntEnum

import ctypes
import enum
from ctypes import byref, c_size_t, c_uint32, c_void_p
from typing import Any, NamedTuple, Optional, Tuple, Union

from . import _lib
from .errors import KctxError, KctxTypeError, KctxValueError, OutOfMemory
from ._util import U32_MAX, U64_MAX, BytesLike, check_int, readable, writable

MAGIC = b"KCTXIMG\0"
VERSION_MAJOR = 1
VERSION_MINOR = 1  # the newest minor the library reads; images carry the lowest they need
HEADER_SIZE = 144


class ParamKind(NamedIntEnum):
    """kctx_param_kind"""

    TENSOR_IN = 1  # callable only
    TENSOR_OUT = 2  # callable only
    TENSOR_INOUT = 3  # callable only
    SCALAR = 4  # 64-bit; callable and child
    TENSOR = 5  # child only: a device address


class VariantKind(NamedIntEnum):
    """kctx_variant_kind: the platforms' declared BINARY_KINDS, names in upper case
    (tests/image/check_binary_kinds.py checks them; docs/platforms.md)"""

    SIM_ELF = 1
    OPENCL_C = 2
    CUDA_FATBIN = 3
    CUDA_CUBIN = 4
    CUDA_PTX = 5
    ASCEND_BIN = 6  # format 1.1: an Ascend binary (aclrtBinaryLoadFromData), docs/acl.md


class BindingKind(NamedIntEnum):
    """kctx_binding_kind"""

    TENSOR = 1  # child TENSOR <- callable tensor param + byte offset
    SCALAR = 2  # child SCALAR <- callable scalar param
    IMMEDIATE = 3  # child SCALAR <- constant


class BuildStatus(NamedIntEnum):
    """kctx_build_status"""

    OK = 0
    NO_MEMORY = 1
    INVALID = 2


class Reason(NamedIntEnum):
    """kctx_image_reason: KCTX_IMAGE_REASON_MAP of include/kctx/image.h; the
    class is the hundreds digit (the tests check it against the header and
    kctx_image_reason_name())."""

    OK = 0
    NULL_IMAGE = 101
    TOO_SMALL = 102
    MISALIGNED = 103
    BAD_MAGIC = 201
    BAD_VERSION = 202
    BAD_HEADER_SIZE = 203
    BAD_FLAGS = 204
    SIZE_MISMATCH = 301
    LIMIT_EXCEEDED = 401
    SECTION_RANGE = 501
    SECTION_NOT_CANONICAL = 502
    BAD_STRING = 601
    BAD_PARAM_KIND = 701
    TENSOR_AFTER_SCALAR = 702
    BAD_FUNC_ID = 801
    BAD_VARIANT_KIND = 802
    BAD_BLOB = 803
    NO_VARIANT = 804
    BAD_CHILD_PARAM = 805
    UNKNOWN_FUNC = 901
    BAD_BINDING = 902
    BAD_DEPENDENCY = 903
    BAD_BLOCK_DIM = 904
    CHECKSUM_MISMATCH = 1001


class BuildError(KctxError, ValueError):
    """The builder failed: ``status`` (BuildStatus) and ``message`` (the
    builder's one-line description). A ``kctx.KctxError`` and a ``ValueError``."""

    def __init__(self, status: int, message: str) -> None:
        self.status = BuildStatus(status) if status in (0, 1, 2) else status  # type: ignore[assignment]
        self.message = message
        Exception.__init__(self, message)

    def __reduce__(self) -> "Tuple[object, ...]":
        return (type(self), (int(self.status), self.message), {})


class Validation(NamedTuple):
    """The verdict of ``validate``: ``ok``, the C name of the reason
    (``"KCTX_IMAGE_OK"``, ``"KCTX_IMAGE_BAD_MAGIC"``, ...), the byte offset
    of the offending field and the validator's message."""

    ok: bool
    reason_name: str
    offset: int
    message: str

    @property
    def reason(self) -> "Reason":
        return Reason[self.reason_name[len("KCTX_IMAGE_"):]]


def validate(data: BytesLike) -> Validation:
    """kctx_image_validate: every rule of docs/image-format.md. Images must
    start at an 8-byte aligned address: bytes objects always do."""
    p, n = readable(data, "data")
    err = _lib.ImageError()
    r = _lib.kctx().kctx_image_validate(p, n, byref(err))
    return Validation(r == 0, reason_name(r), int(err.offset), _lib.decode(err.message))


def reason_name(reason: int) -> str:
    """kctx_image_reason_name ("KCTX_IMAGE_BAD_MAGIC")."""
    return _lib.decode(_lib.kctx().kctx_image_reason_name(check_int("reason", reason, -(1 << 31), (1 << 31) - 1)))


def reason_string(reason: int) -> str:
    """kctx_image_reason_string: one line."""
    return _lib.decode(_lib.kctx().kctx_image_reason_string(check_int("reason", reason, -(1 << 31), (1 << 31) - 1)))


def crc32c(data: BytesLike) -> int:
    """kctx_crc32c: CRC32C (Castagnoli) of a buffer."""
    p, n = readable(data, "data")
    return int(_lib.kctx().kctx_crc32c(p, n))


def reseal(image: Union[bytearray, memoryview, Any]) -> None:
    """kctx_image_reseal (test support): recompute the checksum of a mutated
    image in place. ValueError if the header fields it needs are unusable."""
    p, n = writable(image, "image")
    if p is None or _lib.kctx().kctx_image_reseal(p, n) != 0:
        raise KctxValueError("the image header does not give a usable header_size and total_size")


class Builder:
    """kctx_image_builder. Each call raises BuildError as soon as the builder
    fails (the C builder turns every later call into a no-op returning that
    failure, so the first failure is what is reported); the builder is then
    spent. ``finish()`` returns the canonical, validated image as bytes.
    Usable as a context manager (frees an unfinished builder)."""

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise KctxTypeError(f"name must be a str, not {type(name).__name__}")
        self._b: Optional[int] = _lib.kctx().kctx_image_builder_new(name.encode())
        if not self._b:
            raise OutOfMemory("kctx_image_builder_new failed")

    def _ptr(self) -> int:
        if not self._b:
            raise KctxValueError("the builder is finished or failed")
        return self._b

    def _fail(self, st: int) -> None:
        # The builder's message only comes out of finish(): ask it, then free.
        msg = ctypes.create_string_buffer(256)
        out, size = c_void_p(), c_size_t()
        _lib.kctx().kctx_image_builder_finish(self._b, byref(out), byref(size), msg, len(msg))
        if out.value:  # cannot happen after a failure; never leak
            _lib.load().free(out)
        self.close()
        raise BuildError(st, _lib.decode(msg.value) or f"builder failed with status {st}")

    def _do(self, fn: str, *args: Any) -> None:
        st = getattr(_lib.kctx(), fn)(self._ptr(), *args)
        if st != 0:
            self._fail(st)

    @staticmethod
    def _name(what: str, s: Any) -> bytes:
        if not isinstance(s, str):
            raise KctxTypeError(f"{what} must be a str, not {type(s).__name__}")
        return s.encode()

    def param(self, name: str, kind: Union[ParamKind, int]) -> "Builder":
        """A callable parameter (tensors first, then scalars)."""
        self._do("kctx_image_builder_param", self._name("name", name), check_int("kind", kind, 0, 255))
        return self

    def child(self, name: str, entry: str) -> int:
        """Add a child (a kernel: `entry` is its symbol); returns its function id."""
        fid = c_uint32()
        self._do("kctx_image_builder_child", self._name("name", name), self._name("entry", entry), byref(fid))
        return fid.value

    def child_param(self, name: str, kind: Union[ParamKind, int]) -> "Builder":
        """A parameter of the most recent child (TENSOR or SCALAR)."""
        self._do("kctx_image_builder_child_param", self._name("name", name), check_int("kind", kind, 0, 255))
        return self

    def variant(self, kind: Union[VariantKind, int], blob: BytesLike) -> "Builder":
        """A binary variant of the most recent child (the blob is copied)."""
        p, n = readable(blob, "blob")
        self._do("kctx_image_builder_variant", check_int("kind", kind, 0, U32_MAX), p, n)
        return self

    def task(self, func_id: int, block_dim: int = 1) -> int:
        """Add a task running child `func_id` on `block_dim` blocks; returns its index."""
        t = c_uint32()
        self._do("kctx_image_builder_task", check_int("func_id", func_id, 0, U32_MAX),
                 check_int("block_dim", block_dim, 0, U32_MAX), byref(t))
        return t.value

    def bind(self, kind: Union[BindingKind, int], param: int = 0, value: int = 0) -> "Builder":
        """The next binding of the most recent task (one per child parameter, in order)."""
        self._do("kctx_image_builder_bind", check_int("kind", kind, 0, U32_MAX), check_int("param", param, 0, U32_MAX),
                 check_int("value", value, 0, U64_MAX))
        return self

    def bind_tensor(self, param: int, offset: int = 0) -> "Builder":
        """Bind callable tensor parameter `param` at byte `offset`."""
        return self.bind(BindingKind.TENSOR, param, offset)

    def bind_scalar(self, param: int) -> "Builder":
        """Bind callable scalar parameter `param`."""
        return self.bind(BindingKind.SCALAR, param, 0)

    def bind_immediate(self, value: int) -> "Builder":
        """Bind a constant (a 64-bit value)."""
        return self.bind(BindingKind.IMMEDIATE, 0, value)

    def dep(self, earlier_task: int) -> "Builder":
        """The most recent task runs after `earlier_task`."""
        self._do("kctx_image_builder_dep", check_int("earlier_task", earlier_task, 0, U32_MAX))
        return self

    def finish(self) -> bytes:
        """Produce the image (validated before it is returned) and free the builder."""
        b = self._ptr()
        out, size = c_void_p(), c_size_t()
        msg = ctypes.create_string_buffer(256)
        st = _lib.kctx().kctx_image_builder_finish(b, byref(out), byref(size), msg, len(msg))
        try:
            if st != 0:
                raise BuildError(st, _lib.decode(msg.value) or f"builder failed with status {st}")
            assert out.value is not None
            return ctypes.string_at(out.value, size.value)
        finally:
            if out.value:
                _lib.load().free(out)
            self.close()

    def close(self) -> None:
        """Free the builder (idempotent)."""
        if self._b:
            _lib.kctx().kctx_image_builder_free(self._b)
            self._b = None

    def __enter__(self) -> "Builder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # Host memory only (no device, no platform): freeing it here is safe.
        try:
            self.close()
        except Exception:
            pass
