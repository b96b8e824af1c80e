#!/usr/bin/env python3
"""Tests of the kctx command-line tool (pack, inspect, help, usage errors).

One ctest test per case: `test_cli.py [paths...] CASE`. Standard library
only. Every case runs in its own temporary directory, so cases run in
parallel. Exit status 0 when the case passed; on failure the first failed
check is printed with the command, its exit status and its output.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The two MLP block callables of `kctx demo` differ only in their tiling.
MLP_PARAMS = [("X", "tensor_in"), ("W1", "tensor_in"), ("b1", "tensor_in"), ("W2", "tensor_in"),
              ("b2", "tensor_in"), ("Hs", "tensor_inout"), ("Y", "tensor_out"), ("B", "scalar"),
              ("D", "scalar"), ("H", "scalar"), ("O", "scalar")]
MLP_CHILDREN = {"matmul_tile": ("k_matmul_tile", ["A", "B", "C", "M", "N", "K", "tiles_m",
                                                  "tiles_n", "ti", "tj"]),
                "bias_rows": ("k_bias_rows", ["C", "bias", "M", "N"]),
                "relu": ("k_relu", ["X", "M", "N"])}


def mlp_tasks(mm_blocks):
    mm1 = [("matmul_tile", mm_blocks, [])] * 4
    mm2 = [("matmul_tile", mm_blocks, [5])] * 4
    return mm1 + [("bias_rows", 4, [0, 1, 2, 3]), ("relu", 4, [4])] + mm2 + \
        [("bias_rows", 4, [6, 7, 8, 9])]


# What the example manifests in examples/callables describe.
EXAMPLES = {
    "vector_add": {
        "params": [("a", "tensor_in"), ("b", "tensor_in"), ("c", "tensor_out"), ("n", "scalar")],
        "children": {"vadd": ("k_vadd", ["a", "b", "c", "n"])},
        "tasks": [("vadd", 4, [])],
        "dag": {"tasks": 1, "edges": 0, "roots": 1, "sinks": 1, "depth": 1, "width": 1},
    },
    "scale_add_chain": {
        "params": [("x", "tensor_in"), ("z", "tensor_out"), ("u", "tensor_inout"),
                   ("v1", "tensor_inout"), ("v2", "tensor_inout"), ("n", "scalar"),
                   ("alpha", "scalar")],
        "children": {"scale": ("k_scale", ["x", "y", "n", "alpha"]),
                     "add": ("k_vadd", ["a", "b", "c", "n"])},
        "tasks": [("scale", 4, []), ("scale", 2, [0]), ("scale", 2, [0]), ("add", 4, [1, 2])],
        "dag": {"tasks": 4, "edges": 4, "roots": 1, "sinks": 1, "depth": 3, "width": 2},
    },
    "blocked_matmul": {
        "params": [("A", "tensor_in"), ("B", "tensor_in"), ("C", "tensor_out"),
                   ("s", "tensor_out"), ("M", "scalar"), ("N", "scalar"), ("K", "scalar")],
        "children": {"matmul_tile": ("k_matmul_tile", ["A", "B", "C", "M", "N", "K", "tiles_m",
                                                       "tiles_n", "ti", "tj"]),
                     "rowsum": ("k_rowsum", ["C", "s", "M", "N"])},
        "tasks": [("matmul_tile", 2, [])] * 4 + [("rowsum", 4, [0, 1, 2, 3])],
        "dag": {"tasks": 5, "edges": 4, "roots": 4, "sinks": 1, "depth": 2, "width": 4},
    },
    "mlp_block_narrow": {
        "params": MLP_PARAMS,
        "children": MLP_CHILDREN,
        "tasks": mlp_tasks(1),
        "dag": {"tasks": 11, "edges": 13, "roots": 4, "sinks": 1, "depth": 5, "width": 4},
    },
    "mlp_block_wide": {
        "params": MLP_PARAMS,
        "children": MLP_CHILDREN,
        "tasks": mlp_tasks(2),
        "dag": {"tasks": 11, "edges": 13, "roots": 4, "sinks": 1, "depth": 5, "width": 4},
    },
}

REJECTED = re.compile(r"^(?P<path>.+): rejected: (?P<reason>KCTX_IMAGE_[A-Z0-9_]+) "
                      r"at offset (?P<offset>\d+): (?P<message>.+)$")


class Failure(Exception):
    pass


class Ctx:
    def __init__(self, args, tmp):
        self.kctx = args.kctx
        self.images = args.images
        self.examples = args.examples
        self.search_dir = args.search_dir
        self.tests = args.tests
        self.tmp = tmp

    def run(self, *argv, stdin=None):
        p = subprocess.run([self.kctx, *argv], input=stdin, capture_output=True, timeout=60)
        p.out = p.stdout.decode("utf-8", "replace")
        p.err = p.stderr.decode("utf-8", "replace")
        p.argv = argv
        return p


def check(cond, what, p=None):
    if cond:
        return
    detail = ""
    if p is not None:
        detail = (f"\n  command: kctx {' '.join(p.argv)}\n  exit: {p.returncode}"
                  f"\n  stdout: {p.out[:4000]}\n  stderr: {p.err[:4000]}")
    raise Failure(what + detail)


def expect_exit(p, code, what):
    check(p.returncode == code, f"{what}: expected exit {code}", p)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def inspect_json(c, image):
    p = c.run("inspect", image, "--json")
    expect_exit(p, 0, f"inspect --json {image}")
    check(p.err == "", "inspect --json wrote to stderr", p)
    try:
        return json.loads(p.out)
    except json.JSONDecodeError as e:
        raise Failure(f"inspect --json output is not JSON ({e}):\n{p.out}")


# ---- cases -----------------------------------------------------------------

def case_help(c):
    p = c.run("--help")
    expect_exit(p, 0, "kctx --help")
    for cmd in ("pack", "inspect"):
        check(re.search(rf"^  {cmd} ", p.out, re.M), f"kctx --help lists '{cmd}'", p)
    for argv in (["pack", "--help"], ["inspect", "--help"], ["help", "pack"], ["pack", "-h"],
                 ["inspect", "x.kctx", "--help"]):
        p = c.run(*argv)
        expect_exit(p, 0, " ".join(argv))
        check(p.out.startswith(f"usage: kctx {argv[1] if argv[0] == 'help' else argv[0]} "),
              "help starts with a usage line", p)
        check("options:" in p.out and "exit status" in p.out, "help lists options", p)
    p = c.run("help")
    expect_exit(p, 0, "kctx help")
    p = c.run("--version")
    expect_exit(p, 0, "kctx --version")
    check(re.match(r"^kctx \d+\.\d+\.\d+\n$", p.out), "version line", p)


def case_usage(c):
    image = os.path.join(c.images, "vector_add.kctx")
    manifest = os.path.join(c.examples, "vector_add.yaml")
    out = os.path.join(c.tmp, "out.kctx")
    cases = [
        [],
        ["frobnicate"],
        ["--frobnicate"],
        ["--help", "extra"],
        ["help", "frobnicate"],
        ["pack"],
        ["pack", manifest],
        ["pack", "-o", out],
        ["pack", manifest, "-o"],
        ["pack", manifest, "-o", out, "extra.yaml"],
        ["pack", manifest, "-o", out, "-o", out],
        ["pack", manifest, "-o", out, "--bogus"],
        ["pack", manifest, "-o", out, "--search-dir"],
        ["pack", manifest, "--output="],
        ["pack", manifest, "-o", out, "--verbose=yes"],
        ["inspect"],
        ["inspect", image, image],
        ["inspect", image, "--jsn"],
        ["inspect", image, "-x"],
    ]
    for argv in cases:
        p = c.run(*argv)
        expect_exit(p, 2, "usage error")
        lines = p.err.splitlines()
        check(len(lines) == 1 and lines[0].startswith("kctx") and "--help" in lines[0],
              "a usage error is one line on stderr pointing at --help", p)
        check(p.out == "", "nothing on stdout after a usage error", p)
    check(not os.path.exists(out), "usage errors write no output")


def case_roundtrip(c, name):
    want = EXAMPLES[name]
    image = os.path.join(c.images, f"{name}.kctx")
    check(os.path.isfile(image), f"the build packed {image} (build the 'all' target first)")
    built = read(image)

    # Text form.
    p = c.run("inspect", image)
    expect_exit(p, 0, f"inspect {name}")
    check(p.out.startswith(f"callable {name}\n"), "text starts with the callable's name", p)
    check(re.search(r"^dag: \d+ tasks?, ", p.out, re.M), "text ends with a DAG summary", p)

    # JSON form against the manifest.
    j = inspect_json(c, image)
    check(j["name"] == name, f"name is {name}")
    check(j["size"] == len(built), "size is the file size")
    check([(q["name"], q["kind"]) for q in j["params"]] == want["params"], "signature")
    children = {ch["name"]: ch for ch in j["children"]}
    check(set(children) == set(want["children"]), f"children {sorted(children)}")
    for cname, (entry, pnames) in want["children"].items():
        ch = children[cname]
        check(ch["entry"] == entry, f"child {cname} entry")
        check([q["name"] for q in ch["params"]] == pnames, f"child {cname} params")
        kinds = [v["kind"] for v in ch["variants"]]
        check(kinds == ["sim_elf", "opencl_c"], f"child {cname} variants {kinds}")
        for v in ch["variants"]:
            check(v["size"] > 0 and v["offset"] % 64 == 0 and v["offset"] + v["size"] <= j["size"],
                  f"child {cname} variant {v}")
    by_id = {ch["func_id"]: ch["name"] for ch in j["children"]}
    check(len(j["tasks"]) == len(want["tasks"]), "task count")
    for t, (cname, block_dim, after) in zip(j["tasks"], want["tasks"]):
        check(t["child"] == cname and by_id[t["func_id"]] == cname, f"task {t['index']} child")
        check(t["block_dim"] == block_dim, f"task {t['index']} block_dim")
        check(t["after"] == after, f"task {t['index']} after {t['after']}")
        check(len(t["bindings"]) == len(want["children"][cname][1]), f"task {t['index']} bindings")
    check(j["dag"] == want["dag"], f"dag {j['dag']}")

    # The manifest packs to the same bytes as the build's image, every time.
    manifest = os.path.join(c.examples, f"{name}.yaml")
    outs = []
    for i in range(2):
        out = os.path.join(c.tmp, f"{name}.{i}.kctx")
        p = c.run("pack", manifest, "-o", out, "--search-dir", c.search_dir)
        expect_exit(p, 0, f"pack {name}")
        check(p.out == "" and p.err == "", "pack is silent on success", p)
        outs.append(read(out))
    check(outs[0] == outs[1], "packing twice gives identical bytes")
    check(outs[0] == built, "packing again gives the build's bytes")
    check(sorted(os.listdir(c.tmp)) == [f"{name}.0.kctx", f"{name}.1.kctx"],
          f"no temporary files left: {os.listdir(c.tmp)}")

    # stdin works as IMAGE, and gives the same output.
    p2 = c.run("inspect", "-", "--json", stdin=built)
    expect_exit(p2, 0, "inspect - (stdin)")
    check(json.loads(p2.out) == j, "inspect of stdin matches inspect of the file", p2)


def case_features(c):
    manifest = os.path.join(c.tests, "good", "features.yaml")
    out = os.path.join(c.tmp, "features.kctx")
    p = c.run("pack", manifest, "-o", out, "--verbose")
    expect_exit(p, 0, "pack features")
    check("wrote" in p.err, "--verbose reports what was written", p)
    mask = os.umask(0)
    os.umask(mask)
    check(os.stat(out).st_mode & 0o777 == 0o666 & ~mask,
          "the image gets the permissions of an ordinary new file")
    j = inspect_json(c, out)
    check(j["format_version"] == "1.0", "no 1.1 content: written as format 1.0")
    check([q["kind"] for q in j["params"]] == ["tensor_inout", "tensor_out", "tensor_in", "scalar"],
          "parameter kinds")
    fill, noop = j["children"]
    check(fill["entry"] == "fill", "entry defaults to the child's name")
    check([v["kind"] for v in fill["variants"]] == ["opencl_c", "cuda_ptx"], "variant kinds")
    check(fill["variants"][1]["size"] == os.path.getsize(os.path.join(c.tests, "good", "fill.ptx")),
          "a variant blob is the whole file")
    check(noop["entry"] == "k_noop" and noop["params"] == [], "child without parameters")
    t = j["tasks"]
    check([x["block_dim"] for x in t] == [1, 65536, 1, 1], "block_dim default and maximum")
    b = t[0]["bindings"]
    check(b[0] == {"child_param": "y", "kind": "tensor", "param": 0, "param_name": "buf",
                   "offset": 0}, f"tensor binding {b[0]}")
    check(b[1] == {"child_param": "n", "kind": "scalar", "param": 3, "param_name": "n"},
          f"scalar binding {b[1]}")
    check(b[2] == {"child_param": "value", "kind": "immediate", "value": 42}, "hex immediate")
    b = t[1]["bindings"]
    check(b[0]["offset"] == 4096, "tensor offset")
    check(b[1]["value"] == 2**64 - 1, "largest immediate")
    check(b[2]["value"] == 0xBFC00000, "imm_f32 -1.5 is its IEEE-754 bits")
    check(t[2]["bindings"][0]["param_name"] == "out" and t[2]["bindings"][0]["offset"] == 16,
          "hex offset")
    check([x["after"] for x in t] == [[], [], [0, 1], [2]], "dependencies")
    check(t[3]["bindings"] == [], "task of a child without parameters")
    check(j["dag"] == {"tasks": 4, "edges": 3, "roots": 2, "sinks": 1, "depth": 3, "width": 2},
          f"dag {j['dag']}")
    p = c.run("inspect", out)
    expect_exit(p, 0, "inspect features")
    check("0xbfc00000" in p.out and "buf + 4096" in p.out, "text shows bindings", p)


def case_ascend_bin(c):
    """An ascend_bin variant (docs/image-format.md "Versions": format 1.1):
    packed, validated, and printed by name in both forms of inspect."""
    manifest = os.path.join(c.tests, "good", "ascend.yaml")
    out = os.path.join(c.tmp, "ascend.kctx")
    p = c.run("pack", manifest, "-o", out)
    expect_exit(p, 0, "pack ascend")
    j = inspect_json(c, out)
    check(j["format_version"] == "1.1", f"ascend_bin makes it format 1.1: {j['format_version']}")
    fill, tail = j["children"]
    check([v["kind"] for v in fill["variants"]] == ["opencl_c", "ascend_bin"], "variant kinds")
    check([v["kind"] for v in tail["variants"]] == ["ascend_bin"], "ascend-only child")
    size = os.path.getsize(os.path.join(c.tests, "good", "fill.ascend"))
    check(tail["variants"][0]["size"] == size, "the blob is the whole file")
    p = c.run("inspect", out)
    expect_exit(p, 0, "inspect ascend")
    check("format 1.1" in p.out, "text shows format 1.1", p)
    check(re.search(r"variant  ascend_bin +%d bytes" % size, p.out), "text names the kind", p)


def pack_fails(c, manifest, expect, at=None, extra=()):
    """Packing `manifest` fails with `expect` at `at`, writing nothing and
    leaving an existing output file unchanged."""
    out_dir = os.path.join(c.tmp, "out")
    os.makedirs(out_dir, exist_ok=True)
    fresh = os.path.join(out_dir, "fresh.kctx")
    existing = os.path.join(out_dir, "existing.kctx")
    with open(existing, "wb") as f:
        f.write(b"previous contents")
    for out in (fresh, existing):
        p = c.run("pack", manifest, "-o", out, *extra)
        expect_exit(p, 1, f"pack {os.path.basename(manifest)}")
        lines = p.err.splitlines()
        check(len(lines) == 1, "one error line", p)
        where = f"{manifest}:{at}: error: " if at else f"{manifest}:"
        check(lines[0].startswith(where), f"message starts with '{where}'", p)
        check(expect in lines[0], f"message says '{expect}'", p)
        check(p.out == "", "nothing on stdout", p)
    check(sorted(os.listdir(out_dir)) == ["existing.kctx"], f"no output and no temporary file "
          f"left: {sorted(os.listdir(out_dir))}")
    check(read(existing) == b"previous contents", "an existing output file is left unchanged")


def case_bad(c, name):
    manifest = os.path.join(c.tests, "bad", f"{name}.yaml")
    with open(manifest, encoding="utf-8") as f:
        head = dict(re.findall(r"^# (expect|at): (.*)$", f.read(), re.M))
    check("expect" in head and "at" in head, f"{manifest} has '# expect:' and '# at:' lines")
    pack_fails(c, manifest, head["expect"], head["at"])


def case_variant_files(c):
    # A variant file that exists but cannot be read: the OS's reason.
    src = os.path.join(c.tests, "good")
    work = os.path.join(c.tmp, "work")
    shutil.copytree(src, work)
    os.remove(os.path.join(work, "fill.ptx"))
    os.mkdir(os.path.join(work, "fill.ptx"))
    manifest = os.path.join(work, "features.yaml")
    pack_fails(c, manifest, "cannot read variant file 'fill.ptx'", "14:32")
    pack_fails(c, manifest, "Is a directory", "14:32")
    # An empty variant file.
    os.rmdir(os.path.join(work, "fill.ptx"))
    open(os.path.join(work, "fill.ptx"), "wb").close()
    pack_fails(c, manifest, "variant file 'fill.ptx'", "14:32")
    pack_fails(c, manifest, "is empty", "14:32")
    # Search directories: used in order after the manifest's directory.
    os.remove(os.path.join(work, "fill.ptx"))
    pack_fails(c, manifest, f"(looked in: {work}, {c.tmp})", "14:32", ("--search-dir", c.tmp))
    shutil.copy(os.path.join(src, "fill.ptx"), os.path.join(c.tmp, "fill.ptx"))
    out = os.path.join(c.tmp, "found.kctx")
    p = c.run("pack", manifest, "-o", out, "--search-dir", work, "--search-dir", c.tmp, "-v")
    expect_exit(p, 0, "pack with the variant in the second search dir")
    check(os.path.join(c.tmp, "fill.ptx") in p.err, "--verbose says where it was found", p)
    # The examples' modules are found only through --search-dir.
    vadd = os.path.join(c.examples, "vector_add.yaml")
    pack_fails(c, vadd, "cannot open variant file 'kctx_callable_elementwise.so'")
    pack_fails(c, vadd, "; hint: pass --search-dir DIR naming the folder the variant file was "
               "built into (the examples': --search-dir <build>/examples/callables)")
    # vector_add has one child and one task: the counts are singular.
    out = os.path.join(c.tmp, "vadd.kctx")
    p = c.run("pack", vadd, "-o", out, "--search-dir", c.search_dir, "-v")
    expect_exit(p, 0, "pack vector_add -v")
    check(re.search(r", 1 child, 1 task\n$", p.err), "-v: '1 child, 1 task'", p)
    # A manifest that does not exist; an output directory that does not exist.
    pack_fails(c, os.path.join(c.tmp, "missing.yaml"), "No such file or directory")


def write_manifest(c, name, text):
    """A manifest in the case's directory, next to a copy of kernel.cl."""
    shutil.copy(os.path.join(c.tests, "bad", "kernel.cl"), os.path.join(c.tmp, "kernel.cl"))
    path = os.path.join(c.tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


FILL_CHILD = """children:
  - name: fill
    params: [{name: y, kind: tensor}, {name: n, kind: scalar}]
    variants: [{kind: opencl_c, file: kernel.cl}]
"""


def case_json_escaping(c):
    # Names are arbitrary bytes but NUL; JSON output must escape them.
    weird = 'q"b\\s\tt\u00e9\x01\x7f/'
    manifest = write_manifest(c, "weird.yaml", f"""name: "q\\"b\\\\s\\tt\u00e9\\x01\\x7f/"
params: [{{name: "y\\n", kind: tensor_out}}, {{name: n, kind: scalar}}]
{FILL_CHILD}tasks:
  - {{id: t0, child: fill, bind: [{{tensor: "y\\n"}}, {{scalar: n}}]}}
""")
    out = os.path.join(c.tmp, "weird.kctx")
    p = c.run("pack", manifest, "-o", out)
    expect_exit(p, 0, "pack a callable with odd characters in its names")
    j = inspect_json(c, out)
    check(j["name"] == weird, f"the name survives JSON escaping: {j['name']!r}")
    check(j["params"][0]["name"] == "y\n", "a newline in a name")
    check(j["tasks"][0]["bindings"][0]["param_name"] == "y\n", "binding names escaped too")


def case_limits(c):
    # At the image format's limits: accepted.
    deps = ", ".join(f"t{i}" for i in range(64))
    tasks = "".join(f"  - {{id: t{i}, child: fill, bind: [{{tensor: y}}, {{scalar: n}}]}}\n"
                    for i in range(4095))
    tasks += f"  - {{id: last, child: fill, bind: [{{tensor: y}}, {{imm: 1}}], after: [{deps}]}}\n"
    long_name = "n" * 255
    manifest = write_manifest(c, "max.yaml", f"""name: {long_name}
params: [{{name: y, kind: tensor_out}}, {{name: n, kind: scalar}}]
{FILL_CHILD}tasks:
{tasks}""")
    out = os.path.join(c.tmp, "max.kctx")
    p = c.run("pack", manifest, "-o", out)
    expect_exit(p, 0, "pack at the limits (255-byte name, 4096 tasks, 64 dependencies)")
    j = inspect_json(c, out)
    check(len(j["tasks"]) == 4096 and len(j["tasks"][-1]["after"]) == 64 and
          j["name"] == long_name, "limits round-trip")
    check(j["dag"]["depth"] == 2 and j["dag"]["width"] == 4095, f"dag {j['dag']}")

    # One above each limit: refused with the limit named.
    over = [
        ("name", f"name: {'n' * 256}\nparams: []\n{FILL_CHILD}tasks: [{{id: t, child: fill}}]\n",
         "is 256 bytes long; the limit is 255"),
        ("tasks", f"name: x\nparams: [{{name: y, kind: tensor_out}}, {{name: n, kind: scalar}}]\n"
                  f"{FILL_CHILD}tasks:\n{tasks}  - {{id: extra, child: fill}}\n",
         "4097 tasks; the limit is 4096"),
        ("params", "name: x\nparams: [" +
         ", ".join(f"{{name: p{i}, kind: scalar}}" for i in range(65)) +
         f"]\n{FILL_CHILD}tasks: [{{id: t, child: fill}}]\n", "65 parameters; the limit is 64"),
        ("variants", "name: x\nchildren:\n  - name: fill\n    variants: [" +
         ", ".join("{kind: opencl_c, file: kernel.cl}" for _ in range(9)) +
         "]\ntasks: [{id: t, child: fill}]\n", "9 variants; the limit is 8"),
        ("deps", f"name: x\nparams: [{{name: y, kind: tensor_out}}, {{name: n, kind: scalar}}]\n"
                 f"{FILL_CHILD}tasks:\n" + tasks.replace(f"after: [{deps}]", f"after: [{deps}, t64]"),
         "65 dependencies; the limit is 64"),
    ]
    for label, text, expect in over:
        pack_fails(c, write_manifest(c, f"over_{label}.yaml", text), expect)

    # A limit only the whole image can break (string table above 1 MiB):
    # the builder refuses, and its message is passed on.
    children = "".join(
        f"  - name: c{ci}\n    params: [" +
        ", ".join(f"{{name: {'p' * 250}{i:03d}, kind: scalar}}" for i in range(64)) +
        "]\n    variants: [{kind: opencl_c, file: kernel.cl}]\n" for ci in range(80))
    bind = ", ".join("{imm: 1}" for _ in range(64))
    text = f"name: big\nchildren:\n{children}tasks:\n  - {{id: t, child: c0, bind: [{bind}]}}\n"
    pack_fails(c, write_manifest(c, "big_strtab.yaml", text),
               "error: the image builder rejected the callable: ")


def case_output_errors(c):
    manifest = os.path.join(c.tests, "good", "features.yaml")
    # OUT is a directory: refused, nothing left next to it.
    target = os.path.join(c.tmp, "adir")
    os.mkdir(target)
    p = c.run("pack", manifest, "-o", target)
    expect_exit(p, 1, "pack -o DIRECTORY")
    check("cannot write the image" in p.err and "Is a directory" in p.err, "says why", p)
    check(sorted(os.listdir(c.tmp)) == ["adir"] and os.listdir(target) == [],
          f"no temporary file left: {os.listdir(c.tmp)}")
    # OUT's directory does not exist.
    p = c.run("pack", manifest, "-o", os.path.join(c.tmp, "no", "such", "dir", "x.kctx"))
    expect_exit(p, 1, "pack into a missing directory")
    check("cannot write the image" in p.err and "No such file or directory" in p.err,
          "the write error says why", p)
    # Overwriting an existing image replaces it whole.
    out = os.path.join(c.tmp, "x.kctx")
    with open(out, "wb") as f:
        f.write(b"x" * 100000)
    p = c.run("pack", manifest, "-o", out)
    expect_exit(p, 0, "pack over an existing file")
    inspect_json(c, out)


def corrupt_case(c, image, data, reason=None, label=""):
    path = os.path.join(c.tmp, "corrupt.kctx")
    with open(path, "wb") as f:
        f.write(data)
    for as_json in ((), ("--json",)):
        p = c.run("inspect", path, *as_json)
        expect_exit(p, 1, f"inspect of a corrupted image ({label})")
        check(p.out == "", "nothing on stdout for a rejected image", p)
        lines = p.err.splitlines()
        m = REJECTED.match(lines[0]) if len(lines) == 1 else None
        check(m is not None and m["path"] == path,
              "one line 'IMAGE: rejected: REASON at offset N: MESSAGE'", p)
        if reason:
            check(m["reason"] == reason, f"{label}: reason {reason}", p)
        check(int(m["offset"]) <= max(len(data), 1 << 20), "offset is plausible", p)


def case_corrupt(c):
    image = os.path.join(c.images, "vector_add.kctx")
    check(os.path.isfile(image), f"the build packed {image}")
    good = read(image)
    j = inspect_json(c, image)
    blob = j["children"][0]["variants"][0]
    corrupt_case(c, image, b"", "KCTX_IMAGE_TOO_SMALL", "empty")
    corrupt_case(c, image, good[:10], "KCTX_IMAGE_TOO_SMALL", "10 bytes")
    for cut in (len(good) - 1, len(good) // 2, 144, 200):
        corrupt_case(c, image, good[:cut], None, f"truncated to {cut}")
    corrupt_case(c, image, good + b"\0", "KCTX_IMAGE_SIZE_MISMATCH", "one byte appended")
    flipped = bytearray(good)
    flipped[0] ^= 0xFF
    corrupt_case(c, image, bytes(flipped), "KCTX_IMAGE_BAD_MAGIC", "magic byte flipped")
    flipped = bytearray(good)
    flipped[blob["offset"] + blob["size"] // 2] ^= 0x01
    corrupt_case(c, image, bytes(flipped), "KCTX_IMAGE_CHECKSUM_MISMATCH", "blob bit flipped")
    flipped = bytearray(good)
    flipped[len(good) - 1] ^= 0x80
    corrupt_case(c, image, bytes(flipped), None, "last byte flipped")
    # Unreadable files are errors too, with the OS's reason.
    for path, why in ((os.path.join(c.tmp, "absent.kctx"), "No such file or directory"),
                      (c.tmp, "Is a directory")):
        p = c.run("inspect", path)
        expect_exit(p, 1, "inspect of an unreadable file")
        check(p.err.startswith(f"{path}: error: cannot read the image: {why}"), "says why", p)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kctx", required=True, help="the kctx executable")
    ap.add_argument("--images", required=True, help="where the build put the example images")
    ap.add_argument("--examples", required=True, help="examples/callables in the source tree")
    ap.add_argument("--search-dir", required=True, help="where the example kernel modules are")
    ap.add_argument("--tests", required=True, help="tests/cli in the source tree")
    ap.add_argument("case", help="help | usage | features | ascend_bin | variant_files | corrupt | "
                                 "json_escaping | limits | output_errors | roundtrip:NAME | "
                                 "bad:NAME")
    args = ap.parse_args()

    kind, _, name = args.case.partition(":")
    cases = {"help": case_help, "usage": case_usage, "features": case_features,
             "ascend_bin": case_ascend_bin,
             "variant_files": case_variant_files, "corrupt": case_corrupt,
             "json_escaping": case_json_escaping, "limits": case_limits,
             "output_errors": case_output_errors,
             "roundtrip": case_roundtrip, "bad": case_bad}
    if kind not in cases or (kind in ("roundtrip", "bad")) != bool(name):
        ap.error(f"unknown case '{args.case}'")
    if kind == "roundtrip" and name not in EXAMPLES:
        ap.error(f"no expectations for example '{name}'")
    with tempfile.TemporaryDirectory(prefix="kctx-cli-") as tmp:
        c = Ctx(args, tmp)
        try:
            cases[kind](c, name) if name else cases[kind](c)
        except Failure as e:
            print(f"FAIL {args.case}: {e}", file=sys.stderr)
            return 1
    print(f"PASS {args.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
