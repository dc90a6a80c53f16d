"""Process bookkeeping and waiting: the parts of the lifecycle that need no Kafka."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from highwater.core.errors import WaitTimeout
from highwater.harness.java_runtime import parse_java_major
from highwater.harness.procs import OwnerLock, ProcessRegistry, proc_cmdline, proc_start_time
from highwater.harness.toxiproxy import parse_metrics
from highwater.harness.waiting import wait_until, wait_until_steady


def test_wait_until_returns_the_value_and_times_out_with_the_message() -> None:
    calls = iter([None, 0, "ready"])
    assert wait_until(lambda: next(calls), 5, "never", interval=0.01) == "ready"

    def boom() -> None:
        raise RuntimeError("broker said no")

    with pytest.raises(WaitTimeout, match=r"waiting until the moon is up \(last error: RuntimeError: broker said no\)"):
        wait_until(boom, 0.1, "the moon is up", interval=0.01)


def test_wait_until_steady_returns_the_value_once_it_stops_moving() -> None:
    # a counter that catches up over a few reads, then stays: the settled value, not an early one
    values = iter([1, 5, 9, 12])
    last = [0]

    def read() -> int:
        last[0] = next(values, last[0])
        return last[0]

    assert wait_until_steady(read, quiet=0.05, timeout=5, message="the counter", interval=0.01) == 12


def test_wait_until_steady_times_out_on_a_value_that_keeps_moving() -> None:
    ticks = iter(range(10**9))
    with pytest.raises(WaitTimeout, match="the ticker stop changing"):
        wait_until_steady(lambda: next(ticks), quiet=0.5, timeout=0.1, message="the ticker", interval=0.01)


def test_owner_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    a, b = OwnerLock(tmp_path / "x.lock"), OwnerLock(tmp_path / "x.lock")
    assert a.try_acquire()
    assert not b.try_acquire()
    assert a.owner_pid() == os.getpid()
    a.release()
    assert b.try_acquire()
    b.release()


def test_registry_refuses_to_kill_a_process_whose_start_time_differs(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", str(tmp_path)])
    try:
        # Until the child has exec'd, /proc shows the parent's command line, without the marker.
        wait_until(lambda: str(tmp_path) in proc_cmdline(proc.pid), 10, "the sleeper has exec'd")
        reg = ProcessRegistry(tmp_path / "p.json")
        rec = reg.add("sleeper", proc.pid, str(tmp_path))
        assert rec.start_time == proc_start_time(proc.pid) and rec.still_ours()
        # A record of the same pid with another start time is a recycled pid: not ours.
        forged = ProcessRegistry(tmp_path / "forged.json")
        forged._save([type(rec)(name="x", pid=proc.pid, start_time=rec.start_time + 1, marker=str(tmp_path))])
        assert forged.kill_all() == []
        assert proc.poll() is None
        assert [r.pid for r in reg.kill_all()] == [proc.pid]
        proc.wait(5)
    finally:
        proc.kill()
        proc.wait()


def test_java_version_parsing() -> None:
    assert parse_java_major('openjdk version "17.0.15" 2025-04-15') == 17
    assert parse_java_major('java version "1.8.0_352"') == 8
    assert parse_java_major('openjdk version "21" 2023-09-19') == 21


def test_toxiproxy_metrics_parsing() -> None:
    text = "\n".join(
        [
            "# HELP toxiproxy_proxy_sent_bytes_total x",
            'toxiproxy_proxy_sent_bytes_total{direction="downstream",listener="127.1.1.1:1",proxy="p",upstream="u"} 1234',
            'toxiproxy_proxy_sent_bytes_total{direction="upstream",listener="127.1.1.1:1",proxy="p",upstream="u"} 56',
            'toxiproxy_proxy_received_bytes_total{direction="upstream",listener="127.1.1.1:1",proxy="p",upstream="u"} 60',
            'toxiproxy_proxy_received_bytes_total{direction="downstream",listener="127.1.1.1:1",proxy="p",upstream="u"} 3001234',
            'toxiproxy_proxy_received_bytes_total{direction="downstream",listener="127.1.1.1:2",proxy="q",upstream="v"} 7',
        ]
    )
    counters = parse_metrics(text)
    # received, not sent: a connection whose last write failed has no sent count at all
    assert counters["p"].downstream == 3001234 and counters["p"].upstream == 60
    assert counters["q"].downstream == 7 and counters["q"].upstream == 0
