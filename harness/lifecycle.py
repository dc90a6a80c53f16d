"""Cluster directories, address slots, free ports, and reaping what killed runs left behind."""

from __future__ import annotations

import logging
import random
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from .errors import ClusterError, PortInUseError
from .paths import clusters_dir, slots_dir
from .procs import OwnerLock, ProcessRecord, ProcessRegistry
from .topology import MAX_SLOTS

log = logging.getLogger(__name__)

PORT_RANGE = (20000, 59000)


@dataclass
class Reaped:
    cluster_dir: Path
    killed: list[ProcessRecord]


def reap_stale() -> list[Reaped]:
    """Kill the processes and remove the directories of clusters whose owner is dead.

    A cluster directory is stale when its ``owner.lock`` names a pid (it was fully created) and
    the lock can be taken (the owner no longer holds it). Only processes recorded in its
    registry that still match pid, start time and command line are killed.
    """
    reaped: list[Reaped] = []
    for d in sorted(p for p in clusters_dir().iterdir() if p.is_dir()):
        lock = OwnerLock(d / "owner.lock")
        if lock.owner_pid() is None or not lock.try_acquire():
            continue
        try:
            killed = ProcessRegistry(d / "processes.json").kill_all()
            shutil.rmtree(d, ignore_errors=True)
            reaped.append(Reaped(d, killed))
            log.warning("reaped stale cluster %s (%d processes killed)", d.name, len(killed))
        finally:
            lock.release()
    return reaped


def acquire_slot() -> tuple[int, OwnerLock]:
    """Reserve an address slot (the second octet of every address of the cluster)."""
    for slot in range(MAX_SLOTS):
        lock = OwnerLock(slots_dir() / f"slot-{slot}.lock")
        if lock.try_acquire():
            return slot, lock
    raise ClusterError(f"all {MAX_SLOTS} cluster slots are taken: too many clusters running")


def address_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    # A wildcard listener (0.0.0.0:port) would also steal connections: check it too.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def first_taken(addresses: list[tuple[str, int]]) -> tuple[str, int] | None:
    for host, port in addresses:
        if not address_free(host, port):
            return host, port
    return None


def pick_base_port(count: int, rng: random.Random | None = None) -> int:
    rng = rng or random.Random()
    lo, hi = PORT_RANGE
    return rng.randrange(lo, hi - count)


def check_ports(addresses: list[tuple[str, int]], explicit: bool) -> None:
    taken = first_taken(addresses)
    if taken and explicit:
        raise PortInUseError(
            f"port {taken[1]} is already in use ({taken[0]}:{taken[1]} cannot be bound): "
            "choose another base_port or stop what holds it"
        )
    if taken:
        raise PortInUseError(f"{taken[0]}:{taken[1]} is in use")
