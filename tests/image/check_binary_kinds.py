#!/usr/bin/env python3
"""The device binary kinds are the same everywhere they are written.

The platforms declare the kinds (BINARY_KINDS in platform/<name>/platform.cmake,
cmake/BinaryKinds.cmake), and the build generates kctx_gen_binary_kinds.h
from the declarations: the validator's minor table and `kctx pack`'s names
come from it, and src/image/layout.h checks at compile time that each
declared kind is in the public enum with its number. What no compiler sees
is checked here: the public enum kctx_variant_kind (include/kctx/image.h)
has no member the declarations lack, Python's VariantKind
(python/kctx/image.py) has exactly the declared names (upper case) and
numbers, and so has docs/image-format.md's table of variant kinds.

Usage: check_binary_kinds.py --generated kctx_gen_binary_kinds.h
           --header include/kctx/image.h --python python/kctx/image.py
           --docs docs/image-format.md
"""
import argparse
import ast
import re
import sys


def declared(path):
    """{NAME: number} and {NAME: (name, minor)} from the generated X-macro."""
    text = open(path, encoding="utf-8").read()
    rows = re.findall(r"X\(\s*([a-z][a-z0-9_]*)\s*,\s*([A-Z][A-Z0-9_]*)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)", text)
    if not rows:
        sys.exit(f"{path}: no X(name, NAME, number, minor) row: not a generated kctx_gen_binary_kinds.h?")
    return {upper: int(number) for _, upper, number, _ in rows}, {
        upper: (name, int(minor)) for name, upper, _, minor in rows
    }


def header_enum(path, problems):
    """{NAME: number} of enum kctx_variant_kind's KCTX_VARIANT_NAME members."""
    text = open(path, encoding="utf-8").read()
    m = re.search(r"typedef\s+enum\s+kctx_variant_kind\s*\{(.*?)\}\s*kctx_variant_kind\s*;", text, re.S)
    if not m:
        sys.exit(f"{path}: no 'typedef enum kctx_variant_kind {{ ... }} kctx_variant_kind;'")
    body = re.sub(r"/\*.*?\*/", " ", m.group(1), flags=re.S)
    body = re.sub(r"//[^\n]*", " ", body)
    out = {}
    for member in (x.strip() for x in body.split(",")):
        if not member:
            continue
        mm = re.fullmatch(r"KCTX_VARIANT_([A-Z][A-Z0-9_]*)\s*=\s*(0[xX][0-9a-fA-F]+|\d+)[uU]?", member)
        if not mm:
            problems.append(
                f"{path}: enum kctx_variant_kind member '{member}' is not KCTX_VARIANT_<NAME> = <number> "
                "(every kind's number is written: it is file format)"
            )
            continue
        out[mm.group(1)] = int(mm.group(2), 0)
    return out


def python_enum(path, problems):
    """{NAME: number} of class VariantKind's members (read, not imported:
    importing the package loads libkctx)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "VariantKind":
            out = {}
            for st in node.body:
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                    name, value = st.targets[0].id, st.value
                elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                    name, value = st.target.id, st.value
                else:
                    continue
                if name.startswith("_"):
                    continue
                if not (isinstance(value, ast.Constant) and type(value.value) is int):
                    problems.append(f"{path}:{st.lineno}: VariantKind.{name} is not an integer literal")
                    continue
                out[name] = value.value
            return out
    sys.exit(f"{path}: no class VariantKind")


def docs_table(path, problems):
    """{NAME: number} of the table `| kind | value | content |` under
    '### Variant entry'."""
    lines = open(path, encoding="utf-8").read().split("\n")
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith("### Variant entry"))
    except StopIteration:
        sys.exit(f"{path}: no '### Variant entry' section")
    i = start + 1
    while i < len(lines) and not re.match(r"^\|\s*kind\s*\|\s*value\s*\|", lines[i]):
        if lines[i].startswith("#"):
            sys.exit(f"{path}: no '| kind | value | ...' table in '### Variant entry'")
        i += 1
    if i == len(lines):
        sys.exit(f"{path}: no '| kind | value | ...' table in '### Variant entry'")
    out = {}
    for line in lines[i + 2 :]:
        if not line.startswith("|"):
            break
        m = re.match(r"^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|\s*(\d+)\s*\|", line)
        if not m:
            problems.append(f"{path}: variant kind row '{line[:60]}' is not | `NAME` | number | ...")
            continue
        out[m.group(1)] = int(m.group(2))
    return out


def compare(where, have, want, minors, problems):
    for name in sorted(set(want) | set(have), key=lambda n: want.get(n, have.get(n))):
        decl = f"BINARY_KINDS {minors[name][0]}={want[name]}:{minors[name][1]}" if name in want else ""
        if name not in have:
            problems.append(f"{where}: lacks {name} = {want[name]} (declared: {decl})")
        elif name not in want:
            problems.append(
                f"{where}: has {name} = {have[name]}, which no platform declares "
                "(add it to its platform's BINARY_KINDS, or remove it)"
            )
        elif have[name] != want[name]:
            problems.append(f"{where}: {name} is {have[name]}, declared {want[name]} ({decl})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--generated", required=True)
    ap.add_argument("--header", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--docs", required=True)
    a = ap.parse_args()
    problems = []
    want, minors = declared(a.generated)
    compare(f"{a.header} (enum kctx_variant_kind, KCTX_VARIANT_*)", header_enum(a.header, problems), want,
            minors, problems)
    compare(f"{a.python} (class VariantKind)", python_enum(a.python, problems), want, minors, problems)
    compare(f"{a.docs} (variant kinds table)", docs_table(a.docs, problems), want, minors, problems)
    if problems:
        print("the binary kinds disagree with their declarations (platform/<name>/platform.cmake, "
              "BINARY_KINDS; docs/platforms.md, 'How to add a platform'):")
        for p in problems:
            print("  " + p)
        return 1
    kinds = ", ".join(f"{minors[n][0]}={v}:{minors[n][1]}" for n, v in sorted(want.items(), key=lambda x: x[1]))
    print(f"{len(want)} binary kinds agree (declarations, image.h, VariantKind, image-format.md): {kinds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
