#!/usr/bin/env python3
"""Every relative link in docs/*.md and README.md leads somewhere.

A Markdown link or image `[text](target)` whose target is not a URL (no
scheme) and not a mail address must name a file or folder inside the
repository, relative to the page; a `#anchor` (alone or after a .md target)
must match a heading of that page, turned into a GitHub-style anchor
(lower case, punctuation dropped, spaces to hyphens). Links inside code
blocks and code spans are ignored, but a code span that is a relative path
to a page (`../x/y.md`) is checked like a link. Usage: check_doc_links.py REPO_ROOT
"""
import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SPAN_PATH = re.compile(r"`(\.{1,2}/[^`\s]+\.md)`")
REF = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")


def strip_code(text, spans=True):
    """Text without fenced code blocks (kept as blank lines) and, when spans,
    code spans."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            mark = m.group(1)[0] * 3
            if fence is None:
                fence = mark
            elif mark == fence:
                fence = None
            out.append("")
            continue
        if fence:
            out.append("")
        else:
            out.append(re.sub(r"`+[^`]*`+", "", line) if spans else line)
    return out


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            for line in strip_code(f.read(), spans=False):
                m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                title = re.sub(r"[*_`]|\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
                slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
                n = seen.get(slug, 0)
                seen[slug] = n + 1
                found.add(slug if n == 0 else "%s-%d" % (slug, n))
        cache[path] = found
    return cache[path]


def check(root, page):
    errors = []
    with open(page, encoding="utf-8") as f:
        text = f.read()
    spans = strip_code(text, spans=False)
    for lineno, line in enumerate(strip_code(text), 1):
        targets = LINK.findall(line)
        # A page cited as a path in a code span, `../x/y.md`, must exist too.
        targets += SPAN_PATH.findall(spans[lineno - 1])
        m = REF.match(line)
        if m:
            targets.append(m.group(1))
        for target in targets:
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # http:, https:, mailto:, ...
            where = "%s:%d: %s" % (os.path.relpath(page, root), lineno, target)
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if os.path.isabs(path) or os.path.relpath(dest, root).startswith(".."):
                errors.append(where + " (leads outside the repository)")
            elif not os.path.exists(dest):
                errors.append(where + " (no such file)")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                errors.append(where + " (no heading gives #%s)" % anchor)
    return errors


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.abspath(sys.argv[1])
    docs = os.path.join(root, "docs")
    pages = [os.path.join(root, "README.md")]
    pages += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    errors = []
    for page in pages:
        errors += check(root, page)
    for e in errors:
        print("dead link: " + e)
    print("%d pages, %d dead links" % (len(pages), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
