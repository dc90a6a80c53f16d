"""The Parquet loader's fast path for transactions and group commits (``core.checks.parquet_load``).

A transactional history has a ``txn`` event and a transactional send per write and a ``commit``
per poll, and what they say beyond the flat columns (``op``, ``txn``, ``group``) sits in the
``value_json`` string. Parsing that JSON row by row cost most of such a load, so the rows whose
``value_json`` is exactly the form the recorders write (``{"op":"commit","txn":"p#7"}``,
``{"group":"g","txn":"p#7"}``, ``{"key":null,"txn":"p#7"}``: no escapes, no other key) are
read column by column: the commonest forms by their fixed prefix and a slice (``Fixed``), the
others with one regular expression per batch (a capturing regular expression cost ~0.2 µs per
row). Any other row is left to the row-by-row path (``_rare``), which reads every form: the
fast path only ever declines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from highwater.core.checks.txn_data import NO_OFFSET, OPS, TxnCollector

_NAME = r'[^"\\]*'
TXN_FORM = rf'^\{{"op":"(?P<op>begin|commit|abort)","txn":"(?P<txn>{_NAME})"\}}$'
COMMIT_FORMS = (
    rf'^\{{"group":"(?P<group>{_NAME})"\}}$',
    rf'^\{{"group":"(?P<group>{_NAME})","txn":"(?P<txn>{_NAME})"\}}$',
)
SEND_FORM = rf'^\{{(?:"key":(?:null|"{_NAME}"),)?"txn":"(?P<txn>{_NAME})"\}}$'
_SUFFIX = '"}'


@dataclass(frozen=True)
class Fixed:
    """A form ``prefix + NAME + '"}'`` (NAME without ``"`` or ``\\``): the field ``name``
    is NAME, and the form itself says ``consts``. It accepts exactly the strings the regular
    expression's matching branch accepts, without one."""

    prefix: str
    name: str
    consts: dict[str, str] = field(default_factory=dict)

    def match(self, col: pa.Array) -> tuple[np.ndarray, pa.Array]:
        """Which strings of ``col`` (no nulls) have this form, and NAME for those."""
        cand = pc.and_(
            pc.and_(pc.starts_with(col, self.prefix), pc.ends_with(col, _SUFFIX)),
            pc.greater_equal(pc.binary_length(col), len(self.prefix) + len(_SUFFIX)),
        )
        ok = np.asarray(cand.to_numpy(zero_copy_only=False), bool)
        if not ok.any():
            return ok, pa.array([], pa.string())
        # ASCII prefix and suffix: their lengths in bytes are their lengths in code points
        names = pc.utf8_slice_codeunits(col.filter(cand), len(self.prefix), -len(_SUFFIX))
        clean = np.asarray(pc.invert(pc.match_substring_regex(names, r'["\\]')).to_numpy(zero_copy_only=False), bool)
        ok[ok] = clean
        return ok, names.filter(pa.array(clean))


TXN_FIXED = tuple(Fixed(f'{{"op":"{op}","txn":"', "txn", {"op": op}) for op in OPS)
COMMIT_FIXED = (Fixed('{"group":"', "group"),)
SEND_FIXED = (Fixed('{"key":null,"txn":"', "txn"), Fixed('{"txn":"', "txn"))


def parse(
    col: pa.Array, fixed: Sequence[Fixed], forms: Sequence[str]
) -> list[tuple[np.ndarray, dict[str, pa.Array | str]]]:
    """The strings of ``col`` that have one of the forms: the ``fixed`` ones first, then the
    regular expressions ``forms`` in turn on the rest. Per form that matched: (the positions
    in ``col``, ascending; each field's values there, or the one value the form fixes)."""
    col = pc.fill_null(col, "")
    left = np.ones(len(col), bool)
    out: list[tuple[np.ndarray, dict[str, pa.Array | str]]] = []
    for fx in fixed:  # their prefixes exclude each other: no row matches two
        ok, names = fx.match(col)
        if ok.any():
            out.append((np.nonzero(ok)[0], {fx.name: names, **fx.consts}))
            left &= ~ok
    for regex in forms:
        if not left.any():
            break
        rest = np.nonzero(left)[0]
        found = pc.extract_regex(col.take(pa.array(rest)), regex)
        ok = np.asarray(found.is_valid().to_numpy(zero_copy_only=False), bool)
        if ok.any():
            mask = pa.array(ok)
            names = [found.type.field(i).name for i in range(found.type.num_fields)]
            out.append((rest[ok], {n: found.field(n).filter(mask) for n in names}))
            left[rest[ok]] = False
    return out


def intern_names(strings: pa.Array, ids: Any) -> np.ndarray:
    """Each string's id from ``ids`` (``TxnCollector.txn_id``/``group_id``), by its distinct values."""
    enc = pc.dictionary_encode(strings)
    table = np.array([ids(x) for x in enc.dictionary.to_pylist()], np.int64)
    return table[enc.indices.to_numpy(zero_copy_only=False)] if len(table) else np.zeros(0, np.int64)


class EventColumns(NamedTuple):
    """A batch's columns every folded event takes: its row, time, process and event type."""

    rows: np.ndarray
    times: np.ndarray
    procs: np.ndarray
    types: np.ndarray


def txn_events(tx: TxnCollector, vj: pa.Array, idx: np.ndarray, cols: EventColumns) -> np.ndarray:
    """Fold the ``txn`` events at ``idx`` that have the recorders' form into ``tx``; returns
    which of ``idx`` were taken."""
    ops = np.full(len(idx), -1, np.int64)
    txn = np.full(len(idx), -1, np.int64)
    taken = np.zeros(len(idx), bool)
    for at, fields in parse(pc.take(vj, pa.array(idx)), TXN_FIXED, [TXN_FORM]):
        op = fields["op"]
        if isinstance(op, str):
            ops[at] = OPS[op]
        else:
            for name, code in OPS.items():
                ops[at[pc.equal(op, name).to_numpy(zero_copy_only=False)]] = code
        txn[at] = tx.txn_codes(_strings(fields["txn"]))
        taken[at] = True
    # one extend in file order: the collector then need not sort millions of rows at the end
    i = idx[taken]
    tx.extend_txns(cols.rows[i], cols.times[i], cols.procs[i], cols.types[i], ops[taken], txn[taken])
    return taken


def commit_events(
    tx: TxnCollector, vj: pa.Array, idx: np.ndarray, cols: EventColumns, tps: np.ndarray, offsets: np.ndarray
) -> np.ndarray:
    """Fold the ``commit`` events at ``idx`` that have one of the recorders' forms into ``tx``
    (``tps``/``offsets``: theirs, from the flat columns, -1 / NO_OFFSET when absent); returns
    which of ``idx`` were taken."""
    group = np.full(len(idx), -1, np.int64)
    txn = np.full(len(idx), -1, np.int64)
    taken = np.zeros(len(idx), bool)
    for at, fields in parse(pc.take(vj, pa.array(idx)), COMMIT_FIXED, COMMIT_FORMS):
        group[at] = intern_names(_strings(fields["group"]), tx.group_id)
        if "txn" in fields:
            txn[at] = tx.txn_codes(_strings(fields["txn"]))
        taken[at] = True
    i = idx[taken]  # one extend in file order (see txn_events)
    tx.extend_commits(
        cols.rows[i], cols.times[i], cols.procs[i], cols.types[i], group[taken], tps[taken], offsets[taken], txn[taken]
    )
    return taken


def send_txns(tx: TxnCollector, vj: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The ``txn`` of send events (``vj``: their ``value_json``): which had the recorders'
    form, and per row its provisional txn id (``TxnCollector.txn_codes``; -1 where the form
    did not match: those are to be parsed as JSON)."""
    ok = np.zeros(len(vj), bool)
    ids = np.full(len(vj), -1, np.int64)
    for at, fields in parse(vj, SEND_FIXED, [SEND_FORM]):
        ids[at] = tx.txn_codes(_strings(fields["txn"]))
        ok[at] = True
    return ok, ids


def _strings(x: pa.Array | str) -> pa.Array:
    assert not isinstance(x, str), "a form fixes no name"
    return x


__all__ = ["NO_OFFSET", "commit_events", "intern_names", "parse", "send_txns", "txn_events"]
