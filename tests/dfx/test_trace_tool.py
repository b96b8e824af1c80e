#!/usr/bin/env python3
"""Tests of `kctx trace summarize` and `kctx trace render` (tools/kctx/cmd_trace.c).

One ctest test per case: `test_trace_tool.py --tool DRIVER --make-trace GEN CASE`.
DRIVER runs the command as `DRIVER trace ARGS...` (tests/dfx/driver.c, the
same entry point the kctx tool dispatches to); GEN writes synthetic traces
with kctx's exporter (tests/dfx/make_trace.c, synth.h). Standard library
only; every case runs in its own temporary directory.

The summary is checked against an independent computation from the raw JSON
(Python's json module), and the picture is parsed with xml.etree.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


class Failure(Exception):
    pass


def check(cond, what, p=None):
    if cond:
        return
    detail = ""
    if p is not None:
        detail = (f"\n  command: kctx {' '.join(p.argv)}\n  exit: {p.returncode}"
                  f"\n  stdout: {p.out[:3000]}\n  stderr: {p.err[:3000]}")
    raise Failure(what + detail)


class Ctx:
    def __init__(self, args, tmp):
        self.tool, self.gen, self.tmp = args.tool, args.make_trace, tmp

    def run(self, *argv, stdin=None, stdout=subprocess.PIPE):
        p = subprocess.run([self.tool, "trace", *argv], input=stdin, stdout=stdout, stderr=subprocess.PIPE,
                           timeout=120)
        p.out = (p.stdout or b"").decode("utf-8", "replace")
        p.err = p.stderr.decode("utf-8", "replace")
        p.argv = ("trace",) + argv
        return p

    def trace(self, kind):
        path = os.path.join(self.tmp, f"{kind}.json")
        subprocess.run([self.gen, kind, path], check=True, timeout=120)
        return path

    def path(self, name):
        return os.path.join(self.tmp, name)


def ok(p, what):
    check(p.returncode == 0 and p.err == "", f"{what}: expected exit 0 and no stderr", p)


def failed(p, what, path):
    check(p.returncode == 1, f"{what}: expected exit 1", p)
    check(p.err.startswith(f"{path}: error: ") and p.err.count("\n") == 1, f"{what}: one 'FILE: error:' line", p)
    check(p.out == "", f"{what}: nothing on stdout", p)


def usage(p, what):
    check(p.returncode == 2, f"{what}: expected exit 2 (usage)", p)
    check(p.err.startswith("kctx trace: ") and p.err.count("\n") == 1 and p.out == "",
          f"{what}: one usage line on stderr, nothing on stdout", p)


# ---- an independent summary, from the raw file --------------------------------

def stats(durs):
    d = sorted(durs)
    lo, hi = d[(len(d) - 1) // 2], d[len(d) // 2]
    return {"count": len(d), "min_ns": d[0], "median_ns": lo + (hi - lo) // 2, "max_ns": d[-1], "total_ns": sum(d)}


def oracle(path):
    doc = json.load(open(path))
    ns = lambda us: round(us * 1000)  # noqa: E731
    lanes = {}
    spans = []
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            lanes[e["tid"]] = e["args"]["name"]
        if e["ph"] == "X":
            spans.append(e)
    t0 = min(ns(e["ts"]) for e in spans)
    t1 = max(ns(e["ts"]) + ns(e["dur"]) for e in spans)
    launch_of = {e["args"]["launch"]: e["args"]["callable"] for e in spans
                 if e["cat"] == "host" and e["name"] == "launch"}
    groups = {"host": {}, "enqueue": {}, "device": {}, "tasks": {}}
    busy = {}
    for e in spans:
        d, a = ns(e["dur"]), e.get("args", {})
        busy.setdefault(e["tid"], []).append((ns(e["ts"]), ns(e["ts"]) + d))
        if e["cat"] == "host":
            groups["host"].setdefault(e["name"], []).append(d)
            if e["name"] == "launch":
                groups["enqueue"].setdefault(a["callable"], []).append(d)
        elif e["name"] == "scheduler":
            groups["device"].setdefault(launch_of.get(a["launch"]), []).append(d)
        elif e["name"].startswith("task "):
            groups["tasks"].setdefault((launch_of.get(a["launch"]), a["task"], a["func_id"]), []).append(d)
    lane_busy = {}
    for tid, iv in busy.items():
        iv.sort()
        total, (a, b) = 0, iv[0]
        for x, y in iv[1:]:
            if x > b:
                total, a, b = total + b - a, x, y
            else:
                b = max(b, y)
        lane_busy[lanes[tid]] = total + b - a
    return doc, groups, lane_busy, t1 - t0


# ---- cases ------------------------------------------------------------------------

def case_help(c):
    p = c.run("--help")
    ok(p, "--help")
    check("usage: kctx trace summarize FILE [--json] | render FILE -o OUT.svg" in p.out, "help: synopsis", p)
    for opt in ("--json", "--output OUT.svg", "--width PX"):
        check(opt in p.out, f"help: lists {opt}", p)


def case_usage(c):
    known = c.trace("known")
    for argv in [(), ("bogus", known), ("summarize",), ("render", known), ("render", known, "-o", "x.svg", "--json"),
                 ("summarize", known, "-o", "x.svg"), ("render", known, "-o", "x.svg", "--width", "10"),
                 ("render", known, "-o", "x.svg", "--width", "12px"), ("summarize", known, "extra"),
                 ("summarize", known, "--bogus"), ("render", known, "-o")]:
        usage(c.run(*argv), f"usage {argv}")
    check(not os.path.exists("x.svg") and not os.path.exists(c.path("x.svg")), "usage errors write nothing")


def case_summarize_text(c):
    known = c.trace("known")
    p = c.run("summarize", known)
    ok(p, "summarize")
    out = p.out
    for want in ("process   kctx sim device 0 context 0x4b43000001000002",
                 "spans     8 host, 3 scheduler, 10 task, 1 refused replay, 0 other",
                 "dropped   2 host spans, 5 device records  WARNING",
                 "launches: 3 enqueued on the host, 3 run on the device (2 distinct launch ids), 1 refused replay\n",
                 "host spans:", "callables (", "tasks (", "lanes ("):
        check(want in out, f"summarize: has '{want}'", p)
    section = out.split("callables (")[1].split("\n\n")[0].splitlines()
    rows = {line.split()[0]: line.split() for line in section[2:]}
    # callable 7: 2 launches (12.345 us, 10 us), 2 device runs (49 us, 40 us).
    check(rows["7"] == ["7", "2", "10.000", "us", "11.172", "us", "12.345", "us", "2", "40.000", "us", "44.500", "us",
                        "49.000", "us"], f"callable 7 columns {rows.get('7')}", p)
    check(sorted(rows) == ["7", "9"], f"callable rows {sorted(rows)}", p)
    check(any(line.split()[:2] == ["init", "1"] for line in out.splitlines()), "init row", p)
    lane_lines = [line for line in out.splitlines() if line.startswith("  core 0 ") or line.startswith("  AICPU ")]
    check(len(lane_lines) == 2 and all(line.rstrip().endswith("%") for line in lane_lines), "lane utilisation", p)


def case_summarize_json(c):
    known = c.trace("known")
    p = c.run("summarize", known, "--json")
    ok(p, "summarize --json")
    s = json.loads(p.out)
    doc, groups, lane_busy, span = oracle(known)
    check(s["span_ns"] == span == 950000, f"span_ns {s['span_ns']} vs {span}")
    check(s["base_ns"] == doc["otherData"]["base_ns"] and s["core_count"] == 4, "base and cores")
    check(s["spans"] == {"total": 22, "host": 8, "scheduler": 3, "task": 10, "refused_replay": 1, "other": 0,
                         "ignored_events": 0}, f"span counts {s['spans']}")
    check(s["dropped"] == {"known": True, "host": 2, "device": 5}, f"dropped {s['dropped']}")
    check(s["launches"] == {"enqueued": 3, "device_runs": 3, "distinct_launch_ids": 2, "refused_replays": 1},
          f"launches {s['launches']}")
    host = {h["kind"]: h["duration"] for h in s["host_spans"]}
    check(host == {k: stats(v) for k, v in groups["host"].items()}, f"host spans {host}")
    enq = {g["callable"]: g["duration"] for g in s["callables"]["enqueue"]}
    check(enq == {k: stats(v) for k, v in groups["enqueue"].items()}, f"enqueue {enq}")
    check(enq[7] == {"count": 2, "min_ns": 10000, "median_ns": 11172, "max_ns": 12345, "total_ns": 22345},
          f"callable 7 enqueue {enq[7]}")
    dev = {g["callable"]: g["duration"] for g in s["callables"]["device"]}
    check(dev == {k: stats(v) for k, v in groups["device"].items()}, f"device {dev}")
    check(dev[7]["count"] == 2 and dev[7]["median_ns"] == 44500 and dev[9]["count"] == 1, f"device {dev}")
    tasks = {(t["callable"], t["task"], t["func_id"]): t["duration"] for t in s["tasks"]}
    check(tasks == {k: stats(v) for k, v in groups["tasks"].items()}, f"tasks {tasks}")
    check(tasks[(9, 0, 2)] == {"count": 4, "min_ns": 10000, "median_ns": 11500, "max_ns": 13000, "total_ns": 46000},
          f"task (9,0,2) {tasks[(9, 0, 2)]}")
    names = [lane["name"] for lane in s["lanes"]]
    check(names == ["host thread 1", "host thread 7", "AICPU", "core 0", "core 1", "core 2", "core 3"], f"{names}")
    for lane in s["lanes"]:
        check(lane["busy_ns"] == lane_busy.get(lane["name"], 0), f"busy {lane}")
        want = (lane["busy_ns"] * 2_000_000 + span) // (2 * span)
        check(abs(lane["utilisation_ppm"] - want) <= 1, f"utilisation {lane} vs {want}")
    core0 = next(lane for lane in s["lanes"] if lane["name"] == "core 0")
    check(core0["busy_ns"] == 18000 + 10000 + 18000 and core0["spans"] == 3, f"core 0 {core0}")


def parse_svg(path_or_text, text=False):
    root = ET.fromstring(path_or_text) if text else ET.parse(path_or_text).getroot()
    check(root.tag == SVG + "svg", f"root is <svg>, not {root.tag}")
    return root


def case_render(c):
    known = c.trace("known")
    out = c.path("known.svg")
    p = c.run("render", known, "-o", out)
    ok(p, "render")
    check(p.out == "", "render prints nothing", p)
    root = parse_svg(out)
    check(root.get("width") == "1600", f"width {root.get('width')}")
    boxes = [r for r in root.iter(SVG + "rect") if r.find(SVG + "title") is not None
             and r.get("class") != "phase"]
    check(len(boxes) == 22, f"one box per span: {len(boxes)}")
    titles = [r.find(SVG + "title").text for r in boxes]
    check(any("callable 7" in t and t.startswith("launch") for t in titles), "launch tooltips name the callable")
    check(any(t.startswith("task 0 f2/b3") for t in titles), "task tooltips")
    texts = [t.text or "" for t in root.iter(SVG + "text")]
    lanes = [t for t in texts if t in ("host thread 1", "host thread 7", "AICPU", "core 0", "core 1", "core 2",
                                       "core 3")]
    check(lanes == ["host thread 1", "host thread 7", "AICPU", "core 0", "core 1", "core 2", "core 3"],
          f"lane labels in order: {lanes}")
    for want in ("init", "prepare", "launch", "close", "flush", "scheduler (AICPU)", "refused replay", "task f0",
                 "task f1", "task f2"):
        check(want in texts, f"legend has '{want}'")
    check(any("WARNING: 2 host spans and 5 device records dropped" in t for t in texts), "drop warning")
    check(any(t.endswith(" us") for t in texts), "time axis labels")
    # Every box lies inside the picture.
    for r in boxes:
        x, w = float(r.get("x")), float(r.get("width"))
        check(0 <= x and x + w <= 1600.5, f"box inside the picture: {r.attrib}")
    check(not [f for f in os.listdir(c.tmp) if ".tmp." in f], "no temporary file left")

    p = c.run("render", known, "-o", "-", "--width", "800")
    ok(p, "render to stdout")
    check(parse_svg(p.out, text=True).get("width") == "800", "--width")


def case_render_named(c):
    """A trace with the callables' names: kernels and callables by name, status names,
    the phases band (capture, replays, eager launches), and each lane's utilisation."""
    named = c.trace("named")
    out = c.path("named.svg")
    ok(c.run("render", named, "-o", out), "render named")
    root = parse_svg(out)
    rects = [r for r in root.iter(SVG + "rect") if r.find(SVG + "title") is not None]
    titles = [r.find(SVG + "title").text for r in rects if r.get("class") != "phase"]
    phases = [r.find(SVG + "title").text for r in rects if r.get("class") == "phase"]
    texts = [t.text or "" for t in root.iter(SVG + "text")]
    for k in ("k_add", "k_scale", "k_mm"):
        check(k in texts, f"legend names kernel {k}")
    check("task f0" not in texts, "no function-id legend when the kernels have names")
    check(any(t.startswith("k_add (task 0 f0/b0)") and "callable vadd_chain," in t for t in titles),
          "a task's tooltip names its kernel and callable (through its launch id)")
    check(any(t.startswith("k_mm (task 0 f2/b") and "callable matmul," in t for t in titles),
          "callable 9's function 2 is k_mm")
    check(any(t.startswith("prepare") and "callable vadd_chain (id 7)" in t for t in titles),
          "a prepare names its callable")
    check(any(t.startswith("launch") and "KCTX_BUSY" in t for t in titles), "status names in tooltips")
    # launch 1 ran twice on the device (captured and replayed), launch 2 never ran (its
    # replay was refused), launch 3 once (eager)
    for want in ("capture", "graph replays", "eager launches", "init", "prepare", "close"):
        check(any(p.startswith(want + ":") for p in phases), f"phase band has {want}")
    check(sum(1 for p in phases if p.startswith("graph replays:")) >= 1, "replays")
    utils = [t for t in texts if re.fullmatch(r"[0-9.]+%", t)]
    check(len(utils) == 7, f"a utilisation per lane: {utils}")
    # the unnamed trace keeps the function-id legend
    out2 = c.path("known.svg")
    ok(c.run("render", c.trace("known"), "-o", out2), "render known")
    texts2 = [t.text or "" for t in parse_svg(out2).iter(SVG + "text")]
    check("task f0" in texts2 and "k_add" not in texts2, "function ids without names")


def case_render_png(c):
    """-o FILE.png: a PNG through rsvg-convert; without it on PATH, an error naming the package."""
    import shutil
    named = c.trace("named")
    out = c.path("named.png")
    if shutil.which("rsvg-convert") is None:
        print("SKIP: rsvg-convert is not installed (scripts/install-deps.sh installs librsvg2-bin)")
        sys.exit(77)
    ok(c.run("render", named, "-o", out), "render to PNG")
    with open(out, "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n", "a PNG file")
    check(int.from_bytes(head[16:20], "big") == 1600, "1600 pixels wide")
    check(not [f for f in os.listdir(c.tmp) if ".tmp." in f], "no temporary file left")
    bare = subprocess.run([c.tool, "trace", "render", named, "-o", c.path("none.png")],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": c.tmp})
    check(bare.returncode == 1 and "librsvg2-bin" in bare.stderr, f"without rsvg-convert: {bare.stderr!r}")
    check(not os.path.exists(c.path("none.png")), "nothing written")


def case_render_large(c):
    large = c.trace("large")
    out = c.path("large.svg")
    p = c.run("render", large, "-o", out)
    ok(p, "render large")
    root = parse_svg(out)
    boxes = [r for r in root.iter(SVG + "rect") if r.find(SVG + "title") is not None]
    nspans = 2000 * 33 + 2000
    check(0 < len(boxes) < nspans // 4, f"narrow spans merged: {len(boxes)} boxes for {nspans} spans")
    check(any("below pixel resolution" in r.find(SVG + "title").text for r in boxes), "merged boxes say so")
    check(os.path.getsize(out) < 8 << 20, f"picture size {os.path.getsize(out)}")
    p = c.run("summarize", large, "--json")
    ok(p, "summarize large")
    s = json.loads(p.out)
    check(s["launches"]["device_runs"] == 2000 and s["spans"]["task"] == 64000, f"{s['launches']} {s['spans']}")


def case_bad_files(c):
    missing = c.path("missing.json")
    empty = c.path("empty.json")
    open(empty, "w").close()
    notjson = c.path("notjson.json")
    open(notjson, "w").write("{\"traceEvents\": [ {\"ph\": \"X\", ")
    shape = c.path("shape.json")
    open(shape, "w").write(json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": "soon", "dur": 1}]}))
    notrace = c.path("notrace.json")
    open(notrace, "w").write(json.dumps({"hello": 1}))
    directory = c.path("adir")
    os.mkdir(directory)
    for path, why in ((missing, "No such file"), (empty, "not valid JSON"), (notjson, "not valid JSON: line 1"),
                      (shape, "event 0: \"ts\""), (notrace, "no \"traceEvents\""), (directory, "")):
        for argv in (("summarize", path), ("summarize", path, "--json"), ("render", path, "-o", c.path("bad.svg"))):
            p = c.run(*argv)
            failed(p, f"{argv}", path)
            check(why in p.err, f"{argv}: message says '{why}'", p)
    check(not os.path.exists(c.path("bad.svg")), "a failed render writes no picture")


def case_output_errors(c):
    known = c.trace("known")
    for target in (c.path("no/such/dir/x.svg"), c.tmp):
        p = c.run("render", known, "-o", target)
        check(p.returncode == 1 and p.err.startswith(f"{target}: error: cannot ") and p.out == "",
              f"unwritable {target}", p)
    check(not [f for f in os.listdir(c.tmp) if ".tmp." in f], "no temporary file left")
    with open("/dev/full", "wb") as full:
        p = c.run("summarize", known, stdout=full)
    check(p.returncode == 1 and "error writing to standard output" in p.err, "stdout write error is a failure", p)


def case_stdin(c):
    known = c.trace("known")
    p = c.run("summarize", "-", "--json", stdin=open(known, "rb").read())
    ok(p, "summarize -")
    check(json.loads(p.out)["spans"]["total"] == 22, "stdin read whole", p)


# ---- callables by name (otherData.callables, K32) ------------------------------

def callable_rows(out, section):
    """The rows of a summary section, as (first column up to the numbers, the rest split)."""
    lines = out.split(section)[1].split("\n\n")[0].splitlines()[2:]
    return [(line[2:34].rstrip(), line[34:].split()) for line in lines]


def case_summarize_names(c):
    """summarize names each callable by its image name next to its id, and each task by its
    kernel; a trace without names shows the ids alone (K32)."""
    named = c.trace("named")
    p = c.run("summarize", named)
    ok(p, "summarize named")
    rows = callable_rows(p.out, "callables (")
    check([r[0] for r in rows] == ["7 vadd_chain", "9 matmul"], f"callable rows {rows}", p)
    check(rows[0][1][:1] == ["2"] and rows[1][1][:1] == ["1"], "the numbers follow the name", p)
    tasks = callable_rows(p.out, "tasks (")
    check([(r[0], r[1][0], r[1][1], r[1][-1]) for r in tasks] ==
          [("7 vadd_chain", "0", "0", "k_add"), ("7 vadd_chain", "1", "1", "k_scale"), ("9 matmul", "0", "2", "k_mm")],
          f"task rows name their callable and kernel: {tasks}", p)
    check(p.out.split("tasks (")[1].splitlines()[1].rstrip().endswith("kernel"), "a kernel column", p)

    p = c.run("summarize", named, "--json")
    ok(p, "summarize named --json")
    s = json.loads(p.out)
    for group in ("enqueue", "device"):
        got = {g["callable"]: g.get("name") for g in s["callables"][group]}
        check(got == {7: "vadd_chain", 9: "matmul"}, f"callables.{group} names {got}", p)
    check([(t["callable"], t["callable_name"], t["func_id"], t["kernel"]) for t in s["tasks"]] ==
          [(7, "vadd_chain", 0, "k_add"), (7, "vadd_chain", 1, "k_scale"), (9, "matmul", 2, "k_mm")],
          f"tasks {s['tasks']}", p)
    check(s["callable_names"] == json.load(open(named))["otherData"]["callables"],
          f"callable_names is the trace's table: {s['callable_names']}", p)

    # no names: the ids alone, no name keys, an empty table
    known = c.trace("known")
    p = c.run("summarize", known)
    ok(p, "summarize known")
    check([r[0] for r in callable_rows(p.out, "callables (")] == ["7", "9"], "ids alone", p)
    check(all(r[1][-1] == "-" for r in callable_rows(p.out, "tasks (")), "no kernel names: '-'", p)
    s = json.loads(c.run("summarize", known, "--json").out)
    check(s["callable_names"] == [] and all("name" not in g for g in s["callables"]["enqueue"]) and
          all("kernel" not in t and "callable_name" not in t for t in s["tasks"]), f"no names in JSON {s}")


def svg_texts(root):
    return ["".join(t.itertext()) for t in root.iter(SVG + "text")]


def legend_callables(texts):
    i = texts.index("callables:")
    j = texts.index("phases:")
    return texts[i + 1:j]


def case_render_names(c):
    """The swimlane's legend names each callable by id and image name; launch boxes wide
    enough are labelled `launch NAME`; without names, the ids alone (K32)."""
    named = c.trace("named")
    out = c.path("named.svg")
    ok(c.run("render", named, "-o", out, "--width", "20000"), "render named")
    texts = svg_texts(parse_svg(out))
    check(legend_callables(texts) == ["7 vadd_chain", "9 matmul"], f"legend {legend_callables(texts)}")
    check("launch vadd_chain" in texts and "launch matmul" in texts, "launch boxes labelled by name")
    out2 = c.path("known.svg")
    ok(c.run("render", c.trace("known"), "-o", out2, "--width", "20000"), "render known")
    texts = svg_texts(parse_svg(out2))
    check(legend_callables(texts) == ["7", "9"], f"ids alone: {legend_callables(texts)}")
    check("launch 7" in texts and "launch 9" in texts, "launch boxes labelled by id")


HOSTILE7 = 'q"uote<tag>&amp;\\back'
HOSTILE9 = "bad\ufffd\ufffdutf8\x1b[31mred\u202eend"  # \xff\xfe written as U+FFFD
LONG = "k" * 5000


def terminal_safe(out, what, p):
    bad = [ch for ch in out if (ord(ch) < 0x20 and ch != "\n") or 0x7f <= ord(ch) <= 0x9f or ch == "\u202e"]
    check(not bad, f"{what}: nothing a terminal acts on is printed raw: {bad[:5]}", p)


def case_hostile_names(c):
    """Names an image could hold (quotes, markup, control characters, bytes that are not
    UTF-8, a bidi override, 5000 characters) are escaped in the SVG, printed safely by
    summarize, exact in --json (K32; the reader trusts nothing)."""
    hostile = c.trace("hostile")
    table = json.load(open(hostile, encoding="utf-8"))["otherData"]["callables"]  # valid UTF-8 JSON
    check([t["name"] for t in table] == [HOSTILE7, HOSTILE9] and table[1]["kernels"][2] == LONG,
          f"the writer's table {[t['name'] for t in table]}")
    p = c.run("summarize", hostile)
    ok(p, "summarize hostile")
    terminal_safe(p.out, "summarize", p)
    rows = callable_rows(p.out, "callables (")
    check([r[0] for r in rows] == ["7 " + HOSTILE7.replace("\\", "\\\\"),
                                   "9 bad\ufffd\ufffdutf8\\x1b[31mred\\u202eend"], f"escaped rows {rows}", p)
    tasks = callable_rows(p.out, "tasks (")
    check(tasks[0][1][-1] == "</text><script>x</script>", f"markup in a kernel name: {tasks[0]}", p)
    check(tasks[1][1][-1] == "\\x01ctl", f"a control character in a kernel name: {tasks[1]}", p)
    check(tasks[-1][1][-1] == "k" * 37 + "...", f"a long kernel name is cut: {tasks[-1][1][-1][:50]}", p)
    check(max(len(line) for line in p.out.splitlines()) < 200, "no line runs away", p)

    s = json.loads(c.run("summarize", hostile, "--json").out)
    check(s["callable_names"] == table, "--json gives the names exactly")
    check({g["callable"]: g["name"] for g in s["callables"]["enqueue"]} == {7: HOSTILE7, 9: HOSTILE9}, "names")

    out = c.path("hostile.svg")
    ok(c.run("render", hostile, "-o", out, "--width", "20000"), "render hostile")
    raw = open(out, "rb").read()
    raw.decode("utf-8")  # raises unless UTF-8
    check(b"<script>" not in raw and b"<tag>" not in raw and b"\x1b" not in raw, "markup and controls escaped")
    root = parse_svg(out)  # raises unless well-formed XML
    texts = svg_texts(root)
    check(legend_callables(texts) == ["7 " + HOSTILE7, "9 bad\ufffd\ufffdutf8?[31mred\u202eend"],
          f"legend {legend_callables(texts)}")
    check("</text><script>x</script>" in texts and "?ctl" in texts and "k" * 37 + "..." in texts and
          LONG not in texts, "kernel legend: markup shown as text, a control character as '?', a long name cut")
    check(len(raw) < 200_000, f"a long name does not blow up the picture: {len(raw)} bytes")

    # A file not written by kctx: escapes the writer never makes, in every name shown.
    crafted = c.path("crafted.json")
    evil = "\u001b]0;owned\u0007\u001b[2J\u202e<&>"
    doc = {"otherData": {"callables": [{"id": 1, "name": evil, "kernels": [evil]}]},
           "traceEvents": [
               {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": evil}},
               {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": evil}},
               {"name": "launch", "cat": "host", "ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 5,
                "args": {"callable": 1, "launch": 1, "callable_name": evil, "status_name": evil}},
               {"name": "task 0 f0/b0", "cat": "aicore", "ph": "X", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
                "args": {"task": 0, "func_id": 0, "block": 0, "launch": 1, "kernel": evil}}]}
    open(crafted, "w").write(json.dumps(doc))
    p = c.run("summarize", crafted)
    ok(p, "summarize crafted")
    terminal_safe(p.out, "summarize crafted", p)
    check("\\x1b]0;owned\\x07\\x1b[2J\\u202e<&>" in p.out, "escapes shown", p)
    out = c.path("crafted.svg")
    ok(c.run("render", crafted, "-o", out), "render crafted")
    raw = open(out, "rb").read()
    check(b"\x1b" not in raw and b"\x07" not in raw, "no control characters in the SVG")
    check(legend_callables(svg_texts(parse_svg(out))) == ["1 ?]0;owned??[2J\u202e<&>"],
          f"legend {legend_callables(svg_texts(parse_svg(out)))}")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--make-trace", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kctx-dfx-") as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            CASES[args.case](Ctx(args, tmp))
        except Failure as e:
            print(f"FAIL {args.case}: {e}")
            print("0 passed, 1 failed")
            return 1
        finally:
            os.chdir(cwd)
    print(f"ok   {args.case}")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
