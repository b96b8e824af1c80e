"""The acl platform from Python (issue 25 item 6; docs/acl.md, "Python"):
``kctx.Context("acl")`` and ``kctx.acl.Context()`` on the ACL driver double
(<build>/platform/acl/double/libascendcl.so, named by KCTX_ACL_LIBRARY).

There is no torch_npu here, so its objects are played by stand-ins shaped as
torch_npu documents them: ``torch_npu.npu.Stream`` has ``npu_stream`` (the
``aclrtStream`` as an int, ``PyLong_FromVoidPtr`` of it), an NPU tensor has
``device`` (``type == "npu"``, ``index``), ``data_ptr()``, ``numel()``,
``element_size()``, ``is_contiguous()`` and ``untyped_storage().nbytes()``.
The framework side (``aclrtSetDevice``, streams, ``aclrtMalloc``, copies) is
played with the double's own ACL entries through ctypes, as torch_npu calls
them; the double's call counters (``kacl_double_calls``, a test hook) show
what kctx called. Each check that loads the double runs in a fresh
interpreter: the platform registry reads KCTX_ACL_LIBRARY once per process.
The resolver's NPU rules need no platform and run in this process.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kctx
import kctx.acl
import kctx.cuda
from kctx import interop

REPO = Path(__file__).resolve().parents[2]
from conftest import PACKAGE_DIR  # noqa: E402
DOUBLE = os.environ.get("KCTX_TEST_ACL_DOUBLE", "")
IMAGES = os.environ.get("KCTX_TEST_ACL_IMAGES", "")

needs_double = pytest.mark.skipif(
    not DOUBLE or not Path(DOUBLE).is_file(),
    reason="the acl platform's driver double is not built (platform/acl/double: KCTX_TEST_ACL_DOUBLE unset)")


# ---------------------------------------------------------------------------
# Stand-ins for torch_npu's objects (shared by this process and the scripts)
# ---------------------------------------------------------------------------
STAND_INS = textwrap.dedent("""
    class NpuDevice:  # torch.device("npu", index)
        def __init__(self, index): self.type, self.index = "npu", index

    class OtherDevice:  # torch.device("cpu") / torch.device("cuda", 0)
        def __init__(self, kind): self.type, self.index = kind, None

    class Storage:  # torch.UntypedStorage
        def __init__(self, nbytes): self._n = nbytes
        def nbytes(self): return self._n

    class NpuTensor:  # a torch tensor on npu (float32 unless told)
        def __init__(self, ptr, numel, index=0, itemsize=4, contiguous=True, storage=None, kind=None):
            self._ptr, self._numel, self._itemsize, self._contiguous = ptr, numel, itemsize, contiguous
            self._storage = numel * itemsize if storage is None else storage
            self.device = NpuDevice(index) if kind is None else OtherDevice(kind)
        def data_ptr(self): return self._ptr
        def numel(self): return self._numel
        def element_size(self): return self._itemsize
        def is_contiguous(self): return self._contiguous
        def untyped_storage(self): return Storage(self._storage)
        def __index__(self): return 7   # a 0-d integer torch tensor has one: it is still no scalar

    class NpuStream:  # torch_npu.npu.Stream
        def __init__(self, h): self.npu_stream = h

    class Handle:  # an object with .handle (the resolver's convention)
        def __init__(self, h): self.handle = h

    class TorchCudaStream:  # torch.cuda.Stream
        cuda_stream = 0x1000

    class CoreStream:  # cuda.core
        def __cuda_stream__(self): return (0, 0x1000)

    class CuPyStream:  # cupy.cuda.Stream
        ptr = 0x1000

    class OpenCLQueue:  # pyopencl.CommandQueue
        int_ptr = 0x1234

    class CudaArray:  # a torch CUDA / CuPy tensor (__cuda_array_interface__ v3)
        def __init__(self, ptr, n):
            self.__cuda_array_interface__ = {"version": 3, "shape": (n,), "typestr": "<f4",
                                             "data": (ptr, False), "strides": None, "stream": None}
""")
exec(STAND_INS)  # noqa: S102 - the same classes here, for the resolver's in-process checks


# ---------------------------------------------------------------------------
# The resolver's NPU rules (no platform needed)
# ---------------------------------------------------------------------------
def test_npu_tensor_stand_ins_are_tensors_K18():
    """An NPU tensor is (data_ptr(), numel() * element_size()) (K18: a
    tensor is a device address and a size); a 0-d one is no scalar even
    with __index__; its device index is checked against the context's."""
    t = NpuTensor(0x10000, 1000)  # noqa: F821
    assert interop.tensor_arg(t, "t") == (0x10000, 4000)
    assert interop.tensor_arg(NpuTensor(0x10040, 3, itemsize=2), "t") == (0x10040, 6)  # noqa: F821
    assert interop.scalar_value(t, "t") is None
    arr, n = interop.marshal_args([t, 5])
    assert n == 2 and (arr[0].value, arr[0].size) == (0x10000, 4000) and (arr[1].value, arr[1].size) == (5, 0)
    assert interop.tensor_arg(NpuTensor(0x10000, 4, index=1), "t", lambda: 1) == (0x10000, 16)  # noqa: F821
    with pytest.raises(kctx.KctxValueError, match="on device 1, but the context's device is 0"):
        interop.tensor_arg(NpuTensor(0x10000, 4, index=1), "t", lambda: 0)  # noqa: F821
    with pytest.raises(kctx.KctxValueError, match="non-contiguous NPU tensor"):
        interop.tensor_arg(NpuTensor(0x10000, 4, contiguous=False), "t")  # noqa: F821


def test_released_npu_tensors_are_refused_K18():
    """A tensor whose storage was released (untyped_storage().nbytes() 0),
    at address 0 or of 0 elements is InvalidArgument, as the library
    refuses a NULL or empty tensor (K18)."""
    for t, what in ((NpuTensor(0x10000, 4, storage=0), "storage was released"),  # noqa: F821
                    (NpuTensor(0, 4), "device address 0"),  # noqa: F821
                    (NpuTensor(0x10000, 0), "zero-length")):  # noqa: F821
        with pytest.raises(kctx.InvalidArgument, match=what) as e:
            interop.tensor_arg(t, "args[0]")
        assert "(K18)" in str(e.value)


def test_the_resolver_takes_torch_npu_streams_K18():
    """``.npu_stream`` is the caller's aclrtStream (never stored, K18)."""
    assert interop.stream_handle(NpuStream(0x5000)) == 0x5000  # noqa: F821
    assert kctx.acl.stream_handle_of(NpuStream(0x5000)) == 0x5000  # noqa: F821
    assert kctx.acl.stream_handle_of(0x5000) == 0x5000
    assert kctx.acl.stream_handle_of(Handle(0x5000)) == 0x5000  # noqa: F821
    with pytest.raises(kctx.KctxTypeError, match="npu_stream must be an int"):
        kctx.acl.stream_handle_of(NpuStream("0x5000"))  # noqa: F821
    with pytest.raises(kctx.InvalidArgument):
        kctx.acl.stream_handle_of(NpuStream(-1))  # noqa: F821
    with pytest.raises(kctx.KctxTypeError, match="torch_npu stream"):
        kctx.cuda.stream_handle_of(NpuStream(0x5000))  # noqa: F821  (an aclrtStream is no CUstream)


# ---------------------------------------------------------------------------
# On the double: each check a fresh interpreter
# ---------------------------------------------------------------------------
PRELUDE = STAND_INS + textwrap.dedent("""
    import ctypes, struct, sys, threading
    from ctypes import byref, c_char_p, c_int, c_size_t, c_uint32, c_uint64, c_void_p
    import kctx
    import kctx.acl
    from kctx import sim
    DOUBLE, IMAGES = sys.argv[1], sys.argv[2]
    N = 1000
    with open(IMAGES + "/vector_add.kctx", "rb") as f:
        IMAGE = f.read()

    class Acl:  # the framework side: the double's ACL entries, as torch_npu calls them
        def __init__(self):
            lib = ctypes.CDLL(DOUBLE)   # the library the adapter loads (KCTX_ACL_LIBRARY)
            for name, args in (("aclrtSetDevice", [c_int]), ("aclrtGetDevice", [ctypes.POINTER(c_int)]),
                               ("aclrtGetDeviceCount", [ctypes.POINTER(c_uint32)]),
                               ("aclrtCreateStream", [ctypes.POINTER(c_void_p)]),
                               ("aclrtDestroyStream", [c_void_p]), ("aclrtSynchronizeStream", [c_void_p]),
                               ("aclrtMalloc", [ctypes.POINTER(c_void_p), c_size_t, c_int]),
                               ("aclrtFree", [c_void_p]),
                               ("aclrtMemcpy", [c_void_p, c_size_t, c_void_p, c_size_t, c_int])):
                fn = getattr(lib, name)
                fn.argtypes, fn.restype = args, c_int
            lib.kacl_double_calls.argtypes, lib.kacl_double_calls.restype = [c_char_p], c_uint64
            lib.kacl_double_calls_reset.argtypes, lib.kacl_double_calls_reset.restype = [], None
            self.lib = lib
        def ok(self, name, *args):
            st = getattr(self.lib, name)(*args)
            assert st == 0, f"{name}: ACL error {st}"
        def calls(self, name):
            n = self.lib.kacl_double_calls(name.encode())
            assert n != 2**64 - 1, f"the double does not export {name}"
            return n
        def stream(self):
            s = c_void_p()
            self.ok("aclrtCreateStream", byref(s))
            return s.value
        def malloc(self, nbytes):
            p = c_void_p()
            self.ok("aclrtMalloc", byref(p), nbytes, 0)
            return p.value
        def to_device(self, ptr, data):
            self.ok("aclrtMemcpy", ptr, len(data), data, len(data), 1)      # HOST_TO_DEVICE
        def from_device(self, ptr, nbytes):
            out = ctypes.create_string_buffer(nbytes)
            self.ok("aclrtMemcpy", out, nbytes, ptr, nbytes, 2)             # DEVICE_TO_HOST
            return out.raw

    acl = Acl()
    # acl_abi.h KACL_NEVER, as far as the double exports them (K4: never)
    NEVER = ("aclInit", "aclFinalize", "aclrtSetDevice", "aclrtResetDevice", "aclrtResetDeviceForce",
             "aclrtSetCurrentContext", "aclrtCreateContext", "aclrtDestroyContext", "aclrtSynchronizeDevice",
             "aclrtSynchronizeDeviceWithTimeout", "aclrtSetExceptionInfoCallback")
    # K19: none of these on the launch path
    NOT_ON_LAUNCH = ("aclrtSynchronizeStream", "aclrtSynchronizeStreamWithTimeout", "aclrtStreamQuery",
                     "aclrtQueryEventStatus", "aclrtSynchronizeEvent", "aclrtSynchronizeEventWithTimeout",
                     "aclrtMemcpy", "aclrtMemset", "aclrtMalloc", "aclrtFree", "aclrtCreateStream",
                     "aclrtCreateStreamWithConfig", "aclrtCreateEvent", "aclrtCreateEventWithFlag",
                     "aclrtCreateEventExWithFlag")
    ALL = NEVER + NOT_ON_LAUNCH + ("aclrtGetDevice", "aclrtLaunchKernelWithHostArgs", "aclrtRecordEvent",
                                   "aclrtStreamWaitEvent", "aclmdlRICaptureGetInfo", "aclrtMemcpyAsync")

    def held(binaries=True):
        # what kctx holds on the double now, from its counters since the last
        # reset: streams, events, allocations (and loaded binaries)
        n = acl.calls
        out = {"streams": n("aclrtCreateStream") + n("aclrtCreateStreamWithConfig") - n("aclrtDestroyStream")
                          - n("aclrtDestroyStreamForce"),
               "events": n("aclrtCreateEvent") + n("aclrtCreateEventWithFlag") + n("aclrtCreateEventExWithFlag")
                         - n("aclrtDestroyEvent"),
               "allocations": n("aclrtMalloc") - n("aclrtFree")}
        if binaries:   # a refused load is counted too (the double counts failed calls)
            out["binaries"] = n("aclrtBinaryLoadFromData") - n("aclrtBinaryUnLoad")
        return out

    def buffers():
        a, b, c = acl.malloc(4 * N), acl.malloc(4 * N), acl.malloc(4 * N)
        acl.to_device(a, struct.pack(f"{N}f", *range(N)))
        acl.to_device(b, struct.pack(f"{N}f", *(2.0 * i for i in range(N))))
        acl.to_device(c, bytes(4 * N))
        return a, b, c

    def right(c):
        out = struct.unpack(f"{N}f", acl.from_device(c, 4 * N))
        return sum(1 for i in range(N) if out[i] == 3.0 * i)

    def free(streams, ptrs):
        for s in streams:
            acl.ok("aclrtDestroyStream", s)
        for p in ptrs:
            acl.ok("aclrtFree", p)
""")


def run_script(body, library=None, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR), KCTX_ACL_LIBRARY=library or DOUBLE,
               **(env_extra or {}))
    env.pop("KCTX_STRATEGY", None)
    return subprocess.run([sys.executable, "-W", "error::ResourceWarning", "-c",
                           PRELUDE + textwrap.dedent(body), DOUBLE, IMAGES],
                          capture_output=True, text=True, env=env, timeout=180)


def assert_ok(p):
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.rstrip().endswith("ok"), p.stdout + p.stderr


@needs_double
def test_kctx_acl_imports_without_loading_the_library():
    """Importing kctx.acl loads no ACL library; availability() loads it and
    makes no ACL call (the framework owns aclInit, K4)."""
    assert_ok(run_script_import())


def run_script_import():
    # The prelude loads the double itself (the framework side); this check
    # must not, so it is a script of its own.
    code = textwrap.dedent("""
        import ctypes, sys
        import kctx, kctx.acl
        maps = lambda: open("/proc/self/maps").read()
        assert sys.argv[1] not in maps(), "import kctx.acl loaded the ACL library"
        where = kctx.acl.availability()
        assert where.available and where.caps is not None, where.reason
        assert sys.argv[1] in maps(), "availability() did not load the ACL library"
        lib = ctypes.CDLL(sys.argv[1])
        lib.kacl_double_calls.argtypes, lib.kacl_double_calls.restype = [ctypes.c_char_p], ctypes.c_uint64
        for e in ("aclInit", "aclrtSetDevice", "aclrtGetDevice", "aclrtCreateStream", "aclrtMalloc"):
            assert lib.kacl_double_calls(e.encode()) == 0, e
        assert kctx.acl.require() == where.caps
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR), KCTX_ACL_LIBRARY=DOUBLE)
    return subprocess.run([sys.executable, "-c", code, DOUBLE], capture_output=True, text=True, env=env,
                          timeout=120)


@needs_double
def test_without_a_library_kctx_acl_raises_the_platforms_reason():
    """No ACL library: availability says why; require() and the constructor
    raise Unsupported with that reason; nothing is left."""
    code = textwrap.dedent("""
        import kctx, kctx.acl
        where = kctx.acl.availability()
        assert where.built and not where.available and where.reason, where
        for make in (kctx.acl.require, kctx.acl.Context):
            try:
                make()
            except kctx.Unsupported as e:
                assert str(e) == "kctx.acl: the acl platform is unavailable on this machine: " + where.reason, e
            else:
                raise AssertionError(f"{make.__name__} without a library did not raise")
        try:
            kctx.Context("acl").kernel_init()
        except kctx.Unsupported:
            pass
        else:
            raise AssertionError("kctx.Context('acl') without a library")
        assert kctx.abandoned_contexts() == []
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR), KCTX_ACL_LIBRARY="/nonexistent/libascendcl.so")
    assert_ok(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120))


@needs_double
def test_kctx_Context_acl_by_name_takes_npu_streams_and_tensors_K18():
    """kctx.Context("acl") (the platform by name) launches onto a torch_npu
    stream stand-in (.npu_stream) with NPU tensor stand-ins through the
    one resolver (K18: the caller's stream, a native handle, never stored);
    the results are right."""
    assert_ok(run_script("""
        a, b, c = buffers()
        s = acl.stream()
        with kctx.Context("acl") as ctx:
            assert ctx.platform == "acl"
            ctx.kernel_init()
            exe = ctx.prepare(IMAGE)
            ctx.launch(exe.id, [NpuTensor(a, N), NpuTensor(b, N), NpuTensor(c, N), N], stream=NpuStream(s))
            acl.ok("aclrtSynchronizeStream", s)
            ctx.check()
        assert right(c) == N, right(c)
        free([s], [a, b, c])
        print("ok")
    """))


@needs_double
@pytest.mark.parametrize("strategy", ["resident", "host-ordered"])
def test_context_borrows_the_current_device_and_launches_on_every_stream_form_K4_K19(strategy):
    """kctx.acl.Context() borrows the NPU the framework made current
    (device 1 when the double has two; K4: kctx never sets one) and
    launches on every stream form (torch_npu's Stream, an int, .handle)
    with NPU tensors, kctx.Tensor and (address, nbytes): right results.
    Over the whole Python-driven lifecycle (init, prepare, launches, check,
    close, destroy) the double counts zero calls of every never-call entry
    (K4), and over the launches no sync, query, synchronous copy,
    allocation, stream or event creation (K19)."""
    assert_ok(run_script(f"""
        count = c_uint32()
        acl.ok("aclrtGetDeviceCount", byref(count))
        dev = 1 if count.value > 1 else 0
        acl.ok("aclrtSetDevice", dev)          # the framework's (torch.npu.set_device)
        a, b, c = buffers()
        s1, s2 = acl.stream(), acl.stream()
        forms = [NpuStream(s1), s1, Handle(s2), NpuStream(s2)]
        acl.lib.kacl_double_calls_reset()     # from here on every call is kctx's
        ctx = kctx.acl.Context({strategy!r})
        assert ctx.device == dev and ctx.platform == "acl", (ctx.device, dev)
        assert ctx.mode == kctx.Mode.KERNEL and ctx.strategy == kctx.Strategy.parse({strategy!r})
        exe = ctx.prepare(IMAGE)
        tensors = [[NpuTensor(x, N, index=dev) for x in (a, b, c)],
                   [kctx.Tensor(a, 4 * N), (b, 4 * N), NpuTensor(c, N, index=dev)]]
        launches = 0
        for f in forms:
            h = kctx.acl.stream_handle_of(f)
            for args in tensors:
                acl.to_device(c, bytes(4 * N))            # the framework clears the output
                before = {{e: acl.calls(e) for e in NOT_ON_LAUNCH}}
                exe(*args, N, stream=f)                   # K19: the launch itself never waits
                after = {{e: acl.calls(e) for e in NOT_ON_LAUNCH}}
                assert after == before, {{e: after[e] - before[e] for e in after if after[e] != before[e]}}
                acl.ok("aclrtSynchronizeStream", h)       # the framework waits (one launch at a time, K23)
                got = right(c)
                assert got == N, (type(f).__name__, args, got)
                launches += 1
        ctx.check()
        ctx.close()
        assert ctx.phase == kctx.Phase.CLOSED
        ctx.destroy()
        assert ctx.handle is None
        for e in NEVER:
            assert acl.calls(e) == 0, f"K4: kctx called {{e}} {{acl.calls(e)}} times"
        assert acl.calls("aclrtLaunchKernelWithHostArgs") >= launches > 0
        assert acl.calls("aclmdlRICaptureGetInfo") > 0      # K34's preflight, the one query a launch makes
        cur = c_int(-1)
        acl.ok("aclrtGetDevice", byref(cur))
        assert cur.value == dev                  # the framework's device is still current
        free([s1, s2], [a, b, c])
        print(f"{{launches}} launches on device {{dev}}, {strategy}: ok")
    """))


@needs_double
def test_bad_streams_and_released_tensors_are_refused_before_any_C_call_K18():
    """A CUDA stream (torch .cuda_stream, __cuda_stream__, CuPy .ptr), a
    PyOpenCL queue, a kctx.sim.Stream, a str and a bool are no ACL stream
    (KctxTypeError); a released NPU tensor (its storage freed, address 0,
    0 elements) is InvalidArgument (K18); a CUDA array or a CPU tensor is
    no NPU memory (KctxValueError): each before any C call (kctx_launch is
    not called, the double counts nothing), the context still READY; the
    same launch then succeeds. ACL's default stream (0) is InvalidArgument."""
    assert_ok(run_script("""
        from kctx import context as context_module
        a, b, c = buffers()
        s = acl.stream()
        launches = [0]
        real = context_module._lib.kctx
        class Counting:   # counts the binding's kctx_launch calls
            def __init__(self, lib): self._lib = lib
            def __getattr__(self, name):
                fn = getattr(self._lib, name)
                if name != "kctx_launch":
                    return fn
                def launch(*args):
                    launches[0] += 1
                    return fn(*args)
                return launch
        counting = Counting(real())
        context_module._lib.kctx = lambda: counting
        good = [NpuTensor(a, N), NpuTensor(b, N), NpuTensor(c, N)]
        with sim.Stream() as sim_stream, kctx.acl.Context() as ctx:
            exe = ctx.prepare(IMAGE)
            refusals = [
                (good, TorchCudaStream(), kctx.KctxTypeError, "torch.cuda.Stream"),
                (good, CoreStream(), kctx.KctxTypeError, "CUDA stream"),
                (good, CuPyStream(), kctx.KctxTypeError, "cupy"),
                (good, OpenCLQueue(), kctx.KctxTypeError, "PyOpenCL"),
                (good, sim_stream, kctx.KctxTypeError, "kctx.sim.Stream"),
                (good, "stream", kctx.KctxTypeError, "not str"),
                (good, True, kctx.KctxTypeError, "bool"),
                (good, NpuStream("0x10"), kctx.KctxTypeError, "npu_stream must be an int"),
                ([NpuTensor(a, N, storage=0)] + good[1:], NpuStream(s), kctx.InvalidArgument, "storage was released"),
                ([NpuTensor(0, N)] + good[1:], NpuStream(s), kctx.InvalidArgument, "device address 0"),
                (good[:2] + [NpuTensor(c, 0)], NpuStream(s), kctx.InvalidArgument, "zero-length"),
                ([kctx.Tensor(0, 4 * N)] + good[1:], s, kctx.InvalidArgument, "device address 0"),
                ([CudaArray(a, N)] + good[1:], s, kctx.KctxValueError, "CUDA array"),
                ([NpuTensor(a, N, kind="cpu")] + good[1:], s, kctx.KctxValueError, "not on the NPU"),
            ]
            calls, platform_calls = {e: acl.calls(e) for e in ALL}, ctx.platform_calls
            for args, stream, exc, text in refusals:
                try:
                    exe(*args, N, stream=stream)
                except exc as e:
                    assert text in str(e), (text, str(e))
                    if exc is kctx.InvalidArgument:
                        assert "(K18)" in str(e), str(e)
                else:
                    raise AssertionError(f"accepted: {text}")
                assert launches[0] == 0, f"{text}: kctx_launch was called"
            assert {e: acl.calls(e) for e in ALL} == calls and ctx.platform_calls == platform_calls
            assert ctx.phase == kctx.Phase.READY
            try:
                exe(*good, N, stream=0)          # ACL's default stream: the library refuses it
            except kctx.InvalidArgument:
                pass
            else:
                raise AssertionError("stream 0 was accepted on acl")
            assert ctx.phase == kctx.Phase.READY and acl.calls("aclrtLaunchKernelWithHostArgs") == 0
            exe(*good, N, stream=NpuStream(s))     # the context still launches
            acl.ok("aclrtSynchronizeStream", s)
            ctx.check()
        context_module._lib.kctx = real
        assert right(c) == N
        free([s], [a, b, c])
        print("ok")
    """))


@needs_double
def test_close_and_destroy_lifecycle_K6_K3_K26():
    """close then destroy: after close a launch is InvalidState and run is
    InvalidState on a kernel context (K3); close released every stream,
    event, allocation and binary kctx made on the double (K26); a closed
    context closes again;
    after destroy the handle is None and the queries InvalidHandle. A second
    kernel context on the same device while one lives is Busy (K6) and is
    not left behind; once the first is closed a new one inits. A strategy
    that is none is KctxValueError before anything is created; with the
    double refusing kctx's runtime programs (as a real NPU would) the
    constructor is Unsupported, and nothing is left."""
    assert_ok(run_script("""
        a, b, c = buffers()
        s = acl.stream()
        acl.lib.kacl_double_calls_reset()     # from here on every call is kctx's
        ctx = kctx.acl.Context()
        exe = ctx.prepare(IMAGE)
        assert held()["streams"] > 0 and held()["allocations"] > 0, held()
        exe(NpuTensor(a, N), NpuTensor(b, N), NpuTensor(c, N), N, stream=NpuStream(s))
        try:
            ctx.run(exe.id, [NpuTensor(a, N), NpuTensor(b, N), NpuTensor(c, N), N])
        except kctx.InvalidState:
            pass
        else:
            raise AssertionError("run on a kernel context (K3)")
        try:
            kctx.acl.Context()
        except kctx.Busy:
            pass
        else:
            raise AssertionError("two kernel contexts on one device (K6)")
        assert kctx.abandoned_contexts() == []
        acl.ok("aclrtSynchronizeStream", s)
        ctx.close()
        assert ctx.phase == kctx.Phase.CLOSED and ctx.prepared == {}
        assert held() == {"streams": 0, "events": 0, "allocations": 0, "binaries": 0}, held()
        try:
            exe(NpuTensor(a, N), NpuTensor(b, N), NpuTensor(c, N), N, stream=NpuStream(s))
        except kctx.InvalidState:
            pass
        else:
            raise AssertionError("a launch after close")
        ctx.close()                      # a closed context closes again
        ctx.destroy()
        assert ctx.handle is None
        try:
            ctx.phase
        except kctx.InvalidHandle:
            pass
        else:
            raise AssertionError("a destroyed context answered")
        with kctx.acl.Context("host-ordered") as again:   # the device's claim was released
            assert again.phase == kctx.Phase.READY and again.strategy == kctx.Strategy.HOST_ORDERED
        try:
            kctx.acl.Context(strategy="fastest")
        except kctx.KctxValueError:
            pass
        else:
            raise AssertionError("a strategy that is none")
        assert kctx.abandoned_contexts() == []
        assert right(c) == N
        for e in NEVER:
            assert acl.calls(e) == 0, e
        free([s], [a, b, c])
        print("ok")
    """))


@needs_double
@pytest.mark.parametrize("strategy", ["resident", "host-ordered"])
def test_refused_runtime_programs_are_unsupported_at_init_K26(strategy):
    """KCTX_ACL_DOUBLE_REFUSE_RT=1: the double refuses kctx's sim-built
    runtime programs as a real ACL runtime would; kctx.acl.Context() is
    Unsupported naming what is missing; the refused init released the
    streams, events and allocations it made on the double (K26), and no
    context is abandoned."""
    assert_ok(run_script(f"""
        try:
            kctx.acl.Context({strategy!r})
        except kctx.Unsupported as e:
            assert "runtime programs" in str(e), str(e)
            assert getattr(e, "context", None) is None
        else:
            raise AssertionError("kernel init accepted refused runtime programs")
        assert acl.calls("aclrtBinaryLoadFromData") > 0 and acl.calls("aclrtCreateStreamWithConfig") > 0
        assert held(binaries=False) == {{"streams": 0, "events": 0, "allocations": 0}}, held(binaries=False)
        assert kctx.abandoned_contexts() == []
        for e in NEVER:
            assert acl.calls(e) == 0, e
        print("ok")
    """, env_extra={"KCTX_ACL_DOUBLE_REFUSE_RT": "1"}))
