#!/usr/bin/env python3
"""Tests of the kctx tool's run-time commands: demo, probe, bench, platforms.

One ctest test per case: `test_commands.py --kctx KCTX --images DIR CASE`.
Standard library only; every case runs in its own temporary directory.
They check exit codes, the shape of the output (the probe line format and
summary, the demo report, metric lines, JSON documents), bad arguments and
missing or broken files. The full probe run, the demo and the benchmark
smoke run are separate ctest tests (tests/cli/CMakeLists.txt).
"""
import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

PROBE_LINE = re.compile(r"^probe (?P<name>[a-z0-9_]+) (?P<result>PASS|FAIL|N/A)  (?P<detail>.+)   "
                        r"\[rule (?P<rule>K\d+(,K\d+)*)\]$")
SUMMARY = re.compile(r"^probes: (\d+) passed, (\d+) failed, (\d+) not applicable$")
METRIC = re.compile(r"^metric [A-Za-z0-9_.-]+ value=\S+ unit=\S+( [a-z]+=\S+)*$")
COMMANDS = ("demo", "probe", "bench", "platforms")
# The lifecycle probes (src/conformance/probes_lifecycle.c), last in the suite's table.
EXTRA_PROBES = ("kernel_lifecycle_makes_no_lifecycle_calls", "init_fault_sweep",
                "prepare_fault_sweep", "close_fault_sweep")


class Failure(Exception):
    pass


class Ctx:
    def __init__(self, args, tmp):
        self.kctx = args.kctx
        self.images = args.images
        self.platforms = args.platforms.split(",")
        self.tmp = tmp

    def run(self, *argv, env=None, timeout=300):
        e = dict(os.environ)
        e.pop("KCTX_PLATFORM", None)
        if env:
            e.update(env)
        p = subprocess.run([self.kctx, *argv], capture_output=True, timeout=timeout, env=e)
        p.out = p.stdout.decode("utf-8", "replace")
        p.err = p.stderr.decode("utf-8", "replace")
        p.argv = argv
        return p

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)


def check(cond, what, p=None):
    if cond:
        return
    detail = ""
    if p is not None:
        detail = (f"\n  command: kctx {' '.join(p.argv)}\n  exit: {p.returncode}"
                  f"\n  stdout: {p.out[-4000:]}\n  stderr: {p.err[-4000:]}")
    raise Failure(what + detail)


def expect_exit(p, code, what):
    check(p.returncode == code, f"{what}: expected exit {code}", p)


def parse_json(p, what):
    try:
        return json.loads(p.out)
    except json.JSONDecodeError as e:
        raise Failure(f"{what}: stdout is not JSON ({e})\n{p.out[:2000]}")


# ---- help and usage ----------------------------------------------------------

def case_help(c):
    p = c.run("--help")
    expect_exit(p, 0, "kctx --help")
    for cmd in COMMANDS:
        check(re.search(rf"^  {cmd} ", p.out, re.M), f"kctx --help lists '{cmd}'", p)
        for argv in ([cmd, "--help"], [cmd, "-h"], ["help", cmd]):
            h = c.run(*argv)
            expect_exit(h, 0, " ".join(argv))
            check(h.out.startswith(f"usage: kctx {cmd} "), "help starts with a usage line", h)
            check("options:" in h.out and "--help" in h.out and "exit status" in h.out,
                  "help lists the options and the exit status", h)
            check(h.err == "", "help writes nothing to stderr", h)


def case_usage(c):
    cases = [
        ["demo", "extra"],
        ["demo", "--requests"],
        ["demo", "--requests", "0"],
        ["demo", "--requests", "1000001"],
        ["demo", "--requests", "ten"],
        ["demo", "--requests=-5"],
        ["demo", "--seed", "0xZZ"],
        ["demo", "--device", "x"],
        ["demo", "--bogus"],
        ["demo", "--strategy", "fastest"],
        ["demo", "--no-capture=1"],
        ["probe", "extra"],
        ["probe", "--platform"],
        ["probe", "--only", "no_such_probe"],
        ["probe", "--seed", "-1"],
        ["probe", "--json=yes"],
        ["probe", "-x"],
        ["probe", "--strategy"],
        ["probe", "--strategy", "fastest"],
        ["bench", "extra"],
        ["bench", "--only", "no_such_benchmark"],
        ["bench", "--only"],
        ["bench", "--timeout", "0"],
        ["bench", "--timeout", "soon"],
        ["bench", "--quick=1"],
        ["bench", "--strategy", "fastest"],
        ["platforms", "extra"],
        ["platforms", "--jsn"],
    ]
    for argv in cases:
        p = c.run(*argv)
        expect_exit(p, 2, "usage error")
        lines = p.err.splitlines()
        check(len(lines) == 1 and lines[0].startswith(f"kctx {argv[0]}: ") and
              f"'kctx {argv[0]} --help'" in lines[0],
              "a usage error is one line on stderr pointing at the command's --help", p)
        check(p.out == "", "nothing on stdout after a usage error", p)


# ---- probe ---------------------------------------------------------------------

def case_probe_list(c):
    p = c.run("probe", "--list")
    expect_exit(p, 0, "probe --list")
    names = [line.split()[0] for line in p.out.splitlines()]
    check(len(names) >= len(EXTRA_PROBES) + 1, "probe --list lists the probes", p)
    for extra in EXTRA_PROBES:
        check(extra in names, f"probe --list lists {extra}", p)
    for line in p.out.splitlines():
        check(re.search(r"\[rule K\d+(,K\d+)*\]", line), "each listed probe names its rule", p)


def case_probe_shape(c):
    chosen = ["vector_add_matches_host_reference", "kernel_lifecycle_makes_no_lifecycle_calls"]
    argv = ["probe"] + [a for name in chosen for a in ("--only", name)]
    p = c.run(*argv)
    expect_exit(p, 0, "probe --only ...")
    for strategy, extra, env in (("resident", [], None),
                                 ("host-ordered", ["--strategy", "host-ordered"], None),
                                 ("host-ordered", [], {"KCTX_STRATEGY": "host-ordered"}),
                                 ("resident", ["--strategy=resident"], {"KCTX_STRATEGY": "host-ordered"})):
        p = c.run(*argv, *extra, env=env)
        expect_exit(p, 0, f"probe --only ... ({strategy})")
        lines = p.out.splitlines()
        check(lines and lines[0] == f"platform sim strategy {strategy}",
              "the first line names the platform and the strategy in effect", p)
        check(len(lines) > 1 and lines[1].startswith("kctx probe: driver sim, images "),
              "a header line names the driver and the images", p)
        probes = [PROBE_LINE.match(line) for line in lines[2:-1]]
        check(all(probes) and [m["name"] for m in probes] == chosen,
              "one line per probe in the documented format, in the order asked", p)
        check(all(m["result"] == "PASS" for m in probes), "both probes pass on the sim", p)
        check(SUMMARY.match(lines[-1]) and lines[-1] == "probes: 2 passed, 0 failed, 0 not applicable",
              "the summary line closes the report", p)
    # the same as JSON
    p = c.run(*argv, "--json", "--strategy", "host-ordered")
    expect_exit(p, 0, "probe --json")
    doc = parse_json(p, "probe --json")
    check(doc["platform"] == "sim" and doc["driver"] == "sim", "JSON names the platform", p)
    check(doc["strategy"] == "host-ordered", "JSON names the strategy", p)
    check([x["name"] for x in doc["probes"]] == chosen, "JSON lists the probes", p)
    check(all(x["result"] == "PASS" and x["rule"].startswith("K") and x["detail"]
              for x in doc["probes"]), "JSON probe entries have result, rule and detail", p)
    check((doc["passed"], doc["failed"], doc["not_applicable"]) == (2, 0, 0), "JSON totals", p)
    # KCTX_PLATFORM selects the platform when --platform is absent
    p = c.run("probe", "--only", chosen[0], env={"KCTX_PLATFORM": "sim"})
    expect_exit(p, 0, "probe with KCTX_PLATFORM=sim")


def case_probe_errors(c):
    for argv, env, want in (
        (["probe", "--platform", "nosuch"], None, f"unknown platform 'nosuch' (known: {', '.join(c.platforms)})"),
        (["probe"], {"KCTX_PLATFORM": "nosuch"}, "unknown platform 'nosuch'"),
        # cuda: not built (no nvcc), or built with no driver here
        (["probe", "--platform=cuda"], {"KCTX_CUDA_DRIVER": "/nonexistent/libcuda.so.1"},
         "platform 'cuda' is "),
        (["probe", "--images", c.path("absent")], None, "cannot open"),
        (["probe", "--images", c.tmp], None, "vector_add.kctx"),
        (["probe"], {"KCTX_STRATEGY": "fastest"}, "KCTX_STRATEGY='fastest' names no strategy"),
    ):
        p = c.run(*argv, env=env)
        expect_exit(p, 1, " ".join(argv))
        check(p.out == "", "no probe ran", p)
        check(want in p.err and p.err.startswith("kctx probe: error: "), f"stderr says '{want}'", p)
    # a broken image: the probes that use it fail, the command says so
    broken = c.path("broken")
    shutil.copytree(c.images, broken, ignore=shutil.ignore_patterns("*.so", "CMake*", "*.cmake"))
    with open(os.path.join(broken, "vector_add.kctx"), "r+b") as f:
        f.seek(200)
        b = f.read(1)
        f.seek(200)
        f.write(bytes([b[0] ^ 0xFF]))
    p = c.run("probe", "--images", broken, "--only", "vector_add_matches_host_reference")
    expect_exit(p, 1, "probe over a corrupted image")
    lines = p.out.splitlines()
    m = PROBE_LINE.match(lines[2]) if len(lines) > 3 else None
    check(m and m["result"] == "FAIL", "the probe line says FAIL", p)
    check(lines[-1] == "probes: 0 passed, 1 failed, 0 not applicable", "the summary counts it", p)


# ---- demo ----------------------------------------------------------------------

def demo_report(p):
    """The report's fields: the first word of each line and the rest."""
    fields = {}
    for line in p.out.splitlines()[1:]:
        m = re.match(r"^  (\S+)\s+(.*)$", line)
        if m:
            fields[m[1]] = m[2]
    return fields


def case_demo_out(c):
    out = c.path("out")
    p = c.run("demo", "--requests", "20", "--seed", "7", "--out", out)
    expect_exit(p, 0, "demo --requests 20 --out DIR")
    f = demo_report(p)
    for key in ("platform", "device", "callables", "graphs", "requests", "replays", "eager", "errors",
                "verification", "timing", "trace", "lifecycle", "teardown", "result"):
        check(key in f, f"the report has a '{key}' line", p)
    check(f["result"] == "PASS", "the demo passed", p)
    check(p.out.splitlines()[1].startswith("  platform      sim, strategy resident (the platform's default); "
                                           "framework driver sim"),
          "the second line names the platform and the strategy in effect", p)
    check(f["graphs"].startswith("6 captured, buckets 1 2 4 8 16 32"), "six bucket graphs", p)
    check(f["callables"].startswith("6 ids prepared (one per bucket, at its first use: 6 inside that "
                                    "bucket's first capture)"),
          "each bucket's callable is prepared inside its first capture (cold capture, K16)", p)
    check(f["requests"].startswith("20 of 20 served (seed 0x7)"), "20 requests served", p)
    check(f["verification"].startswith("PASS"), "verified", p)
    trace_json = os.path.join(out, "kctx-demo-trace.json")
    trace_svg = os.path.join(out, "kctx-demo-trace.svg")
    check(trace_json in f["trace"] and trace_svg in f["trace"], "the trace line names the trace and its picture", p)
    with open(trace_json) as t:
        doc = json.load(t)
    names = [e.get("name") for e in doc["traceEvents"]]
    check(names.count("launch") == 102 and names.count("scheduler") == 96 + 110,
          "the trace holds every host enqueue (6 captured + 96 eager) and every device run (96 eager + 110 replays)", p)
    check(doc["otherData"]["dev_dropped"] == 0 and doc["otherData"]["host_dropped"] == 0, "nothing dropped", p)
    with open(trace_svg) as t:
        svg = t.read()
    check(svg.lstrip().startswith("<"), "the swimlane is an SVG document", p)
    # K32: the trace names its callables (image names), and both trace views use the names
    table = {e["id"]: e["name"] for e in doc["otherData"].get("callables", [])}
    check(len(table) == 6 and all(n.startswith("mlp_block_") for n in table.values()),
          f"the trace names the six callables by image name: {table}", p)
    s = c.run("trace", "summarize", trace_json, "--json")
    expect_exit(s, 0, "trace summarize --json on the demo's trace")
    groups = parse_json(s, "trace summarize --json")["callables"]["enqueue"]
    check({g["callable"]: g.get("name") for g in groups} == table, "summarize --json names each callable", s)
    s = c.run("trace", "summarize", trace_json)
    expect_exit(s, 0, "trace summarize on the demo's trace")
    rows = s.out.split("callables (")[1].split("\n\n")[0].splitlines()[2:]
    check([r.split()[:2] for r in rows] == [[str(i), n] for i, n in sorted(table.items())],
          "summarize prints 'ID NAME' per callable", s)
    check(f">{min(table)} {table[min(table)]}</text>" in svg, "the swimlane's legend names the callables", p)
    check(f["lifecycle"].startswith("0 device lifecycle calls"), "K4 line", p)
    check("kctx_close KCTX_OK, kctx_destroy KCTX_OK, device back to its baseline" in f["teardown"],
          "clean teardown", p)
    check(f["errors"].startswith("none: kctx_check KCTX_OK"), "no errors", p)
    check(len(re.findall(r"^\s+(1|2|4|8|16|32)\s+\d+\.\d\s+\d+\.\d\s+\d+\.\d{3}$", p.out, re.M)) == 6,
          "a timing row per bucket", p)
    check("kctx demo: " in p.err, "progress on stderr", p)
    with open(os.path.join(out, "report.txt")) as r:
        report = r.read()
    check(report.startswith(p.out) and "  images " in report, "report.txt holds the report", p)
    with open(os.path.join(out, "requests.csv")) as r:
        rows = r.read().splitlines()
    check(rows[0] == "request,rows,bucket,max_abs_error,max_error_over_bound,within_bound" and
          len(rows) == 21 and all(row.endswith(",yes") for row in rows[1:]),
          "requests.csv has a verified line per request", p)
    # the seed fixes the batch mix
    q = c.run("demo", "--requests", "20", "--seed", "7")
    expect_exit(q, 0, "the same demo again")
    check(demo_report(q)["requests"] == f["requests"], "the same seed serves the same mix", q)
    # under the host-ordered strategy: the same requests, verified the same way
    for argv, env, how in ((["--strategy", "host-ordered"], None, "(--strategy)"),
                           ([], {"KCTX_STRATEGY": "host-ordered"}, "(KCTX_STRATEGY)")):
        h = c.run("demo", "--requests", "20", "--seed", "7", *argv, env=env)
        expect_exit(h, 0, "demo under host-ordered")
        g = demo_report(h)
        check(g["platform"].startswith(f"sim, strategy host-ordered {how}"), "names the strategy", h)
        check(g["result"] == "PASS" and g["verification"].startswith("PASS") and
              g["requests"] == f["requests"] and g["graphs"].startswith("6 captured"),
              "the host-ordered demo serves the same mix from graphs, verified", h)
        check("0 device bytes (host-ordered: prepare loads the kernels, uploads nothing)" in g["callables"],
              "host-ordered prepare uploads nothing", h)
    # eager serving, as on a platform without capture
    e = c.run("demo", "--requests", "20", "--seed", "7", "--no-capture")
    expect_exit(e, 0, "demo --no-capture")
    g = demo_report(e)
    check(g["graphs"] == "none: every request is an eager launch (--no-capture)" and
          g["replays"] == "0 (eager serving)" and g["eager"].startswith("116 launches (6 warm-up, 20 requests, 90 timing)"),
          "every request is an eager launch", e)
    check(g["result"] == "PASS" and g["requests"] == f["requests"], "verified, the same mix", e)
    check(": 0 inside that bucket's first capture" in g["callables"], "no capture, no cold prepare", e)
    check(len(re.findall(r"^\s+(1|2|4|8|16|32)\s+\d+\.\d$", e.out, re.M)) == 6,
          "an eager timing row per bucket", e)
    # --explain: the same report, then a glossary with an entry for every report line
    x = c.run("demo", "--requests", "20", "--seed", "7", "--explain")
    expect_exit(x, 0, "demo --explain")
    report, sep, glossary = x.out.partition("\nWhat each line shows:\n")
    check(sep != "", "--explain prints the glossary after the report", x)
    check(demo_report(q)["requests"] == demo_report(x)["requests"] and
          [ln[:16] for ln in report.splitlines()] == [ln[:16] for ln in q.out.splitlines()],
          "the report lines are the same with --explain", x)
    entries = dict(re.findall(r"^  ([^ :][^:]*):\s+(\S.*)$", glossary, re.M))
    for key in demo_report(q):
        check(key in entries and len(entries[key]) > 20, f"the glossary explains the '{key}' line", x)
    check("\nTerms:\n" in glossary, "the glossary has a terms section", x)
    for term in ("kernel context", "bucket", "graph capture, replay", "lifetime token", "its 5 events",
                 "K4, rule Kn", "gamma_n*sum|terms|", "eager launch"):
        check(term in entries, f"the glossary explains '{term}'", x)
    check(all(len(ln) <= 80 for ln in glossary.splitlines()), "the glossary fits 80 columns", x)
    check("--explain" not in q.out and "What each line shows" not in q.out,
          "no glossary without --explain", q)


def case_demo_errors(c):
    # no images
    p = c.run("demo", "--images", c.path("absent"))
    expect_exit(p, 1, "demo without images")
    check("cannot read the callable image" in p.err and "FAIL" in p.out, "says why", p)
    # a corrupted image: prepare refuses it, the demo fails and still tears down
    broken = c.path("broken")
    os.mkdir(broken)
    for name in ("mlp_block_narrow", "mlp_block_wide"):
        shutil.copy(os.path.join(c.images, f"{name}.kctx"), broken)
    with open(os.path.join(broken, "mlp_block_wide.kctx"), "r+b") as f:
        f.seek(0, 2)
        f.seek(f.tell() - 1)
        b = f.read(1)
        f.seek(f.tell() - 1)
        f.write(bytes([b[0] ^ 0x01]))
    p = c.run("demo", "--images", broken, "--requests", "5")
    expect_exit(p, 1, "demo with a corrupted image")
    f = demo_report(p)
    check(f.get("result", "").startswith("FAIL: kctx: kctx_prepare") and "KCTX_INVALID_IMAGE" in
          f["result"], "the report names the refused prepare", p)
    check("kctx_close KCTX_OK, kctx_destroy KCTX_OK, device back to its baseline" in
          f.get("teardown", ""), "teardown still clean", p)
    # a device that does not exist: refused before the report starts (no
    # report claiming the device was made current, no trace, no --out)
    for dev in ("99", "7"):
        out = c.path(f"out-device-{dev}")
        p = c.run("demo", "--device", dev, "--requests", "5", "--out", out)
        expect_exit(p, 1, f"demo on a missing device {dev}")
        check(p.out == "" and p.err.startswith(f"kctx demo: error: device {dev} does not exist")
              and "kctx platforms" in p.err, "refused before the report, says which device", p)
        check(not os.path.exists(out), "nothing written for a refused device", p)
    # a platform that is not built, a strategy from the environment that names none
    for argv, env, want in ((["--platform", "cuda"], {"KCTX_CUDA_DRIVER": "/nonexistent/libcuda.so.1"},
                             "platform 'cuda' is "),
                            ([], {"KCTX_STRATEGY": "fastest"}, "KCTX_STRATEGY='fastest' names no strategy")):
        p = c.run("demo", "--requests", "5", *argv, env=env)
        expect_exit(p, 1, " ".join(["demo", *argv]))
        check(p.out == "" and p.err.startswith("kctx demo: error: ") and want in p.err,
              f"stderr says '{want}', nothing runs", p)
    # --out that is not a directory
    blocker = c.path("file")
    with open(blocker, "w") as w:
        w.write("x")
    p = c.run("demo", "--requests", "5", "--out", blocker)
    expect_exit(p, 1, "demo --out FILE")
    check(p.err.startswith(f"kctx demo: error: cannot use --out {blocker}") and p.out == "",
          "says why, runs nothing", p)


# ---- bench ---------------------------------------------------------------------

def fake_bench(directory, name, script):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"kctx_bench_{name}")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + script)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def case_bench_list(c):
    """Every benchmark `--list` shows is accepted by `--only` and named in
    docs/cli.md's description of `kctx bench`."""
    p = c.run("bench", "--list")
    expect_exit(p, 0, "bench --list")
    names = p.out.split()
    check(len(names) >= 2, "lists the built benchmarks", p)
    docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "cli.md")
    with open(docs, encoding="utf-8") as f:
        text = f.read()
    bench_doc = text[text.index("`kctx bench` —"):]
    for name in names:
        q = c.run("bench", "--list", "--only", name)
        expect_exit(q, 0, f"bench --only {name} (shown by --list)")
        check(f"`{name}`" in bench_doc, f"docs/cli.md's kctx bench lists `{name}`", p)


def case_bench_errors(c):
    p = c.run("bench", "--bench-dir", c.path("absent"))
    expect_exit(p, 1, "bench with a missing directory")
    check("cannot read" in p.err and p.out == "", "says why", p)
    empty = c.path("empty")
    os.mkdir(empty)
    p = c.run("bench", "--bench-dir", empty)
    expect_exit(p, 1, "bench with no benchmarks")
    check("no kctx_bench_* programs" in p.err, "says there are none", p)
    d = c.path("fake")
    fake_bench(d, "sim_enqueue", 'echo "progress" >&2\necho "metric sim_enqueue value=1.5 unit=ns '
                                 'baseline=3 ratio=0.5 n=3"\necho "chatter"\n'
                                 '[ "$1" = "--quick" ] && echo "metric quick_seen value=1 unit=count"\n'
                                 'exit 0\n')
    p = c.run("bench", "--bench-dir", d, "--list")
    expect_exit(p, 0, "bench --list")
    check(p.out == "sim_enqueue\n", "lists the benchmarks found", p)
    p = c.run("bench", "--bench-dir", d, "--quick")
    expect_exit(p, 0, "a benchmark that works")
    check(p.out.splitlines() == ["metric sim_enqueue value=1.5 unit=ns baseline=3 ratio=0.5 n=3",
                                 "metric quick_seen value=1 unit=count"],
          "metric lines (only) on stdout, --quick passed on", p)
    check("progress" in p.err and "chatter" in p.err and "[1/1] sim_enqueue" in p.err,
          "everything else and the progress on stderr", p)
    check("kctx bench: platform sim, strategy resident (the platform's default)" in p.err,
          "the platform and the strategy in effect on stderr", p)
    # --strategy is passed on to every benchmark, and named
    echo = c.path("echo")
    fake_bench(echo, "launch_overhead", 'echo "metric args_seen value=1 unit=count" "$@" | tr -d -- "-"\n')
    p = c.run("bench", "--bench-dir", echo, "--strategy", "host-ordered")
    expect_exit(p, 0, "bench --strategy host-ordered")
    check(p.out.splitlines() == ["metric args_seen value=1 unit=count strategy hostordered"],
          "--strategy host-ordered passed on", p)
    check("kctx bench: platform sim, strategy host-ordered (--strategy)" in p.err, "named on stderr", p)
    p = c.run("bench", "--bench-dir", echo, "--platform", "cuda",
              env={"KCTX_CUDA_DRIVER": "/nonexistent/libcuda.so.1"})
    expect_exit(p, 1, "bench --platform cuda")
    check(p.out == "" and "platform 'cuda' is " in p.err and "nothing" not in p.out,
          "not built or not available: nothing runs", p)
    p = c.run("bench", "--bench-dir", d, "--only", "task_dispatch")
    expect_exit(p, 1, "--only a benchmark that is not built")
    check("benchmark 'task_dispatch' is not built" in p.err, "says so", p)
    # exit 0 without a metric line: not measured in this build, not a failure
    quiet = c.path("quiet")
    fake_bench(quiet, "launch_allocs", 'echo "launch_allocs: not measured: reasons" >&2\n')
    p = c.run("bench", "--bench-dir", quiet)
    expect_exit(p, 0, "a benchmark that cannot measure in this build")
    check(p.out == "" and "launch_allocs printed no metric line (not measured" in p.err and
          "1 not measured, 0 failed" in p.err, "reported on stderr, not a failure", p)
    for script, why in (('echo "metric x value=1 unit=ns"\nexit 3\n', "exited with status 3"),
                        ('echo "metric broken"\n', "malformed metric line"),
                        ('kill -9 $$\n', "killed by signal 9"),
                        ('exec sleep 30\n', "timeout")):
        bad = c.path("bad")
        shutil.rmtree(bad, ignore_errors=True)
        fake_bench(bad, "launch_overhead", script)
        p = c.run("bench", "--bench-dir", bad, "--timeout", "1")
        expect_exit(p, 1, f"a failing benchmark ({why})")
        check(why in p.err and "FAILED" in p.err, f"stderr says '{why}'", p)


# ---- platforms -----------------------------------------------------------------

def case_platforms(c):
    no_driver = {"KCTX_CUDA_DRIVER": "/nonexistent/libcuda.so.1"}
    p = c.run("platforms", env=no_driver)
    expect_exit(p, 0, "platforms")
    check(re.search(r"^platform sim\s+built\s+available\s*$", p.out, re.M), "sim is built and available", p)
    check(re.search(r"^  strategies\s+resident.*\(default resident\)$", p.out, re.M), "sim strategies", p)
    check(re.search(r"^  device 0  sim-accelerator-0", p.out, re.M), "sim devices listed", p)
    check(re.search(r"^platform cuda\s+(not built\s+not available\s+not built into this library"
                    r"|built\s+not available\s+unavailable on this machine: driver not found: "
                    r"/nonexistent/libcuda\.so\.1)", p.out, re.M),
          "cuda: not built (no nvcc) or built without a driver here, not available, the reason", p)
    # opencl: built where OpenCL's headers were (CI installs them), available
    # where an ICD loader and a driver are (PoCL), with its devices
    check(re.search(r"^platform opencl\s+built\s+available\s*$", p.out, re.M), "opencl is built and available", p)
    check(re.search(r"^  strategies\s+host-ordered \(default host-ordered\)$", p.out, re.M), "opencl strategies", p)
    check(re.search(r"^  capture\s+no; null stream no; device epochs no; range checks no$", p.out, re.M),
          "opencl capabilities", p)
    check(re.search(r"^platform opencl(?:.|\n)*?^  device 0  \S", p.out, re.M), "an OpenCL device listed", p)
    check(p.out.rstrip().endswith("default platform: sim (KCTX_PLATFORM is not set)"), "default", p)
    p = c.run("platforms", "--json", env={"KCTX_SIM_DEVICES": "3", "KCTX_PLATFORM": "sim", **no_driver})
    expect_exit(p, 0, "platforms --json")
    doc = parse_json(p, "platforms --json")
    plats = {x["name"]: x for x in doc["platforms"]}
    check(doc["default"] == "sim" and list(plats) == c.platforms, "JSON platforms", p)
    sim = plats["sim"]
    check(sim["built"] and sim["available"] and sim["reason"] == "" and sim["probe_driver"]
          and len(sim["devices"]) == 3, "the sim with KCTX_SIM_DEVICES=3 devices", p)
    caps = sim.get("capabilities", {})
    check("resident" in caps.get("strategies", []) and caps.get("default_strategy") == "resident"
          and caps.get("has_capture") is True and caps.get("program_mode") is True
          and caps.get("max_params_bytes") == 4096, "the sim's capabilities", p)
    check(all(d["aicore_count"] >= 1 and d["memory_bytes"] > 0 for d in sim["devices"]),
          "device properties", p)
    pl = plats["cuda"]
    why = "not built" if not pl["built"] else "driver not found"
    check(not pl["available"] and why in pl["reason"] and "capabilities" not in pl
          and "devices" not in pl, "cuda: not available, the reason", p)
    ocl = plats["opencl"]
    check(ocl["built"] and ocl["available"] and ocl["probe_driver"] and len(ocl["devices"]) >= 1
          and ocl["capabilities"].get("strategies") == ["host-ordered"]
          and ocl["capabilities"].get("has_capture") is False
          and ocl["capabilities"].get("program_mode") is False, "opencl: built, its capabilities, devices", p)


CASES = {
    "help": case_help, "usage": case_usage,
    "probe_list": case_probe_list, "probe_shape": case_probe_shape,
    "probe_errors": case_probe_errors,
    "demo_out": case_demo_out, "demo_errors": case_demo_errors,
    "bench_errors": case_bench_errors, "bench_list": case_bench_list,
    "platforms": case_platforms,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kctx", required=True, help="the kctx executable")
    ap.add_argument("--images", required=True, help="where the build put the example images")
    ap.add_argument("--platforms", required=True,
                    help="the platforms the build declared, in order, comma-separated (the registry's)")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kctx-cmd-") as tmp:
        try:
            CASES[args.case](Ctx(args, tmp))
        except Failure as e:
            print(f"FAIL {args.case}: {e}", file=sys.stderr)
            return 1
    print(f"PASS {args.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
