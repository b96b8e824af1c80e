#!/usr/bin/env python3
"""The CUDA fatbins hold every kernel for every architecture (issue 15).

usage: check_fatbins.py CUOBJDUMP ARCHS FATBIN:KERNEL[,KERNEL...] ...

ARCHS is the build's ;-list of SM architectures (KCTX_CUDA_ARCHS). For each
fatbin, cuobjdump must list one cubin per architecture and the PTX of the
newest, and every named kernel in every cubin. CUOBJDUMP "" (not found):
exits 77 (skipped) with the reason.
"""
import re
import subprocess
import sys


def run(tool, *args):
    return subprocess.run([tool, *args], check=True, capture_output=True, text=True).stdout


def main():
    tool, archs, specs = sys.argv[1], sys.argv[2].split(";"), sys.argv[3:]
    if not tool:
        print("cuobjdump not found (pip install nvidia-cuda-cuobjdump; scripts/install-deps.sh "
              "installs it): skipped")
        return 77
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL", what)

    for spec in specs:
        path, kernels = spec.split(":")
        kernels = kernels.split(",")
        elves = re.findall(r"\.sm_(\d+)\.cubin", run(tool, "--list-elf", path))
        check(sorted(elves, key=int) == sorted(archs, key=int),
              f"{path}: cubins for sm_{elves}, expected sm_{archs}")
        ptx = re.findall(r"\.sm_(\d+)\.ptx", run(tool, "--list-ptx", path))
        check(ptx == [archs[-1]], f"{path}: PTX for {ptx}, expected [{archs[-1]}]")
        usage = run(tool, "--dump-resource-usage", path)
        per_arch = {}
        arch = None
        for line in usage.splitlines():
            m = re.match(r"\s*arch = sm_(\d+)", line)
            if m:
                arch = m.group(1)
                per_arch.setdefault(arch, set())
            m = re.match(r"\s*Function ([A-Za-z0-9_]+):", line)
            if m and arch:
                per_arch[arch].add(m.group(1))
        for a in archs:
            missing = [k for k in kernels if k not in per_arch.get(a, set())]
            check(not missing, f"{path}: sm_{a} lacks {missing}")
        print(f"{path}: {len(kernels)} kernels in each of sm_{', sm_'.join(archs)} (+ PTX)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
