#!/usr/bin/env python3
"""A library does not depend on the device runtimes it loads at run time.

usage: check_needed.py LIBRARY NAME_PREFIX [NAME_PREFIX...]

Reads the library's NEEDED entries (readelf -d) and fails when one starts
with a forbidden prefix (libkctx loads OpenCL and CUDA with dlopen: a
machine without them must still load libkctx). Also fails when the library
has no NEEDED entry at all (the listing would prove nothing).
"""
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    lib, forbidden = sys.argv[1], sys.argv[2:]
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    needed = [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line]
    print(f"{lib}: NEEDED {', '.join(needed) if needed else '(none)'}")
    if not needed:
        print("0 passed, 1 failed")
        return 1
    bad = [n for n in needed if any(n.startswith(p) for p in forbidden)]
    for n in bad:
        print(f"{lib}: depends on {n}, which it must load at run time instead")
    if bad:
        print("0 passed, 1 failed")
        return 1
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
