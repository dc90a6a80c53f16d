"""Faked wall clocks for the clients under test (a clock fault on a client: ``clock-jump
--target client:<id>``, ``faults.clock``).

A run that asks for them (``RunSpec.client_clocks``) points this module at a directory of its
own; from then on every worker process started (``WorkerProcess``) reads its wall clock through
libfaketime from ``<root>/<client id>/clock.rc``, the same file format and environment as a
faked node (``harness.clock``), and monotonic time untouched. A worker started again after a
kill keeps its clock's offset (the file outlives it, as a machine's clock outlives a process).
Process-wide, like the registry of live workers: workers are the process's own children, and a
run that fakes their clocks puts the directory back to None when it ends.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from highwater.harness.clock import ClockError, NodeClock, faked_env, find_libfaketime

_ROOT: Path | None = None
_LOCK = threading.Lock()


def fake_client_clocks(root: Path | None) -> None:
    """Fake the wall clock of every worker started from now on, in ``root`` (None: stop)."""
    global _ROOT
    if root is not None:
        find_libfaketime()  # one clear line now, not a worker that cannot start later
        root.mkdir(parents=True, exist_ok=True)
    with _LOCK:
        _ROOT = root


def client_clock(client_id: str) -> NodeClock:
    """The clock of the client ``client_id`` (ClockError when clients' clocks are not faked)."""
    root = _ROOT
    if root is None:
        raise ClockError(f"client {client_id}'s clock is not faked: run with RunSpec(client_clocks=True)")
    return NodeClock(root / client_id, f"client {client_id}")


def worker_env(client_id: str, env: Mapping[str, str] | None) -> dict[str, str] | None:
    """The environment a worker of ``client_id`` starts with: ``env`` as it is, or with its clock
    faked when clients' clocks are (the file created at +0 the first time)."""
    if _ROOT is None:
        return None if env is None else dict(env)
    clock = client_clock(client_id)
    if not clock.enabled:
        clock.create()
    return faked_env(clock.file, find_libfaketime(), base=None if env is None else dict(env))
