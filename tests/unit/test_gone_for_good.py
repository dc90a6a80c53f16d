"""``Worker.gone_for_good``: a workload whose client worker died and that no heal restarts. The
plain reader's settling stops waiting for such a consumer still behind (a crashed library)
instead of waiting out its timeout (``test_run_modes``); one whose restart is asked for, or that
never died, is waited for."""

from __future__ import annotations

import threading

from highwater.harness.clients.worker import request_restart, take_restart
from highwater.harness.waiting import wait_until
from highwater.harness.workload.base import Worker


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
