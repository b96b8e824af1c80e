"""kctx.image: the builder and the validator from Python."""
from __future__ import annotations

import pytest

from kctx import image
from kctx.image import Builder, ParamKind, Reason, VariantKind
from support import add_image


def test_builder_output_validates_and_is_canonical(kernel_bytes):
    a = add_image(kernel_bytes, 1)
    assert a[:8] == image.MAGIC and len(a) > image.HEADER_SIZE
    v = image.validate(a)
    assert (v.ok, v.reason_name, v.offset, v.reason) == (True, "KCTX_IMAGE_OK", 0, Reason.OK)
    assert add_image(kernel_bytes, 1) == a  # identical content, identical bytes
    assert add_image(kernel_bytes, 2) != a


def test_validation_reports_reason_offset_and_message(kernel_bytes):
    a = bytearray(add_image(kernel_bytes, 1))
    assert image.validate(b"").reason == Reason.TOO_SMALL
    bad = bytearray(a)
    bad[0] ^= 1
    v = image.validate(bad)
    assert (v.ok, v.reason_name, v.offset) == (False, "KCTX_IMAGE_BAD_MAGIC", 0) and v.message
    bad = bytearray(a)
    bad[-1] ^= 1
    assert image.validate(bad).reason == Reason.CHECKSUM_MISMATCH
    image.reseal(bad)
    assert image.validate(bad).ok  # a blob byte changed: structurally fine
    bad = bytearray(a)
    bad[8:10] = (2).to_bytes(2, "little")  # version_major
    image.reseal(bad)
    v = image.validate(bad)
    assert v.reason == Reason.BAD_VERSION and v.offset == 8
    assert image.crc32c(b"123456789") == 0xE3069283  # the CRC32C check value


def test_builder_failures_raise_build_error(kernel_bytes):
    b = Builder("bad")
    b.param("n", ParamKind.SCALAR)
    with pytest.raises(image.BuildError) as info:
        b.param("t", ParamKind.TENSOR_IN)  # a tensor after a scalar
        b.finish()
    assert info.value.status == image.BuildStatus.INVALID and info.value.message
    with pytest.raises(ValueError):
        b.finish()  # spent

    b = Builder("nochild")
    b.param("out", ParamKind.TENSOR_OUT)
    with pytest.raises(image.BuildError):
        b.task(0, 1)  # no such function
        b.finish()

    with Builder("types") as b:
        with pytest.raises(TypeError):
            b.param(1, ParamKind.SCALAR)
        with pytest.raises(TypeError):
            b.variant(VariantKind.SIM_ELF, "not bytes")
