"""The cuda platform from Python (issue 15; docs/cuda.md), on the CUDA
driver double: a CUDA stream and device pointers passed as plain integers,
as a PyTorch or CuPy user passes ``stream.cuda_stream`` / ``stream.ptr`` and
``tensor.data_ptr()``. The double runs on the sim, so the framework side is
played with kctx.sim (its stream handles and device addresses are the
double's CUstream and CUdeviceptr values). Each check runs in a fresh
interpreter: the platform registry reads KCTX_CUDA_DRIVER once per process.
K18: the caller stream is a native handle (an integer, 0 included on CUDA).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
from conftest import PACKAGE_DIR  # noqa: E402
DOUBLE = os.environ.get("KCTX_TEST_CUDA_DOUBLE", "")
IMAGES = os.environ.get("KCTX_TEST_CUDA_IMAGES", "")

pytestmark = pytest.mark.skipif(not DOUBLE, reason="the cuda platform is not built (no nvcc)")

SCRIPT = textwrap.dedent("""
    import struct, sys
    import kctx
    from kctx import sim
    n = 1000
    image = open(sys.argv[1] + "/vector_add.kctx", "rb").read()
    with sim.Stream() as s, sim.DeviceBuffer(4 * n) as a, sim.DeviceBuffer(4 * n) as b, \\
            sim.DeviceBuffer(4 * n) as c:
        a.copy_from_host(struct.pack(f"{n}f", *range(n)))
        b.copy_from_host(struct.pack(f"{n}f", *(2.0 * i for i in range(n))))
        with kctx.Context("cuda") as ctx:
            ctx.kernel_init()
            ctx.prepare(1, image)
            stream = int(s.handle)                    # a CUstream, as an integer
            args = [c.__kctx_tensor__() for c in (a, b, c)] + [n]   # (CUdeviceptr, bytes)
            ctx.launch(1, args, stream=0)             # the legacy default stream
            ctx.launch(1, args, stream=stream)        # after it: one launch at a time (K23)
            s.synchronize()                           # both ran: close finds nothing running
        out = struct.unpack(f"{n}f", bytes(c.copy_to_host()))
        bad = sum(1 for i in range(n) if out[i] != 3.0 * i)
        print(f"cuda from python: {n - bad}/{n} elements right")
        sys.exit(1 if bad else 0)
""")


def run(env_extra):
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR), **env_extra)
    return subprocess.run([sys.executable, "-c", SCRIPT, IMAGES], capture_output=True, text=True,
                          env=env, timeout=120)


def test_integer_stream_and_pointers_on_the_cuda_platform():
    p = run({"KCTX_CUDA_DRIVER": DOUBLE})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1000/1000 elements right" in p.stdout


def test_without_a_driver_the_context_is_refused_with_the_reason():
    p = run({"KCTX_CUDA_DRIVER": "/nonexistent/libcuda.so.1"})
    assert p.returncode != 0
    assert "driver not found" in p.stderr, p.stderr


# ---------------------------------------------------------------------------
# kctx.cuda (issue 27): the thread's current CUDA context and a framework's
# streams lent as kctx.opencl lends a PyOpenCL queue. Each check is a fresh
# interpreter (the registry reads KCTX_CUDA_DRIVER once per process).
# ---------------------------------------------------------------------------
PRELUDE = textwrap.dedent("""
    import struct, sys, threading, time
    import kctx
    import kctx.cuda
    from kctx import sim
    DOUBLE, IMAGES = sys.argv[1], sys.argv[2]
    N = 1000
    with open(IMAGES + "/vector_add.kctx", "rb") as f:
        IMAGE = f.read()

    def buffers():
        a, b, c = sim.DeviceBuffer(4 * N), sim.DeviceBuffer(4 * N), sim.DeviceBuffer(4 * N)
        a.copy_from_host(struct.pack(f"{N}f", *range(N)))
        b.copy_from_host(struct.pack(f"{N}f", *(2.0 * i for i in range(N))))
        return a, b, c

    def right(c):
        out = struct.unpack(f"{N}f", bytes(c.copy_to_host()))
        return all(out[i] == 3.0 * i for i in range(N))

    class CudaArray:  # a torch / CuPy tensor as the resolver sees it (__cuda_array_interface__ v3)
        def __init__(self, ptr, n):
            self.__cuda_array_interface__ = {"version": 3, "shape": (n,), "typestr": "<f4",
                                             "data": (ptr, False), "strides": None, "stream": None}

    class TorchStream:  # torch.cuda.Stream
        def __init__(self, s): self.cuda_stream = int(s.handle)

    class CuPyStream:  # cupy.cuda.Stream
        def __init__(self, s): self.ptr = int(s.handle)

    class CUstream:  # cuda-python's cuda.bindings.driver.CUstream: int() and getPtr()
        def __init__(self, s): self._h = int(s.handle)
        def __int__(self): return self._h
        def getPtr(self): return id(self)

    class CoreStream:  # cuda.core: the __cuda_stream__ protocol
        def __init__(self, s): self._h = int(s.handle)
        def __cuda_stream__(self): return (0, self._h)

    class OpenCLQueue:  # pyopencl.CommandQueue
        int_ptr = 0x1234
""")


def run_script(body, driver=None):
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR), KCTX_CUDA_DRIVER=driver or DOUBLE)
    return subprocess.run([sys.executable, "-W", "error::ResourceWarning", "-c",
                           PRELUDE + textwrap.dedent(body), DOUBLE, IMAGES],
                          capture_output=True, text=True, env=env, timeout=120)


def assert_ok(p):
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.rstrip().endswith("ok"), p.stdout + p.stderr


def test_kctx_cuda_imports_without_loading_the_driver():
    """Importable where no driver is: importing kctx.cuda loads no libcuda;
    the first use does (the registry's probe)."""
    assert_ok(run_script("""
        maps = lambda: open("/proc/self/maps").read()
        assert DOUBLE not in maps(), "import kctx.cuda loaded the driver"
        assert kctx.cuda.driver_calls("cuInit") == 0        # the counter table loads nothing either
        assert DOUBLE not in maps()
        assert kctx.cuda.availability().available
        assert DOUBLE in maps(), "availability() did not load the driver"
        print("ok")
    """))


def test_without_a_driver_kctx_cuda_context_raises_the_platforms_reason():
    p = run_script("""
        reason = kctx.cuda.availability().reason
        assert "driver not found" in reason, reason
        for make in (kctx.cuda.require, kctx.cuda.Context):
            try:
                make()
            except kctx.Unsupported as e:
                assert str(e) == "kctx.cuda: the cuda platform is unavailable on this machine: " + reason, str(e)
            else:
                raise AssertionError(f"{make.__name__} without a driver did not raise")
        assert kctx.abandoned_contexts() == []
        print("ok")
    """, driver="/nonexistent/libcuda.so.1")
    assert_ok(p)


def test_context_borrows_the_current_context_and_takes_framework_streams_K4_K18():
    """kctx.cuda.Context() borrows the thread's current CUDA context (the
    sim's current device on the double) and never sets, creates or destroys
    one (K4); every stream form resolves to its CUstream and launches; CUDA
    arrays (__cuda_array_interface__) are tensors; results are right."""
    assert_ok(run_script("""
        dev = 1 if sim.device_count() > 1 else 0   # the framework made device 1's context current
        sim.set_device(dev)
        a, b, c = buffers()
        s = sim.Stream()
        forms = [int(s.handle), TorchStream(s), CuPyStream(s), CUstream(s), CoreStream(s), s]
        for f in forms:
            assert kctx.cuda.stream_handle_of(f) == int(s.handle), (type(f).__name__, kctx.cuda.stream_handle_of(f))
        with kctx.cuda.Context() as ctx:
            assert ctx.device == dev == sim.get_device() and ctx.platform == "cuda", (ctx.device, dev)
            assert ctx.mode == kctx.Mode.KERNEL and ctx.strategy == kctx.Strategy.HOST_ORDERED
            exe = ctx.prepare(IMAGE)
            args = [CudaArray(x.ptr, N) for x in (a, b, c)]
            for f in forms:
                exe(*args, N, stream=f)
            ctx.launch(exe.id, [a, b, c, N], stream=0)     # the legacy default stream, eagerly
            s.synchronize()
            sim.device_synchronize()   # the default stream's launch too (s's sync does not cover it)
            ctx.check()
        assert right(c)
        for entry in ("cuCtxSetCurrent", "cuCtxCreate", "cuCtxDestroy", "cuCtxPushCurrent", "cuCtxPopCurrent",
                      "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxReset"):
            assert kctx.cuda.driver_calls(entry) == 0, entry
        assert kctx.cuda.driver_calls("cuLaunchKernel") > 0
        s.destroy(); [x.free() for x in (a, b, c)]
        print("ok")
    """))


def test_refusals_before_any_c_call_K18():
    """A PyOpenCL queue is no CUDA stream (KctxTypeError); a released CUDA
    array (address 0) is refused with InvalidArgument by the resolver; both
    before any platform call, the context still READY; a non-str entry."""
    assert_ok(run_script("""
        a, b, c = buffers()
        s = sim.Stream()
        with kctx.cuda.Context() as ctx:
            exe = ctx.prepare(IMAGE)
            calls = ctx.platform_calls
            try:
                ctx.launch(exe.id, [a, b, c, N], stream=OpenCLQueue())
            except kctx.KctxTypeError as e:
                assert "not a CUDA stream" in str(e), str(e)
            else:
                raise AssertionError("a PyOpenCL queue was taken as a CUDA stream")
            try:
                exe(CudaArray(0, N), b, c, N, stream=s)
            except kctx.InvalidArgument as e:
                assert "released or never-allocated" in str(e) and "(K18)" in str(e), str(e)
            else:
                raise AssertionError("a released CUDA array was launched")
            assert ctx.platform_calls == calls and ctx.phase == kctx.Phase.READY
            try:
                kctx.cuda.driver_calls(b"cuInit")
            except kctx.KctxTypeError:
                pass
            else:
                raise AssertionError("driver_calls took bytes")
            try:
                kctx.cuda.driver_calls("cuNoSuchEntry")
            except kctx.NotFound:
                pass
            else:
                raise AssertionError("driver_calls of an unknown entry")
        s.destroy(); [x.free() for x in (a, b, c)]
        print("ok")
    """))


def test_constructor_refusals_destroy_the_new_context_K6():
    """A second kernel context on the same CUDA context is Busy (K6); a
    strategy CUDA does not offer is Unsupported naming what it offers; one
    that is none is KctxValueError before any C call. Nothing is left."""
    assert_ok(run_script("""
        with kctx.cuda.Context():
            try:
                kctx.cuda.Context()
            except kctx.Busy:
                pass
            else:
                raise AssertionError("two kernel contexts on one CUDA context")
        try:
            kctx.cuda.Context(strategy="resident")
        except kctx.Unsupported as e:
            assert "host-ordered" in str(e), str(e)
        else:
            raise AssertionError("resident accepted on cuda")
        try:
            kctx.cuda.Context(strategy="fastest")
        except kctx.KctxValueError:
            pass
        else:
            raise AssertionError("a strategy that is none")
        assert kctx.abandoned_contexts() == []
        with kctx.cuda.Context() as again:   # nothing held the claim: a new one inits
            assert again.phase == kctx.Phase.READY
        print("ok")
    """))


def test_racing_close_from_another_thread_K33():
    """Thread A launches in a loop while thread B closes: each launch either
    succeeds or gets the status of a call that lost the race (InvalidState
    once closed, Busy), never another exception; B's close succeeds or is
    Busy (a launch in flight) and is retried; once close returned the
    context is CLOSED and A's next launch is InvalidState. K4 still holds."""
    assert_ok(run_script("""
        a, b, c = buffers()
        s = sim.Stream()
        wins = 0
        for round in range(5):
            ctx = kctx.cuda.Context()
            exe = ctx.prepare(IMAGE)
            go, stop, errors, launched = threading.Barrier(2), threading.Event(), [], [0]
            def hammer():
                go.wait()
                while not stop.is_set():
                    try:
                        exe(a, b, c, N, stream=s)
                        launched[0] += 1
                        time.sleep(0)   # a window between launches for B
                    except (kctx.InvalidState, kctx.Busy):
                        pass
                    except BaseException as e:
                        errors.append(e)
                        return
            t = threading.Thread(target=hammer, daemon=True)
            t.start()
            go.wait()
            time.sleep(0.002)
            won = False
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:  # racing closes while A launches
                try:
                    ctx.close()
                    won = True
                    break
                except kctx.Busy:       # A's launch in flight: nothing changed
                    time.sleep(0.0002)
            if won:
                assert ctx.phase == kctx.Phase.CLOSED, ctx.phase
                try:
                    exe(a, b, c, N, stream=s)
                except kctx.InvalidState:
                    pass
                else:
                    raise AssertionError("a launch after close was accepted")
            time.sleep(0.002)      # A goes on against the (maybe) closed context
            stop.set()
            t.join(10)
            assert not t.is_alive() and not errors, errors
            s.synchronize()
            ctx.close()            # closes now, or again (a closed context closes)
            assert ctx.phase == kctx.Phase.CLOSED
            ctx.destroy()
            wins += won
            assert ctx.prepared == {}
        assert kctx.cuda.driver_calls("cuCtxSetCurrent") == 0
        s.destroy(); [x.free() for x in (a, b, c)]
        print(f"racing closes won: {wins}/5")
        assert wins > 0, "no racing close ever won: the race was not run"
        print("ok")
    """))


def test_fault_sweep_of_the_constructor_and_a_launch():
    """kctx.arm_fault on the cuda platform (kctx's own seam): each platform
    call of kctx.cuda.Context() failed in turn is refused with the injected
    status, leaves no context behind (also where the init left it CLOSING:
    the upload's wait failed) and the double's objects (the sim's
    streams, events, modules, allocations) at their baseline; each call of
    a launch failed in turn raises with the context READY (refused before
    enqueueing) or POISONED (K35), and close releases everything (K24, K26)."""
    assert_ok(run_script("""
        a, b, c = buffers()
        s = sim.Stream()
        def held():
            return sim.object_counts(0), sim.mem_stats(0)
        with kctx.cuda.Context():   # the driver's once-per-device objects exist from here on
            pass
        baseline = held()
        before = kctx.thread_platform_calls()
        with kctx.cuda.Context() as ctx:
            init_calls = kctx.thread_platform_calls() - before
            exe = ctx.prepare(IMAGE)
            before = kctx.thread_platform_calls()
            exe(a, b, c, N, stream=s)
            launch_calls = kctx.thread_platform_calls() - before
            s.synchronize()
        assert held() == baseline, (held(), baseline)
        assert init_calls > 0 and launch_calls > 0, (init_calls, launch_calls)
        refused = []
        for k in range(1, init_calls + 1):
            made = None
            with kctx.arm_fault(kctx.PlatformOp.ANY, nth=k) as fault:
                try:
                    made = kctx.cuda.Context()
                except kctx.KctxError as e:
                    assert "injected fault" in e.message, (k, e.message)
                    # a refused init may leave the context CLOSING (an init upload whose wait
                    # failed, kctx.h): the constructor closes and destroys it all the same
                    assert getattr(e, "context", None) is None, (k, e.context.phase)
                    refused.append(k)
            assert fault.hits == 1, k
            if made is not None:   # a failed call the init recovers from (a poll it repeats)
                assert made.phase == kctx.Phase.READY, (k, made.phase)
                made.close()
                made.destroy()
            assert kctx.abandoned_contexts() == [] and held() == baseline, (k, held(), baseline)
        assert len(refused) >= init_calls - 2, (refused, init_calls)
        phases = []
        for k in range(1, launch_calls + 1):
            with kctx.cuda.Context() as ctx:
                exe = ctx.prepare(IMAGE)
                with kctx.arm_fault(kctx.PlatformOp.ANY, nth=k) as fault:
                    try:
                        exe(a, b, c, N, stream=s)
                    except kctx.KctxError as e:
                        assert "injected fault" in e.message, (k, e.message)
                        phases.append(ctx.phase)
                    else:
                        raise AssertionError(f"launch call {k} failed, the launch succeeded")
                assert fault.hits == 1, k
                s.synchronize()    # the chain was driven back (K24)
            assert held() == baseline, (k, held(), baseline)
        assert set(phases) <= {kctx.Phase.READY, kctx.Phase.POISONED} and kctx.Phase.POISONED in phases, phases
        print(f"init calls {init_calls} ({len(refused)} refused), launch calls {launch_calls}: "
              f"{[p.name for p in phases]}")
        s.destroy(); [x.free() for x in (a, b, c)]
        print("ok")
    """))
