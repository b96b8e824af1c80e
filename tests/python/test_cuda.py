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
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), **env_extra)
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
