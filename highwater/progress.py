"""Live progress of long work: which test or run of how many, elapsed and remaining time, the
run's phase, the faults active now and the events recorded per second.

The work says what happens through a :class:`Reporter` (``current()``, installed by whoever
shows it: the pytest plugin in a child pytest of ``highwater run``/``campaign``/``sweep``/
``bisect``, ``highwater replay`` in its own process); the default reporter says nothing, so a
run started by a test or a library call prints what it always printed.

:class:`LineReporter` turns those calls into lines, never many: one per test started, one per
phase, one per change of the active faults, and the events' rate at most every ``every``
seconds (10). The lines go to a sink: plain text (a log, a pipe) or, on a terminal, the same
lines styled by rich. ``watch_run`` polls a run's event count and active faults from a thread
of its own, so a nemesis that holds the run's thread for minutes is still seen.

Modes (``--progress`` of the long commands, ``--highwater-progress`` of the pytest plugin,
``HIGHWATER_PROGRESS``): ``auto`` (rich on a terminal, plain otherwise), ``rich``, ``plain``,
``off``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol, TextIO

log = logging.getLogger(__name__)

ENV = "HIGHWATER_PROGRESS"
MODES = ("auto", "rich", "plain", "off")
#: seconds between two lines of the events' rate
EVERY = 10.0

#: a line's kind, for the styled sink: step, phase, fault, healed, events, info
Sink = Callable[[str, str], None]


class Reporter(Protocol):
    """What long work says about itself; every method is cheap and may be called often."""

    def step(self, index: int, total: int, label: str) -> None:
        """Item ``index`` (from 1) of ``total`` started: a test, a run, a version."""

    def phase(self, text: str) -> None:
        """The current item is now in this phase (``workload``, ``settle``, ``checks``...)."""

    def faults(self, active: Sequence[str]) -> None:
        """The faults active now (empty: none, everything healed)."""

    def events(self, count: int) -> None:
        """The current run has recorded ``count`` events so far."""

    def message(self, text: str) -> None:
        """Anything else worth a line."""


class NullReporter:
    """Says nothing (the default)."""

    def step(self, index: int, total: int, label: str) -> None:
        pass

    def phase(self, text: str) -> None:
        pass

    def faults(self, active: Sequence[str]) -> None:
        pass

    def events(self, count: int) -> None:
        pass

    def message(self, text: str) -> None:
        pass


NULL = NullReporter()


def clock(seconds: float | None) -> str:
    """``4m05s``, ``1h02m``; ``?`` when not known."""
    if seconds is None:
        return "?"
    s = max(0, int(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class LineReporter:
    """A :class:`Reporter` that writes a line to ``sink`` only when something changed, and the
    events' rate at most once every ``every`` seconds. Thread-safe (``watch_run`` calls it
    from its own thread)."""

    def __init__(self, sink: Sink, now: Callable[[], float] = time.monotonic, every: float = EVERY) -> None:
        self._sink = sink
        self._now = now
        self._every = every
        self._lock = threading.Lock()
        self._started: float | None = None
        self._phase: str | None = None
        self._faults: tuple[str, ...] = ()
        self._rate_from: tuple[float, int] | None = None  # (when, count) of the last rate line

    def step(self, index: int, total: int, label: str) -> None:
        with self._lock:
            now = self._now()
            if self._started is None or index <= 1:
                self._started = now
            elapsed = now - self._started
            done = index - 1
            left = elapsed / done * (total - done) if done > 0 else None
            timing = f"elapsed {clock(elapsed)}" + (f", about {clock(left)} left" if left is not None else "")
            self._phase, self._faults, self._rate_from = None, (), None  # a new item starts afresh
            self._sink("step", f"[{index}/{total}] {label} ({timing})")

    def phase(self, text: str) -> None:
        with self._lock:
            if text != self._phase:
                self._phase = text
                self._sink("phase", f"phase: {text}")

    def faults(self, active: Sequence[str]) -> None:
        with self._lock:
            now = tuple(active)
            if now == self._faults:
                return
            self._faults = now
            if now:
                self._sink("fault", f"fault{'s' if len(now) > 1 else ''} active: {'; '.join(now)}")
            else:
                self._sink("healed", "no fault active")

    def events(self, count: int) -> None:
        with self._lock:
            now = self._now()
            if self._rate_from is None:
                self._rate_from = (now, count)
                return
            since, before = self._rate_from
            if now - since < self._every:
                return
            self._rate_from = (now, count)
            self._sink("events", f"events: {count} ({(count - before) / (now - since):.0f}/s)")

    def message(self, text: str) -> None:
        with self._lock:
            self._sink("info", text)


def plain_sink(stream: TextIO, prefix: str = "highwater: ") -> Sink:
    """Lines of plain text, flushed at once (a CI log shows them as they come)."""

    def write(kind: str, line: str) -> None:
        stream.write(f"{prefix}{line}\n")
        stream.flush()

    return write


#: rich styles of the kinds of lines
STYLES = {"step": "bold cyan", "phase": "blue", "fault": "bold yellow", "healed": "green", "events": "dim", "info": ""}


def rich_sink(stream: TextIO, prefix: str = "highwater: ") -> Sink:
    """The same lines, styled by rich (for a terminal)."""
    from rich.console import Console
    from rich.text import Text

    console = Console(file=stream, highlight=False, soft_wrap=True)

    def write(kind: str, line: str) -> None:
        console.print(Text.assemble((prefix, "dim"), (line, STYLES.get(kind, ""))))

    return write


def resolve(mode: str | None, stream: TextIO) -> str:
    """``auto`` (or None) as ``rich`` on a terminal (not a dumb one) and ``plain`` otherwise."""
    mode = mode or os.environ.get(ENV) or "auto"
    if mode not in MODES:
        raise ValueError(f"progress mode {mode!r}: expected one of {', '.join(MODES)}")
    if mode == "auto":
        tty = hasattr(stream, "isatty") and stream.isatty() and os.environ.get("TERM") != "dumb"
        return "rich" if tty else "plain"
    return mode


def for_stream(stream: TextIO | None = None, mode: str | None = None, prefix: str = "highwater: ") -> Reporter:
    """A reporter writing to ``stream`` (stderr) in ``mode`` (None: ``$HIGHWATER_PROGRESS``, else auto)."""
    stream = stream or sys.stderr
    resolved = resolve(mode, stream)
    if resolved == "off":
        return NULL
    return LineReporter(rich_sink(stream, prefix) if resolved == "rich" else plain_sink(stream, prefix))


_current: Reporter = NULL


def current() -> Reporter:
    """The reporter in use in this process (``NULL`` unless one was installed)."""
    return _current


def install(reporter: Reporter) -> Reporter:
    """Use ``reporter`` from now on; returns the one it replaces."""
    global _current
    previous, _current = _current, reporter
    return previous


@contextmanager
def using(reporter: Reporter) -> Iterator[Reporter]:
    previous = install(reporter)
    try:
        yield reporter
    finally:
        install(previous)


@contextmanager
def watch_run(
    events: Callable[[], int],
    faults: Callable[[], Sequence[str]],
    reporter: Reporter | None = None,
    interval: float = 1.0,
) -> Iterator[None]:
    """While the block runs, poll ``events()`` and ``faults()`` every ``interval`` seconds from
    a thread of its own and tell ``reporter`` (the current one); once more at the end. Nothing
    is started when nobody listens. A poll that fails is skipped: progress never breaks a run."""
    reporter = reporter or current()
    if isinstance(reporter, NullReporter):
        yield
        return
    stop = threading.Event()

    def poll() -> None:
        try:
            reporter.faults(faults())
            reporter.events(events())
        except Exception as exc:  # noqa: BLE001 - a progress line is never worth a run
            log.debug("progress poll failed: %s", exc)

    def loop() -> None:
        while not stop.wait(interval):
            poll()

    thread = threading.Thread(target=loop, name="highwater-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
        poll()


def add_progress_arg(p: argparse.ArgumentParser) -> None:
    """``--progress`` of a command: how its live progress is shown (this module)."""
    p.add_argument(
        "--progress",
        choices=MODES,
        default=os.environ.get(ENV) or "auto",
        help="live progress (test i of n, elapsed and remaining, phase, active faults, events/s): "
        "auto is rich on a terminal and plain lines otherwise; off shows pytest's own output only; "
        f"${ENV} changes it",
    )
