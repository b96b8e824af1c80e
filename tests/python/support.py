"""Helpers shared by the Python tests: images built from the sim test
kernels, and a kernel context that is always torn down."""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator, List

import kctx
from kctx import sim
from kctx.image import Builder, ParamKind, VariantKind

N = 64  # u32 elements of the test buffers


def add_image(kernel_bytes: bytes, value: int, n: int = N, name: str = "add", block_dim: int = 2) -> bytes:
    """A callable (out: tensor_out) with one task running k_add_u32 of
    examples/kernels/sim_test_kernels.c: out[i] += value for i < n.

    k_add_u32 reads { u64 buf; u32 n; u32 value }. The runtime's worker hands
    a child one u64 per child parameter (tensor: address + byte offset;
    immediate: the value), so the child has two parameters, the tensor and
    one immediate carrying n in its low and value in its high 32 bits."""
    b = Builder(name)
    b.param("out", ParamKind.TENSOR_OUT)
    f = b.child("add", "t_add_u32")
    b.child_param("buf", ParamKind.TENSOR)
    b.child_param("n_value", ParamKind.SCALAR)
    b.variant(VariantKind.SIM_ELF, kernel_bytes)
    b.task(f, block_dim)
    b.bind_tensor(0, 0)
    b.bind_immediate(n | (value << 32))
    return b.finish()


def scalar_add_image(kernel_bytes: bytes) -> bytes:
    """A callable (out: tensor_out, n_value: scalar) running k_add_u32 with
    its packed (n, value) word taken from the launch's scalar argument."""
    b = Builder("add_scalar")
    b.param("out", ParamKind.TENSOR_OUT)
    b.param("n_value", ParamKind.SCALAR)
    f = b.child("add", "t_add_u32")
    b.child_param("buf", ParamKind.TENSOR)
    b.child_param("n_value", ParamKind.SCALAR)
    b.variant(VariantKind.SIM_ELF, kernel_bytes)
    b.task(f, 4)
    b.bind_tensor(0, 0)
    b.bind_scalar(1)
    return b.finish()


def u32s(buf: sim.DeviceBuffer, n: int = N) -> list:
    data = buf.copy_to_host(nbytes=4 * n)
    return [int.from_bytes(data[4 * i:4 * i + 4], "little") for i in range(n)]


def teardown(ctx: kctx.Context) -> None:
    """Close (retrying nothing: a failure here is a test failure) and destroy."""
    if ctx.handle is None:
        return
    ctx.close()
    ctx.destroy()


@contextlib.contextmanager
def kernel_context(**config) -> Iterator[kctx.Context]:
    ctx = kctx.Context()
    try:
        ctx.kernel_init(**config)
        yield ctx
    except BaseException:
        # The test failed: try to tear down without masking its error (the
        # clean-teardown fixture reports what could not be released).
        sim.clear_faults()
        try:
            teardown(ctx)
        except kctx.KctxError:
            pass
        raise
    sim.clear_faults()
    teardown(ctx)


@contextlib.contextmanager
def close_right_after_prepare(ctx: kctx.Context) -> Iterator[None]:
    """Inside the block, every kctx_prepare the binding makes is followed at
    once, before it returns to the binding, by a close of `ctx` on another
    thread that must finish by itself (K25: close never waits for the
    binding's lock). This is the window between the C call and the binding's
    registry that a racing close can hit (issue 23, K33)."""
    from kctx import context as context_module

    real: Callable[[], object] = context_module._lib.kctx  # type: ignore[attr-defined]

    class Library:
        def __init__(self, lib: object) -> None:
            self._lib = lib

        def __getattr__(self, name: str) -> object:
            fn = getattr(self._lib, name)
            if name != "kctx_prepare":
                return fn

            def prepare_then_close(*args: object) -> int:
                st = int(fn(*args))
                errors: List[BaseException] = []

                def close() -> None:
                    try:
                        ctx.close()
                    except BaseException as e:
                        errors.append(e)

                t = threading.Thread(target=close, daemon=True)
                t.start()
                t.join(5)
                assert not t.is_alive(), "close waited for the binding's lock of a prepare already out of C"
                assert not errors, errors[0]
                return st

            return prepare_then_close

    wrapped = Library(real())
    context_module._lib.kctx = lambda: wrapped  # type: ignore[attr-defined]
    try:
        yield
    finally:
        context_module._lib.kctx = real  # type: ignore[attr-defined]
