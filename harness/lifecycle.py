"""Cluster directories, address slots, free ports, and reaping what killed runs left behind."""

from __future__ import annotations

import logging
import random
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from highwater.core.errors import ClusterError, PortInUseError

from .clock import remove_shm
from .diskfs import unmount_ours_under
from .paths import clusters_dir, slots_dir
from .procs import OwnerLock, ProcessRecord, ProcessRegistry
from .topology import MAX_SLOTS

log = logging.getLogger(__name__)

PORT_RANGE_FALLBACK = (20000, 32000)


def port_range() -> tuple[int, int]:
    """Ports below the kernel's ephemeral range, so no client connection happens to hold one."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return PORT_RANGE_FALLBACK
    return (10000, low - 1) if low > 12000 else PORT_RANGE_FALLBACK


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
            for rec in killed:
                remove_shm(rec.pid)  # what libfaketime kept for a node JVM with a faked clock
            unmount_ours_under(d)  # a killed lossyfs leaves its mount behind, dead
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


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # SO_REUSEADDR as servers set it: connections of an earlier run lingering in TIME_WAIT
        # do not count as "in use", a listening socket does.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def address_free(host: str, port: int) -> bool:
    # A wildcard listener (0.0.0.0:port) would also steal connections: check it too.
    return _bindable(host, port) and _bindable("0.0.0.0", port)


def accepts_connection(host: str, port: int, timeout: float = 2.0) -> bool:
    """True if a TCP connection to host:port is accepted (it is closed at once)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def listening_sockets() -> set[tuple[str, int]]:
    """(IPv4 address, port) of every TCP socket in LISTEN state on this machine (IPv4 and
    IPv4-mapped IPv6), read from /proc/net/tcp{,6}."""
    out: set[tuple[str, int]] = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != "0A":  # 0A = LISTEN
                continue
            addr_hex, port_hex = fields[1].split(":")
            raw = bytes.fromhex(addr_hex[-8:])  # IPv4 or the low 32 bits of ::ffff:a.b.c.d
            ip = ".".join(str(b) for b in reversed(raw))
            out.add((ip, int(port_hex, 16)))
    return out


def first_taken(addresses: list[tuple[str, int]]) -> tuple[str, int] | None:
    for host, port in addresses:
        if not address_free(host, port):
            return host, port
    return None


def pick_base_port(count: int, rng: random.Random | None = None) -> int:
    rng = rng or random.Random()
    lo, hi = port_range()
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
