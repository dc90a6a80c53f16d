"""A run's share of the client workers' logs (``copy_worker_logs``): the launchers append every
worker of a client id to one file in the cache, and a run must take only what its own workers
wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from highwater.harness.clients import worker
from highwater.harness.clients.worker import WorkerLog, copy_worker_logs, worker_logs_mark


@pytest.fixture
def ledger(monkeypatch: pytest.MonkeyPatch) -> list[WorkerLog]:
    fresh: list[WorkerLog] = []
    monkeypatch.setattr(worker, "_LOGS", fresh)
    return fresh


def test_a_run_takes_only_what_its_workers_wrote(tmp_path: Path, ledger: list[WorkerLog]) -> None:
    log = tmp_path / "cache" / "consumer-1.log"
    log.parent.mkdir()
    log.write_text("an earlier run's line\n")
    ledger.append(WorkerLog(log, 0))  # a worker of an earlier run
    mark = worker_logs_mark()
    ledger.append(WorkerLog(log, log.stat().st_size))
    with open(log, "a") as f:
        f.write("this run's line\n")

    copied = copy_worker_logs(mark, tmp_path / "run" / "logs" / "clients")

    assert [p.name for p in copied] == ["consumer-1.log"]
    assert copied[0].read_text() == "this run's line\n"


def test_a_restarted_worker_keeps_both_parts(tmp_path: Path, ledger: list[WorkerLog]) -> None:
    log = tmp_path / "producer-0.log"
    log.write_text("first life\n")
    ledger.append(WorkerLog(log, 0))
    ledger.append(WorkerLog(log, len("first life\n")))
    with open(log, "a") as f:
        f.write("second life\n")

    copied = copy_worker_logs(0, tmp_path / "out")

    assert [p.name for p in copied] == ["producer-0.log", "producer-0.2.log"]
    assert copied[0].read_text() == "first life\n"
    assert copied[1].read_text() == "second life\n"


def test_a_missing_log_is_named_not_raised(tmp_path: Path, ledger: list[WorkerLog]) -> None:
    ledger.append(WorkerLog(tmp_path / "gone.log", 0))

    (copied,) = copy_worker_logs(0, tmp_path / "out")

    assert "could not copy" in copied.read_text()
    assert str(tmp_path / "gone.log") in copied.read_text()
