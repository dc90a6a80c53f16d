"""A history reduced to compact columns: the one input every check reads.

A 10-million-event run must not become 10 million Python objects, so loading keeps only what
the checks need, in numpy arrays (one row per send completion, per polled record, per position
change, ...), and interns topics/partitions and processes to small integers. Record values are
reduced to 64-bit ids that are equal exactly when the values are equal: within one load, either
Python's ``hash`` of the value's text form (JSON Lines; collisions are ~2^-64 per pair and
ignored) or a dictionary code (Parquet). Ids are never compared across loads.

Rows are the event's position in the file (0 = first event after the header), so examples can
fetch the full events back from the source (``HistoryData.events``) without keeping them.
Small, rare event kinds (meta, fault/heal, final-read logs, poll errors) are kept as lists.
What transactions and group commits say is gathered in the same pass, as columns too
(``HistoryData.txn``, ``core.checks.txn_data``): no check reads the history a second time.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow.parquet as pq

from highwater.core.checks.txn_data import TxnCollector, TxnData, TxnSends
from highwater.core.history import (
    HistoryError,
    LineError,
    check_header,
    event_problem,
    parse_line,
    rows_to_events,
    value_text,
)

TYPES = {"invoke": 0, "ok": 1, "fail": 2, "info": 3}
INVOKE, OK, FAIL, INFO = 0, 1, 2, 3
#: the event kinds that are few and judged over the events themselves: only their rows are kept
ROW_NOTED = frozenset({"txn", "commit", "acquire", "ack", "share-state"})
_TRUNC = re.compile(r"truncat", re.IGNORECASE)


#: keys combine a partition id and an offset into one sortable int64: ``tp << TP_SHIFT | offset``
TP_SHIFT = 40


def okey(tp: np.ndarray, off: np.ndarray) -> np.ndarray:
    return (tp.astype(np.int64) << TP_SHIFT) | off.astype(np.int64)


def distinct(a: Any) -> np.ndarray:
    """``np.unique(a)`` (sorted distinct values) by a sort: NumPy 2.3+ answers a bare
    ``np.unique`` with a hash table, measured 15x slower than sorting on 2 M distinct int64
    values, and slower per value the more there are (the checks' slope). Integers only (NaNs
    are not merged)."""
    s = np.sort(np.asarray(a).ravel())
    keep = np.ones(len(s), bool)
    keep[1:] = s[1:] != s[:-1]
    return s[keep]


def search(s: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``np.searchsorted(s, keys)`` (``s`` sorted, not empty), clipped to ``s``'s last index so
    ``s[at] == keys`` says which keys are in ``s``. The keys are searched in sorted order: a
    binary search per key in random order (value ids are hashes) misses the cache at every
    step once ``s`` outgrows it, measured 4x slower than sorting the keys first at 4 M keys."""
    flat = keys.ravel()
    order = np.argsort(flat)
    at = np.empty(flat.shape, np.intp)
    at[order] = np.searchsorted(s, flat[order])
    return np.minimum(at, len(s) - 1).reshape(keys.shape)


def member(a: Any, b: Any) -> np.ndarray:
    """``np.isin(a, b)`` by a sort of ``b`` and a binary search (``np.isin`` hashes ``b`` through
    ``np.unique``: see ``distinct``). Integers only."""
    a, b = np.asarray(a), np.asarray(b).ravel()
    if b.size == 0:
        return np.zeros(a.shape, bool)
    s = np.sort(b)
    return np.asarray(s[search(s, a)] == a, bool)


def is_truncation(text: str | None) -> bool:
    """Whether an error name or position-change reason reports log truncation (KIP-320)."""
    return isinstance(text, str) and _TRUNC.search(text) is not None


def idempotent(config: Mapping[str, Any]) -> bool:
    """Whether a header's config says the producers were idempotent."""
    return bool(config.get("idempotence") or config.get("enable_idempotence"))


def retention_ms(config: Mapping[str, Any]) -> int | None:
    """The run's topics' ``retention.ms`` as its header's config names it (-1: kept for good),
    None when the header does not say (absent, not an integer, or 0)."""
    v = config.get("retention_ms")
    return v if isinstance(v, int) and not isinstance(v, bool) and v != 0 else None


def finite_retention(config: Mapping[str, Any]) -> bool:
    """Whether the run's topics delete records by age (``retention.ms`` > 0): then an
    acknowledged record below the log start may have been deleted, not lost."""
    return (retention_ms(config) or 0) > 0


def unreadable_ranges(value: Mapping[str, Any]) -> np.ndarray:
    """A final read's ``unreadable`` ranges (``[from, to, error]`` each) as [from, to) rows."""
    rows = [(int(r[0]), int(r[1])) for r in value.get("unreadable") or [] if isinstance(r, list) and len(r) >= 2]
    return np.array(rows, np.int64).reshape(-1, 2)


def vid_of(v: Any) -> int:
    """Value id for the JSON Lines path: 0 means "no value" (null cannot identify a write)."""
    if type(v) is not str:
        if v is None:
            return 0
        v = value_text(v)[0]
    h = hash(v)
    return h if h != 0 else 1


@dataclass
class Sends:
    """Completions (ok/fail/info) of sends; invokes are only counted."""

    row: np.ndarray
    time: np.ndarray
    proc: np.ndarray
    type: np.ndarray  # OK / FAIL / INFO
    tp: np.ndarray  # -1 when unknown
    offset: np.ndarray  # -1 when unknown
    vid: np.ndarray  # 0 when no value
    invokes: int = 0
    #: per completion, the row of the first invoke of the same (process, value), -1 when none;
    #: filled only for idempotent histories (nonmonotonic-send orders acks by it), else None
    invoke_row: np.ndarray | None = None


def match_invokes(
    inv_row: np.ndarray, inv_proc: np.ndarray, inv_vid: np.ndarray, proc: np.ndarray, vid: np.ndarray
) -> np.ndarray:
    """For each completion (``proc``, ``vid``), the row of the first invoke with the same process
    and value id, -1 when there is none: a sort and a binary search, no per-event objects. The
    (process, value) pair is folded into one 64-bit key (a collision, ~2^-64 per pair, would at
    worst misplace one ack in nonmonotonic-send's order)."""
    if len(proc) == 0:
        return np.zeros(0, np.int64)
    if len(inv_row) == 0:
        return np.full(len(proc), -1, np.int64)

    def key(p: np.ndarray, v: np.ndarray) -> np.ndarray:
        return (v.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ p.astype(np.uint64)

    ik = key(inv_proc, inv_vid)
    order = np.argsort(ik, kind="stable")  # stable: equal keys stay in file order
    keys, first = np.unique(ik[order], return_index=True)
    first_row = inv_row[order][first]
    ck = key(proc, vid)
    at = search(keys, ck)
    return np.where(keys[at] == ck, first_row[at], -1).astype(np.int64)


@dataclass
class PollRecords:
    """One row per record returned by an ok poll, in file order (and order within the poll)."""

    row: np.ndarray
    time: np.ndarray
    proc: np.ndarray
    tp: np.ndarray
    offset: np.ndarray
    vid: np.ndarray
    epoch: np.ndarray  # -1 when unknown
    replica: np.ndarray  # -1 when unknown


@dataclass
class Positions:
    """assign/seek events: every position change of a consumer that is not a plain poll."""

    row: np.ndarray
    time: np.ndarray
    proc: np.ndarray
    tp: np.ndarray  # -1: applies to every partition of the consumer
    offset: np.ndarray  # -1 when unknown
    truncation: np.ndarray  # bool: the reason names truncation handling
    type: np.ndarray  # OK / INFO
    assign: np.ndarray  # 1: an ``assign`` event, 0: a ``seek``
    reset: np.ndarray  # bool: the library applied auto.offset.reset (reason ``reset``)


@dataclass(frozen=True)
class Revocation:
    """A group consumer's ``revoke`` event (ok): it gave up ``tp`` at a rebalance, or lost it
    (``lost``: its membership was fenced, so the group may already have given it to another)."""

    row: int
    time: int
    proc: int
    tp: int
    lost: bool


@dataclass(frozen=True)
class PollError:
    row: int
    time: int
    proc: int
    error: str | None

    @property
    def truncation(self) -> bool:
        return is_truncation(self.error)


@dataclass(frozen=True)
class MetaObs:
    row: int
    time: int
    proc: int
    tp: int
    hw: int | None
    leader: int | None
    epoch: int | None
    isr: frozenset[int] | None
    #: the leader's log start and local log start (KIP-405), observed on tiered runs only
    log_start: int | None = None
    local_start: int | None = None
    #: each replica's log end offset as it answered (replica id, offset), where observed
    leo: tuple[tuple[int, int], ...] = ()
    #: when the event was written (``time`` is when its metadata was read): its HW and LEOs were
    #: read by then
    done: int = 0


@dataclass(frozen=True)
class FaultEvent:
    row: int
    time: int
    type: str  # "fault" or "heal"
    kind: str | None
    targets: tuple[Any, ...]
    params: Mapping[str, Any]
    #: a client restart onto another version or group protocol: ``{client id: {"from": {...},
    #: "to": {"client": ..., "group_protocol": ...}}}`` (``faults.inject``); empty otherwise
    members: Mapping[str, Any] = field(default_factory=dict)
    #: a link fault's links, by their proxies' names (``controller:kafka-1->kafka-2``)
    links: tuple[str, ...] = ()
    #: a toxic on both streams of its links (``--direction both``), not one (downstream, the default)
    both_ways: bool = False


@dataclass
class FinalLog:
    """One replica's full log of one partition, read after healing; offsets sorted."""

    row: int
    tp: int
    replica: int
    hw: int
    log_start: int
    offsets: np.ndarray
    vids: np.ndarray
    #: the event's own ``log_start`` (0 when it has none; ``log_start`` above may fill it in)
    given_log_start: int = 0
    #: records of aborted then of open transactions the replica holds (``aborted``/``open``)
    uncommitted_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    uncommitted_vids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: the lowest offset of an open transaction's record, None when there is none
    open_first: int | None = None
    #: [from, to) ranges, one per row, of offsets the replica could not give back: remote segments
    #: of a tiered topic its broker failed to read (the store lost them; ``unreadable``)
    unreadable: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))

    @property
    def end(self) -> int:
        """The replica's log end offset as far as its records show."""
        return int(self.offsets[-1]) + 1 if len(self.offsets) else self.log_start


@dataclass
class HistoryData:
    """Everything the checks read, built by ``load``/``from_events``; see the module doc."""

    header: dict[str, Any]
    processes: list[str]
    tps: list[tuple[str, int]]
    sends: Sends
    polls: PollRecords
    positions: Positions
    poll_errors: list[PollError]
    meta: list[MetaObs]
    faults: list[FaultEvent]
    finals: list[FinalLog]
    txn_rows: np.ndarray  # rows of ``txn`` events (begin/commit/abort of a transaction), in file order
    commit_rows: np.ndarray  # rows of ``commit`` events (a group's committed offsets), in file order
    share_rows: list[int]  # rows of ``acquire``/``ack``/``share-state`` events (a share group's)
    proc_first_time: np.ndarray
    n_events: int
    end_time: int
    line_errors: list[LineError] = field(default_factory=list)
    source: EventSource | None = None
    revocations: list[Revocation] = field(default_factory=list)
    #: what the txn and commit events and the transactional sends say (``core.checks.txn_data``)
    txn: TxnData = field(default_factory=lambda: TxnCollector().build())
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.header.get("config") or {})

    def tp_name(self, tp: int) -> tuple[str, int] | None:
        return self.tps[tp] if 0 <= tp < len(self.tps) else None

    def proc_name(self, proc: int) -> str:
        return self.processes[proc]

    def events(self, rows: Iterable[int], focus: Mapping[int, Sequence[int]] | None = None) -> list[dict[str, Any]]:
        """The full events at these rows (in that order). Final-read events are trimmed to the
        records at ``focus[row]`` offsets (records_total tells how many there were)."""
        rows = [int(r) for r in rows]
        if self.source is None:
            return [{"row": r} for r in rows]
        out = self.source.fetch(rows)
        return [_trim(ev, (focus or {}).get(r)) for r, ev in zip(rows, out)]

    def polled_texts(self, idx: Iterable[int]) -> list[str | None]:
        """The value texts of these polled records (indices into ``polls``), read back from the
        source: value ids only say which values are equal, and examples show the value."""
        p = self.polls
        idx = [int(i) for i in idx]
        rows = [int(p.row[i]) for i in idx]
        evs = self.source.fetch(rows) if self.source is not None else [{} for _ in rows]
        out: list[str | None] = []
        for i, r, ev in zip(idx, rows, evs):
            recs = (ev.get("value") or {}).get("records") or []
            k = i - int(np.searchsorted(p.row, r))  # its place in the poll: the poll's records are adjacent
            out.append(value_text(recs[k].get("value"))[0] if 0 <= k < len(recs) else None)
        return out

    def sent_texts(self, rows: Iterable[int]) -> list[str | None]:
        """The record value texts of the send events at these rows (read back from the source)."""
        rows = [int(r) for r in rows]
        evs = self.source.fetch(rows) if self.source is not None else [{} for _ in rows]
        return [value_text((ev.get("value") or {}).get("value"))[0] for ev in evs]


T = TypeVar("T")


def cached(h: HistoryData, name: str, fn: Callable[[HistoryData], T]) -> T:
    """``fn(h)``, computed once per history (kept in ``h.cache`` under ``name``): what several
    checks derive from the same history is derived once."""
    if name not in h.cache:
        h.cache[name] = fn(h)
    value: T = h.cache[name]
    return value


def _trim(ev: dict[str, Any], offsets: Sequence[int] | None) -> dict[str, Any]:
    v = ev.get("value")
    if ev.get("f") != "final-read" or not isinstance(v, dict) or not isinstance(v.get("records"), list):
        return ev
    want = set(offsets or ())
    recs = v["records"]
    trimmed = {**v, "records": [r for r in recs if r and r[0] in want], "records_total": len(recs)}
    return {**ev, "value": trimmed}


# --------------------------------------------------------------------------------------------
# Sources for examples


class EventSource:
    def fetch(self, rows: list[int]) -> list[dict[str, Any]]:
        raise NotImplementedError


class ListSource(EventSource):
    def __init__(self, events: Sequence[dict[str, Any]]) -> None:
        self._events = events

    def fetch(self, rows: list[int]) -> list[dict[str, Any]]:
        return [self._events[r] for r in rows]


class JsonlSource(EventSource):
    """Random access by row through the byte offset of every event line (8 bytes/event)."""

    def __init__(self, path: Path, line_starts: np.ndarray) -> None:
        self._path = path
        self._starts = line_starts

    def fetch(self, rows: list[int]) -> list[dict[str, Any]]:
        out = []
        with open(self._path, "rb") as fh:
            for r in rows:
                fh.seek(int(self._starts[r]))
                ev = parse_line(fh.readline())
                out.append(ev if isinstance(ev, dict) else {"row": r, "unreadable": True})
        return out


class ParquetSource(EventSource):
    """Random access by row: reads only the row group holding it."""

    def __init__(self, path: Path) -> None:
        self._pf = pq.ParquetFile(path)
        sizes = [self._pf.metadata.row_group(i).num_rows for i in range(self._pf.num_row_groups)]
        self._starts = np.cumsum([0, *sizes])

    def fetch(self, rows: list[int]) -> list[dict[str, Any]]:
        """The events at ``rows`` (in that order): each row group holding some is read once,
        and only the rows asked for become events."""
        want = np.asarray(rows, np.int64)
        groups = np.searchsorted(self._starts, want, side="right") - 1
        got: dict[int, dict[str, Any]] = {}
        for g in np.unique(groups).tolist():
            mine = np.unique(want[groups == g])
            table = self._pf.read_row_group(g).take(mine - int(self._starts[g]))
            got.update(zip(mine.tolist(), rows_to_events(table)))
        return [got[int(r)] for r in rows]


# --------------------------------------------------------------------------------------------
# Building


class _Builder:
    """Accumulates compact columns while events stream by (typed arrays, not objects)."""

    def __init__(self, track_invokes: bool = False) -> None:
        #: keep each send invoke's row, process and value id (``Sends.invoke_row``): only
        #: idempotent histories need them, so the others do not pay for them
        self.track_invokes = track_invokes
        self.inv = {k: array(t) for k, t in _INVOKE_COLS}
        self.proc_ids: dict[str, int] = {}
        self.tp_ids: dict[tuple[str, int], int] = {}
        self.proc_first: list[int] = []
        self.s = {k: array(t) for k, t in _SEND_COLS}
        self.invokes = 0
        self.r = {k: array(t) for k, t in _POLL_COLS}
        self.p = {k: array(t) for k, t in _POS_COLS}
        self.poll_errors: list[PollError] = []
        self.revocations: list[Revocation] = []
        self.meta: list[MetaObs] = []
        self.faults: list[FaultEvent] = []
        self.finals: list[FinalLog] = []
        self.share_rows: list[int] = []
        self.tx = TxnCollector()
        self._send_app = tuple(self.s[k].append for k, _ in _SEND_COLS)  # bound once: the hot path
        self.n_events = 0
        self.end_time = 0

    def proc(self, name: str, t: int) -> int:
        i = self.proc_ids.get(name)
        if i is None:
            i = self.proc_ids[name] = len(self.proc_ids)
            self.proc_first.append(t)
        return i

    def tp(self, topic: Any, partition: Any) -> int:
        if topic is None or partition is None:
            return -1
        key = (topic, partition)
        i = self.tp_ids.get(key)
        if i is None:
            i = self.tp_ids[key] = len(self.tp_ids)
        return i

    def add(self, row: int, ev: dict[str, Any]) -> None:
        """Fold one event in (the JSON Lines and in-memory paths)."""
        t = ev["time_ns"]
        typ = TYPES[ev["type"]]
        f = ev["f"]
        proc = self.proc(ev["process"], t)
        self.n_events += 1
        if t > self.end_time:
            self.end_time = t
        v = ev["value"]
        if f == "send":
            if v is None:
                v = {}
            txn = v.get("txn")
            if typ == INVOKE:
                self.invokes += 1
                if self.track_invokes:
                    self.inv["row"].append(row)
                    self.inv["proc"].append(proc)
                    self.inv["vid"].append(vid_of(v.get("value")))
                if isinstance(txn, str):
                    tp = self.tp(v.get("topic"), v.get("partition"))
                    self.tx.send(row, typ, proc, tp, v.get("offset"), vid_of(v.get("value")), txn)
                return
            o = v.get("offset")
            tp = self.tp(v.get("topic"), v.get("partition"))
            vid = vid_of(v.get("value"))
            a = self._send_app
            a[0](row)
            a[1](t)
            a[2](proc)
            a[3](typ)
            a[4](tp)
            a[5](o if type(o) is int else -1)
            a[6](vid)
            if isinstance(txn, str):
                self.tx.send(row, typ, proc, tp, o, vid, txn)
        elif f == "poll":
            self.tx.poll_procs.add(proc)
            if typ == OK:
                self._poll(row, t, proc, v["records"])
            elif typ != INVOKE:
                self.poll_errors.append(PollError(row, t, proc, ev["error"]))
        elif f in ("assign", "seek"):
            if v and v.get("topic") is not None:
                self.tx.position_topics.add((proc, str(v["topic"])))
            if typ in (OK, INFO):  # an info seek may have moved: treat it as a move
                self._position(row, t, proc, v or {}, typ, f)
            else:
                self.tx.position_other_rows.append(row)
        elif f == "revoke":
            if typ == OK and v:
                self.revoke(row, t, proc, v)
        elif f == "meta":
            if typ != FAIL and v:
                self._meta(row, t, proc, v)
        elif f in ("fault", "heal"):
            if typ != FAIL:
                self._fault(row, t, f, v or {}, typ)
        elif f == "final-read":
            if typ == OK:
                self._final(row, v)
        elif f in ROW_NOTED:
            self.note_row(f, row, t, proc, typ, v or {})

    def note_row(self, f: str, row: int, t: int, proc: int, typ: int, v: Mapping[str, Any]) -> None:
        """Transaction, group-commit and share-group events: what a ``txn`` or ``commit`` event
        says goes into the transaction columns (``core.checks.txn_data``, rows included); of the
        share group's, the rows are kept: the share checks read those few events back
        (``core.checks.raw``)."""
        if f == "txn":
            self.tx.txn(row, t, proc, typ, v)
        elif f == "commit":
            self.tx.commit(row, t, proc, typ, self.tp(v.get("topic"), v.get("partition")), v)
        else:
            self.share_rows.append(row)

    def _poll(self, row: int, t: int, proc: int, recs: list[dict[str, Any]]) -> None:
        n = len(self.r["row"])
        try:
            self._poll_records(row, t, proc, recs)
        except Exception:
            for col in self.r.values():  # keep the columns aligned: drop this poll entirely
                del col[n:]
            raise

    def _poll_records(self, row: int, t: int, proc: int, recs: list[dict[str, Any]]) -> None:
        r = self.r
        a_row, a_time, a_proc = r["row"].append, r["time"].append, r["proc"].append
        a_tp, a_off, a_vid = r["tp"].append, r["offset"].append, r["vid"].append
        a_ep, a_rep = r["epoch"].append, r["replica"].append
        tp_ids = self.tp_ids
        for rec in recs:
            key = (rec["topic"], rec["partition"])
            tp = tp_ids.get(key)
            if tp is None:
                tp = self.tp(*key)
            a_row(row)
            a_time(t)
            a_proc(proc)
            a_tp(tp)
            a_off(rec["offset"])
            val = rec["value"]
            if type(val) is str:
                h = hash(val)
                a_vid(h if h != 0 else 1)
            else:
                a_vid(vid_of(val))
            e = rec.get("leader_epoch")
            a_ep(e if e is not None else -1)
            rp = rec.get("replica")
            a_rep(rp if rp is not None else -1)

    def _position(self, row: int, t: int, proc: int, v: Mapping[str, Any], typ: int = OK, f: str = "seek") -> None:
        o = v.get("offset")
        vals = (
            row,
            t,
            proc,
            self.tp(v.get("topic"), v.get("partition")),
            o if type(o) is int else -1,
            1 if is_truncation(v.get("reason")) else 0,
            typ,
            1 if f == "assign" else 0,
            1 if v.get("reason") == "reset" else 0,
        )
        for (k, _), x in zip(_POS_COLS, vals):
            self.p[k].append(x)

    def revoke(self, row: int, t: int, proc: int, v: Mapping[str, Any]) -> None:
        self.revocations.append(
            Revocation(row, t, proc, self.tp(v.get("topic"), v.get("partition")), v.get("reason") == "lost")
        )

    def _meta(self, row: int, t: int, proc: int, v: Mapping[str, Any]) -> None:
        # an observation is as old as its metadata read, not as its (possibly late) event
        done = t
        observed = v.get("observed_ns")
        if type(observed) is int and 0 <= observed <= t:
            t = observed
        isr = v.get("isr")
        leo = v.get("leo")
        leos = tuple((int(r), int(x)) for r, x in (leo.items() if isinstance(leo, dict) else ()) if type(x) is int)
        self.meta.append(
            MetaObs(
                row,
                t,
                proc,
                self.tp(v.get("topic"), v.get("partition")),
                _opt_int(v.get("hw")),
                _opt_int(v.get("leader")),
                _opt_int(v.get("leader_epoch")),
                frozenset(int(b) for b in isr) if isinstance(isr, list) else None,
                _opt_int(v.get("log_start")),
                _opt_int(v.get("local_start")),
                leos,
                done,
            )
        )

    def _fault(self, row: int, t: int, f: str, v: Mapping[str, Any], typ: int) -> None:
        targets = v.get("targets")
        if not isinstance(targets, (list, tuple)):
            targets = [] if targets is None else [targets]
        raw_params = v.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        members = v.get("members")
        links = v.get("links")
        self.faults.append(
            FaultEvent(
                row,
                t,
                f,
                v.get("kind"),
                tuple(targets),
                params,
                members if isinstance(members, dict) else {},
                tuple(str(x) for x in links) if isinstance(links, list) else (),
                _both_ways(v),
            )
        )

    def _final(self, row: int, v: Mapping[str, Any]) -> None:
        recs = v["records"]
        offs = np.fromiter((r[0] for r in recs), dtype=np.int64, count=len(recs))
        vids = np.fromiter((vid_of(r[1]) for r in recs), dtype=np.int64, count=len(recs))
        self.add_final(
            row, self.tp(v["topic"], v["partition"]), int(v["replica"]), int(v["hw"]), v.get("log_start"), offs, vids
        )
        unc = [*(v.get("aborted") or []), *(v.get("open") or [])]
        self.uncommitted(
            np.array([int(r[0]) for r in unc], np.int64),
            np.array([vid_of(r[1]) for r in unc], np.int64),
            min((int(r[0]) for r in v.get("open") or []), default=None),
        )
        self.finals[-1].unreadable = unreadable_ranges(v)

    def uncommitted(self, offs: np.ndarray, vids: np.ndarray, open_first: int | None) -> None:
        """The aborted and open transactional records of the last final read added."""
        fl = self.finals[-1]
        fl.uncommitted_offsets, fl.uncommitted_vids, fl.open_first = offs, vids, open_first

    def add_final(
        self, row: int, tp: int, replica: int, hw: int, log_start: Any, offs: np.ndarray, vids: np.ndarray
    ) -> None:
        order = np.argsort(offs, kind="stable")
        offs, vids = offs[order], vids[order]
        ls = int(log_start) if type(log_start) is int else (int(offs[0]) if len(offs) else 0)
        self.finals.append(FinalLog(row, tp, replica, hw, ls, offs, vids, int(log_start or 0)))

    def sends(self, sends: Sends) -> Sends:
        """``sends`` with its ``invoke_row`` when invokes were tracked (the invoke columns freed)."""
        if self.track_invokes:
            inv = {k: _np(self.inv[k], t) for k, t in _INVOKE_COLS}
            sends.invoke_row = match_invokes(inv["row"], inv["proc"], inv["vid"], sends.proc, sends.vid)
            self.inv = {k: array(t) for k, t in _INVOKE_COLS}
        return sends

    def build(
        self,
        header: dict[str, Any],
        source: EventSource | None,
        line_errors: list[LineError],
        txn_sends: TxnSends | None = None,
    ) -> HistoryData:
        """The columns (``txn_sends``: the transactional sends, when the loader gathered them
        itself)."""
        s, r, p = self.s, self.r, self.p
        txn = self.tx.build(txn_sends)
        return HistoryData(
            header=header,
            processes=list(self.proc_ids),
            tps=list(self.tp_ids),
            sends=self.sends(Sends(**{k: _np(s[k], t) for k, t in _SEND_COLS}, invokes=self.invokes)),
            polls=PollRecords(**{k: _np(r[k], t) for k, t in _POLL_COLS}),
            positions=Positions(**{k: _np(p[k], t) for k, t in _POS_COLS}),
            poll_errors=self.poll_errors,
            meta=self.meta,
            faults=self.faults,
            finals=self.finals,
            txn_rows=txn.txns.row,  # the txn and commit columns are in file order
            commit_rows=txn.commits.row,
            share_rows=self.share_rows,
            proc_first_time=np.array(self.proc_first, dtype=np.int64),
            n_events=self.n_events,
            end_time=self.end_time,
            line_errors=line_errors,
            source=source,
            revocations=self.revocations,
            txn=txn,
        )


_SEND_COLS = (("row", "q"), ("time", "q"), ("proc", "i"), ("type", "b"), ("tp", "i"), ("offset", "q"), ("vid", "q"))
_INVOKE_COLS = (("row", "q"), ("proc", "i"), ("vid", "q"))
_POLL_COLS = (
    ("row", "q"),
    ("time", "q"),
    ("proc", "i"),
    ("tp", "i"),
    ("offset", "q"),
    ("vid", "q"),
    ("epoch", "i"),
    ("replica", "i"),
)
_POS_COLS = (
    ("row", "q"),
    ("time", "q"),
    ("proc", "i"),
    ("tp", "i"),
    ("offset", "q"),
    ("truncation", "b"),
    ("type", "b"),
    ("assign", "b"),
    ("reset", "b"),
)
_NP = {"q": np.int64, "i": np.int32, "b": np.int8}


def _np(a: array, t: str) -> np.ndarray:
    return np.frombuffer(a, dtype=_NP[t]) if len(a) else np.zeros(0, dtype=_NP[t])


def _opt_int(v: Any) -> int | None:
    return v if type(v) is int else None


# --------------------------------------------------------------------------------------------
# Entry points


def from_events(header: Mapping[str, Any], events: Sequence[dict[str, Any]]) -> HistoryData:
    """Build from in-memory events (tests, small tools). Events are validated like lines."""
    hdr = check_header(dict(header))
    b = _Builder(track_invokes=idempotent(hdr.get("config") or {}))
    for row, ev in enumerate(events):
        problem = event_problem(ev)
        if problem is not None:
            raise HistoryError(f"event {row}: {problem}")
        b.add(row, ev)
    return b.build(hdr, ListSource(events), [])


def _both_ways(v: Mapping[str, Any]) -> bool:
    """A link fault's toxic acts on both streams: its recorded ``direction`` or, in a history
    written before the injector recorded it, its spec's ``--direction both``."""
    direction = v.get("direction")
    if isinstance(direction, str):
        return direction == "both"
    return isinstance(v.get("spec"), str) and "--direction both" in v["spec"]


__all__ = [
    "HistoryData",
    "Sends",
    "PollRecords",
    "Positions",
    "PollError",
    "MetaObs",
    "FaultEvent",
    "FinalLog",
    "from_events",
    "idempotent",
    "match_invokes",
    "is_truncation",
    "vid_of",
    "OK",
    "FAIL",
    "INFO",
    "INVOKE",
]
