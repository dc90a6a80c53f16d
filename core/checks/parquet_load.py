"""Load a Parquet history into ``HistoryData`` with columnar operations only.

The bulk (send completions, poll records, final logs) never becomes Python objects: batches are
filtered and flattened with pyarrow and appended as numpy arrays. Record values from all three
are dictionary-encoded together at the end, so one value has one id across sends, polls and
final reads. Rare events (positions, meta, faults, poll errors) go through the same small
Python code as the JSON Lines path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.checks.data import (
    _POLL_COLS,
    _SEND_COLS,
    FAIL,
    INFO,
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
)
from core.checks.parquet_txn import commit_events, intern_names, send_txns, txn_events
from core.checks.txn_data import NO_OFFSET, TxnSends
from core.history.format import value_text

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
#: the event kinds read through ``_rare`` (the share group's too: their rows are noted, so the
#: share checks read back only those events, as on JSON Lines)
_RARE = {"assign", "seek", "revoke", "meta", "fault", "heal", "txn", "commit", "acquire", "ack", "share-state"}


def _np(a: pa.Array | pa.ChunkedArray, fill: int, dtype: Any) -> np.ndarray:
    return np.asarray(pc.fill_null(a, fill).to_numpy(zero_copy_only=False), dtype=dtype)


class _Interner:
    """Maps a batch's (topic, partition) or process columns to the builder's global ids."""

    def __init__(self, b: _Builder) -> None:
        self.b = b

    def procs(self, col: pa.Array, times: np.ndarray) -> np.ndarray:
        enc = pc.dictionary_encode(col)
        idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        names = enc.dictionary.to_pylist()
        _, first = np.unique(idx, return_index=True)
        first_of = dict(zip(np.unique(idx).tolist(), first.tolist()))
        glob = np.array(
            [self.b.proc(n, int(times[first_of[i]])) if i in first_of else -1 for i, n in enumerate(names)],
            dtype=np.int32,
        )
        return glob[idx] if len(idx) else np.zeros(0, np.int32)

    def tps(self, topic: pa.Array, partition: pa.Array) -> np.ndarray:
        if len(topic) == 0:
            return np.zeros(0, np.int32)
        enc = pc.dictionary_encode(topic)
        tidx = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        part = _np(partition, -1, np.int64)
        names = enc.dictionary.to_pylist()
        key = (tidx + 1) * (1 << 32) + (part + 1)
        uniq, inv = np.unique(key, return_inverse=True)
        glob = np.empty(len(uniq), np.int32)
        for j, k in enumerate(uniq.tolist()):
            ti, pi = k // (1 << 32) - 1, k % (1 << 32) - 1
            glob[j] = self.b.tp(names[ti], pi) if ti >= 0 and pi >= 0 else -1
        return glob[inv.reshape(-1)]


def load_parquet(path: Path, header: dict[str, Any]) -> HistoryData:
    b = _Builder(track_invokes=idempotent(header.get("config") or {}))
    invokes: dict[str, list[np.ndarray]] = {"row": [], "proc": []}  # their values: value_chunks
    intern = _Interner(b)
    pf = pq.ParquetFile(path, pre_buffer=False)
    sends: dict[str, list[np.ndarray]] = {k: [] for k, _ in _SEND_COLS}
    polls: dict[str, list[np.ndarray]] = {k: [] for k, _ in _POLL_COLS}
    value_chunks: list[tuple[pa.Array, np.ndarray]] = []  # sends, then polls, then finals; split again at the end
    kinds: list[str] = []
    finals_pending: list[tuple[int, int, int, int, Any, np.ndarray, np.ndarray, int | None]] = []
    # send events naming a transaction: their columns (values: value_chunks), and their txn ids
    txn_sends: dict[str, list[np.ndarray]] = {k: [] for k in ("row", "type", "proc", "tp", "offset", "txn")}
    row0 = 0
    for batch in _batches(pf):
        n = batch.num_rows
        rows = np.arange(row0, row0 + n, dtype=np.int64)
        row0 += n
        times = batch.column("time_ns").to_numpy()
        b.n_events += n
        if n:
            b.end_time = max(b.end_time, int(times.max()))
        procs = intern.procs(batch.column("process"), times)
        f = batch.column("f")
        typ = batch.column("type")
        is_send = pc.equal(f, "send").to_numpy(zero_copy_only=False)
        is_invoke = pc.equal(typ, "invoke").to_numpy(zero_copy_only=False)
        m = is_send & is_invoke
        b.invokes += int(np.count_nonzero(m))
        if b.track_invokes and m.any():
            invokes["row"].append(rows[m])
            invokes["proc"].append(procs[m])
            value_chunks.append(_local_encode(pc.filter(batch.column("value"), pa.array(m))))
            kinds.append("invoke")

        if is_send.any():
            _txn_sends(b, intern, batch, rows, procs, is_send, txn_sends, value_chunks, kinds)

        m = is_send & ~is_invoke
        if m.any():
            mask = pa.array(m)
            sends["row"].append(rows[m])
            sends["time"].append(times[m])
            sends["proc"].append(procs[m])
            sends["type"].append(_type_codes(pc.filter(typ, mask)))
            sends["tp"].append(
                intern.tps(pc.filter(batch.column("topic"), mask), pc.filter(batch.column("partition"), mask))
            )
            sends["offset"].append(_np(pc.filter(batch.column("offset"), mask), -1, np.int64))
            value_chunks.append(_local_encode(pc.filter(batch.column("value"), mask)))
            kinds.append("send")

        ok = pc.equal(typ, "ok").to_numpy(zero_copy_only=False)
        is_poll = pc.equal(f, "poll").to_numpy(zero_copy_only=False)
        b.tx.poll_procs.update(np.flatnonzero(np.bincount(procs[is_poll])).tolist())  # a count, not a sort
        m = is_poll & ok
        if m.any():
            recs = pc.filter(batch.column("records"), pa.array(m))
            parents = pc.list_parent_indices(recs).to_numpy()
            flat = pc.list_flatten(recs)
            prow, ptime, pproc = rows[m], times[m], procs[m]
            polls["row"].append(prow[parents])
            polls["time"].append(ptime[parents])
            polls["proc"].append(pproc[parents])
            polls["tp"].append(intern.tps(flat.field("topic"), flat.field("partition")))
            polls["offset"].append(_np(flat.field("offset"), -1, np.int64))
            polls["epoch"].append(_np(flat.field("leader_epoch"), -1, np.int32))
            polls["replica"].append(_np(flat.field("replica"), -1, np.int32))
            value_chunks.append(_local_encode(flat.field("value")))
            kinds.append("poll")

        fast = _txn_fast(b, intern, batch, rows, times, procs)
        rare_idx = np.nonzero(
            (pc.is_in(f, pa.array(sorted(_RARE))).to_numpy(zero_copy_only=False) & ~fast)
            | (is_poll & ~ok & ~is_invoke)
            | pc.equal(f, "final-read").to_numpy(zero_copy_only=False)
        )[0]
        if len(rare_idx):
            small = [c for c in _COLUMNS if c != "records"]  # records stay columnar
            sub = batch.select(small).take(pa.array(rare_idx)).to_pydict()
            for j, i in enumerate(rare_idx.tolist()):
                _rare(
                    b,
                    intern,
                    sub,
                    j,
                    int(rows[i]),
                    int(times[i]),
                    int(procs[i]),
                    batch,
                    i,
                    value_chunks,
                    kinds,
                    finals_pending,
                )

    vids = _encode_values(value_chunks)
    value_chunks.clear()  # the per-batch dictionaries are no longer needed
    by_kind: dict[str, list[np.ndarray]] = {
        "send": [],
        "poll": [],
        "final": [],
        "invoke": [],
        "txnsend": [],
        "uncommitted": [],
    }
    for k, v in zip(kinds, vids):
        by_kind[k].append(v)
    del vids
    finals_v, unc_v = by_kind.pop("final"), by_kind.pop("uncommitted")
    while finals_pending:  # pop as we go: each final log is sorted and its input freed
        row, tp, replica, hw, ls, offs, unc_offs, open_first = finals_pending.pop(0)
        b.add_final(row, tp, replica, hw, ls, offs, finals_v.pop(0))
        b.uncommitted(unc_offs, unc_v.pop(0), open_first)
    sends["vid"] = by_kind.pop("send")
    polls["vid"] = by_kind.pop("poll")
    b.txn_rows.sort()  # the fast path noted its rows batch by batch, ahead of the rest
    b.commit_rows.sort()
    data = b.build(header, ParquetSource(path), [])
    data.txn = b.tx.build(
        TxnSends(
            **{k: _cat(txn_sends.pop(k), t) for k, t in _TXN_SEND_TYPES.items()},
            vid=_cat(by_kind.pop("txnsend"), "q"),
        )
    )
    data.sends = Sends(**_cat_all(sends, _SEND_COLS), invokes=b.invokes)
    if b.track_invokes:
        inv_vid = by_kind.pop("invoke")
        data.sends.invoke_row = match_invokes(
            _cat(invokes["row"], "q"),
            _cat(invokes["proc"], "i"),
            _cat(inv_vid, "q"),
            data.sends.proc,
            data.sends.vid,
        )
    data.polls = PollRecords(**_cat_all(polls, _POLL_COLS))
    return data


_TXN_SEND_TYPES = {"row": "q", "type": "b", "proc": "i", "tp": "i", "offset": "q", "txn": "i"}


def _txn_fast(
    b: _Builder, intern: _Interner, batch: pa.RecordBatch, rows: np.ndarray, times: np.ndarray, procs: np.ndarray
) -> np.ndarray:
    """The batch's ``txn`` and ``commit`` events in the recorders' own form, folded in column by
    column (``core.checks.parquet_txn``); returns which rows were taken (the rest go to ``_rare``)."""
    f, vj = batch.column("f"), batch.column("value_json")
    taken = np.zeros(batch.num_rows, bool)
    is_txn = pc.equal(f, "txn").to_numpy(zero_copy_only=False)
    is_commit = pc.equal(f, "commit").to_numpy(zero_copy_only=False)
    if not (is_txn.any() or is_commit.any()):
        return taken
    types = _type_codes(batch.column("type"))
    idx = np.nonzero(is_txn)[0]
    if len(idx):
        took = idx[txn_events(b.tx, vj, idx, rows, times, procs, types)]
        taken[took] = True
        b.txn_rows.extend(rows[took].tolist())
    idx = np.nonzero(is_commit)[0]
    if len(idx):
        at = pa.array(idx)
        tps = intern.tps(pc.take(batch.column("topic"), at), pc.take(batch.column("partition"), at))
        offsets = _np(pc.take(batch.column("offset"), at), NO_OFFSET, np.int64)
        took = idx[commit_events(b.tx, vj, idx, rows, times, procs, types, tps, offsets)]
        taken[took] = True
        b.commit_rows.extend(rows[took].tolist())
    return taken


def _txn_sends(
    b: _Builder,
    intern: _Interner,
    batch: pa.RecordBatch,
    rows: np.ndarray,
    procs: np.ndarray,
    is_send: np.ndarray,
    out: dict[str, list[np.ndarray]],
    value_chunks: list[Any],
    kinds: list[str],
) -> None:
    """Collect the batch's send events that name a transaction (``txn`` lives in ``value_json``:
    only the rows whose JSON mentions it are parsed)."""
    vj = batch.column("value_json")
    m = is_send & pc.fill_null(pc.match_substring(vj, '"txn"'), False).to_numpy(zero_copy_only=False)
    if not m.any():
        return
    idx = np.nonzero(m)[0]
    fast, names = send_txns(vj, idx)
    ids = np.full(len(idx), -1, np.int64)  # -1: no transaction id after all
    ids[fast] = intern_names(names, b.tx.txn_id)
    for j in np.nonzero(~fast)[0].tolist():  # any other form: parse it
        x = vj[int(idx[j])].as_py()
        ids[j] = b.tx.txn_id((json.loads(x) or {}).get("txn") if x else None)
    keep = ids >= 0
    if not keep.any():
        return
    idx = idx[keep]
    take = pa.array(idx)
    out["row"].append(rows[idx])
    out["type"].append(_type_codes(pc.take(batch.column("type"), take)))
    out["proc"].append(procs[idx])
    out["tp"].append(intern.tps(pc.take(batch.column("topic"), take), pc.take(batch.column("partition"), take)))
    out["offset"].append(_np(pc.take(batch.column("offset"), take), -1, np.int64))
    out["txn"].append(ids[keep].astype(np.int32))
    value_chunks.append(_local_encode(pc.take(batch.column("value"), take)))
    kinds.append("txnsend")


def _batches(pf: pq.ParquetFile) -> Iterator[pa.RecordBatch]:
    """Row group by row group: ``iter_batches`` on the nested records column was measured to
    hold ~1 GiB more at peak on a 10M-event history than reading one row group at a time."""
    for g in range(pf.num_row_groups):
        table = pf.read_row_group(g, columns=_COLUMNS, use_threads=False).combine_chunks()
        yield from table.to_batches(max_chunksize=65_536)


def _type_codes(col: pa.Array) -> np.ndarray:
    out = np.full(len(col), -1, dtype=np.int8)
    for name, code in TYPES.items():
        out[pc.equal(col, name).to_numpy(zero_copy_only=False)] = code
    return out


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


def _encode_values(chunks: list[tuple[pa.Array, np.ndarray]]) -> list[np.ndarray]:
    """One id space over all batches: id = global code + 1, and 0 for a null value."""
    if not chunks:
        return []
    # empty dictionaries are left out: dictionary_encode drops empty chunks, which would shift
    # every later batch onto another's codes
    dicts = iter(pa.chunked_array([d for d, _ in chunks if len(d)], type=pa.string()).dictionary_encode().chunks)
    out = []
    for d, codes in chunks:
        if not len(d):
            out.append(np.zeros(len(codes), np.int64))  # every value null
            continue
        glob = next(dicts).indices.to_numpy(zero_copy_only=False).astype(np.int64) + 1
        out.append(np.where(codes >= 0, glob[np.maximum(codes, 0)], 0))
    return out


def _rare(
    b: _Builder,
    intern: _Interner,
    sub: dict[str, list[Any]],
    j: int,
    row: int,
    t: int,
    proc: int,
    batch: pa.RecordBatch,
    i: int,
    value_chunks: list[Any],
    kinds: list[str],
    finals_pending: list[Any],
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
        finals_pending.append(
            (row, tp, sub["replica"][j], -1 if hw is None else hw, sub["log_start"][j], offs, unc_offs, open_first)
        )
        value_chunks.append(_local_encode(recs.field("value") if recs is not None else pa.array([], pa.string())))
        kinds.append("final")
        value_chunks.append(_local_encode(pa.array([value_text(r[1])[0] for r in unc], pa.string())))
        kinds.append("uncommitted")
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
