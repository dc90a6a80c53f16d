"""``Worker.gone_for_good``: a workload whose client worker died and that no heal restarts. The
plain reader's settling stops waiting for such a consumer still behind (a crashed library)
instead of waiting out its timeout; one whose restart is asked for, or that never died, is
waited for."""

from __future__ import annotations

import threading

import pytest

from highwater.harness.client_common import TopicPartition
from highwater.harness.clients.worker import request_restart, take_restart
from highwater.harness.waiting import wait_until
from highwater.harness.workload import ConsumerWorker
from highwater.harness.workload.base import ConsumersGone, Worker
from highwater.modes.plain import Assign
from highwater.run_spec import RunSpec


class _Dies(Worker):
    """Dies at once (as after a WorkerGone), then waits for a restart; counts the restarts."""

    def __init__(self, name: str) -> None:
        super().__init__(name, history=None)  # type: ignore[arg-type]
        self.restarted = threading.Event()

    def run(self) -> None:
        if self.await_restart():
            self.restarted.set()
            self.stopping.wait()


def test_a_dead_worker_no_heal_restarts_is_gone_for_good_until_a_restart_is_asked() -> None:
    w = _Dies("gone-consumer")
    assert not w.gone_for_good()  # not started: it never died
    w.start()
    try:
        wait_until(w.gone_for_good, 5.0, "the dead worker is gone for good")
        request_restart("gone-consumer")
        assert not w.gone_for_good()  # asked for, not yet taken
        assert w.restarted.wait(5.0)
        assert not w.gone_for_good()  # restarted
    finally:
        w.stop(5.0)
        take_restart("gone-consumer")


def test_a_stopped_run_leaves_no_worker_gone_for_good() -> None:
    w = _Dies("stopped-consumer")
    w.start()
    wait_until(w.gone_for_good, 5.0, "the dead worker is gone for good")
    w.stop(5.0)
    assert not w.gone_for_good()


def _reader(name: str, read_past: int, gone: bool) -> ConsumerWorker:
    """A consumer as the plain reader sees it: how far it read each partition, and whether its
    client worker died for good (no client, no thread)."""
    c = ConsumerWorker.__new__(ConsumerWorker)
    Worker.__init__(c, name, history=None)  # type: ignore[arg-type]
    c._next = {TopicPartition("t", p): read_past for p in range(2)}
    c._awaiting_restart = gone
    return c


def test_the_plain_reader_stops_waiting_for_a_consumer_that_died_for_good() -> None:
    """Settling waits for every consumer to read up to the high watermarks; one still behind
    whose worker died with no restart asked for never will: ConsumersGone, naming it. One that
    died after it caught up, or that is behind but alive, is no reason to stop."""
    mode = Assign(RunSpec(suite="s", scenario="s", topic="t", partitions=2))
    done, _ = mode.caught_up("t", [10, 10], [_reader("c0", 10, gone=False), _reader("c1", 4, gone=True)])
    with pytest.raises(ConsumersGone, match="c1"):
        done()
    done, _ = mode.caught_up("t", [10, 10], [_reader("c0", 10, gone=True), _reader("c1", 4, gone=False)])
    assert not done()
    done, _ = mode.caught_up("t", [10, 10], [_reader("c0", 10, gone=True), _reader("c1", 10, gone=False)])
    assert done()
