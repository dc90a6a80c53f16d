"""What every workload thread shares: a name (the history's ``process``), the history it
writes to, and a stop flag. ``start``/``stop`` are idempotent; ``stop`` joins with a deadline."""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from highwater.core.errors import HighwaterError
from highwater.harness.clients import ClientDriver, ClientSpec, Relaunch, get_driver, restart_asked, take_restart

log = logging.getLogger(__name__)


class HistorySink(Protocol):
    """The part of ``core.history.HistoryWriter`` workloads use."""

    def invoke(self, process: str, f: str, value: Any = None, error: None = None) -> Any: ...
    def ok(self, process: str, f: str, value: Any = None, error: None = None) -> Any: ...
    def fail(self, process: str, f: str, value: Any = None, error: Any = None) -> Any: ...
    def info(self, process: str, f: str, value: Any = None, error: Any = None) -> Any: ...
    def clock_ns(self) -> int: ...


class ConsumersGone(HighwaterError):
    """A wait for consumers to catch up cannot end: the client workers of some died and nothing
    will restart them (``Worker.gone_for_good``)."""


class Worker:
    def __init__(self, name: str, history: HistorySink) -> None:
        self.name = name
        self.history = history
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        # set while its client worker is dead and no restart was taken; the lock makes taking a
        # restart and clearing it one step for ``gone_for_good``
        self._awaiting_restart = False
        self._restart_lock = threading.Lock()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def _main(self) -> None:
        try:
            self.run()
        except BaseException as exc:  # noqa: BLE001 - kept for the runner, which reports it
            log.exception("%s crashed", self.name)
            self.error = exc
        finally:
            self.close()

    def run(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        """Release clients; called once when ``run`` ends, on every path."""

    def await_restart(self) -> bool:
        """After this workload's client worker died (a client fault, a crash): wait until a
        restart of it is asked for (``faults.clients``: the heal of a ``client_kill``), True, or
        the run ends, False. A dead application sends and reads nothing meanwhile."""
        with self._restart_lock:
            self._awaiting_restart = True
        try:
            while not self.stopping.is_set():
                with self._restart_lock:
                    if take_restart(self.name):
                        self._awaiting_restart = False
                        return True
                self.stopping.wait(0.1)  # polled: the heal comes from the fault thread
            return False
        finally:
            with self._restart_lock:
                self._awaiting_restart = False

    def gone_for_good(self) -> bool:
        """Its client worker died (a crash, or a kill no heal restarts) and no restart of it is
        asked for: it sends and reads nothing more unless a fault's heal still asks. Settling after
        the last heal stops waiting for such a consumer (the plain reader's ``caught_up``)."""
        with self._restart_lock:
            return self._awaiting_restart and not restart_asked(self.name)

    def start(self) -> Worker:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("%s did not stop within %.0fs", self.name, timeout)


def relaunched_driver(driver: ClientDriver, relaunch: Relaunch) -> ClientDriver:
    """The driver a restarted worker runs on: ``driver``'s client at the version the restart
    asked for (``client_restart --version``), else ``driver`` itself. The version is installed
    before the run (``highwater.runner``), so this finds it ready."""
    if relaunch.version is None or relaunch.version == driver.version:
        return driver
    return get_driver(ClientSpec(driver.name, relaunch.version))
