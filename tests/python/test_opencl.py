"""kctx.opencl: a PyOpenCL program lends its context, device and queue to
the opencl platform (issue 14, "Python: PyOpenCL is the framework";
docs/opencl.md).

Skipped, with the reason, when pyopencl or numpy is not importable, when
libkctx was built without the opencl platform or cannot load OpenCL here,
or when no OpenCL device has fine-grained buffer SVM with atomics.
Everything else runs on the machine's OpenCL driver (PoCL in CI). Each test
names the contract rule (docs/kernel-mode.md) it checks where one applies.
"""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, List, Tuple

import pytest

import kctx
from kctx import _lib
from kctx.image import Builder, ParamKind, VariantKind

from conftest import PACKAGE_DIR, REPO, header
from support import close_right_after_prepare

cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed: run `make deps` (scripts/install-deps.sh)")
np = pytest.importorskip("numpy", reason="numpy is not installed: run `make deps` (scripts/install-deps.sh)")

DOC = REPO / "docs" / "opencl.md"
N = 4096

VADD = b"""
KCTX_TASK(k_vadd, __global const float *a, __global const float *b, __global float *c, ulong n) {
    KCTX_TASK_GATE();
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) c[i] = a[i] + b[i];
}
"""

# A task that fails on n == 0 (KCTX_TASK_FAIL), else adds 1 to x[0..n).
INC = b"""
KCTX_TASK(k_inc, __global float *x, ulong n) {
    KCTX_TASK_GATE();
    if (n == 0) { KCTX_TASK_FAIL(); return; }
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) x[i] += 1.0f;
}
"""


def vadd_image(source: bytes = VADD, block_dim: int = 4) -> bytes:
    """(a, b: in, c: out, n: scalar): one task running k_vadd, every callable
    parameter passed through (docs/opencl.md's example callable)."""
    b = Builder("vector_add")
    b.param("a", ParamKind.TENSOR_IN)
    b.param("b", ParamKind.TENSOR_IN)
    b.param("c", ParamKind.TENSOR_OUT)
    b.param("n", ParamKind.SCALAR)
    f = b.child("vadd", "k_vadd")
    for name in "abc":
        b.child_param(name, ParamKind.TENSOR)
    b.child_param("n", ParamKind.SCALAR)
    b.variant(VariantKind.OPENCL_C, source)
    b.task(f, block_dim)
    b.bind_tensor(0).bind_tensor(1).bind_tensor(2).bind_scalar(3)
    return b.finish()


def inc_twice_image() -> bytes:
    """(x: inout, n: scalar): task 0 runs k_inc(x, n), task 1 (after it)
    k_inc(x, 4)."""
    b = Builder("inc_twice")
    b.param("x", ParamKind.TENSOR_INOUT)
    b.param("n", ParamKind.SCALAR)
    f = b.child("inc", "k_inc")
    b.child_param("x", ParamKind.TENSOR)
    b.child_param("n", ParamKind.SCALAR)
    b.variant(VariantKind.OPENCL_C, INC)
    t0 = b.task(f, 2)
    b.bind_tensor(0).bind_scalar(1)
    b.task(f, 2)
    b.bind_tensor(0).bind_immediate(4)
    b.dep(t0)
    return b.finish()


def _fine_grained_svm_device() -> Any:
    for p in cl.get_platforms():
        for d in p.get_devices():
            caps = d.svm_capabilities
            if caps & cl.device_svm_capabilities.FINE_GRAIN_BUFFER and caps & cl.device_svm_capabilities.ATOMICS:
                return d
    return None


@pytest.fixture(scope="module")
def device() -> Any:
    avail = kctx.opencl.availability()
    if not avail.built or not avail.available:
        pytest.skip(f"the opencl platform is not usable here: {avail.reason}")
    try:
        d = _fine_grained_svm_device()
    except cl.Error as e:  # no ICD, no platform
        pytest.skip(f"PyOpenCL finds no OpenCL platform: {e}")
    if d is None:
        pytest.skip("no OpenCL device with fine-grained buffer SVM and atomics")
    return d


class Env:
    """One PyOpenCL context with an in-order queue and SVM arrays."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.ctx = cl.Context([device])
        self.queue = cl.CommandQueue(self.ctx)

    def svm(self, values: Any) -> Any:
        a = cl.fsvm_empty(self.ctx, len(values), np.dtype(np.float32))
        a[:] = values
        return a

    def zeros(self, n: int = N) -> Any:
        return self.svm(np.zeros(n, np.float32))


@pytest.fixture(scope="module")
def env(device: Any) -> Env:
    return Env(device)


@pytest.fixture(scope="module")
def other(device: Any) -> Env:
    """A second PyOpenCL context on the same device."""
    return Env(device)


@pytest.fixture(autouse=True)
def thread_lends_nothing() -> Iterator[None]:
    """Every test starts and ends with the calling thread lending nothing."""
    kctx.opencl.unbind()
    yield
    leftover = kctx.opencl.bound()
    kctx.opencl.unbind()
    assert leftover is None, f"the test left the thread bound to {leftover}"


def _pair_number(e: Env) -> int:
    with kctx.opencl.lent(e.queue) as n:
        return n


# ---------------------------------------------------------------------------
# The binding's tables
# ---------------------------------------------------------------------------
def test_opencl_prototypes_and_struct_mirror_opencl_h() -> None:
    text = (header("opencl.h")).read_text()
    declared = set(re.findall(r"\b(kctx_opencl_\w+)\s*\(", text))
    assert set(kctx.opencl._PROTOTYPES) == declared
    body = text[text.index("typedef struct kctx_opencl_live {"):]
    body = re.sub(r"/\*.*?\*/", "", body[:body.index("} kctx_opencl_live;")], flags=re.S)
    assert [f[0] for f in kctx.opencl.OpenclLive._fields_] == re.findall(r"(\w+);", body)
    assert ctypes.sizeof(kctx.opencl.OpenclLive) == 8 + 8 * 8


# ---------------------------------------------------------------------------
# Correctness
# ---------------------------------------------------------------------------
def test_launch_matches_numpy(env: Env) -> None:
    rng = np.random.default_rng(14)
    a, b = env.svm(rng.standard_normal(N)), env.svm(rng.standard_normal(N))
    c = env.zeros()
    with kctx.opencl.Context(env.queue) as ctx:
        assert ctx.platform == "opencl" and ctx.mode == kctx.Mode.KERNEL
        add = ctx.prepare(vadd_image())
        add(cl.SVM(a), cl.SVM(b), cl.SVM(c), N, stream=env.queue)
        env.queue.finish()
        assert ctx.check().device_status == kctx.Status.OK
    out = np.empty(N, np.float32)
    cl.enqueue_copy(env.queue, out, cl.SVM(c)).wait()
    np.testing.assert_array_equal(out, a + b)


def test_svm_backed_pyopencl_arrays_and_coarse_grained_svm_work(env: Env) -> None:
    """docs/opencl.md's other tensor forms: a pyopencl.array.Array on an SVM
    allocator, and coarse-grained SVM read through PyOpenCL's mapping."""
    import pyopencl.array as cla
    from pyopencl.tools import SVMAllocator

    alloc = SVMAllocator(env.ctx, flags=cl.svm_mem_flags.READ_WRITE | cl.svm_mem_flags.SVM_FINE_GRAIN_BUFFER,
                         queue=env.queue)
    x = cla.arange(env.queue, N, dtype=np.float32, allocator=alloc)
    y = cla.zeros(env.queue, N, dtype=np.float32, allocator=alloc)
    coarse_in, coarse_out = (cl.csvm_empty(env.ctx, N, np.dtype(np.float32)) for _ in range(2))
    with cl.SVM(coarse_in).map_rw(env.queue) as m:
        m[:] = np.arange(N)
    with kctx.opencl.Context(env.queue) as ctx:
        add = ctx.prepare(vadd_image())
        add(x, x, y, N, stream=env.queue)  # type: ignore[arg-type]  # resolved at run time (base_data)
        add(cl.SVM(coarse_in), cl.SVM(coarse_in), cl.SVM(coarse_out), N, stream=env.queue)
        env.queue.finish()
        ctx.check()
    np.testing.assert_array_equal(y.get(), 2 * np.arange(N, dtype=np.float32))
    with cl.SVM(coarse_out).map_ro(env.queue) as m:
        np.testing.assert_array_equal(m, 2 * np.arange(N, dtype=np.float32))


def test_args_are_taken_by_value(env: Env) -> None:  # K22
    """Two launches enqueued back to back with different tensors and n: each
    computes with its own arguments (the parameter block is built at launch,
    never read from the caller later)."""
    a, b = env.svm(np.arange(N)), env.svm(np.full(N, 2.0))
    c1, c2 = env.zeros(), env.zeros()
    with kctx.opencl.Context(env.queue) as ctx:
        add = ctx.prepare(vadd_image())
        args: List[Any] = [cl.SVM(a), cl.SVM(b), cl.SVM(c1), N]
        ctx.launch(add.id, args, env.queue)
        args[2], args[3] = cl.SVM(c2), N // 2  # the same list, changed before the first launch ran
        ctx.launch(add.id, args, env.queue)
        env.queue.finish()
        ctx.check()
    np.testing.assert_array_equal(c1, a + b)
    np.testing.assert_array_equal(c2[:N // 2], (a + b)[:N // 2])
    assert not c2[N // 2:].any()


def test_a_hundred_launches_allocate_nothing_per_launch(env: Env) -> None:  # K11
    """100 launches onto the caller's queue accumulate exactly; kctx's own
    OpenCL objects (queues, events, programs, kernels, SVM) are the same
    after them, and every launch enqueues the same number of commands."""
    a, c = env.svm(np.arange(N)), env.zeros()
    with kctx.opencl.Context(env.queue) as ctx:
        add = ctx.prepare(vadd_image())
        add(cl.SVM(a), cl.SVM(c), cl.SVM(c), N, stream=env.queue)  # c = a + c
        env.queue.finish()
        first = ctx.live_objects
        add(cl.SVM(a), cl.SVM(c), cl.SVM(c), N, stream=env.queue)
        per_launch = ctx.live_objects.enqueues - first.enqueues
        for _ in range(98):
            add(cl.SVM(a), cl.SVM(c), cl.SVM(c), N, stream=env.queue)
        env.queue.finish()
        last = ctx.live_objects
        ctx.check()
    assert last.held == first.held and last.total_allocations == first.total_allocations
    assert per_launch > 0 and last.enqueues - first.enqueues == 99 * per_launch
    np.testing.assert_array_equal(c, 100 * a)


def _mapped_opencl_loaders() -> List[str]:
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "libOpenCL" in line and "/" in line}
    return sorted({os.path.realpath(p) for p in paths})


def test_objects_of_pyopencls_loader_work_with_kctxs_loader(env: Env) -> None:
    """pyopencl's wheel carries its own ICD loader; libkctx dlopens the
    system's (libOpenCL.so.1). Each OpenCL object carries its driver's
    dispatch table, so objects made through one loader work through the
    other: both loaders are in this process, and a launch is correct."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/maps")
    a, b, c = env.svm(np.arange(N)), env.svm(np.ones(N)), env.zeros()
    with kctx.opencl.Context(env.queue) as ctx:
        ctx.prepare(vadd_image())(cl.SVM(a), cl.SVM(b), cl.SVM(c), N, stream=env.queue)
        env.queue.finish()
        ctx.check()
    np.testing.assert_array_equal(c, a + b)
    loaders = _mapped_opencl_loaders()
    if len(loaders) < 2:
        pytest.skip(f"pyopencl and kctx use the same ICD loader here ({loaders}): nothing to cross")
    assert any("pyopencl" in p for p in loaders), loaders


# ---------------------------------------------------------------------------
# Binding (K4: init borrows the calling thread's binding; K5: every later
# entry checks it)
# ---------------------------------------------------------------------------
def test_bind_bound_unbind_and_lent(env: Env, other: Env) -> None:  # K4
    assert kctx.opencl.bound() is None
    n = kctx.opencl.bind(env.queue)
    b = kctx.opencl.bound()
    assert b == kctx.opencl.Binding(env.ctx.int_ptr, env.device.int_ptr, n)
    assert kctx.opencl.bind(env.ctx, env.device) == n  # the same pair: the same number
    assert kctx.opencl.bind(env.queue.int_ptr) == n  # a native handle
    with kctx.opencl.lent(other.queue) as m:
        assert m != n and kctx.opencl.bound() == kctx.opencl.Binding(other.ctx.int_ptr, env.device.int_ptr, m)
    assert kctx.opencl.bound() == b  # given back
    kctx.opencl.unbind()
    assert kctx.opencl.bound() is None
    with kctx.opencl.lent(env.queue):
        pass
    assert kctx.opencl.bound() is None


def test_bad_bindings_are_refused_and_change_nothing(env: Env) -> None:  # K4
    n = kctx.opencl.bind(env.queue)
    with pytest.raises(kctx.InvalidArgument, match="queue is NULL"):
        kctx.opencl.bind(0)
    with pytest.raises(kctx.InvalidArgument, match="device is NULL"):
        kctx.opencl.bind(env.ctx, 0)
    with pytest.raises(kctx.KctxTypeError, match="OpenCL object"):
        kctx.opencl.bind("queue")  # type: ignore[arg-type]
    with pytest.raises(kctx.KctxTypeError):
        kctx.opencl.bind(True)
    with pytest.raises(kctx.InvalidArgument):
        kctx.opencl.bind(-1)
    assert kctx.opencl.bound() == kctx.opencl.Binding(env.ctx.int_ptr, env.device.int_ptr, n)
    with pytest.raises(kctx.InvalidArgument, match="not a lent pair"):
        kctx.opencl.live_objects(64)  # KCTX_OPENCL_MAX_DEVICES: never a pair's number
    kctx.opencl.unbind()


def test_an_unbound_thread_is_told_to_bind(env: Env) -> None:  # K4
    """kernel_init on a thread that lent nothing borrows nothing: refused,
    the error says to bind, and the context stays NEW."""
    kctx.opencl.bind(env.queue)
    kctx.opencl.unbind()  # lent, then taken back: nothing is lent now
    assert kctx.opencl.bound() is None
    ctx = kctx.Context("opencl")
    try:
        with pytest.raises(kctx.KctxError, match="kctx_opencl_bind") as e:
            ctx.kernel_init()
        assert isinstance(e.value, kctx.PlatformError), e.value.name  # docs/opencl.md's table
        assert "no OpenCL device is lent to this thread" in str(e.value)
        assert ctx.phase == kctx.Phase.NEW and ctx.mode == kctx.Mode.NONE
    finally:
        ctx.destroy()


def test_second_thread_must_bind_to_launch(env: Env, other: Env) -> None:  # K5
    """A plain kctx.Context("opencl"): a launch from a Python thread that
    lent nothing fails clearly, and from a thread that lent another pair
    with INVALID_STATE (K5); both change nothing. The same thread after
    kctx.opencl.bind(queue) launches."""
    a, b, c = env.svm(np.arange(N)), env.svm(np.ones(N)), env.zeros()
    results: List[Tuple[str, Any]] = []

    def launch(ctx: kctx.Context, ident: int, lend: Any) -> None:
        try:
            if lend is not None:
                kctx.opencl.bind(lend)
            ctx.launch(ident, [cl.SVM(a), cl.SVM(b), cl.SVM(c), N], env.queue)
            results.append(("ok", None))
        except kctx.KctxError as e:
            results.append(("error", e))
        finally:
            kctx.opencl.unbind()

    with kctx.opencl.lent(env.queue), kctx.Context.kernel("opencl") as ctx:
        exe = ctx.prepare(vadd_image())
        for lend in (None, other.queue, env.queue):
            t = threading.Thread(target=launch, args=(ctx, exe.id, lend))
            t.start()
            t.join()
        env.queue.finish()
        assert ctx.check().device_status == kctx.Status.OK
    (kind0, err0), (kind1, err1), (kind2, _) = results
    assert kind0 == "error" and isinstance(err0, kctx.InvalidState) and "call kctx_opencl_bind" in str(err0), err0
    assert kind1 == "error" and isinstance(err1, kctx.InvalidState) and "(K5)" in str(err1), err1
    assert kind2 == "ok"
    np.testing.assert_array_equal(c, a + b)


def test_opencl_context_binds_on_any_thread_and_gives_the_binding_back(env: Env, other: Env) -> None:  # K4, K5
    """kctx.opencl.Context binds its pair around each call on the calling
    thread: a thread that never called bind launches, and a thread bound to
    another pair gets that binding back."""
    a, b, c = env.svm(np.arange(N)), env.svm(np.ones(N)), env.zeros()
    seen: List[Any] = []
    with kctx.opencl.Context(env.queue) as ctx:
        assert kctx.opencl.bound() is None  # the constructor gave the binding back
        add = ctx.prepare(vadd_image())

        def worker() -> None:
            add(cl.SVM(a), cl.SVM(b), cl.SVM(c), N, stream=env.queue)
            seen.append(kctx.opencl.bound())

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert seen == [None]
        m = kctx.opencl.bind(other.queue)
        ctx.launch(add.id, [cl.SVM(a), cl.SVM(b), cl.SVM(c), N], env.queue)
        assert kctx.opencl.bound() == kctx.opencl.Binding(other.ctx.int_ptr, env.device.int_ptr, m)
        env.queue.finish()
        ctx.check()
        assert ctx.binding == kctx.opencl.Binding(env.ctx.int_ptr, env.device.int_ptr, ctx.device)
    kctx.opencl.unbind()
    np.testing.assert_array_equal(c, a + b)


# ---------------------------------------------------------------------------
# Bad inputs specific to OpenCL: each a documented error, never a crash
# ---------------------------------------------------------------------------
def test_a_queue_of_another_context_is_refused(env: Env, other: Env) -> None:  # K5
    """A queue of a cl_context nobody lent, then of one lent as another pair:
    INVALID_ARGUMENT naming the queue / the pairs; nothing changes (the next
    launch on the right queue is correct)."""
    a, b, c = env.svm(np.arange(N)), env.svm(np.ones(N)), env.zeros()
    foreign = cl.Context([env.device])
    fq = cl.CommandQueue(foreign)
    with kctx.opencl.Context(env.queue) as ctx:
        add = ctx.prepare(vadd_image())
        with pytest.raises(kctx.InvalidArgument) as e:
            add(cl.SVM(a), cl.SVM(b), cl.SVM(c), N, stream=fq)
        assert f"0x{fq.int_ptr:x}" in str(e.value) and "no thread lent" in str(e.value), e.value
        m = _pair_number(other)
        with pytest.raises(kctx.InvalidArgument, match=f"on device {m}, the context on {ctx.device}"):
            add(cl.SVM(a), cl.SVM(b), cl.SVM(c), N, stream=other.queue)
        assert ctx.phase == kctx.Phase.READY
        add(cl.SVM(a), cl.SVM(b), cl.SVM(c), N, stream=env.queue)
        env.queue.finish()
        ctx.check()
    np.testing.assert_array_equal(c, a + b)


def test_an_out_of_order_queue_is_refused(env: Env) -> None:  # K5
    ooo = cl.CommandQueue(env.ctx, properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    a = env.zeros()
    with kctx.opencl.Context(env.queue) as ctx:
        add = ctx.prepare(vadd_image())
        with pytest.raises(kctx.InvalidArgument, match="out-of-order queue") as e:
            add(cl.SVM(a), cl.SVM(a), cl.SVM(a), N, stream=ooo)
        assert f"0x{ooo.int_ptr:x}" in str(e.value)
        assert ctx.phase == kctx.Phase.READY
        ctx.check()


def test_a_source_that_does_not_build_is_incompatible_with_the_build_log(env: Env) -> None:
    """prepare of an OPENCL_C variant the device's compiler rejects:
    INCOMPATIBLE_IMAGE with the compiler's build log in the message; the
    id stays free and no program is kept."""
    bad = vadd_image(VADD.replace(b"a[i] + b[i]", b"a[i] + undeclared_thing"))
    with kctx.opencl.Context(env.queue) as ctx:
        before = ctx.live_objects
        with pytest.raises(kctx.IncompatibleImage) as e:
            ctx.prepare(7, bad)
        msg = str(e.value)
        assert "does not build" in msg and "CL_BUILD_PROGRAM_FAILURE" in msg, msg
        # the compiler's own words, numbered from the source's own line 1
        assert "line 4:" in msg and "undeclared identifier 'undeclared_thing'" in msg, msg
        assert ctx.prepared == {} and ctx.live_objects.held == before.held
        assert ctx.phase == kctx.Phase.READY
        ctx.prepare(7, vadd_image())  # the id is free


def test_host_arrays_and_unsized_svm_pointers_are_refused(env: Env) -> None:
    """A numpy array (even one allocated as SVM, passed unwrapped) is refused
    by the binding with what to do: OpenCL cannot tell an SVM pointer from
    any other, so the resolver only takes SVM objects (pyopencl.SVM)."""
    svm_array = env.zeros()
    with kctx.opencl.Context(env.queue) as ctx:
        add = ctx.prepare(vadd_image())
        for host in (np.zeros(N, np.float32), svm_array):
            with pytest.raises(kctx.KctxValueError, match=r"args\[0\] is a host array.*pyopencl\.SVM"):
                add(host, cl.SVM(svm_array), cl.SVM(svm_array), N, stream=env.queue)

        class Unsized:
            svm_ptr = cl.SVM(svm_array).svm_ptr
            size = None

        with pytest.raises(kctx.KctxValueError, match=r"args\[2\] is an SVM pointer of unknown size"):
            add(cl.SVM(svm_array), cl.SVM(svm_array), Unsized(), N, stream=env.queue)
        assert ctx.phase == kctx.Phase.READY
        ctx.check()
    # a plain kctx.Context("opencl") refuses it through the shared resolver
    with kctx.opencl.lent(env.queue), kctx.Context.kernel("opencl") as plain:
        exe = plain.prepare(vadd_image())
        with pytest.raises(kctx.KctxValueError, match=r"args\[0\] is a host array"):
            exe(np.zeros(N, np.float32), cl.SVM(svm_array), cl.SVM(svm_array), N, stream=env.queue)


def test_a_failed_task_reaches_check_through_the_device_error_word(env: Env) -> None:
    """A task that calls KCTX_TASK_FAIL: the caller's queue completes, the
    launch's later task is skipped by its gate, check raises DeviceError
    naming the task and poisons the context; close still releases all."""
    x = env.zeros(8)
    with kctx.opencl.Context(env.queue) as ctx:
        exe = ctx.prepare(inc_twice_image())
        exe(cl.SVM(x), 0, stream=env.queue)  # n == 0: task 0 fails
        env.queue.finish()
        with pytest.raises(kctx.DeviceError, match="task 0") as e:
            ctx.check()
        assert e.value.report.device_status == kctx.Status.DEVICE_ERROR  # type: ignore[attr-defined]
        assert ctx.phase == kctx.Phase.POISONED
        with pytest.raises(kctx.Poisoned):
            exe(cl.SVM(x), 8, stream=env.queue)
    assert not x.any()  # task 1 never ran


_RELEASED = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import SVMAllocator

import kctx
from test_opencl import N, _fine_grained_svm_device, vadd_image

dev = _fine_grained_svm_device()
clctx = cl.Context([dev])
queue = cl.CommandQueue(clctx)
FINE = cl.svm_mem_flags.READ_WRITE | cl.svm_mem_flags.SVM_FINE_GRAIN_BUFFER
a, c = cl.fsvm_empty(clctx, N, np.float32), cl.fsvm_empty(clctx, N, np.float32)
a[:] = np.arange(N)
c[:] = 0


def released():
    # what a framework already released: each reads as PyOpenCL leaves it
    gone = cl.SVMAllocation(clctx, 4 * N, 0, FINE)
    gone.release()                                   # its svm_ptr now reads 0
    arr = cl.fsvm_empty(clctx, N, np.float32)
    arr.base.release()                               # SVM(arr) keeps the stale address
    parr = cla.zeros(queue, N, np.float32, allocator=SVMAllocator(clctx, flags=FINE, queue=queue))
    parr.base_data.release()                         # an SVM-backed array whose base was released
    return [("SVMAllocation", gone, "released PyOpenCL SVM allocation"),
            ("SVM(array)", cl.SVM(arr), "whose SVM allocation was released"),
            ("SVM(view)", cl.SVM(arr[8:]), "whose SVM allocation was released"),
            ("pyopencl.array.Array", parr, "SVM allocation (base_data) was released"),
            ("NULL kctx.Tensor", kctx.Tensor(0, 4 * N), "device address 0 (NULL)"),
            ("zero-length kctx.Tensor", kctx.Tensor(cl.SVM(a).svm_ptr, 0), "size must be > 0")]


def refused(launch, ctx, n):
    for what, bad, message in released():
        before = kctx.opencl.live_objects(n).enqueues
        try:
            launch(bad)
        except kctx.InvalidArgument as e:      # the library's class for a NULL tensor (K18)
            assert message in str(e) and "(K18)" in str(e), (what, str(e))
        else:
            raise SystemExit(f"{what}: launched")
        assert kctx.opencl.live_objects(n).enqueues == before, f"{what}: something was enqueued"
        assert ctx.phase == kctx.Phase.READY, what


with kctx.opencl.Context(queue) as ctx:
    add = ctx.prepare(vadd_image())
    refused(lambda bad: add(cl.SVM(a), cl.SVM(a), bad, N, stream=queue), ctx, ctx.binding.kctx_device)
    add(cl.SVM(a), cl.SVM(a), cl.SVM(c), N, stream=queue)   # nothing changed: the next launch computes
    queue.finish()
    ctx.check()
np.testing.assert_array_equal(c, 2 * np.arange(N, dtype=np.float32))
with kctx.opencl.lent(queue) as n, kctx.Context.kernel("opencl") as plain:   # the shared resolver
    exe = plain.prepare(vadd_image())
    refused(lambda bad: exe(bad, cl.SVM(a), cl.SVM(c), N, stream=queue), plain, n)
print("ok")
"""


def test_k18_released_svm_objects_are_refused_not_crashed(device: Any, libdir: Path) -> None:
    """Issue 23 item 1: a launch with PyOpenCL SVM memory the framework already
    released — an SVMAllocation (svm_ptr reads 0), pyopencl.SVM of an array
    (or of a view of it) whose allocation was released, an SVM-backed
    pyopencl.array.Array whose base_data was released — and a NULL or
    zero-length kctx.Tensor are refused with InvalidArgument naming what was
    released (the class the library gives a NULL tensor, K18), nothing is
    enqueued, and the context stays READY and computes the next launch. Before
    the fix the driver's worker died with SIGSEGV: a process of its own."""
    env = dict(os.environ, KCTX_LIB_DIR=str(libdir), PYTHONPATH=str(PACKAGE_DIR), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-c", _RELEASED, str(Path(__file__).parent)], env=env, capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0 and r.stdout.strip() == "ok", \
        f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"


_WITHOUT_OPENCL = """
import kctx
a = kctx.opencl.availability()
assert a.built and not a.available, a
assert "not installed or not loadable" in a.reason, a.reason
for call in (lambda: kctx.opencl.bind(0x1000), lambda: kctx.opencl.Context(0x1000, 0x2000),
             lambda: kctx.Context("opencl")):
    try:
        call()
        raise SystemExit("no error")
    except kctx.Unsupported as e:
        assert "not installed or not loadable" in str(e), e
assert kctx.opencl.bound() is None
print("ok")
"""

_NO_SVM_DEVICE = """
import kctx
try:
    kctx.opencl.Context(0x1000, 0x2000)  # the fake library's context and device
    raise SystemExit("no error")
except kctx.Unsupported as e:
    assert "lacks fine-grained buffer SVM with atomics" in str(e), e
assert kctx.opencl.bound() is None  # nothing lent
print("ok")
"""


@pytest.mark.parametrize("library,program", [("/nonexistent/libOpenCL.so.1", _WITHOUT_OPENCL),
                                             ("libkctx_fake_opencl.so", _NO_SVM_DEVICE)],
                         ids=["no-opencl-library", "device-without-svm"])
def test_no_opencl_and_a_device_without_svm_are_unsupported(libdir: Path, library: str, program: str) -> None:
    """Without an OpenCL library, and with a device that lacks fine-grained
    buffer SVM with atomics (the fake OpenCL library of tests/kctx, which no
    real driver here imitates): UNSUPPORTED with the reason, never a crash,
    nothing lent. A process of its own each (the library is loaded once)."""
    if not library.startswith("/"):
        fake = libdir / "tests" / "kctx" / library
        if not fake.is_file():
            pytest.skip(f"{fake} is not built (tests/kctx builds it with the opencl platform)")
        library = str(fake)
    env = dict(os.environ, KCTX_LIB_DIR=str(libdir), PYTHONPATH=str(PACKAGE_DIR), PYTHONDONTWRITEBYTECODE="1",
               KCTX_OPENCL_LIBRARY=library)
    r = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"


# ---------------------------------------------------------------------------
# Lifecycle
# ---------------------------------------------------------------------------
def test_close_and_destroy_give_every_opencl_object_back(env: Env) -> None:  # K11
    a = env.zeros()
    n = _pair_number(env)
    baseline = kctx.opencl.live_objects(n)
    for _ in range(2):
        ctx = kctx.opencl.Context(env.queue)
        assert ctx.device == n
        held = ctx.live_objects
        assert held.queues == 3 and held.events == 5 and held.allocations > 0
        add = ctx.prepare(vadd_image())
        add(cl.SVM(a), cl.SVM(a), cl.SVM(a), N, stream=env.queue)
        env.queue.finish()
        ctx.check()
        ctx.close()
        assert kctx.opencl.live_objects(n).held == baseline.held
        ctx.destroy()
        assert ctx.handle is None
    assert kctx.opencl.live_objects(n).held == baseline.held


def test_one_kernel_context_per_pair_and_no_program_mode(env: Env) -> None:  # K6
    with kctx.opencl.Context(env.queue):
        with pytest.raises(kctx.Busy):
            kctx.opencl.Context(env.queue)
    # never mode-less: no create/kernel/program/kernel_init promised (test_contracts.py)
    assert not hasattr(kctx.opencl.Context, "kernel") and not hasattr(kctx.opencl.Context, "program")
    with kctx.opencl.lent(env.queue), pytest.raises(kctx.Unsupported, match="no program mode"):
        kctx.Context.program(0, "opencl")


# ---------------------------------------------------------------------------
# Threads (issue 23 items 2 and 3): K33, any entry from any thread; K25, close
# answers BUSY without waiting for another thread's prepare
# ---------------------------------------------------------------------------
def _slow_source() -> bytes:
    """VADD plus a long kernel whose code PoCL has never seen (a fresh salt in
    its constants, not in a comment, which PoCL's cache ignores): its build
    takes over a second here (docs/opencl.md, build cost)."""
    salt = int.from_bytes(os.urandom(5), "little")
    body = "".join(f"    acc = acc * {1.0 + (j % 7) * 1e-3}f + (float)(n + {salt + j}UL);\n" for j in range(3000))
    slow = "KCTX_TASK(k_slow, __global float *x, ulong n) {\n    KCTX_TASK_GATE();\n    float acc = 0.0f;\n"
    return VADD + (slow + body + "    x[0] = acc;\n}\n").encode()


def _thread(fn: Any) -> Tuple[threading.Thread, List[Any]]:
    """Runs fn on a new thread; the list receives ("ok", value, seconds) or
    ("error", exception, seconds) — every exception, so a KeyError is seen."""
    out: List[Any] = []

    def run() -> None:
        t0 = time.monotonic()
        try:
            out.append(("ok", fn(), time.monotonic() - t0))
        except BaseException as e:
            out.append(("error", e, time.monotonic() - t0))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def _opencl_calls(entry: str) -> int:
    """How often libkctx called the OpenCL entry (kctx_opencl_driver_calls)."""
    n = ctypes.c_uint64(0)
    assert kctx.opencl._opencl().kctx_opencl_driver_calls(entry.encode(), ctypes.byref(n)) == 0, entry
    return int(n.value)


def test_k25_close_during_another_threads_build_is_busy_at_once(env: Env) -> None:
    """Thread A prepares a source whose build takes over a second; thread B's
    close, while that build runs, raises Busy at once (the Python lock does
    not span the build) and changes nothing. A's prepare then returns its
    executable — no KeyError (K33) — which launches correctly; then close
    succeeds. Before issue 23, close waited for the whole build, then
    closed, and A's prepare raised KeyError."""
    a, c = env.svm(np.arange(N)), env.zeros()
    ctx = kctx.opencl.Context(env.queue)
    try:
        ctx.prepare(vadd_image())  # PoCL's compiler is warm: the slow build below is the source's own
        builds0 = _opencl_calls("clBuildProgram")
        prep, prep_out = _thread(lambda: ctx.prepare(vadd_image(_slow_source())))
        deadline = time.monotonic() + 30  # wait (no fixed sleep) until A is inside the build
        while _opencl_calls("clBuildProgram") == builds0 and prep.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        assert prep.is_alive(), "the slow build finished before close was called: the test proves nothing"
        closer, close_out = _thread(ctx.close)
        closer.join(5)
        assert close_out, "close did not return"
        kind, err, seconds = close_out[0]
        assert kind == "error" and isinstance(err, kctx.Busy), (kind, err)
        # the prepare still running when close returned is the proof that it
        # did not wait for it (K25); the time is only reported
        assert prep.is_alive(), f"close took {seconds:.3f} s and the prepare had ended: it waited (K25)"
        assert ctx.phase == kctx.Phase.READY
        prep.join(60)
        (kind, exe, _), = prep_out
        assert kind == "ok" and isinstance(exe, kctx.opencl.Executable), exe
        assert exe.id in ctx.prepared
        exe(cl.SVM(a), cl.SVM(a), cl.SVM(c), N, stream=env.queue)
        env.queue.finish()
        ctx.check()
        np.testing.assert_array_equal(c, 2 * a)
    finally:
        ctx.close()
        ctx.destroy()
    assert ctx.prepared == {}


def test_k33_prepare_raced_by_close_on_another_thread_never_raises_keyerror(env: Env) -> None:
    """Sixteen times: a prepare and a close started together on two threads.
    The prepare returns its executable or raises the status the library
    gives (InvalidState: the close won); the close succeeds or raises Busy
    (the prepare was in flight). Never KeyError (2 to 4 of 8 tries before
    issue 23); afterwards the context closes and lists nothing."""
    image = vadd_image()
    for _ in range(16):
        ctx = kctx.opencl.Context(env.queue)
        go = threading.Barrier(2)
        prep, prep_out = _thread(lambda: (go.wait(), ctx.prepare(image))[1])
        closer, close_out = _thread(lambda: (go.wait(), ctx.close())[1])
        prep.join(60)
        closer.join(60)
        (pkind, pval, _), = prep_out
        (ckind, cval, _), = close_out
        assert pkind == "ok" or isinstance(pval, kctx.InvalidState), pval
        assert ckind == "ok" or isinstance(cval, kctx.Busy), cval
        if pkind == "ok":
            assert isinstance(pval, kctx.opencl.Executable) and pval.size == len(image)
        ctx.close()
        assert ctx.prepared == {}
        ctx.destroy()


def test_k33_a_close_right_after_prepares_c_call_gives_no_keyerror(env: Env) -> None:
    """The window of issue 23's KeyError, made certain: a close on another
    thread completes just after kctx_prepare returned, before the binding
    builds the Executable. prepare returns it (the library prepared it)
    without reading the emptied registry again; the closed context lists
    nothing."""
    ctx = kctx.opencl.Context(env.queue)
    with close_right_after_prepare(ctx):
        exe = ctx.prepare(vadd_image())
    assert isinstance(exe, kctx.opencl.Executable) and exe.size == len(vadd_image())
    assert ctx.phase == kctx.Phase.CLOSED and ctx.prepared == {}
    ctx.destroy()


def test_k33_opencl_context_methods_raced_by_close_give_kctx_statuses(env: Env) -> None:
    """Every method of kctx.opencl.Context (and its Executable) called in a
    loop on one thread while another closes the context: each call succeeds
    or raises InvalidState / Busy / InvalidHandle, never another exception."""
    a = env.zeros()
    image = vadd_image()
    calls = {
        "prepare": lambda x, e: x.prepare(image),
        "launch": lambda x, e: x.launch(e.id, [cl.SVM(a), cl.SVM(a), cl.SVM(a), N], env.queue),
        "Executable": lambda x, e: e(cl.SVM(a), cl.SVM(a), cl.SVM(a), N, stream=env.queue),
        "check": lambda x, e: x.check(),
        "close": lambda x, e: x.close(),
        "live_objects": lambda x, e: x.live_objects,
        "binding": lambda x, e: x.binding,
        "prepared": lambda x, e: x.prepared,
        "repr": lambda x, e: repr(x),
    }
    for name, call in calls.items():
        ctx = kctx.opencl.Context(env.queue)
        exe = ctx.prepare(image)
        stop = threading.Event()

        def hammer() -> None:
            while not stop.is_set():
                try:
                    call(ctx, exe)
                except (kctx.InvalidState, kctx.Busy, kctx.InvalidHandle):
                    pass

        t, out = _thread(hammer)
        time.sleep(0.01)
        try:
            ctx.close()
        except kctx.Busy:  # a launch still in flight
            pass
        time.sleep(0.005)
        stop.set()
        t.join(60)
        assert out and out[0][0] == "ok", f"{name} raced by close raised {out[0][1]!r}"
        env.queue.finish()
        ctx.close()
        ctx.destroy()
        assert kctx.opencl.bound() is None  # every call gave the thread's binding back


# ---------------------------------------------------------------------------
# docs/opencl.md
# ---------------------------------------------------------------------------
def _doc_blocks() -> List[str]:
    return re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)


def test_the_docs_example_runs(device: Any, libdir: Path) -> None:
    """docs/opencl.md's first Python block is a complete program: it runs as
    written in a process of its own (unclosed contexts would warn, and
    ResourceWarning is made an error)."""
    blocks = _doc_blocks()
    assert blocks, "docs/opencl.md has no python block"
    for i, code in enumerate(blocks):
        compile(code, f"{DOC}:python block {i}", "exec")
    env = dict(os.environ, KCTX_LIB_DIR=str(libdir), PYTHONPATH=str(PACKAGE_DIR), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-W", "error::ResourceWarning", "-c", blocks[0]], env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "CheckReport(device_status=<Status.OK: 0>" in r.stdout and r.stdout.rstrip().endswith("ok"), r.stdout


def test_the_docs_example_passes_mypy_strict(tmp_path: Path) -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.skip("mypy is not installed: run `make deps` (scripts/install-deps.sh lists it)")
    example = tmp_path / "opencl_md_example.py"
    example.write_text(_doc_blocks()[0])
    env = dict(os.environ, MYPYPATH=str(PACKAGE_DIR))
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                        str(example)], env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert r.returncode == 0, f"mypy --strict on docs/opencl.md's example:\n{r.stdout}\n{r.stderr}"


# ---------------------------------------------------------------------------
# Issue 27: the strategy (docs/python.md, "Execution strategies")
# ---------------------------------------------------------------------------
def test_opencl_context_takes_a_strategy_and_refuses_one_the_platform_lacks(env: Env) -> None:
    """OpenCL offers host-ordered only: asking for it latches it; asking for
    resident is kctx_kernel_init's Unsupported naming what the platform
    offers, the new context is destroyed and nothing stays held; a bad
    value is refused before anything is bound or created."""
    n = _pair_number(env)
    baseline = kctx.opencl.live_objects(n).held
    with kctx.opencl.Context(env.queue, strategy="host-ordered") as ctx:
        assert ctx.strategy == kctx.Strategy.HOST_ORDERED
    with pytest.raises(kctx.Unsupported, match="host-ordered"):
        kctx.opencl.Context(env.queue, strategy=kctx.Strategy.RESIDENT)
    with pytest.raises(kctx.KctxValueError, match="strategy"):
        kctx.opencl.Context(env.queue, strategy="gpu-resident")
    assert kctx.opencl.live_objects(n).held == baseline and kctx.opencl.bound() is None


def test_opencl_caps_and_capturable_say_launch_eagerly(env: Env) -> None:
    """OpenCL has no capture: ctx.caps says so (as kctx.platform_caps), and
    capturable(id) of a prepared id raises Unsupported (kctx_capturable's
    order: the platform before the id), on any thread, with no binding."""
    with kctx.opencl.Context(env.queue) as ctx:
        exe = ctx.prepare(vadd_image())
        assert ctx.caps.has_capture is False and ctx.caps.strategy is kctx.Strategy.HOST_ORDERED
        assert kctx.platform_caps("opencl").strategies == {kctx.Strategy.HOST_ORDERED}
        out: List[BaseException] = []

        def ask() -> None:
            try:
                ctx.capturable(exe.id)
            except BaseException as e:
                out.append(e)

        t = threading.Thread(target=ask)
        t.start()
        t.join(10)
        assert len(out) == 1 and isinstance(out[0], kctx.Unsupported) and "capture" in str(out[0]), out
        with pytest.raises(kctx.Unsupported):
            ctx.capturable(exe.id + 99)


def test_opencl_context_flushes_its_trace_from_any_thread(env: Env, tmp_path: Path) -> None:
    """kctx.opencl.Context.flush_trace binds its pair around the flush (K5:
    the copy-back is a platform call on the borrowed device), so a thread
    that lends nothing can flush; the thread's binding is given back."""
    import json

    a, c = env.svm(np.arange(N)), env.zeros()
    path = tmp_path / "ocl.json"
    with kctx.opencl.Context(env.queue, trace_path=path) as ctx:
        ctx.prepare(vadd_image())(cl.SVM(a), cl.SVM(a), cl.SVM(c), N, stream=env.queue)
        env.queue.finish()
        t, out = _thread(ctx.flush_trace)
        t.join(30)
        assert out and out[0][0] == "ok", out
        names = [e.get("name") for e in json.loads(path.read_text())["traceEvents"]]
        assert names.count("launch") == 1, names
        assert kctx.opencl.bound() is None


# ---------------------------------------------------------------------------
# Issue 27: a fault sweep from Python (kctx.arm_fault, kctx's own seam)
# ---------------------------------------------------------------------------
def _finish_within(queue: Any, seconds: float) -> bool:
    t, out = _thread(queue.finish)
    t.join(seconds)
    return not t.is_alive()


def test_k9_k24_fault_sweep_of_a_launch_fails_each_platform_call_in_turn(env: Env) -> None:
    """src/conformance/probes_sweep.c's sweep, from Python: count the
    platform calls one launch makes on this thread (P preflight calls, then
    E enqueues), then for k = 1.. fail the k-th call once. kctx_launch's
    contract (kctx.h): a failing preflight call is a refusal and the
    context stays READY (K9), the same launch then succeeds; a failing first
    enqueue is PlatformError with the context READY; a failure once
    enqueueing started is PlatformError and poisons it (runtime_error set,
    later launches Poisoned), and kctx drives the chain back so the queue
    drains (K24). Every message says "injected fault"; close then brings
    kctx's OpenCL objects back to the baseline (K11)."""
    a, b = env.svm(np.arange(N)), env.svm(np.full(N, 2.0))
    image = vadd_image()
    n = _pair_number(env)
    baseline = kctx.opencl.live_objects(n).held
    ops = kctx.faults.ENQUEUE_OPS

    def launch(ctx: kctx.opencl.Context, c: Any) -> None:
        ctx.launch(1, [cl.SVM(a), cl.SVM(b), cl.SVM(c), N], env.queue)

    def counts() -> Tuple[int, int]:
        return kctx.thread_platform_calls(), sum(kctx.thread_platform_calls(op) for op in ops)

    with kctx.opencl.Context(env.queue) as ctx:  # calibration
        ctx.prepare(1, image)
        c = env.zeros()
        (c0, e0) = counts()
        launch(ctx, c)
        (c1, e1) = counts()
        env.queue.finish()
        np.testing.assert_array_equal(c, a + b)
    total, enqueues = c1 - c0, e1 - e0
    preflight = total - enqueues
    assert 0 < preflight < total, (total, enqueues)
    tally = {"refused": 0, "poisoned": 0}
    k = 1
    while k <= total + 1:
        c = env.zeros()
        ctx = kctx.opencl.Context(env.queue)
        try:
            ctx.prepare(1, image)
            err = None
            with kctx.arm_fault(kctx.PlatformOp.ANY, nth=k) as fault:
                try:
                    launch(ctx, c)
                except kctx.KctxError as e:
                    err = e
            if fault.hits == 0:  # past the launch's last call: it ran clean
                assert k == total + 1 and err is None, (k, total, err)
                assert _finish_within(env.queue, 30)
                np.testing.assert_array_equal(c, a + b)
                break
            started = k >= preflight + 2  # an enqueue before the failing call succeeded
            where = f"call {k} of {total} ({preflight} preflight)"
            assert err is not None and "injected fault" in err.message, (where, err)
            if k > preflight:
                assert isinstance(err, kctx.PlatformError), (where, err)
            assert _finish_within(env.queue, 30), f"{where}: the queue does not drain (K24)"
            if started:
                assert ctx.phase == kctx.Phase.POISONED, (where, ctx.phase)
                slot = ctx.runtime_error
                assert slot is not None and slot.status == kctx.Status.PLATFORM_ERROR, (where, slot)
                with pytest.raises(kctx.Poisoned):
                    launch(ctx, c)
                tally["poisoned"] += 1
            else:
                assert ctx.phase == kctx.Phase.READY and ctx.runtime_error is None, (where, ctx.phase)
                launch(ctx, c)  # the refusal left a working context
                env.queue.finish()
                np.testing.assert_array_equal(c, a + b)
                tally["refused"] += 1
        finally:
            kctx.clear_faults()
            ctx.close()
            ctx.destroy()
        assert kctx.opencl.live_objects(n).held == baseline, f"call {k}: close left objects held"
        k += 1
    assert k == total + 1, f"the sweep found {k - 1} calls, the calibration {total}"
    assert tally == {"refused": preflight + 1, "poisoned": enqueues - 1}, (tally, total, preflight)
    print(f"fault sweep of an opencl launch: {total} platform calls, {preflight} preflight; {tally}")
