#!/usr/bin/env python3
"""Checks every trace the exporter test left in DIR with Python's own json
module (a parser independent of the C reader) against the shape
docs/tracing.md promises:

    check_chrome.py DIR

Prints one line per file and "N passed, M failed" last; exit 1 on any
failure.
"""
import json
import os
import re
import sys

EXPECTED_KEYS = ["displayTimeUnit", "otherData", "traceEvents"]
OTHER_DATA = {"kctx_trace_format", "platform", "device", "context", "core_count", "base_ns", "host_spans",
              "device_records", "host_dropped", "dev_dropped"}
US = re.compile(rb'"(ts|dur)":([^,}]*)')
LANE = re.compile(r"^(host thread \d+|AICPU|core \d+)$")


def check_file(path):
    raw = open(path, "rb").read()
    doc = json.loads(raw)  # raises on anything that is not JSON
    # displayTimeUnit first: Perfetto applies it only when it comes early.
    assert list(doc.keys()) == EXPECTED_KEYS, list(doc.keys())
    assert doc["displayTimeUnit"] == "ns"
    od = doc["otherData"]
    assert set(od) == OTHER_DATA, set(od) ^ OTHER_DATA
    assert od["kctx_trace_format"] == 1
    # Microseconds with exactly three decimals (ns precision), never exponents.
    for m in US.finditer(raw):
        assert re.fullmatch(rb"\d+\.\d{3}", m.group(2)), m.group(0)

    events = doc["traceEvents"]
    pids = {e["pid"] for e in events}
    assert len(pids) == 1 and 0 < next(iter(pids)) < 2**31, pids
    names, sort_index, process_names, dropped = {}, {}, [], []
    spans = 0
    for e in events:
        assert isinstance(e["name"], str) and isinstance(e["tid"], int), e
        ph = e["ph"]
        if ph == "M":
            if e["name"] == "process_name":
                process_names.append(e["args"]["name"])
            elif e["name"] == "thread_name":
                assert e["tid"] not in names, e
                names[e["tid"]] = e["args"]["name"]
            elif e["name"] == "thread_sort_index":
                sort_index[e["tid"]] = e["args"]["sort_index"]
            else:
                raise AssertionError(f"unexpected metadata {e}")
        elif ph == "X":
            spans += 1
            assert e["tid"] in names, f"span on an unnamed lane: {e}"
            assert e["cat"] in ("host", "aicpu", "aicore"), e
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0 and e["dur"] >= 0, e
            assert isinstance(e["args"], dict) and "launch" in e["args"] or e["cat"] == "host", e
            if e["name"].startswith("task "):
                a = e["args"]
                assert e["name"] == f"task {a['task']} f{a['func_id']}/b{a['block']}", e
                assert names[e["tid"]].startswith("core "), e
        elif ph == "i":
            assert e["name"] == "dropped" and e["s"] == "p", e
            dropped.append(e["args"])
        else:
            raise AssertionError(f"unexpected phase {e}")
    assert len(process_names) == 1 and process_names[0].startswith(f"kctx {od['platform']} device "), process_names
    assert spans == od["host_spans"] + od["device_records"], (spans, od)
    # The drop counts twice: otherData and one instant event, equal.
    assert dropped == [{"host_dropped": od["host_dropped"], "dev_dropped": od["dev_dropped"]}], dropped
    # Lanes: named as documented, sorted host < AICPU < cores, in tid order.
    for tid, name in names.items():
        assert LANE.match(name), name
        assert sort_index[tid] == tid, (tid, sort_index.get(tid))
    order = [names[t] for t in sorted(names)]
    kinds = ["h" if n.startswith("host") else "a" if n == "AICPU" else "c" for n in order]
    assert kinds == sorted(kinds, key="hac".index), order
    assert sum(k == "c" for k in kinds) >= od["core_count"], order
    if os.path.basename(path) == "known.json":
        assert order == ["host thread 1", "host thread 7", "AICPU", "core 0", "core 1", "core 2", "core 3"], order
        assert spans == 22 and od["base_ns"] == 5000000000000 and od["context"] == "0x4b43000001000002", od
        assert dropped == [{"host_dropped": 2, "dev_dropped": 5}]
    return spans


def main():
    d = sys.argv[1]
    files = sorted(f for f in os.listdir(d) if f.endswith(".json"))
    passed = failed = 0
    for f in files:
        try:
            n = check_file(os.path.join(d, f))
            print(f"ok   {f} ({n} spans)")
            passed += 1
        except Exception as e:  # noqa: BLE001 - report every file
            print(f"FAIL {f}: {type(e).__name__}: {e}")
            failed += 1
    if "known.json" not in files:
        print("FAIL known.json is missing")
        failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
