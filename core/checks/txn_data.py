"""Columns of what transactions and group commits say, gathered in the loaders' one pass.

A transactional history has as many ``txn`` events and transactional sends as plain sends, and
a group commits after every poll, so reading them back as events (as ``core.checks.raw``
once did) cost a second pass over the file and a dict per event. Instead the loaders fold them
into the columns below while they build ``HistoryData``: ``txn`` events, ``commit`` events,
and every ``send`` event (invoke or completion) that names a transaction. Names (transaction
ids, groups) are interned to small integers; values are the loader's value ids (``vid``).
Transaction ids, one per transaction, are kept as one Arrow string array (``Names``), not as
millions of Python strings.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: ``op`` codes of ``txn`` events (-1: another op)
BEGIN, COMMIT, ABORT = 0, 1, 2
OPS = {"begin": BEGIN, "commit": COMMIT, "abort": ABORT}
#: a commit event's offset when its value has no integer offset
NO_OFFSET = -(1 << 63)


class Names:
    """Interned names by id (``TxnData.txn_names``), over one Arrow string array: a history has
    a transaction id per transaction, which as Python strings (and a dict of them) would cost
    more than every other column of a transactional history."""

    def __init__(self, names: pa.Array) -> None:
        self._a = names

    def __len__(self) -> int:
        return len(self._a)

    def __getitem__(self, i: int) -> str:
        return str(self._a[int(i)].as_py())

    def __iter__(self) -> Iterator[str]:
        return iter(self._a.to_pylist())

    def ranks(self) -> np.ndarray:
        """Each name's place in sorted order (Arrow sorts UTF-8 bytes: code point order, as
        Python sorts strings)."""
        order = pc.sort_indices(self._a).to_numpy(zero_copy_only=False)
        out = np.empty(len(order), np.int64)
        out[order] = np.arange(len(order))
        return out


@dataclass
class TxnEvents:
    """``txn`` events, in file order."""

    row: np.ndarray
    time: np.ndarray
    proc: np.ndarray
    type: np.ndarray  # INVOKE / OK / FAIL / INFO
    op: np.ndarray  # BEGIN / COMMIT / ABORT, -1 otherwise
    txn: np.ndarray  # index into TxnData.txn_names, -1 when not a string


@dataclass
class CommitEvents:
    """``commit`` events (a group's committed offset), in file order."""

    row: np.ndarray
    time: np.ndarray
    proc: np.ndarray
    type: np.ndarray
    group: np.ndarray  # index into TxnData.group_names, -1 when not a string
    tp: np.ndarray  # -1 when unknown
    offset: np.ndarray  # NO_OFFSET when not an integer
    txn: np.ndarray  # the transaction it was sent in, -1 when none


@dataclass
class TxnSends:
    """``send`` events (invokes and completions) whose value names a transaction, in file order."""

    row: np.ndarray
    type: np.ndarray
    proc: np.ndarray
    tp: np.ndarray
    offset: np.ndarray  # -1 when not an integer
    vid: np.ndarray
    txn: np.ndarray


@dataclass
class TxnData:
    txns: TxnEvents
    commits: CommitEvents
    sends: TxnSends
    txn_names: Names
    group_names: list[str]
    #: processes that recorded any ``poll`` event (whatever its type)
    poll_procs: frozenset[int]
    #: (process, topic) of every ``assign``/``seek`` event whatever its type (group-delivery's topics)
    position_topics: frozenset[tuple[int, str]]
    #: rows of ``assign``/``seek`` events of another type than ok/info (``Positions`` has the others)
    position_other_rows: list[int]

    def group_name(self, g: int) -> str:
        return self.group_names[g] if g >= 0 else "None"


_TXN_COLS = (("row", "q"), ("time", "q"), ("proc", "i"), ("type", "b"), ("op", "b"), ("txn", "i"))
_COMMIT_COLS = (
    ("row", "q"),
    ("time", "q"),
    ("proc", "i"),
    ("type", "b"),
    ("group", "i"),
    ("tp", "i"),
    ("offset", "q"),
    ("txn", "i"),
)
_SEND_COLS = (("row", "q"), ("type", "b"), ("proc", "i"), ("tp", "i"), ("offset", "q"), ("vid", "q"), ("txn", "i"))
_NP = {"q": np.int64, "i": np.int32, "b": np.int8}


def _np(a: array, t: str) -> np.ndarray:
    return np.frombuffer(a, dtype=_NP[t]) if len(a) else np.zeros(0, dtype=_NP[t])


class TxnCollector:
    """Typed arrays filled while the events stream by (``core.checks.data._Builder``)."""

    def __init__(self) -> None:
        self.t = {k: array(c) for k, c in _TXN_COLS}
        self.c = {k: array(c) for k, c in _COMMIT_COLS}
        self.s = {k: array(c) for k, c in _SEND_COLS}
        self.txn_ids: dict[str, int] = {}
        # transaction ids met in bulk (``txn_codes``): interned together at ``build``
        self._name_chunks: list[pa.Array] = []
        self._name_count = 0
        self.group_ids: dict[str, int] = {}
        self.poll_procs: set[int] = set()
        self.position_topics: set[tuple[int, str]] = set()
        self.position_other_rows: list[int] = []
        # bound appends, column by column: one event costs a few calls, no loop (the hot path)
        self._t = tuple(self.t[k].append for k, _ in _TXN_COLS)
        self._c = tuple(self.c[k].append for k, _ in _COMMIT_COLS)
        self._s = tuple(self.s[k].append for k, _ in _SEND_COLS)

    def txn_id(self, txn: Any) -> int:
        if type(txn) is not str:
            return -1
        i = self.txn_ids.get(txn)
        if i is None:
            i = self.txn_ids[txn] = len(self.txn_ids)
        return i

    def txn_codes(self, names: pa.Array) -> np.ndarray:
        """Provisional ids of many transaction ids at once (strings, no nulls): ``-2 - k``,
        ``k`` their place among the distinct names of every chunk so far. Interning each one
        through ``txn_id`` cost a dict lookup per event; ``build`` maps these to ids in one pass."""
        enc = pc.dictionary_encode(names)
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        out = -2 - (self._name_count + codes)
        if len(enc.dictionary):
            self._name_chunks.append(enc.dictionary)
            self._name_count += len(enc.dictionary)
        return out

    def _names(self) -> tuple[Names, np.ndarray]:
        """Every transaction id (those of ``txn_id`` first, keeping their ids), and the ids of
        the provisional ones (``txn_codes``): ``table[-2 - code]``."""
        known = pa.array(list(self.txn_ids), pa.string())
        if not self._name_chunks:
            return Names(known), np.zeros(0, np.int64)
        chunks = ([known] if len(known) else []) + self._name_chunks
        enc = pa.chunked_array(chunks, pa.string()).dictionary_encode().chunks
        table = np.concatenate(
            [c.indices.to_numpy(zero_copy_only=False).astype(np.int64) for c in enc[1 if len(known) else 0 :]]
        )
        self._name_chunks = []
        return Names(enc[0].dictionary), table

    def group_id(self, group: Any) -> int:
        if not isinstance(group, str):
            return -1
        i = self.group_ids.get(group)
        if i is None:
            i = self.group_ids[group] = len(self.group_ids)
        return i

    def txn(self, row: int, t: int, proc: int, typ: int, v: Mapping[str, Any]) -> None:
        a = self._t
        a[0](row)
        a[1](t)
        a[2](proc)
        a[3](typ)
        a[4](OPS.get(str(v.get("op")), -1))
        a[5](self.txn_id(v.get("txn")))

    def commit(self, row: int, t: int, proc: int, typ: int, tp: int, v: Mapping[str, Any]) -> None:
        o = v.get("offset")
        a = self._c
        a[0](row)
        a[1](t)
        a[2](proc)
        a[3](typ)
        a[4](self.group_id(v.get("group")))
        a[5](tp)
        a[6](o if type(o) is int else NO_OFFSET)
        a[7](self.txn_id(v.get("txn")))

    def send(self, row: int, typ: int, proc: int, tp: int, offset: Any, vid: int, txn: str) -> None:
        a = self._s
        a[0](row)
        a[1](typ)
        a[2](proc)
        a[3](tp)
        a[4](offset if type(offset) is int else -1)
        a[5](vid)
        a[6](self.txn_id(txn))

    def extend_txns(self, *cols: np.ndarray) -> None:
        """Many ``txn`` events at once (columns in ``TxnEvents`` order; rows need not follow
        the events added one by one: ``build`` puts them in file order)."""
        for (k, c), col in zip(_TXN_COLS, cols):
            self.t[k].frombytes(np.ascontiguousarray(col, _NP[c]).tobytes())

    def extend_commits(self, *cols: np.ndarray) -> None:
        """Many ``commit`` events at once (columns in ``CommitEvents`` order; see ``extend_txns``)."""
        for (k, c), col in zip(_COMMIT_COLS, cols):
            self.c[k].frombytes(np.ascontiguousarray(col, _NP[c]).tobytes())

    def build(self, sends: TxnSends | None = None) -> TxnData:
        """The columns; ``sends`` replaces the collected ones (the Parquet loader builds them)."""
        names, table = self._names()
        txns = {k: _np(self.t[k], t) for k, t in _TXN_COLS}
        commits = {k: _np(self.c[k], t) for k, t in _COMMIT_COLS}
        sends = sends or TxnSends(**{k: _np(self.s[k], t) for k, t in _SEND_COLS})
        for cols in (txns, commits):
            cols["txn"] = _resolve(cols["txn"], table)
        sends.txn = _resolve(sends.txn, table)
        return TxnData(
            TxnEvents(**_by_row(txns)),
            CommitEvents(**_by_row(commits)),
            sends,
            names,
            list(self.group_ids),
            frozenset(self.poll_procs),
            frozenset(self.position_topics),
            self.position_other_rows,
        )


def _resolve(txn: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``txn`` with its provisional ids (``TxnCollector.txn_codes``) replaced by ids."""
    if not len(table):
        return txn
    pending = txn <= -2
    if not pending.any():
        return txn
    out = txn.astype(np.int32, copy=True)
    out[pending] = table[-2 - txn[pending].astype(np.int64)]
    return out


def _by_row(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The columns in file order (a no-op unless events were added in bulk)."""
    row = cols["row"]
    if len(row) < 2 or bool((row[1:] > row[:-1]).all()):
        return cols
    order = np.argsort(row, kind="stable")
    return {k: v[order] for k, v in cols.items()}


def first_by(keys: np.ndarray, values: np.ndarray, n: int, missing: int) -> np.ndarray:
    """Per key in ``range(n)``, the value at its first occurrence (``missing`` when none)."""
    out = np.full(n, missing, np.int64)
    if len(keys):
        u, i = np.unique(keys, return_index=True)
        out[u] = values[i]
    return out


def last_by(keys: np.ndarray, values: np.ndarray, n: int, missing: int) -> np.ndarray:
    """Per key in ``range(n)``, the value at its last occurrence (``missing`` when none)."""
    return first_by(keys[::-1], values[::-1], n, missing)
