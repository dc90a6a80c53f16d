"""What a consumer group's run cost, measured (not judged): the figures the report puts side by
side for the classic and KIP-848 group protocols on the same scenario.

- ``duplicates``: records the group returned more than once (each extra delivery of a partition
  and offset counts once): what was consumed but not committed when a partition moved;
- ``longest_stall_ms``: per member, the longest time between two of its polls that returned
  records, leaving out gaps that overlap a client fault on that member (its own death or
  freeze is not a stall the group caused it); a member whose partitions did not move should see
  no stall from another member's rebalance under the consumer protocol, and under eager classic
  it stops with the group;
- ``unchanged_stall_ms``: the longest a member whose assignment held went without a record
  while one of its partitions had records waiting, outside its own faults and broker faults
  (``core.checks.barrier``, which judges it on the consumer protocol): the cost of a
  group-wide barrier, compared across protocols;
- ``resumes``: per client fault on a member and per partition that member was reading when the
  fault began (it returned the partition's latest record before then), how long until any member
  returned a record of that partition again (None: never in the run).

A history without a consumer group has no measures (``group_measures`` gives None).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from highwater.core.checks.barrier import unchanged_stalls
from highwater.core.checks.data import HistoryData, distinct, member
from highwater.core.checks.group_cols import group_members
from highwater.core.checks.windows import MS, fault_windows


@dataclass(frozen=True)
class Resume:
    """How long the partition a faulted member was reading went unread."""

    fault: str  # the fault's kind
    member: str
    topic: str
    partition: int
    resume_ms: int | None  # None: never read again in the run


@dataclass(frozen=True)
class GroupMeasures:
    group_protocol: str
    duplicates: int
    longest_stall_ms: dict[str, int] = field(default_factory=dict)
    resumes: list[Resume] = field(default_factory=list)
    unchanged_stall_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def slowest_resume_ms(self) -> int | None:
        """The longest resume of the run (None when there was none or one never resumed)."""
        times = [r.resume_ms for r in self.resumes]
        return None if not times or None in times else max(t for t in times if t is not None)


def _duplicates(h: HistoryData, members: list[int]) -> int:
    p = h.polls
    mine = member(p.proc, members)
    keys = p.tp[mine].astype(np.int64) * (1 << 40) + p.offset[mine].astype(np.int64)
    return int(len(keys) - len(distinct(keys)))


def group_measures(h: HistoryData) -> GroupMeasures | None:
    """The group's measures (module doc), or None without a group."""
    members = group_members(h)
    if not members:
        return None
    p = h.polls
    windows = [w for w in fault_windows(h) if w.on_clients]
    stalls: dict[str, int] = {}
    for proc in members:
        name = h.proc_name(proc)
        times = distinct(p.time[p.proc == proc])
        own = [(w.start, w.until(h.end_time)) for w in windows if name in map(str, w.targets)]
        gaps = [
            int(b - a)
            for a, b in zip(times[:-1].tolist(), times[1:].tolist())
            if not any(s <= b and e >= a for s, e in own)
        ]
        stalls[name] = max(gaps, default=0) // MS
    resumes: list[Resume] = []
    for w in windows:
        for target in map(str, w.targets):
            if target not in h.processes:
                continue
            proc = h.processes.index(target)
            before = p.time < w.start
            reading = sorted(
                {
                    tp
                    for tp in set(p.tp[before & (p.proc == proc)].tolist())
                    if p.proc[np.nonzero(before & (p.tp == tp))[0][-1]] == proc  # the latest reader of tp
                }
            )
            for tp in reading:
                after = p.time[(p.tp == tp) & member(p.proc, members) & (p.time > w.start)]
                topic, partition = h.tps[tp]
                took = int(after.min() - w.start) // MS if len(after) else None
                resumes.append(Resume(w.kind or "?", target, topic, partition, took))
    unchanged = max((st.waiting_ms for st in unchanged_stalls(h)), default=0)
    return GroupMeasures(
        # a group migrated member by member is its own row: "classic->consumer"
        str(h.config.get("group_protocol_path") or h.config.get("group_protocol", "classic")),
        _duplicates(h, members),
        stalls,
        resumes,
        unchanged,
    )
