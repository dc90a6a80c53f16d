"""What long work reports as it goes: a callable that takes one line for a person (``highwater:
building the Java worker ...``). Every floor takes one; the CLI prints the lines, tests collect
them, ``quiet`` drops them."""

from __future__ import annotations

import sys
from collections.abc import Callable

Progress = Callable[[str], None]


def quiet(_: str) -> None:
    """A ``Progress`` that says nothing."""


def to_stderr(line: str) -> None:
    """A ``Progress`` that prints each line on stderr as ``highwater: LINE``."""
    print(f"highwater: {line}", file=sys.stderr, flush=True)
