"""Consumer-group checks over raw ``highwater.history/1`` events (issue 17; work in progress).

Only ``commit_regression``, ``rebalance_skip`` and ``commit_ahead`` are here so far; it is not yet registered in ``harness.checks``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, Verdict


def group_of(config: Mapping[str, Any], process: str) -> str | None:
    """The group a consumer belongs to, from ``config.consumers.<process>.group``."""
    own = (config.get("consumers") or {}).get(process) or {}
    g = own.get("group")
    return g if isinstance(g, str) else None


def commit_regression(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """commit-regression: a group's committed offset for a partition went backwards (successful
    commits in real-time order) with no seek or reset asking for it.

    Successful commits are ``ok`` ``commit`` events, ordered by completion (``time_ns``). A
    regression from offset ``hi`` to ``o < hi`` is asked for when, after the ``ok`` of the commit
    that reached ``hi`` and before this one's ``ok``, a member of the group (by
    ``config.consumers.<name>.group``, or a commit by that process for the group) recorded a
    ``seek``/``assign`` on the partition to an offset ``<= o``. ``info``/``fail`` commits are never
    counted as committed. Counted: ``commits`` (ok commits), ``regressions``. Examples: group,
    topic, partition, offset, previous (the highest earlier committed offset), process.
    Not applicable when there is no ok commit.
    """
    config = header.get("config") or {}
    members: dict[str, set[str]] = {}
    for ev in events:
        if ev.get("f") == "commit" and (ev.get("value") or {}).get("group"):
            members.setdefault(ev["value"]["group"], set()).add(str(ev.get("process")))
    high: dict[tuple[str, str, int], tuple[int, int]] = {}  # key -> (offset, ok time)
    seeks: dict[tuple[str, int], list[tuple[int, str, int]]] = {}  # (topic, part) -> (time, proc, off)
    commits = count = 0
    bad: list[dict[str, Any]] = []
    for ev in sorted(events, key=lambda e: (int(e.get("time_ns", 0)), int(e.get("index", 0)))):
        f, v = ev.get("f"), ev.get("value") or {}
        if f in ("seek", "assign") and type(v.get("offset")) is int:
            seeks.setdefault((str(v.get("topic")), int(v.get("partition") or 0)), []).append(
                (int(ev["time_ns"]), str(ev.get("process")), v["offset"])
            )
        if f != "commit" or ev.get("type") != "ok" or type(v.get("offset")) is not int:
            continue
        commits += 1
        group, topic, part, off = str(v.get("group")), str(v.get("topic")), int(v.get("partition") or 0), v["offset"]
        key, t = (group, topic, part), int(ev["time_ns"])
        prev = high.get(key)
        if prev is not None and off < prev[0]:
            who = members.get(group, set())
            asked = any(
                prev[1] <= st <= t and so <= off and (p in who or group_of(config, p) == group)
                for st, p, so in seeks.get((topic, part), [])
            )
            if not asked:
                count += 1
                if len(bad) < MAX_EXAMPLES:
                    bad.append(
                        {
                            "group": group,
                            "topic": topic,
                            "partition": part,
                            "offset": off,
                            "previous": prev[0],
                            "process": str(ev.get("process")),
                        }
                    )
            high[key] = (off, t)  # the new baseline: later commits are judged against it
        elif prev is None or off >= prev[0]:
            high[key] = (off, t)
    if commits == 0:
        return Verdict("commit-regression", NOT_APPLICABLE)
    return Verdict("commit-regression", count == 0, {"commits": commits, "regressions": count}, bad)


def rebalance_skip(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """rebalance-skip: after a partition moved to another member, its new owner's first position
    lies beyond the group's last committed offset (records nobody in the group consumed).

    A move is an ``assign`` of a partition to a group member (``config.consumers.<name>.group``)
    other than the member that last had it assigned; the first position is that assign's
    offset, compared with the group's last ``ok`` commit for the partition before it (by
    ``time_ns``). Moves without a known position or without an earlier ok commit are not judged.
    Counted: ``moves`` (judged moves), ``skips``. Examples: group, topic, partition, process,
    position, committed. Not applicable when no consumer names a group.
    """
    config = header.get("config") or {}
    if not any(group_of(config, p) for p in (config.get("consumers") or {})):
        return Verdict("rebalance-skip", NOT_APPLICABLE)
    owner: dict[tuple[str, str, int], str] = {}
    committed: dict[tuple[str, str, int], int] = {}
    moves = count = 0
    bad: list[dict[str, Any]] = []
    for ev in sorted(events, key=lambda e: (int(e.get("time_ns", 0)), int(e.get("index", 0)))):
        f, v, proc = ev.get("f"), ev.get("value") or {}, str(ev.get("process"))
        if f == "commit" and ev.get("type") == "ok" and type(v.get("offset")) is int:
            committed[(str(v.get("group")), str(v.get("topic")), int(v.get("partition") or 0))] = v["offset"]
            continue
        group = group_of(config, proc)
        if f != "assign" or group is None:
            continue
        key = (group, str(v.get("topic")), int(v.get("partition") or 0))
        prev, owner[key] = owner.get(key), proc
        if prev is None or prev == proc or type(v.get("offset")) is not int or key not in committed:
            continue
        moves += 1
        if v["offset"] > committed[key]:
            count += 1
            if len(bad) < MAX_EXAMPLES:
                bad.append(
                    {
                        "group": group,
                        "topic": key[1],
                        "partition": key[2],
                        "process": proc,
                        "position": v["offset"],
                        "committed": committed[key],
                    }
                )
    return Verdict("rebalance-skip", count == 0, {"moves": moves, "skips": count}, bad)


def commit_ahead(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """commit-ahead: a group committed offset o for a partition although no member of the group
    had returned offset o-1 there nor moved its position to o.

    Members are the processes naming the group in ``config.consumers.<name>.group`` plus those
    that committed for it; "had" means an ``ok`` poll record at offset o-1, or a ``seek``/
    ``assign`` to o, recorded before the commit's ``ok`` (by ``time_ns``). Only ``ok`` commits
    are judged. Counted: ``commits``, ``ahead``. Examples: group, topic, partition, offset,
    process. Not applicable when there is no ok commit.
    """
    config = header.get("config") or {}
    members: dict[str, set[str]] = {}
    for p in config.get("consumers") or {}:
        g = group_of(config, p)
        if g:
            members.setdefault(g, set()).add(p)
    for ev in events:
        if ev.get("f") == "commit" and (ev.get("value") or {}).get("group"):
            members.setdefault(ev["value"]["group"], set()).add(str(ev.get("process")))
    seen: dict[tuple[str, str, int], set[int]] = {}  # (process, topic, partition) -> returned offset+1 / positions
    commits = count = 0
    bad: list[dict[str, Any]] = []
    for ev in sorted(events, key=lambda e: (int(e.get("time_ns", 0)), int(e.get("index", 0)))):
        f, v, proc = ev.get("f"), ev.get("value") or {}, str(ev.get("process"))
        if f == "poll" and ev.get("type") == "ok":
            for r in v.get("records", []):
                seen.setdefault((proc, str(r["topic"]), int(r["partition"])), set()).add(int(r["offset"]) + 1)
        elif f in ("seek", "assign") and type(v.get("offset")) is int:
            seen.setdefault((proc, str(v.get("topic")), int(v.get("partition") or 0)), set()).add(v["offset"])
        elif f == "commit" and ev.get("type") == "ok" and type(v.get("offset")) is int:
            commits += 1
            group, topic, part, off = (
                str(v.get("group")),
                str(v.get("topic")),
                int(v.get("partition") or 0),
                v["offset"],
            )
            if not any(off in seen.get((m, topic, part), ()) for m in members.get(group, ())):
                count += 1
                if len(bad) < MAX_EXAMPLES:
                    bad.append({"group": group, "topic": topic, "partition": part, "offset": off, "process": proc})
    if commits == 0:
        return Verdict("commit-ahead", NOT_APPLICABLE)
    return Verdict("commit-ahead", count == 0, {"commits": commits, "ahead": count}, bad)
