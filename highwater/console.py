"""Progress lines of the ``highwater`` command: one line each, on stderr, flushed at once;
styled by rich when stderr is a terminal, plain text otherwise (a log, a pipe, a test)."""

from __future__ import annotations

import os
import sys


def _terminal() -> bool:
    return sys.stderr.isatty() and os.environ.get("TERM") != "dumb" and "NO_COLOR" not in os.environ


def progress(msg: str) -> None:
    if _terminal():
        from rich.console import Console
        from rich.text import Text

        Console(file=sys.stderr, highlight=False, soft_wrap=True).print(Text.assemble(("highwater: ", "dim"), msg))
        return
    print(f"highwater: {msg}", file=sys.stderr, flush=True)
