"""The Parquet loader's fast path for transactions and group commits (``core.checks.parquet_load``).

A transactional history has a ``txn`` event and a transactional send per write and a ``commit``
per poll, and what they say beyond the flat columns (``op``, ``txn``, ``group``) sits in the
``value_json`` string. Parsing that JSON row by row cost most of such a load, so the rows whose
``value_json`` is exactly the form the recorders write (``{"op":"commit","txn":"p#7"}``,
``{"group":"g","txn":"p#7"}``, ``{"key":null,"txn":"p#7"}``: no escapes, no other key) are
read with one regular expression per batch, column by column. Any other row is left to the
row-by-row path (``_rare``), which reads every form: the fast path only ever declines.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.checks.txn_data import NO_OFFSET, OPS, TxnCollector

_NAME = r'[^"\\]*'
TXN_FORM = rf'^\{{"op":"(?P<op>begin|commit|abort)","txn":"(?P<txn>{_NAME})"\}}$'
COMMIT_FORMS = (
    rf'^\{{"group":"(?P<group>{_NAME})"\}}$',
    rf'^\{{"group":"(?P<group>{_NAME})","txn":"(?P<txn>{_NAME})"\}}$',
)
SEND_FORM = rf'^\{{(?:"key":(?:null|"{_NAME}"),)?"txn":"(?P<txn>{_NAME})"\}}$'


def matches(col: pa.Array, form: str) -> tuple[np.ndarray, pa.StructArray]:
    """Which strings of ``col`` have exactly ``form``, and its groups (empty where they do not)."""
    found = pc.extract_regex(pc.fill_null(col, ""), form)
    return np.asarray(found.is_valid().to_numpy(zero_copy_only=False), bool), found


def intern_names(strings: pa.Array, ids: Any) -> np.ndarray:
    """Each string's id from ``ids`` (``TxnCollector.txn_id``/``group_id``), by its distinct values."""
    enc = pc.dictionary_encode(strings)
    table = np.array([ids(x) for x in enc.dictionary.to_pylist()], np.int64)
    return table[enc.indices.to_numpy(zero_copy_only=False)] if len(table) else np.zeros(0, np.int64)


def txn_events(
    tx: TxnCollector,
    vj: pa.Array,
    idx: np.ndarray,
    rows: np.ndarray,
    times: np.ndarray,
    procs: np.ndarray,
    types: np.ndarray,
) -> np.ndarray:
    """Fold the ``txn`` events at ``idx`` that have the recorders' form into ``tx``; returns
    which of ``idx`` were taken."""
    ok, found = matches(pc.take(vj, pa.array(idx)), TXN_FORM)
    took = idx[ok]
    if len(took):
        op_names = found.field("op").filter(pa.array(ok))
        ops = np.full(len(took), -1, np.int64)
        for name, code in OPS.items():
            ops[pc.equal(op_names, name).to_numpy(zero_copy_only=False)] = code
        txn = intern_names(found.field("txn").filter(pa.array(ok)), tx.txn_id)
        tx.extend_txns(rows[took], times[took], procs[took], types[took], ops, txn)
    return ok


def commit_events(
    tx: TxnCollector,
    vj: pa.Array,
    idx: np.ndarray,
    rows: np.ndarray,
    times: np.ndarray,
    procs: np.ndarray,
    types: np.ndarray,
    tps: np.ndarray,
    offsets: np.ndarray,
) -> np.ndarray:
    """Fold the ``commit`` events at ``idx`` that have one of the recorders' forms into ``tx``
    (``tps``/``offsets``: theirs, from the flat columns, -1 / NO_OFFSET when absent); returns
    which of ``idx`` were taken."""
    col = pc.take(vj, pa.array(idx))
    taken = np.zeros(len(idx), bool)
    for form in COMMIT_FORMS:
        ok, found = matches(col, form)
        ok &= ~taken
        if not ok.any():
            continue
        mask = pa.array(ok)
        group = intern_names(found.field("group").filter(mask), tx.group_id)
        has_txn = "txn" in [found.type.field(i).name for i in range(found.type.num_fields)]
        txn = intern_names(found.field("txn").filter(mask), tx.txn_id) if has_txn else np.full(int(ok.sum()), -1)
        i = idx[ok]
        tx.extend_commits(rows[i], times[i], procs[i], types[i], group, tps[ok], offsets[ok], txn)
        taken |= ok
    return taken


def send_txns(vj: pa.Array, idx: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """The ``txn`` of the send events at ``idx``: (which had the recorders' form, their txn
    strings for those; the others' are to be parsed as JSON)."""
    ok, found = matches(pc.take(vj, pa.array(idx)), SEND_FORM)
    return ok, found.field("txn").filter(pa.array(ok))


__all__ = ["NO_OFFSET", "commit_events", "intern_names", "send_txns", "txn_events"]
