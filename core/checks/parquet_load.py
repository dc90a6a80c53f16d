"""Load a Parquet history into ``HistoryData`` with columnar operations only.

The bulk (send completions, poll records, final logs) never becomes Python objects: batches are
filtered and flattened with pyarrow and appended as numpy arrays. Record values from all three
are dictionary-encoded together at the end, so one value has one id across sends, polls and
final reads (a batch's send values once, for its invokes, completions and transactional sends
alike: ``_Values``). Transaction ids are interned column by column too
(``TxnCollector.txn_codes``). Rare events (positions, meta, faults, poll errors) go through the same small
Python code as the JSON Lines path.

The few-valued string columns (``f``, ``type``, ``process``, ``topic``, the records' ``topic``)
are read as Arrow dictionaries, straight from the file's dictionary pages: each batch's event
kinds and types become small integer codes once, and every later test is a numpy comparison
instead of a string comparison per row. Row groups are decoded one ahead in a thread (Arrow
releases the GIL while it decodes), so reading overlaps the work on the previous one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from highwater.core.checks.data import (
    _POLL_COLS,
    _SEND_COLS,
    FAIL,
    INFO,
    INVOKE,
    OK,
    ROW_NOTED,
    TYPES,
    HistoryData,
    ParquetSource,
    PollError,
    PollRecords,
    Sends,
    _Builder,
    idempotent,
    match_invokes,
    unreadable_ranges,
)
from highwater.core.checks.parquet_txn import EventColumns, commit_events, send_txns, txn_events
from highwater.core.checks.txn_data import NO_OFFSET, TxnSends
from highwater.core.history.format import value_text

_COLUMNS = [
    "time_ns",
    "process",
    "type",
    "f",
    "error",
    "topic",
    "partition",
    "offset",
    "replica",
    "hw",
    "log_start",
    "leader",
    "leader_epoch",
    "value",
    "records",
    "value_json",
]
#: columns read as dictionaries (few distinct values; see the module doc)
_DICT_COLUMNS = ["process", "type", "f", "error", "topic", "records.list.element.topic"]
#: the event kinds read through ``_rare`` (the share group's too: their rows are noted, so the
#: share checks read back only those events, as on JSON Lines)
_RARE = {"assign", "seek", "revoke", "meta", "fault", "heal", "txn", "commit", "acquire", "ack", "share-state"}
#: codes of the event kinds the loader tells apart (``_codes``; -1: any other)
_F = {
    name: i
    for i, name in enumerate(["send", "poll", "final-read", "txn", "commit", *sorted(_RARE - {"txn", "commit"})])
}
F_SEND, F_POLL, F_FINAL, F_TXN, F_COMMIT = (_F[k] for k in ("send", "poll", "final-read", "txn", "commit"))
_RARE_CODES = np.array(sorted(_F[k] for k in _RARE), np.int8)


def _np(a: pa.Array | pa.ChunkedArray, fill: int, dtype: Any) -> np.ndarray:
    return np.asarray(pc.fill_null(a, fill).to_numpy(zero_copy_only=False), dtype=dtype)


def _indices(col: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """A string column's dictionary and each row's index into it (-1 for null); a dictionary
    column's own, without touching its strings."""
    enc = col if isinstance(col, pa.DictionaryArray) else pc.dictionary_encode(col)
    return enc.dictionary, pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def _dictionary(col: pa.Array) -> tuple[list[Any], np.ndarray, np.ndarray]:
    """A string column as (its distinct values in order of first appearance, each row's index
    into them or -1 for null, the row of each one's first appearance). A file's dictionary
    order is the writer's to choose, so it is put in that order here."""
    dictionary, idx = _indices(col)
    used = np.flatnonzero(np.bincount(idx + 1, minlength=len(dictionary) + 1)[1:])
    if len(used) <= 64:  # the usual few values: one pass each beats a sort of every row
        first = np.array([int(np.argmax(idx == u)) for u in used.tolist()], np.int64)
    else:
        uniq, at = np.unique(idx, return_index=True)
        first = at[uniq >= 0]
    order = np.argsort(first, kind="stable")
    used, first = used[order], first[order]
    names = dictionary.take(pa.array(used, pa.int64())).to_pylist() if len(used) else []
    remap = np.full(len(dictionary) + 1, -1, np.int64)  # + 1: null (-1) stays -1
    remap[used] = np.arange(len(used))
    return names, remap[idx], first


def _codes(col: pa.Array, codes: dict[str, int]) -> np.ndarray:
    """Each row's code in ``codes`` (int8; -1 for any other value or null)."""
    dictionary, idx = _indices(col)
    table = np.array([codes.get(n, -1) for n in dictionary.to_pylist()] + [-1], np.int8)  # + [-1]: null
    return table[idx]


class _Interner:
    """Maps a batch's (topic, partition) or process columns to the builder's global ids."""

    def __init__(self, b: _Builder) -> None:
        self.b = b

    def procs(self, col: pa.Array, times: np.ndarray) -> np.ndarray:
        names, idx, first = _dictionary(col)
        glob = np.array([self.b.proc(n, int(times[i])) for n, i in zip(names, first.tolist())] + [-1], np.int32)
        return glob[idx]  # a null process (-1) stays -1

    def tps(self, topic: pa.Array, partition: pa.Array) -> np.ndarray:
        if len(topic) == 0:
            return np.zeros(0, np.int32)
        names, tidx, _ = _dictionary(topic)
        part = _np(partition, -1, np.int64)
        key = (tidx + 1) * (1 << 32) + (part + 1)
        uniq, inv = np.unique(key, return_inverse=True)
        glob = np.empty(len(uniq), np.int32)
        for j, k in enumerate(uniq.tolist()):
            ti, pi = k // (1 << 32) - 1, k % (1 << 32) - 1
            glob[j] = self.b.tp(names[ti], pi) if ti >= 0 and pi >= 0 else -1
        return glob[inv.reshape(-1)]


@dataclass
class _Batch:
    """One batch of rows and what every step reads of it: file rows, times, process ids, and
    the codes of ``f`` (``_F``) and ``type`` (``TYPES``)."""

    cols: pa.RecordBatch
    rows: np.ndarray
    times: np.ndarray
    procs: np.ndarray
    f: np.ndarray
    type: np.ndarray

    def column(self, name: str) -> pa.Array:
        return self.cols.column(name)


def load_parquet(path: Path, header: dict[str, Any]) -> HistoryData:
    loader = _Loader(idempotent(header.get("config") or {}))
    for cols in _batches(pq.ParquetFile(path, pre_buffer=False, read_dictionary=_DICT_COLUMNS)):
        loader.batch(cols)
    return loader.build(header, path)


#: what a final read leaves for the end, when its values have ids: row, partition, replica, hw,
#: log start, its offsets, its uncommitted records' offsets, its first open offset
_Final = tuple[int, int, int, int, Any, np.ndarray, np.ndarray, int | None, np.ndarray]


class _Values:
    """Record values, batch by batch, to one id space at the end (``_global_codes``): each
    chunk of values is dictionary-encoded once, and its uses (a kind, and which of its values:
    positions, or None for all) get their ids from the one encoding."""

    def __init__(self) -> None:
        self.dicts: list[pa.Array] = []  # per chunk: its distinct values
        self.codes: list[np.ndarray] = []  # per chunk: each value's index in them, -1 for null
        self.uses: list[list[tuple[str, np.ndarray | None]]] = []
        self._last_final: tuple[pa.Array, int] | None = None  # the last final read's values, its chunk

    def add_final(self, values: pa.Array) -> None:
        """A final read's values. The replicas of a partition are read one after the other and
        usually hold the same log: one equal to the last one shares its encoding (on a 10 M-event
        history the final reads hold most values, three times over)."""
        last = self._last_final
        if last is not None and values.equals(last[0]):
            self.uses[last[1]].append(("final", None))  # the last chunk of "final": order kept
            return
        self.add(values, [("final", None)])
        self._last_final = (values, len(self.uses) - 1)

    def add(self, values: pa.Array, uses: list[tuple[str, np.ndarray | None]]) -> None:
        d, codes = _local_encode(values)
        self.dicts.append(d)
        self.codes.append(codes)
        self.uses.append(uses)

    def ids(self) -> dict[str, list[np.ndarray]]:
        """Per kind, the ids of its values (global code + 1, 0 for null), chunk by chunk in the
        order they were added. Each chunk's inputs are dropped as soon as its ids are made: on
        a 10 M-event history they are hundreds of MiB, and this is the load's peak."""
        self._last_final = None
        tables = _global_codes(self.dicts)  # empties self.dicts
        codes, uses, self.codes, self.uses = self.codes, self.uses, [], []
        out: dict[str, list[np.ndarray]] = {}
        for i, (table, use) in enumerate(zip(tables, uses)):
            c = codes[i]
            if len(table):
                vids = np.where(c >= 0, table[np.maximum(c, 0)], 0).astype(np.int64)
            else:
                vids = np.zeros(len(c), np.int64)  # every value null
            codes[i] = tables[i] = _EMPTY
            for kind, at in use:
                out.setdefault(kind, []).append(vids if at is None else vids[at])
        return out


_EMPTY = np.zeros(0, np.int64)


class _Loader:
    """The columns of ``HistoryData``, filled batch by batch (``batch``), then built."""

    def __init__(self, track_invokes: bool) -> None:
        self.b = _Builder(track_invokes=track_invokes)
        self.intern = _Interner(self.b)
        self.values = _Values()
        self.invokes: dict[str, list[np.ndarray]] = {"row": [], "proc": []}
        self.sends: dict[str, list[np.ndarray]] = {k: [] for k, _ in _SEND_COLS}
        self.polls: dict[str, list[np.ndarray]] = {k: [] for k, _ in _POLL_COLS}
        # send events naming a transaction (invokes and completions)
        self.txn_sends: dict[str, list[np.ndarray]] = {k: [] for k in _TXN_SEND_TYPES}
        self.finals: list[_Final] = []
        self.row0 = 0

    def batch(self, cols: pa.RecordBatch) -> None:
        b, n = self.b, cols.num_rows
        times = cols.column("time_ns").to_numpy()
        rows = np.arange(self.row0, self.row0 + n, dtype=np.int64)
        self.row0 += n
        b.n_events += n
        if n:
            b.end_time = max(b.end_time, int(times.max()))
        procs = self.intern.procs(cols.column("process"), times)
        bt = _Batch(cols, rows, times, procs, _codes(cols.column("f"), _F), _codes(cols.column("type"), TYPES))
        is_send, is_poll = bt.f == F_SEND, bt.f == F_POLL
        if is_send.any():
            self._sends(bt, np.nonzero(is_send)[0])
        ok = bt.type == OK
        b.tx.poll_procs.update(np.flatnonzero(np.bincount(procs[is_poll])).tolist())  # a count, not a sort
        if (is_poll & ok).any():
            self._polls(bt, is_poll & ok)
        fast = _txn_fast(b, self.intern, bt)
        rare = (np.isin(bt.f, _RARE_CODES) & ~fast) | (is_poll & ~ok & (bt.type != INVOKE)) | (bt.f == F_FINAL)
        if rare.any():
            self._rare(bt, np.nonzero(rare)[0])

    def _sends(self, bt: _Batch, at: np.ndarray) -> None:
        """The batch's send events (rows ``at``): invokes (counted; tracked when idempotent),
        completions, and those naming a transaction; their values encoded once for all three."""
        inv = bt.type[at] == INVOKE
        self.b.invokes += int(np.count_nonzero(inv))
        uses: list[tuple[str, np.ndarray | None]] = []
        if self.b.track_invokes and inv.any():
            self.invokes["row"].append(bt.rows[at[inv]])
            self.invokes["proc"].append(bt.procs[at[inv]])
            uses.append(("invoke", np.nonzero(inv)[0]))
        txn = _txn_sends(self.b, self.intern, bt, at, self.txn_sends)
        if txn is not None:
            uses.append(("txnsend", txn))
        done = np.nonzero(~inv)[0]
        if len(done):
            i, take = at[done], pa.array(at[done])
            s = self.sends
            s["row"].append(bt.rows[i])
            s["time"].append(bt.times[i])
            s["proc"].append(bt.procs[i])
            s["type"].append(bt.type[i])
            s["tp"].append(self.intern.tps(bt.column("topic").take(take), bt.column("partition").take(take)))
            s["offset"].append(_np(bt.column("offset").take(take), -1, np.int64))
            uses.append(("send", done))
        if uses:
            self.values.add(bt.column("value").take(pa.array(at)), uses)

    def _polls(self, bt: _Batch, m: np.ndarray) -> None:
        """The records of the batch's ok polls (``m``), one row per record."""
        recs = pc.filter(bt.column("records"), pa.array(m))
        parents = pc.list_parent_indices(recs).to_numpy()
        flat = pc.list_flatten(recs)
        p = self.polls
        p["row"].append(bt.rows[m][parents])
        p["time"].append(bt.times[m][parents])
        p["proc"].append(bt.procs[m][parents])
        p["tp"].append(self.intern.tps(flat.field("topic"), flat.field("partition")))
        p["offset"].append(_np(flat.field("offset"), -1, np.int64))
        p["epoch"].append(_np(flat.field("leader_epoch"), -1, np.int32))
        p["replica"].append(_np(flat.field("replica"), -1, np.int32))
        self.values.add(flat.field("value"), [("poll", None)])

    def _rare(self, bt: _Batch, at: np.ndarray) -> None:
        """The rows the columns above do not take, one by one (``_rare``)."""
        small = [c for c in _COLUMNS if c != "records"]  # records stay columnar
        sub = bt.cols.select(small).take(pa.array(at)).to_pydict()
        for j, i in enumerate(at.tolist()):
            _rare(
                self.b,
                sub,
                j,
                int(bt.rows[i]),
                int(bt.times[i]),
                int(bt.procs[i]),
                bt.cols,
                i,
                self.values,
                self.finals,
            )

    def build(self, header: dict[str, Any], path: Path) -> HistoryData:
        b = self.b
        _release()
        ids = self.values.ids()
        _release()
        finals_v, unc_v = ids.pop("final", []), ids.pop("uncommitted", [])
        while self.finals:  # pop as we go: each final log is sorted and its input freed
            row, tp, replica, hw, ls, offs, unc_offs, open_first, unreadable = self.finals.pop(0)
            b.add_final(row, tp, replica, hw, ls, offs, finals_v.pop(0))
            b.uncommitted(unc_offs, unc_v.pop(0), open_first)
            b.finals[-1].unreadable = unreadable
        txn_sends = TxnSends(
            **{k: _cat(self.txn_sends.pop(k), t) for k, t in _TXN_SEND_TYPES.items()},
            vid=_cat(ids.pop("txnsend", []), "q"),
        )
        data = b.build(header, ParquetSource(path), [], txn_sends)
        self.sends["vid"] = ids.pop("send", [])
        data.sends = Sends(**_cat_all(self.sends, _SEND_COLS), invokes=b.invokes)
        if b.track_invokes:
            data.sends.invoke_row = match_invokes(
                _cat(self.invokes["row"], "q"),
                _cat(self.invokes["proc"], "i"),
                _cat(ids.pop("invoke", []), "q"),
                data.sends.proc,
                data.sends.vid,
            )
        self.polls["vid"] = ids.pop("poll", [])
        data.polls = PollRecords(**_cat_all(self.polls, _POLL_COLS))
        _release()
        return data


def _release() -> None:
    """Hand the memory Arrow freed back to the system: its allocator keeps freed pages for
    reuse, which after the batches and the value encoding was measured at ~125 MiB of a 3 M-event
    load's peak (RSS, the benchmark's measure)."""
    pa.default_memory_pool().release_unused()


_TXN_SEND_TYPES = {"row": "q", "type": "b", "proc": "i", "tp": "i", "offset": "q", "txn": "i"}


def _txn_fast(b: _Builder, intern: _Interner, bt: _Batch) -> np.ndarray:
    """The batch's ``txn`` and ``commit`` events in the recorders' own form, folded in column by
    column (``core.checks.parquet_txn``); returns which rows were taken (the rest go to ``_rare``)."""
    vj = bt.column("value_json")
    cols = EventColumns(bt.rows, bt.times, bt.procs, bt.type)
    taken = np.zeros(len(bt.rows), bool)
    idx = np.nonzero(bt.f == F_TXN)[0]
    if len(idx):
        took = idx[txn_events(b.tx, vj, idx, cols)]
        taken[took] = True
    idx = np.nonzero(bt.f == F_COMMIT)[0]
    if len(idx):
        at = pa.array(idx)
        tps = intern.tps(pc.take(bt.column("topic"), at), pc.take(bt.column("partition"), at))
        offsets = _np(pc.take(bt.column("offset"), at), NO_OFFSET, np.int64)
        took = idx[commit_events(b.tx, vj, idx, cols, tps, offsets)]
        taken[took] = True
    return taken


def _txn_sends(
    b: _Builder, intern: _Interner, bt: _Batch, at: np.ndarray, out: dict[str, list[np.ndarray]]
) -> np.ndarray | None:
    """Collect the send events at rows ``at`` that name a transaction (``txn`` lives in
    ``value_json``: only the rows whose JSON mentions it are parsed); returns their places in
    ``at`` (None when there are none)."""
    vj = pc.take(bt.column("value_json"), pa.array(at))
    mentions = pc.fill_null(pc.match_substring(vj, '"txn"'), False).to_numpy(zero_copy_only=False)
    if not mentions.any():
        return None
    j = np.nonzero(mentions)[0]
    # provisional ids (<= -2) until the collector builds; -1: no transaction id after all
    fast, ids = send_txns(b.tx, vj.take(pa.array(j)))
    for k in np.nonzero(~fast)[0].tolist():  # any other form: parse it
        x = vj[int(j[k])].as_py()
        ids[k] = b.tx.txn_id((json.loads(x) or {}).get("txn") if x else None)
    keep = ids != -1
    if not keep.any():
        return None
    idx = at[j[keep]]
    take = pa.array(idx)
    out["row"].append(bt.rows[idx])
    out["type"].append(bt.type[idx])
    out["proc"].append(bt.procs[idx])
    out["tp"].append(intern.tps(pc.take(bt.column("topic"), take), pc.take(bt.column("partition"), take)))
    out["offset"].append(_np(pc.take(bt.column("offset"), take), -1, np.int64))
    out["txn"].append(ids[keep].astype(np.int32))
    return j[keep]


def _batches(pf: pq.ParquetFile) -> Iterator[pa.RecordBatch]:
    """Row group by row group: ``iter_batches`` on the nested records column was measured to
    hold ~1 GiB more at peak on a 10M-event history than reading one row group at a time. The
    next row group is decoded in a thread while the caller works on this one (one ahead only:
    memory stays at two row groups)."""

    def read(g: int) -> pa.Table:
        return pf.read_row_group(g, columns=_COLUMNS, use_threads=False).combine_chunks()

    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = pool.submit(read, 0) if pf.num_row_groups else None
        for g in range(pf.num_row_groups):
            assert ahead is not None
            table = ahead.result()
            ahead = pool.submit(read, g + 1) if g + 1 < pf.num_row_groups else None
            yield from table.to_batches(max_chunksize=65_536)
            del table


_DT = {"q": np.int64, "i": np.int32, "b": np.int8}


def _cat_all(cols: dict[str, list[np.ndarray]], spec: tuple[tuple[str, str], ...]) -> dict[str, np.ndarray]:
    """Concatenate column by column, dropping each column's parts at once (peak memory)."""
    out = {}
    for k, t in spec:
        out[k] = _cat(cols.pop(k), t)
    return out


def _cat(parts: list[np.ndarray], t: str) -> np.ndarray:
    return np.concatenate(parts).astype(_DT[t], copy=False) if parts else np.zeros(0, _DT[t])


def _local_encode(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """A batch's values as (its own compact dictionary, int32 codes or -1 for null). Keeping
    these instead of the value arrays lets each batch's buffers be freed."""
    enc = pc.dictionary_encode(values.cast(pa.string()))
    codes = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    return enc.dictionary, codes


def _global_codes(dicts: list[pa.Array]) -> list[np.ndarray]:
    """Per chunk dictionary, each value's code + 1 in one dictionary over all of them (empty
    for an empty one). Empties ``dicts``: the per-chunk strings are freed once encoded."""
    sizes = [len(d) for d in dicts]
    # empty dictionaries are left out: dictionary_encode drops empty chunks, which would shift
    # every later batch onto another's codes
    together = pa.chunked_array([d for d in dicts if len(d)], type=pa.string())
    dicts.clear()
    encoded = iter(together.dictionary_encode().chunks)
    del together
    # int32 (a history has fewer than 2**31 distinct values): these are all alive at once
    return [next(encoded).indices.to_numpy(zero_copy_only=False) + np.int32(1) if n else _EMPTY for n in sizes]


def _rare(
    b: _Builder,
    sub: dict[str, list[Any]],
    j: int,
    row: int,
    t: int,
    proc: int,
    batch: pa.RecordBatch,
    i: int,
    values: _Values,
    finals: list[_Final],
) -> None:
    f, typ = sub["f"][j], TYPES.get(sub["type"][j], -1)
    if f == "poll":
        b.poll_errors.append(PollError(row, t, proc, sub["error"][j]))
        return
    if f == "final-read":
        if typ != OK:
            return
        rest = json.loads(sub["value_json"][j]) if sub["value_json"][j] else {}
        rest = rest if isinstance(rest, dict) else {}
        unc = [*(rest.get("aborted") or []), *(rest.get("open") or [])]
        unc_offs = np.array([int(r[0]) for r in unc], np.int64)
        open_first = min((int(r[0]) for r in rest.get("open") or []), default=None)
        recs = batch.column("records")[i].values
        tp = b.tp(sub["topic"][j], sub["partition"][j])
        offs = (
            np.array(recs.field("offset").to_numpy(zero_copy_only=False), dtype=np.int64)
            if recs is not None
            else np.zeros(0, np.int64)
        )  # a copy: frees the batch
        hw = sub["hw"][j]
        finals.append(
            (
                row,
                tp,
                sub["replica"][j],
                -1 if hw is None else hw,
                sub["log_start"][j],
                offs,
                unc_offs,
                open_first,
                unreadable_ranges(rest),
            )
        )
        values.add_final(recs.field("value") if recs is not None else pa.array([], pa.string()))
        values.add(pa.array([value_text(r[1])[0] for r in unc], pa.string()), [("uncommitted", None)])
        return
    rest = json.loads(sub["value_json"][j]) if sub["value_json"][j] else {}
    v = {
        **(rest if isinstance(rest, dict) else {}),
        **{
            k: sub[k][j]
            for k in ("topic", "partition", "offset", "hw", "leader", "leader_epoch")
            if sub[k][j] is not None
        },
    }
    if f in ROW_NOTED:
        b.note_row(f, row, t, proc, typ, v)
    elif f in ("assign", "seek"):
        if v.get("topic") is not None:
            b.tx.position_topics.add((proc, str(v["topic"])))
        if typ in (OK, INFO):
            b._position(row, t, proc, v, typ, f)
        else:
            b.tx.position_other_rows.append(row)
    elif f == "revoke":
        if typ == OK:
            b.revoke(row, t, proc, v)
    elif f == "meta":
        if typ != FAIL:
            b._meta(row, t, proc, v)
    elif typ != FAIL:
        b._fault(row, t, f, v, typ)
