"""Client faults: kill, freeze and restart the worker processes of the clients under test.

Every client under test runs in worker processes of ours (``harness.clients.worker``), so a
producer or a group member can be killed (SIGKILL: a crash), frozen (SIGSTOP: a long GC pause,
the fault behind most rebalances in production; SIGCONT on heal) or restarted. The injector
(``faults.inject``) applies them like every other fault, recorded in the history as nemesis
``fault`` / ``heal`` events whose ``targets`` are the client ids acted on.

- ``client_kill``: SIGKILL now; the heal asks the workload to start the client again (a new
  worker with the same client id: a group member rejoins, an assign-mode consumer resumes after
  the last record it returned) and waits for it.
- ``client_freeze``: SIGSTOP now, SIGCONT on heal. A command waiting on a frozen worker waits
  for the thaw (``WorkerProcess.request``).
- ``client_restart``: SIGKILL and started again at once (heals itself).

A killed client's sends still in flight end ``info`` (they may have been written) and its
history ends with what it reported before it died, then a ``poll``/``send`` ``info`` whose
error names the fault: the checks judge it as they judge any client that stopped.

Selectors (``faults.target.ClientTarget``) are resolved against the live workers by
:func:`select`, a pure function of their ``WorkerInfo``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from faults.common import FaultError
from faults.target import ClientTarget, TargetKind
from harness.clients.worker import WorkerInfo, WorkerProcess, live_workers, request_restart
from harness.waiting import wait_until


def select(target: ClientTarget, workers: Iterable[WorkerInfo]) -> list[str]:
    """The client ids ``target`` names among ``workers``, sorted (duplicates once)."""
    what, arg = target.what, target.arg
    chosen: set[str] = set()
    for w in workers:
        if what is TargetKind.CLIENT:
            hit = w.client_id == arg
        elif what is TargetKind.CONSUMERS:
            hit = w.role == "consumer" and (arg is None or w.rack == arg)
        elif what is TargetKind.PRODUCERS:
            hit = w.role == "producer"
        else:  # GROUP
            hit = w.role == "consumer" and w.group_id == arg
        if hit:
            chosen.add(w.client_id)
    return sorted(chosen)


def resolve(target: ClientTarget) -> tuple[str, ...]:
    """The client ids ``target`` names now; a FaultError when it names no live worker."""
    ids = select(target, (w.info for w in live_workers()))
    if not ids:
        running = ", ".join(sorted({w.info.client_id for w in live_workers()})) or "none"
        raise FaultError(f"target {target} names no running client worker (running: {running})")
    return tuple(ids)


def _workers(ids: Sequence[str]) -> list[WorkerProcess]:
    wanted = set(ids)
    return [w for w in live_workers() if w.info.client_id in wanted]


def kill(ids: Sequence[str], why: str) -> None:
    for w in _workers(ids):
        w.crash(f"killed by the fault {why}")


def freeze(ids: Sequence[str]) -> None:
    for w in _workers(ids):
        w.freeze()


def thaw(ids: Sequence[str]) -> None:
    for w in _workers(ids):
        if w.frozen:
            w.thaw()


def thaw_all() -> None:
    """SIGCONT every frozen worker (heal-all: whatever an interrupted run left frozen)."""
    for w in live_workers():
        if w.frozen:
            w.thaw()


def restart(ids: Sequence[str], timeout_s: float = 60.0) -> None:
    """Ask the owners of ``ids`` to start them again, and wait until each runs a new worker."""
    before = {w.pid for w in _workers(ids)}
    for client_id in ids:
        request_restart(client_id)

    def back() -> bool:
        running = {w.info.client_id for w in live_workers() if w.pid not in before and not w.killed_by}
        return set(ids) <= running

    wait_until(back, timeout_s, f"client workers {', '.join(ids)} started again by their workloads")
