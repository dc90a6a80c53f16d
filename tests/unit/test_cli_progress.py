"""Live progress (``highwater.progress``): line-based and sparing when not on a terminal, styled
by rich on one; the pytest plugin writes it past output capture; the runner's hooks."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from highwater import cli, console, preflight, progress
from highwater.progress import NULL, LineReporter, clock, for_stream, plain_sink, using, watch_run


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _reporter() -> tuple[LineReporter, io.StringIO, Clock]:
    out, now = io.StringIO(), Clock()
    return LineReporter(plain_sink(out), now=now), out, now


def test_plain_lines_say_which_item_elapsed_and_remaining() -> None:
    r, out, now = _reporter()
    r.step(1, 4, "suites/chaos/test_a.py::test_x[cut]")
    now.t += 125
    r.step(2, 4, "suites/chaos/test_a.py::test_x[kill]")
    now.t += 55
    r.step(3, 4, "suites/chaos/test_b.py::test_y")
    assert out.getvalue().splitlines() == [
        "highwater: [1/4] suites/chaos/test_a.py::test_x[cut] (elapsed 0m00s)",
        "highwater: [2/4] suites/chaos/test_a.py::test_x[kill] (elapsed 2m05s, about 6m15s left)",
        "highwater: [3/4] suites/chaos/test_b.py::test_y (elapsed 3m00s, about 3m00s left)",
    ]


def test_a_line_per_change_of_phase_or_faults_only() -> None:
    r, out, _ = _reporter()
    r.phase("workload, 60s")
    r.phase("workload, 60s")
    r.faults([])  # nothing was active: nothing changed
    r.faults(["cut --target broker:2"])
    r.faults(["cut --target broker:2"])
    r.faults(["cut --target broker:2", "pause --target controller"])
    r.faults([])
    r.phase("settle")
    r.message("run-1: valid")
    assert out.getvalue().splitlines() == [
        "highwater: phase: workload, 60s",
        "highwater: fault active: cut --target broker:2",
        "highwater: faults active: cut --target broker:2; pause --target controller",
        "highwater: no fault active",
        "highwater: phase: settle",
        "highwater: run-1: valid",
    ]


def test_the_events_rate_at_most_every_ten_seconds() -> None:
    r, out, now = _reporter()
    for second in range(31):  # polled once a second, 400 events a second
        now.t = 1000.0 + second
        r.events(400 * second)
    assert out.getvalue().splitlines() == [
        "highwater: events: 4000 (400/s)",
        "highwater: events: 8000 (400/s)",
        "highwater: events: 12000 (400/s)",
    ]
    r.step(2, 2, "next")  # a new item measures its own rate
    now.t += 5
    r.events(10)
    assert out.getvalue().splitlines()[-1].startswith("highwater: [2/2] next")


def test_clock() -> None:
    assert clock(None) == "?" and clock(-3) == "0m00s" and clock(61) == "1m01s" and clock(7260) == "2h01m"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_when_not_a_terminal_and_rich_on_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(progress.ENV, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    piped, tty = io.StringIO(), Tty()
    for stream in (piped, tty):
        for_stream(stream).faults(["kill --target broker:1"])
    assert piped.getvalue() == "highwater: fault active: kill --target broker:1\n"
    assert "\x1b[" in tty.getvalue() and "kill --target broker:1" in tty.getvalue()
    plain = Tty()
    for_stream(plain, "plain").faults(["x"])
    assert plain.getvalue() == "highwater: fault active: x\n"
    assert for_stream(tty, "off") is NULL
    monkeypatch.setenv(progress.ENV, "off")
    assert for_stream(tty) is NULL
    monkeypatch.setenv("TERM", "dumb")
    assert progress.resolve("auto", tty) == "plain"
    with pytest.raises(ValueError, match="progress mode 'loud'"):
        progress.resolve("loud", tty)


def test_console_lines_are_plain_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    console.progress("Kafka 4.4.0 ready")
    assert capsys.readouterr().err == "highwater: Kafka 4.4.0 ready\n"


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def step(self, index: int, total: int, label: str) -> None:
        self.calls.append(("step", label))

    def phase(self, text: str) -> None:
        self.calls.append(("phase", text))

    def faults(self, active: Sequence[str]) -> None:
        self.calls.append(("faults", tuple(active)))

    def events(self, count: int) -> None:
        self.calls.append(("events", count))

    def message(self, text: str) -> None:
        self.calls.append(("message", text))


def test_watch_run_polls_from_its_own_thread_and_once_more_at_the_end() -> None:
    seen = Recorder()
    polled = threading.Event()
    active: list[str] = ["latency --target rack:a"]

    def events() -> int:
        polled.set()
        return 7

    with watch_run(events, lambda: list(active), seen, interval=0.01):
        assert polled.wait(5)
        active.clear()
    assert ("faults", ("latency --target rack:a",)) in seen.calls and seen.calls[-2:] == [
        ("faults", ()),
        ("events", 7),
    ]


def test_watch_run_starts_nothing_when_nobody_listens_and_never_breaks_a_run() -> None:
    before = threading.active_count()
    with watch_run(lambda: 1 // 0, lambda: [], NULL):
        assert threading.active_count() == before
    with watch_run(lambda: 1 // 0, lambda: [], Recorder(), interval=0.01):
        pass  # the poll's ZeroDivisionError is logged, not raised


def test_the_reporter_in_use_is_installed_and_restored() -> None:
    before = progress.current()  # NULL, unless this session was asked for live progress
    seen = Recorder()
    with using(seen):
        progress.current().phase("checks")
    assert progress.current() is before and seen.calls == [("phase", "checks")]


def test_the_runner_reads_events_and_faults_cheaply() -> None:
    from types import SimpleNamespace

    from highwater import runner

    assert runner._events_so_far(SimpleNamespace(_next_index=42)) == 42  # type: ignore[arg-type]
    injector = SimpleNamespace(active={"f1": SimpleNamespace(spec="cut --target broker:1")})
    assert runner._active_faults(injector) == ["cut --target broker:1"]  # type: ignore[arg-type]


def test_run_and_sweep_pass_the_progress_mode_to_the_child_pytest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    argvs: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda argv, **_: argvs.append(list(argv)) or 0)
    monkeypatch.setattr(preflight, "get_driver", lambda spec: None)
    monkeypatch.delenv(progress.ENV, raising=False)
    assert cli.main(["run", "suites/x.py"]) == 0
    assert cli.main(["run", "--progress", "plain", "suites/x.py"]) == 0
    assert [a[a.index("--highwater-progress") + 1] for a in argvs] == ["auto", "plain"]


TEST = """
import time
from highwater import progress

def test_a_run():
    progress.current().phase("workload, 1s")
    with progress.watch_run(lambda: 5, lambda: ["cut --target broker:1"], interval=0.05):
        time.sleep(0.2)
    progress.current().faults([])
    print("captured, not shown")

def test_another():
    pass
"""


def _pytest(tmp_path: Path, *options: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_live.py").write_text(TEST)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *options, "test_live.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=env,
    )


def test_the_plugin_writes_progress_live_past_the_capture(tmp_path: Path) -> None:
    res = _pytest(tmp_path, "--highwater-progress", "auto")
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [x for x in res.stdout.splitlines() if x.startswith("[highwater]")]
    assert lines == [
        "[highwater] [1/2] test_live.py::test_a_run (elapsed 0m00s)",
        "[highwater] phase: workload, 1s",
        "[highwater] fault active: cut --target broker:1",
        "[highwater] no fault active",
        "[highwater] [2/2] test_live.py::test_another (elapsed 0m00s, about 0m00s left)",
    ]
    assert "\x1b[" not in res.stdout and "captured, not shown" not in res.stdout  # piped: plain


def test_the_plugin_says_nothing_unless_asked(tmp_path: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != progress.ENV}
    quiet = _pytest(tmp_path, env=env)
    assert quiet.returncode == 0 and "[highwater]" not in quiet.stdout
    asked = _pytest(tmp_path, env={**env, progress.ENV: "plain"})
    assert asked.returncode == 0 and "[highwater] phase: workload, 1s" in asked.stdout
