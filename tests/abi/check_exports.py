#!/usr/bin/env python3
"""The libraries export exactly what their public headers declare.

usage: check_exports.py LIBRARY PREFIX HEADER [HEADER...]

Every dynamic symbol the library defines must start with PREFIX and be
declared (as a function) in one of the headers, and every function the
headers declare must be exported. Prints the differences and exits 1 on any.
"""
import re
import subprocess
import sys


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in ("T", "D", "B", "R", "W", "V", "i"):
            names.add(parts[2].split("@")[0])
    return names


def declared(headers, api_macros):
    names = set()
    pattern = re.compile(r"\b(?:%s)\b[^;{]*?\b([a-z_][a-z0-9_]*)\s*\(" % "|".join(api_macros), re.S)
    for h in headers:
        text = open(h).read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)  # comments mention functions too
        text = re.sub(r"^\s*#.*$", "", text, flags=re.M)   # macros (the API macro's own definition)
        for m in pattern.finditer(text):
            names.add(m.group(1))
    return names


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    lib, prefix, headers = sys.argv[1], sys.argv[2], sys.argv[3:]
    macros = ["KCTX_API", "KCTX_IMAGE_API"] if prefix == "kctx_" else ["SIM_API"]
    have, want = exported(lib), declared(headers, macros)
    if not have or not want:
        # Nothing on one side would make the comparison vacuous (a header
        # the pattern no longer parses, a library built without exports).
        print(f"{lib}: {len(have)} exported, {len(want)} declared: nothing to compare")
        print("0 passed, 1 failed")
        return 1
    stray = sorted(n for n in have if not n.startswith(prefix) or n not in want)
    missing = sorted(want - have)
    for n in stray:
        print(f"{lib}: exports {n}, which no public header declares")
    for n in missing:
        print(f"{lib}: does not export {n}, declared in the headers")
    print(f"{lib}: {len(have)} exported, {len(want)} declared")
    if stray or missing:
        print("0 passed, 1 failed")
        return 1
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
