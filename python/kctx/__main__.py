"""``python -m kctx`` and the ``kctx`` command of a pip install: run the kctx
tool bundled with this package (``kctx/_native/bin/kctx``, built with the
libraries by ``pip install ./python``), with the same arguments."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional


def tool_path() -> Path:
    """Where the bundled tool is (it may be absent: a source checkout)."""
    return Path(__file__).resolve().parent / "_native" / "bin" / "kctx"


def main(argv: Optional[List[str]] = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    exe = tool_path()
    if not exe.is_file():
        sys.exit(f"kctx: the kctx tool is not bundled with this package ({exe} is missing): install it "
                 "with `pip install ./python`, or run build/tools/kctx/kctx from a build tree")
    os.execv(str(exe), [str(exe), *args])


if __name__ == "__main__":
    main()
