"""Corrupting a stopped node's data files: ``truncate-file`` and ``flip-bits``.

A disk that loses power mid-write leaves a file shorter than what was written; one whose media
or firmware fails returns flipped bits. Both act on the files of a node that is down (the fault
kills it first; heal starts it again), so what follows is Kafka's own start-up: log recovery
after an unclean shutdown re-reads the segments above the recovery point, checks each batch's
CRC and truncates at the first bad one; a checkpoint or index it cannot parse is rebuilt or
refused. The history's fault event says exactly what was changed (file, size, positions), so a
run can be replayed and what Kafka served afterwards judged against it.

``file`` is a glob relative to the node's data directory (the log directory: ``<topic>-<p>/*``,
``__cluster_metadata-0/*.log``, ``recovery-point-offset-checkpoint``); of the files it matches
the *newest* (latest modification, then name) is the one corrupted: the active segment of a
partition, whose tail is what a crash tears. A glob that matches nothing is an error, not a
no-op: a fault that changed nothing proves nothing.

Pure file operations with a seeded choice of positions; no process handling here (the injector
stops and starts the node).
"""

from __future__ import annotations

import os
import random
from dataclasses import asdict, dataclass
from pathlib import Path

from highwater.faults.common import FaultError


@dataclass(frozen=True)
class Corruption:
    """What one corruption did to one file (the fault event's record)."""

    file: str  # relative to the data directory
    size_before: int
    size_after: int
    flipped: tuple[int, ...] = ()  # the bit positions flipped (byte * 8 + bit)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def pick_file(data_dir: Path, pattern: str) -> Path:
    """The newest regular, non-empty file under ``data_dir`` matching ``pattern``."""
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise FaultError(f"--file {pattern!r} must be a glob inside the node's data directory")
    found = [p for p in data_dir.glob(pattern) if p.is_file() and p.stat().st_size > 0]
    if not found:
        raise FaultError(f"--file {pattern!r} matches no non-empty file under {data_dir}")
    return max(found, key=lambda p: (p.stat().st_mtime_ns, str(p)))


def truncate_file(data_dir: Path, pattern: str, drop_bytes: int) -> Corruption:
    """Cut the last ``drop_bytes`` bytes (at most the whole file) of the file ``pattern`` picks,
    and fsync it (on lossyfs the cut is then durable, as a torn write found after power returns)."""
    path = pick_file(data_dir, pattern)
    before = path.stat().st_size
    after = max(before - drop_bytes, 0)
    with open(path, "r+b") as fh:
        fh.truncate(after)
        os.fsync(fh.fileno())
    return Corruption(str(path.relative_to(data_dir)), before, after)


def flip_bits(data_dir: Path, pattern: str, count: int, seed: int, skip_bytes: int = 0) -> Corruption:
    """Flip ``count`` distinct bits at positions chosen by ``seed`` in the file ``pattern``
    picks, past its first ``skip_bytes`` bytes (e.g. to spare a batch header and hit record
    data), and fsync it."""
    path = pick_file(data_dir, pattern)
    size = path.stat().st_size
    if size <= skip_bytes:
        raise FaultError(f"{path.name} has {size} bytes: nothing past --skip-bytes {skip_bytes} to flip")
    bits = (size - skip_bytes) * 8
    positions = sorted(random.Random(seed).sample(range(skip_bytes * 8, size * 8), min(count, bits)))
    with open(path, "r+b") as fh:
        for pos in positions:
            fh.seek(pos // 8)
            byte = fh.read(1)[0]
            fh.seek(pos // 8)
            fh.write(bytes([byte ^ (1 << (pos % 8))]))
        fh.flush()
        os.fsync(fh.fileno())
    return Corruption(str(path.relative_to(data_dir)), size, size, tuple(positions))
