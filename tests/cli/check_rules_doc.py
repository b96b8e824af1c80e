#!/usr/bin/env python3
"""docs/kernel-mode.md's "The rules, one line each" stays true.

Every rule K1..K40 has exactly one line there; every test file a line names
exists under tests/ (or, named from platform/, in a platform's own folder)
and cites the rule; every probe it names is in
src/conformance/probe_list.h with the rule in its rule column; a line that
names no test says "no test yet". Usage: check_rules_doc.py REPO_ROOT
"""
import os
import re
import sys

RULES = 40


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.abspath(sys.argv[1])
    with open(os.path.join(root, "docs", "kernel-mode.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## The rules, one line each\n(.*?)^## ", text, re.S | re.M)
    if not m:
        print("docs/kernel-mode.md has no section 'The rules, one line each'")
        return 1
    with open(os.path.join(root, "src", "conformance", "probe_list.h"), encoding="utf-8") as f:
        probes = {name: rules.split(",") for name, rules in
                  re.findall(r'^PROBE\((\w+), "([^"]*)"', f.read(), re.M)}
    lines = {}
    errors = []
    for line in m.group(1).splitlines():
        r = re.match(r"^- \*\*K(\d+)\*\* ", line)
        if r:
            n = int(r.group(1))
            if n in lines:
                errors.append(f"K{n}: more than one line")
            lines[n] = line
    for n in range(1, RULES + 1):
        rule = f"K{n}"
        line = lines.get(n)
        if line is None:
            errors.append(f"{rule}: no line")
            continue
        tests = line.split(" Tests: ", 1)
        if len(tests) != 2:
            errors.append(f"{rule}: the line names no tests (say 'Tests: no test yet.')")
            continue
        named = re.findall(r"`([^`]+)`", tests[1])
        if not named and "no test yet" not in tests[1]:
            errors.append(f"{rule}: names no test and does not say 'no test yet'")
        for name in named:
            if "/" in name:
                shown = name if name.startswith("platform/") else f"tests/{name}"
                path = os.path.join(root, shown)
                if not os.path.isfile(path):
                    errors.append(f"{rule}: {shown} does not exist")
                    continue
                with open(path, encoding="utf-8") as f:
                    if not re.search(rf"\b{rule}\b", f.read()):
                        errors.append(f"{rule}: {shown} does not cite {rule}")
            elif name not in probes:
                errors.append(f"{rule}: no probe named {name} in probe_list.h")
            elif rule not in probes[name]:
                errors.append(f"{rule}: probe {name} checks {','.join(probes[name])}, not {rule}")
    extra = sorted(set(lines) - set(range(1, RULES + 1)))
    errors += [f"K{n}: no such rule (K1..K{RULES})" for n in extra]
    for e in errors:
        print("docs/kernel-mode.md: " + e)
    print(f"{len(lines)} rule lines, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
