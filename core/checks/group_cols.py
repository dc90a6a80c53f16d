"""The consumer-group checks' view of the columns (``HistoryData`` and its ``txn``,
``core.checks.txn_data``): commit-ahead and group-delivery judged over them, and, for
commit-regression and the rebalance checks (which follow commits and assigns one by one in
time order), ``group_events``: only the events they read, rebuilt from the columns: every
commit, assign and seek, and of the polls only the first record after each assign (for the
rebalance checks, ``move_events``: of those, only what concerns partitions that moved).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from highwater.core.checks.data import FAIL, INFO, OK, HistoryData, cached, distinct, member, okey
from highwater.core.checks.raw import events_at, txn_outcomes
from highwater.core.checks.txn_data import NO_OFFSET
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, Verdict

TYPE_NAMES = ("invoke", "ok", "fail", "info")
#: a (group, topic, partition) as the event checks spell it
Key = tuple[str, str, int]


def group_of(config: Mapping[str, Any], process: str) -> str | None:
    """The group a consumer belongs to, from ``config.consumers.<process>.group``."""
    own = (config.get("consumers") or {}).get(process) or {}
    g = own.get("group")
    return g if isinstance(g, str) else None


def group_members(h: HistoryData) -> list[int]:
    """The processes of ``h`` that are members of a consumer group (``group_of``)."""
    return [i for i, name in enumerate(h.processes) if group_of(h.config, name) is not None]


def member_protocols(h: HistoryData) -> dict[str, list[tuple[int, str]]]:
    """Each group member's group protocol over time, ``[(from ns, protocol), ...]``: the run's
    (``config.group_protocol``) from the start, then what each ``client_restart`` that moved it
    restarted it on (the fault event's ``members``, ``faults.inject``; the member was dead from
    the kill to that event, so the change is unambiguous). Computed once per history: the
    barrier's applicability and its stalls both read it."""
    return cached(h, "member_protocols", _member_protocols)


def _member_protocols(h: HistoryData) -> dict[str, list[tuple[int, str]]]:
    start = str(h.config.get("group_protocol") or "classic")
    out = {h.proc_name(p): [(0, start)] for p in group_members(h)}
    for ev in sorted(h.faults, key=lambda e: e.time):
        for name, change in ev.members.items():
            to = (change or {}).get("to") or {}
            protocol = to.get("group_protocol")
            if name in out and isinstance(protocol, str) and protocol != out[name][-1][1]:
                out[name].append((ev.time, protocol))
    return out


def protocol_over(changes: list[tuple[int, str]], a: int, b: int) -> str | None:
    """The one protocol a member ran over the whole of ``[a, b]`` (``member_protocols``), None
    when it changed within it."""
    at = [p for t, p in changes if t <= a][-1:] or [changes[0][1]]
    return None if any(a < t <= b for t, _ in changes) else at[0]


def groups_of(config: Mapping[str, Any]) -> dict[str, set[str]]:
    """Each group named in ``config.consumers`` and the consumers naming it."""
    out: dict[str, set[str]] = {}
    for p in config.get("consumers") or {}:
        g = group_of(config, p)
        if g:
            out.setdefault(g, set()).add(p)
    return out


def settled(h: HistoryData) -> tuple[np.ndarray, np.ndarray]:
    """``groups.settled_commits`` over the commit columns: (type, time) of every commit, an
    ``ok`` one sent inside a transaction taking its transaction's outcome (``ok`` at its commit's
    time, ``fail`` when it did not commit, ``info`` when its end is unknown). Cached: several
    group checks read it."""
    return cached(h, "settled", _settled)


def _settled(h: HistoryData) -> tuple[np.ndarray, np.ndarray]:
    c = h.txn.commits
    outcome, at = txn_outcomes(h.txn)
    outcome, at = np.append(outcome, -1), np.append(at, -1)  # index -1: no transaction
    in_txn = (c.txn >= 0) & (c.type == OK)
    o = outcome[c.txn]
    typ = np.where(in_txn, np.select([o == 1, o == 0], [OK, FAIL], INFO), c.type)
    return typ.astype(np.int8), np.where(in_txn & (o == 1), at[c.txn], c.time)


def group_events(h: HistoryData) -> list[dict[str, Any]]:
    """The events commit-regression and the rebalance checks read, rebuilt from the columns
    (cached): commits already settled (``settled``; their ``txn`` dropped, so settling them
    again changes nothing), assigns and seeks, and for each assign, its process's first polled
    record of the partition after it (the only record ``groups._moves`` looks at)."""
    return cached(h, "group_events", _group_events)


def _group_events(h: HistoryData) -> list[dict[str, Any]]:
    out = commit_events(h, np.arange(len(h.txn.commits.row)))
    positions = position_events(h)
    return out + positions + first_polls(h, positions, lambda ev: True)


def move_events(h: HistoryData) -> list[dict[str, Any]]:
    """``group_events`` with only what ``groups._moves`` can use (cached): the commits of the
    (group, topic, partition) keys some assign moved to another member, and the first records
    after those assigns. ``_moves`` keys everything it keeps by those, so the rest never
    changes a move; a run whose partitions never move carries no commit here at all."""
    return cached(h, "move_events", _move_events)


def _move_events(h: HistoryData) -> list[dict[str, Any]]:
    positions = position_events(h)
    moved = _moved_keys(h, positions)
    key_of, keys = commit_keys(h)
    wanted = np.array([k in moved for k in keys] + [False], bool)  # + [False]: no commit
    out = commit_events(h, np.nonzero(wanted[key_of])[0])
    member_key = _assign_key(h.config)
    return out + positions + first_polls(h, positions, lambda ev: member_key(ev) in moved)


def commit_keys(h: HistoryData) -> tuple[np.ndarray, list[Key]]:
    """Per commit, the index of its key among ``keys``: (group, topic, partition) as the event
    checks spell it from the commit event (``str`` of the group and topic, partition or 0)."""
    c, names = h.txn.commits, h.txn.group_names
    pair = ((c.group.astype(np.int64) + 1) << 32) | (c.tp.astype(np.int64) + 1)
    uniq, inv = np.unique(pair, return_inverse=True)
    ids: dict[Key, int] = {}
    of_pair = []
    for k in uniq.tolist():
        g, tp = (k >> 32) - 1, (k & 0xFFFFFFFF) - 1
        topic, part = h.tps[tp] if tp >= 0 else (None, None)
        key = (str(names[g] if g >= 0 else None), str(topic), int(part or 0))
        of_pair.append(ids.setdefault(key, len(ids)))
    return np.array(of_pair, np.int64)[inv.reshape(-1)] if len(uniq) else np.zeros(0, np.int64), list(ids)


def commit_events(h: HistoryData, idx: np.ndarray) -> list[dict[str, Any]]:
    """The commits at ``idx`` (indices into ``h.txn.commits``, ascending), settled, as events."""
    c, names = h.txn.commits, h.txn.group_names
    typ, time = settled(h)
    out: list[dict[str, Any]] = []
    for row, t, proc, ty, g, tp, off in zip(
        c.row[idx].tolist(),
        time[idx].tolist(),
        c.proc[idx].tolist(),
        typ[idx].tolist(),
        c.group[idx].tolist(),
        c.tp[idx].tolist(),
        c.offset[idx].tolist(),
    ):
        topic, part = h.tps[tp] if tp >= 0 else (None, None)
        value = {"group": names[g] if g >= 0 else None, "topic": topic, "partition": part}
        value["offset"] = None if off == NO_OFFSET else off
        out.append(_event(row, t, h.processes[proc], TYPE_NAMES[ty], "commit", value))
    return out


def position_events(h: HistoryData) -> list[dict[str, Any]]:
    """Every assign and seek, as events (those of other types than ok/info read back by row)."""
    pos = h.positions
    out: list[dict[str, Any]] = []
    for row, t, proc, ty, tp, off, assign in zip(
        pos.row.tolist(),
        pos.time.tolist(),
        pos.proc.tolist(),
        pos.type.tolist(),
        pos.tp.tolist(),
        pos.offset.tolist(),
        pos.assign.tolist(),
    ):
        topic, part = h.tps[tp] if tp >= 0 else (None, None)
        value = {"topic": topic, "partition": part, "offset": None if off < 0 else off}
        out.append(_event(row, t, h.processes[proc], TYPE_NAMES[ty], "assign" if assign else "seek", value))
    return out + events_at(h, h.txn.position_other_rows)


def _assign_key(config: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], Key | None]:
    """An assign event's (group, topic, partition) as ``groups._moves`` keys it (None when its
    process is in no group, or it is no assign)."""

    def key(ev: Mapping[str, Any]) -> Key | None:
        group = group_of(config, str(ev.get("process")))
        if ev.get("f") != "assign" or group is None:
            return None
        v = ev.get("value") or {}
        return (group, str(v.get("topic")), int(v.get("partition") or 0))

    return key


def _moved_keys(h: HistoryData, positions: list[dict[str, Any]]) -> set[Key]:
    """The keys an assign gave to another member than the one that had it before (by time, as
    ``groups._moves`` follows them)."""
    key_of = _assign_key(h.config)
    owner: dict[Key, str] = {}
    moved: set[Key] = set()
    for ev in sorted(positions, key=lambda e: (int(e.get("time_ns", 0)), int(e.get("index", 0)))):
        key = key_of(ev)
        if key is None:
            continue
        prev, owner[key] = owner.get(key), str(ev.get("process"))
        if prev is not None and prev != owner[key]:
            moved.add(key)
    return moved


def first_polls(
    h: HistoryData, positions: list[dict[str, Any]], wanted: Callable[[Mapping[str, Any]], bool]
) -> list[dict[str, Any]]:
    """For each assign of ``positions`` that ``wanted`` keeps, the first record of the assigned
    partition its process returned after it, as a poll event of that one record."""
    p = h.polls
    tp_ids = {tp: i for i, tp in enumerate(h.tps)}
    proc_ids = {name: i for i, name in enumerate(h.processes)}
    asked: list[tuple[int, int, int]] = []  # (process << 32 | partition, time, row) of each assign
    for ev in positions:
        v = ev.get("value") or {}
        tp = tp_ids.get((v.get("topic"), v.get("partition")), -1)  # type: ignore[arg-type]
        if ev.get("f") != "assign" or tp < 0 or ev["process"] not in proc_ids or not wanted(ev):
            continue
        asked.append(((proc_ids[ev["process"]] << 32) | tp, int(ev["time_ns"]), int(ev["index"])))
    if not asked:
        return []
    key = (p.proc.astype(np.int64) << 32) | p.tp.astype(np.int64)
    sel = np.nonzero(member(key, [k for k, _, _ in asked]))[0]  # only the assigned partitions' records
    order = sel[np.lexsort((sel, p.row[sel], p.time[sel], key[sel]))]  # by partition and owner, then in time
    ks, ts, rs = key[order], p.time[order], p.row[order]
    firsts: set[int] = set()
    for k, t, r in asked:
        lo, hi = np.searchsorted(ks, k, "left"), np.searchsorted(ks, k, "right")
        # the first record after (t, r): past the earlier times, then past the same time's earlier rows
        same_lo, same_hi = lo + np.searchsorted(ts[lo:hi], t, "left"), lo + np.searchsorted(ts[lo:hi], t, "right")
        after = same_lo + np.searchsorted(rs[same_lo:same_hi], r, "right")
        if after < hi:
            firsts.add(int(order[after]))
    out = []
    for i in sorted(firsts):
        topic, part = h.tps[int(p.tp[i])]
        rec = {"topic": topic, "partition": part, "offset": int(p.offset[i])}
        out.append(_event(int(p.row[i]), int(p.time[i]), h.proc_name(int(p.proc[i])), "ok", "poll", {"records": [rec]}))
    return out


def _event(row: int, t: int, proc: str, typ: str, f: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"index": row, "time_ns": t, "process": proc, "type": typ, "f": f, "value": value}


def final_offsets(h: HistoryData) -> dict[tuple[str, int], list[int]]:
    """``groups._final_offsets`` over the final logs: per partition, the offsets below the high
    watermark of the final read with the most of them (the last such)."""
    best: dict[int, np.ndarray] = {}
    for fl in h.finals:
        offs = distinct(fl.offsets[fl.offsets < max(fl.hw, 0)])
        if fl.tp >= 0 and len(offs) >= len(best.get(fl.tp, ())):
            best[fl.tp] = offs
    return {h.tps[tp]: offs.tolist() for tp, offs in best.items()}


def commit_ahead_of(h: HistoryData) -> Verdict:
    """commit-ahead over the columns (see ``groups.commit_ahead``)."""
    c, p, pos = h.txn.commits, h.polls, h.positions
    names = h.txn.group_names
    typ, time = settled(h)
    members: dict[int, set[int]] = {}
    procs = {n: i for i, n in enumerate(h.processes)}
    for g, ms in groups_of(h.config).items():
        if g in names:
            members.setdefault(names.index(g), set()).update(procs[m] for m in ms if m in procs)
    pairs = distinct((c.group.astype(np.int64) << 32) | c.proc.astype(np.int64))  # a group's committers
    for g, proc in zip((pairs >> 32).tolist(), (pairs & 0xFFFFFFFF).tolist()):
        if g >= 0 and names[g]:
            members.setdefault(g, set()).add(proc)
    others = [
        ev for ev in events_at(h, h.txn.position_other_rows) if type((ev.get("value") or {}).get("offset")) is int
    ]
    # what each process had: (process, partition, value) first seen at (time, row) -- value is a
    # returned offset + 1, or a position it moved to
    okpos = pos.offset >= 0
    proc = np.concatenate([p.proc, pos.proc[okpos]]).astype(np.int64)
    tp = np.concatenate([p.tp, pos.tp[okpos]]).astype(np.int64)
    val = np.concatenate([p.offset + 1, pos.offset[okpos]]).astype(np.int64)
    t = np.concatenate([p.time, pos.time[okpos]]).astype(np.int64)
    r = np.concatenate([p.row, pos.row[okpos]]).astype(np.int64)
    for ev in others:
        v = ev["value"]
        key = (v.get("topic"), v.get("partition"))
        if key in h.tps and ev["process"] in procs:
            proc, tp = np.append(proc, procs[ev["process"]]), np.append(tp, h.tps.index(key))
            val, t, r = np.append(val, v["offset"]), np.append(t, ev["time_ns"]), np.append(r, ev["index"])
    seen_any = len(p.row) > 0 or bool(okpos.any()) or bool(others)
    earliest = _Earliest(proc, tp, val, t, r)
    judged = np.nonzero((typ == OK) & (c.offset != NO_OFFSET))[0]
    judged = judged[np.lexsort((c.row[judged], time[judged]))]
    had = np.zeros(len(judged), bool)  # some member had the committed offset before the commit
    for g in distinct(c.group[judged]).tolist():
        m = c.group[judged] == g
        for who in members.get(g, ()):
            i = judged[m]
            had[m] |= earliest.before(who, c.tp[i], c.offset[i], time[i], c.row[i])
    count = int((~had).sum())
    bad: list[dict[str, Any]] = []
    for i in judged[~had][:MAX_EXAMPLES].tolist():
        k = int(c.tp[i])
        topic, part = h.tps[k] if k >= 0 else ("None", 0)
        example = {"group": h.txn.group_name(int(c.group[i])), "topic": topic, "partition": part}
        bad.append({**example, "offset": int(c.offset[i]), "process": h.proc_name(int(c.proc[i]))})
    if len(judged) == 0 or not seen_any:
        return Verdict("commit-ahead", NOT_APPLICABLE)
    return Verdict("commit-ahead", count == 0, {"commits": len(judged), "ahead": count}, bad)


class _Earliest:
    """When each (process, partition, value) was first seen, by (time, row); looked up in bulk."""

    def __init__(self, proc: np.ndarray, tp: np.ndarray, val: np.ndarray, t: np.ndarray, r: np.ndarray) -> None:
        self.shift_tp = max(int(val.max(initial=0)), 1).bit_length()
        self.shift_proc = self.shift_tp + max(int(tp.max(initial=0)) + 1, 1).bit_length()
        self.fits = self.shift_proc + max(int(proc.max(initial=0)), 1).bit_length() <= 62 and (val >= 0).all()
        keep = (tp >= 0) & (val >= 0)
        key = self._key(proc[keep], tp[keep], val[keep])
        order = np.lexsort((r[keep], t[keep], key))
        self.keys, first = np.unique(key[order], return_index=True)
        self.t, self.r = t[keep][order][first], r[keep][order][first]
        if not self.fits:  # offsets too large to pack: a dict (never on real histories)
            it = zip(proc.tolist(), tp.tolist(), val.tolist(), t.tolist(), r.tolist())
            self.slow: dict[tuple[int, int, int], tuple[int, int]] = {}
            for a, b, v, x, y in sorted(it, key=lambda e: (e[3], e[4]), reverse=True):
                self.slow[(a, b, v)] = (x, y)

    def _key(self, proc: Any, tp: Any, val: Any) -> Any:
        if not self.fits:
            return np.zeros(len(val), np.int64)
        return (np.asarray(proc, np.int64) << self.shift_proc) | (np.asarray(tp, np.int64) << self.shift_tp) | val

    def before(self, proc: int, tp: np.ndarray, val: np.ndarray, t: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Whether ``proc`` had (tp, val) before each (t, r)."""
        if not self.fits:
            far = (1 << 62, 0)
            return np.array(
                [
                    self.slow.get((proc, a, v), far) < (x, y)
                    for a, v, x, y in zip(tp.tolist(), val.tolist(), t.tolist(), r.tolist())
                ],
                bool,
            )
        ok = (tp >= 0) & (val >= 0) & (val < (1 << self.shift_tp)) & (tp < (1 << (self.shift_proc - self.shift_tp)))
        k = np.where(ok, self._key(np.full(len(tp), proc), np.maximum(tp, 0), np.maximum(val, 0)), -1)
        at = np.minimum(np.searchsorted(self.keys, k), max(len(self.keys) - 1, 0))
        if len(self.keys) == 0:
            return np.zeros(len(tp), bool)
        found = ok & (self.keys[at] == k)
        return found & ((self.t[at] < t) | ((self.t[at] == t) & (self.r[at] < r)))


def group_delivery_of(h: HistoryData) -> Verdict:
    """group-delivery over the columns (see ``groups.group_delivery``)."""
    config = h.config
    members = groups_of(config)
    copy_group = (config.get("copy") or {}).get("group")
    if isinstance(copy_group, str):
        members.pop(copy_group, None)  # copy-exactly-once judges it
    if not members:
        return Verdict("group-delivery", NOT_APPLICABLE)
    p, s = h.polls, h.sends
    procs = {n: i for i, n in enumerate(h.processes)}
    topics: dict[str, set[str]] = {}
    returned: dict[str, np.ndarray] = {}
    for group, ms in members.items():
        ids = [procs[m] for m in ms if m in procs]
        mine = member(p.proc, ids)
        if mine.any():
            returned[group] = distinct(okey(p.tp[mine], p.offset[mine]))
            topics.setdefault(group, set()).update(h.tps[k][0] for k in distinct(p.tp[mine]).tolist())
        for proc, topic in h.txn.position_topics:
            if proc in ids:
                topics.setdefault(group, set()).add(topic)
    if not topics:
        return Verdict("group-delivery", NOT_APPLICABLE)
    acked = np.nonzero((s.type == OK) & (s.offset >= 0) & (s.tp >= 0))[0]
    # the final logs: per partition the read with the most records below its HW (the last such)
    best: dict[int, Any] = {}
    for fl in h.finals:
        n = int(np.count_nonzero(fl.offsets < max(fl.hw, 0)))
        if fl.tp >= 0 and n >= best.get(fl.tp, (-1,))[0]:
            best[fl.tp] = (n, fl)
    keys = [
        okey(np.full(int((fl.offsets < max(fl.hw, 0)).sum()), tp), fl.offsets[fl.offsets < max(fl.hw, 0)])
        for tp, (_, fl) in best.items()
    ]
    vids = [fl.vids[fl.offsets < max(fl.hw, 0)] for _, fl in best.values()]
    fk = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    fv = np.concatenate(vids) if vids else np.zeros(0, np.int64)
    o = np.argsort(fk, kind="stable")
    fk, fv = fk[o], fv[o]
    stable = np.full(len(h.tps) + 1, np.iinfo(np.int64).max, np.int64)
    for fl in h.finals:
        if fl.open_first is not None and fl.tp >= 0:
            stable[fl.tp] = min(stable[fl.tp], fl.open_first)
    has_final = np.zeros(len(h.tps) + 1, bool)
    has_final[list(best)] = True
    ak = okey(s.tp[acked], s.offset[acked])
    at = np.minimum(np.searchsorted(fk, ak), max(len(fk) - 1, 0))
    in_log = (fk[at] == ak) & (fv[at] == s.vid[acked]) if len(fk) else np.zeros(len(ak), bool)
    in_log &= s.offset[acked] < stable[s.tp[acked]]
    owed = 0
    unjudged: set[int] = set()
    unread: list[tuple[str, int]] = []  # (group, index into acked)
    for group in sorted(topics):
        mine = np.array([t in topics[group] for t, _ in h.tps] + [False], bool)[s.tp[acked]]
        unjudged.update(distinct(s.tp[acked][mine & ~has_final[s.tp[acked]]]).tolist())
        due = mine & in_log
        owed += int(due.sum())
        missing = due & ~member(ak, returned.get(group, np.zeros(0, np.int64)))
        unread += [(group, j) for j in np.nonzero(missing)[0].tolist()]
    per_partition: dict[tuple[str, int], int] = {}
    for group, j in unread:
        k = (group, int(s.tp[acked[j]]))
        per_partition[k] = per_partition.get(k, 0) + 1
    shown = unread[:MAX_EXAMPLES]
    texts = h.sent_texts(s.row[acked[[j for _, j in shown]]]) if shown else []
    examples = []
    for (group, j), text in zip(shown, texts):
        topic, partition = h.tps[int(s.tp[acked[j]])]
        examples.append(
            {
                "group": group,
                "topic": topic,
                "partition": partition,
                "offset": int(s.offset[acked[j]]),
                "value": text,
                "unread_here": per_partition[(group, int(s.tp[acked[j]]))],
            }
        )
    counts = {"owed": owed, "unread": len(unread), "unjudged": len(unjudged)}
    return Verdict("group-delivery", not unread, counts, examples)
