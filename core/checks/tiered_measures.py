"""What a tiered run's reads cost, measured (not judged): the figures the report puts beside a
tiered run (KIP-405).

The tier a record was served from is not in the fetch answer, so it is inferred: a record came
from the **remote** store when its offset was below the local log start of its partition's
leader at the last observation before the poll returned it (``meta`` events' ``local_start``,
observed every second on tiered runs); at or above it, from a **local** segment. A follower
serving a rack's consumer (KIP-392) keeps its own local log start, which follows the leader's
within a retention check (``harness.tiered``: one second), so a record within that second of the
boundary may be counted on the wrong side; a poll before the first observation is not counted.

- ``records``, ``remote_records``: the records the consumers returned, and those from remote;
  ``remote_from_followers``: of those, the ones a follower served (the poll's serving broker,
  where the client tells it, is not the leader of that observation: a rack's follower reading
  the remote store for its consumer, KIP-392 over KIP-405);
- ``waits``: per tier, how long each poll that returned records waited since the same
  consumer's previous such poll (its first poll is not counted, nor a gap that overlaps a client
  fault on that consumer: its own death or freeze is no wait on a tier), as ``count``,
  ``median_ms``, ``p95_ms`` and ``max_ms``: a poll counts as remote when any of its records is.
  That gap is the time the consumer's next batch took to arrive, through the broker, from that
  tier;
- ``remote_bytes``: what the remote store holds of the run's topic at its end (given by the
  runner, which can see the store: ``harness.tiered.remote_bytes``; None elsewhere).

A history that observed no local log start (an untiered run) has no measures (None).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from highwater.core.checks.data import HistoryData
from highwater.core.checks.windows import MS, fault_windows

TIERS = ("remote", "local")


@dataclass(frozen=True)
class Waits:
    count: int = 0
    median_ms: float | None = None
    p95_ms: float | None = None
    max_ms: float | None = None

    @classmethod
    def of(cls, gaps_ns: np.ndarray) -> Waits:
        if not len(gaps_ns):
            return cls()
        ms = gaps_ns / MS
        return cls(
            len(ms),
            round(float(np.median(ms)), 1),
            round(float(np.percentile(ms, 95)), 1),
            round(float(ms.max()), 1),
        )


@dataclass(frozen=True)
class TieredMeasures:
    records: int
    remote_records: int
    waits: dict[str, Waits] = field(default_factory=dict)
    remote_bytes: int | None = None
    remote_from_followers: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def local_starts(h: HistoryData) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per partition, the observations' times, the leader's local log start and the leader (-1:
    none), by time."""
    out: dict[int, tuple[list[int], list[int], list[int]]] = {}
    for m in sorted(h.meta, key=lambda m: m.time):
        if m.local_start is not None and m.tp >= 0:
            times, starts, leaders = out.setdefault(m.tp, ([], [], []))
            times.append(m.time)
            starts.append(m.local_start)
            leaders.append(-1 if m.leader is None else m.leader)
    return {
        tp: (np.array(times, np.int64), np.array(starts, np.int64), np.array(leaders, np.int64))
        for tp, (times, starts, leaders) in out.items()
    }


def remote_mask(h: HistoryData) -> np.ndarray | None:
    """Per polled record: 1 from remote, 0 from local, -1 not known (before any observation of
    its partition); None when the history observed no local log start."""
    tiers = _tiers(h)
    return None if tiers is None else tiers[0]


def _tiers(h: HistoryData) -> tuple[np.ndarray, np.ndarray] | None:
    """``remote_mask``, and per polled record the leader at the observation it was judged by
    (-1: none or not known)."""
    starts = local_starts(h)
    if not starts:
        return None
    p = h.polls
    tier = np.full(len(p.offset), -1, np.int64)
    leader = np.full(len(p.offset), -1, np.int64)
    for tp, (times, local, leaders) in starts.items():
        mine = np.nonzero(p.tp == tp)[0]
        at = np.searchsorted(times, p.time[mine], side="right") - 1  # the last observation before
        seen = at >= 0
        idx = mine[seen]
        tier[idx] = (p.offset[idx] < local[at[seen]]).astype(np.int64)
        leader[idx] = leaders[at[seen]]
    return tier, leader


def tiered_measures(h: HistoryData, remote_bytes: int | None = None) -> TieredMeasures | None:
    """The run's tiered measures (module doc), or None for an untiered run."""
    tiers = _tiers(h)
    if tiers is None:
        return None
    tier, leader = tiers
    p = h.polls
    by_follower = (tier == 1) & (p.replica >= 0) & (leader >= 0) & (p.replica != leader)
    known = tier >= 0
    # one entry per poll (its records share a row): remote when any of its records is
    rows, first = np.unique(p.row, return_index=True)
    poll_remote = np.zeros(len(rows), bool)
    poll_known = np.zeros(len(rows), bool)
    which = np.searchsorted(rows, p.row)
    np.logical_or.at(poll_remote, which, tier == 1)
    np.logical_or.at(poll_known, which, known)
    poll_time, poll_proc = p.time[first], p.proc[first]
    waits: dict[str, list[np.ndarray]] = {t: [] for t in TIERS}
    own_faults = [w for w in fault_windows(h) if w.on_clients]
    for proc in np.unique(poll_proc):
        mine = np.nonzero(poll_proc == proc)[0]
        mine = mine[np.argsort(poll_time[mine], kind="stable")]
        gaps = np.diff(poll_time[mine])
        later = mine[1:]
        ok = poll_known[later]
        name = h.proc_name(int(proc))
        for w in (w for w in own_faults if name in {str(t) for t in w.targets}):
            ok &= ~((poll_time[mine[:-1]] <= w.until(h.end_time)) & (poll_time[later] >= w.start))
        waits["remote"].append(gaps[ok & poll_remote[later]])
        waits["local"].append(gaps[ok & ~poll_remote[later]])
    return TieredMeasures(
        records=int(known.sum()),
        remote_records=int((tier == 1).sum()),
        waits={t: Waits.of(np.concatenate(g) if g else np.zeros(0, np.int64)) for t, g in waits.items()},
        remote_bytes=remote_bytes,
        remote_from_followers=int(by_follower.sum()),
    )
