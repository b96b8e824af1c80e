"""Tracing from Python (K32): the config's trace_path enables it; close
writes Chrome trace JSON with every launch, replays included."""
from __future__ import annotations

import json

import kctx
from kctx import sim
from support import N, add_image, u32s


def test_trace_path_enables_tracing_and_close_writes_every_launch(kernel_bytes, tmp_path):
    path = tmp_path / "trace.json"
    ctx = kctx.Context()
    ctx.kernel_init(trace_path=str(path), trace_device_records=4096)
    with sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        out.copy_from_host(bytes(4 * N))
        ctx.prepare(1, add_image(kernel_bytes, 1))
        with s.capture() as cap:
            ctx.launch(1, [out], s)
        graph = cap.graph
        x = graph.instantiate()
        for _ in range(3):
            x.launch(s)
        ctx.launch(1, [out], s)
        s.synchronize()
        assert u32s(out) == [4] * N
        x.destroy()
        graph.destroy()
        ctx.close()
        ctx.destroy()
    doc = json.loads(path.read_text())
    names = [e.get("name") for e in doc["traceEvents"]]
    assert names.count("scheduler") == 4  # 3 replays + 1 eager launch ran on the device
    assert names.count("launch") == 2  # 2 host enqueues (one captured)
    assert doc["otherData"]["dev_dropped"] == 0


def test_trace_settings_are_checked(kernel_bytes):
    ctx = kctx.Context()
    try:
        try:
            ctx.kernel_init(trace_path="x.json", trace_device_records=0)
        except kctx.InvalidArgument:
            pass
        else:
            raise AssertionError("a zero-record ring was accepted")
        assert ctx.mode == kctx.Mode.NONE  # refused before the latch (K2)
    finally:
        ctx.close()
        ctx.destroy()
