"""Clients' faked wall clocks (``harness.clients.clocks``): the environment a worker starts with,
the offset it keeps across a restart, and the clock faults that name clients. No process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from highwater.faults.common import FaultError
from highwater.faults.spec import FaultKind, parse_fault
from highwater.harness.clients import clocks
from highwater.harness.clock import ClockError, find_libfaketime, parse_offset


def _missing() -> str | None:
    try:
        find_libfaketime()
    except ClockError as exc:
        return str(exc)
    return None


@pytest.fixture
def faked(tmp_path: Path) -> Iterator[Path]:
    if _missing() is not None:
        pytest.skip(str(_missing()))
    clocks.fake_client_clocks(tmp_path)
    try:
        yield tmp_path
    finally:
        clocks.fake_client_clocks(None)


def test_a_worker_started_while_clocks_are_faked_reads_its_own_clock_file(faked: Path) -> None:
    env = clocks.worker_env("producer-0", {"KEEP": "1"})
    assert env is not None and env["KEEP"] == "1" and "libfaketime" in env["LD_PRELOAD"]
    assert env["FAKETIME_TIMESTAMP_FILE"] == str(faked / "producer-0" / "clock.rc")
    assert env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"
    assert parse_offset((faked / "producer-0" / "clock.rc").read_text()) == 0.0


def test_a_restarted_worker_keeps_its_clock_s_offset(faked: Path) -> None:
    clocks.worker_env("consumer-1", None)
    clocks.client_clock("consumer-1").set_offset(600.0)
    clocks.worker_env("consumer-1", None)  # started again after a kill
    assert clocks.client_clock("consumer-1").offset() == 600.0


def test_without_faked_clocks_a_worker_s_environment_is_left_alone() -> None:
    clocks.fake_client_clocks(None)
    assert clocks.worker_env("producer-0", {"A": "b"}) == {"A": "b"}
    assert clocks.worker_env("producer-0", None) is None
    with pytest.raises(ClockError, match="client_clocks=True"):
        clocks.client_clock("producer-0")


def test_clock_faults_take_client_selectors_and_other_node_faults_still_do_not() -> None:
    jump = parse_fault("clock-jump --target client:consumer-0 --offset -30")
    assert jump.kind is FaultKind.CLOCK_JUMP and str(jump.target) == "client:consumer-0"
    assert parse_fault("clock-drift --target producers --rate 50").param("rate") == 50.0
    with pytest.raises(FaultError, match="acts on Kafka nodes"):
        parse_fault("kill --target client:consumer-0")
