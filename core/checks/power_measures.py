"""What a power loss cost, measured (not judged: the policy table, ``core.policy``, says what
Kafka allows; this counts what happened), for the report's table of power-loss cases per release:

- ``acked_lost``: acknowledged writes missing from the final read (``lost-write``'s count);
- ``served_vanished``: records a consumer was served that the final log does not hold at that
  offset (``uncommitted-read``'s count: served from page cache, then gone);
- ``unavailable_ms``: per power loss and partition written to, how long from the power
  loss until a write to that partition was acknowledged again (None: never in the run); the
  table shows the longest;
- ``lost_bytes``: what the disks dropped, from the fault events (``faults.inject``: bytes, and
  files truncated or removed, summed over the nodes).

A history without a power loss has no measures (``power_measures`` gives None).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from highwater.core.checks.data import OK, HistoryData
from highwater.core.checks.verdict import Verdict
from highwater.core.checks.windows import MS, fault_windows

POWER_LOSS = "power_loss"


@dataclass(frozen=True)
class Unavailable:
    """How long writes to one partition went unacknowledged after one power loss."""

    targets: list[str]
    topic: str
    partition: int
    unavailable_ms: int | None  # None: no write to it was acknowledged again in the run


@dataclass(frozen=True)
class PowerMeasures:
    power_loss_replicas: int
    min_insync_replicas: int
    eligible_leader_replicas: int | None
    unclean_leader_election: bool
    acked_lost: int | None
    served_vanished: int | None
    lost_bytes: int
    unavailable: list[Unavailable] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def longest_unavailable_ms(self) -> int | None:
        """The longest of the run (None when a partition never came back, or there was none)."""
        times = [u.unavailable_ms for u in self.unavailable]
        return None if not times or None in times else max(t for t in times if t is not None)


def _count(verdicts: list[Verdict], check: str, key: str) -> int | None:
    """A check's count, None when it could not judge (unknown is not zero)."""
    for v in verdicts:
        if v.check == check:
            return None if v.valid is None else int(v.counts.get(key, 0))
    return None


def _longest_gap_ms(acks: np.ndarray, start: int, healed: int) -> int | None:
    """The longest a partition went without an acknowledged write from ``start`` (the power
    loss) on: the gaps between its acks after ``start``, counting from ``start``, that begin before
    ``healed`` (a gap after the heal is the workload's own pace). None when no write was
    acknowledged after the heal: the partition did not come back within the run. Gaps, not the
    first ack after ``start``: an ack already on its way when the nodes died lands after it."""
    times = np.sort(acks[acks > start])
    if not len(times) or times[-1] < healed:
        return None
    seq = np.concatenate(([start], times))
    gaps = np.diff(seq)[seq[:-1] <= healed]
    return int(gaps.max()) // MS if len(gaps) else 0


def power_measures(h: HistoryData, verdicts: list[Verdict]) -> PowerMeasures | None:
    """The run's power-loss measures (module doc), or None without a power loss."""
    losses = [w for w in fault_windows(h) if (w.kind or "").replace("-", "_") == POWER_LOSS]
    if not losses:
        return None
    s = h.sends
    acked = (s.type == OK) & (s.tp >= 0)
    unavailable: list[Unavailable] = []
    for w in losses:
        healed = w.until(h.end_time)
        for tp, (t, partition) in enumerate(h.tps):
            mine = acked & (s.tp == tp)
            if not mine.any():
                continue  # a partition nobody wrote to
            unavailable.append(
                Unavailable([str(x) for x in w.targets], t, partition, _longest_gap_ms(s.time[mine], w.start, healed))
            )
    # what the disks dropped is in the fault events' value (not among the loaded params): the
    # few fault rows are read back whole
    events = h.events(ev.row for ev in h.faults if ev.type == "fault" and (ev.kind or "") == POWER_LOSS)
    lost_bytes = sum(
        int(counts.get("bytes", 0))
        for ev in events
        for counts in ((ev.get("value") or {}).get("lost") or {}).values()
        if isinstance(counts, dict)
    )
    config = h.config
    elr = config.get("eligible_leader_replicas")
    return PowerMeasures(
        power_loss_replicas=int(config.get("power_loss_replicas", 0) or 0),
        min_insync_replicas=int(config.get("min_insync_replicas", 1) or 1),
        eligible_leader_replicas=None if elr is None else int(elr),
        unclean_leader_election=bool(config.get("unclean_leader_election", False)),
        acked_lost=_count(verdicts, "lost-write", "lost"),
        served_vanished=_count(verdicts, "uncommitted-read", "uncommitted_reads"),
        lost_bytes=lost_bytes,
        unavailable=unavailable,
    )
