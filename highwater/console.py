"""Progress lines of the ``highwater`` command: one line each, on stderr, flushed at once."""

from __future__ import annotations

import sys


def progress(msg: str) -> None:
    print(f"highwater: {msg}", file=sys.stderr, flush=True)
