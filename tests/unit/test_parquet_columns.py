"""The Parquet loader's column-by-column paths (``core.checks.parquet_load``, ``parquet_txn``)
build the columns the JSON Lines loader builds, event for event: the transaction and commit
forms the recorders write go through fixed forms or regular expressions, every other form
through the row-by-row path, and the verdicts agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from highwater.core.checks import load, run_checks
from highwater.core.checks.data import HistoryData
from highwater.core.checks.parquet_txn import SEND_FIXED, SEND_FORM, TXN_FIXED, TXN_FORM, parse
from highwater.core.history import to_parquet
from tests.synth.histories import HistoryBuilder

GROUPED = {"consumers": {"consumer-0": {"group": "g"}, "consumer-1": {"group": "g"}}, "transactional": True}


def _odd_forms() -> HistoryBuilder:
    """Every form a ``txn``, ``commit`` or transactional ``send`` may take: the recorders' own,
    names a fixed form must decline (quotes, backslashes, non-ASCII text, escaped by JSON),
    other keys, another key order (the history format allows no other op nor a non-string id)."""
    b = HistoryBuilder(GROUPED)
    names = ["p#1", 'p"2', "p\\3", "pé4", "p 5", "p#6"]
    for i, name in enumerate(names):
        b.txn("producer-0", "begin", name)
        b.send("producer-0", "t", i % 2, f"v{i}", offset=i // 2, txn=name)
        b.txn("producer-0", "commit" if i % 3 else "abort", name)
    b.event("producer-0", "ok", "txn", {"op": "commit", "txn": "p#6", "epoch": 3})  # another key
    b.event("producer-0", "ok", "txn", {"txn": "p#6", "op": "commit"})  # another key order
    key = {"topic": "t", "partition": 0, "value": "k1", "offset": 3}
    b.event("producer-0", "ok", "send", {**key, "key": "k", "txn": "p#1"})  # a key string: the regex
    b.event("producer-0", "ok", "send", {**key, "key": 'say "txn"', "value": "k2"})  # mentions it, has none
    b.event("producer-0", "ok", "send", {**key, "txn": None, "value": "k3"})
    b.event("producer-0", "ok", "send", {**key, "txn": "p#6", "value": "k4"})  # no key at all
    b.assign("consumer-0", "t", 0, 0)
    b.assign("consumer-1", "t", 1, 0)
    b.poll("consumer-0", [("t", 0, 0, "v0"), ("t", 0, 1, "v2")])
    b.commit("consumer-0", "g", "t", 0, 2)
    b.commit("consumer-0", "g", "t", 0, 1, txn="p#1")  # inside a transaction: the regex
    b.commit("consumer-1", 'g"x', "t", 1, 1)  # a group a fixed form declines
    b.event("consumer-1", "ok", "commit", {"group": None, "topic": "t", "partition": 1, "offset": 1})
    b.event("consumer-1", "ok", "commit", {"topic": "t", "partition": 1, "offset": 1})  # no group
    b.event("consumer-1", "ok", "commit", {"group": "g", "topic": "t", "partition": 1, "offset": 1, "meta": 1})
    b.assign("consumer-1", "t", 0, 1)  # a move: the rebalance checks read these commits
    b.poll("consumer-1", [("t", 0, 2, "v4")])
    b.commit("consumer-1", "g", "t", 0, 3)
    b.final("t", 0, 1, 3, [(0, "v0"), (1, "v2"), (2, "v4")], aborted=[(5, "v3")])
    b.final("t", 1, 1, 2, [(0, "v1"), (1, "v3")])
    return b


def _both(tmp_path: Path, b: HistoryBuilder) -> tuple[HistoryData, HistoryData]:
    src = b.write(tmp_path / "h.jsonl")
    to_parquet(src, tmp_path / "h.parquet")
    return load(src), load(tmp_path / "h.parquet")


def _named(h: HistoryData) -> dict[str, list[Any]]:
    """The transaction columns with ids spelled out (ids are interned per load)."""
    d = h.txn
    name = [d.txn_names[i] for i in range(len(d.txn_names))] + [None]  # index -1: none
    group = [*d.group_names, None]
    out: dict[str, list[Any]] = {}
    for part, cols in (("txns", d.txns), ("commits", d.commits), ("sends", d.sends)):
        for k, v in vars(cols).items():
            if k == "vid":
                continue  # value ids differ between loaders by design
            v = np.asarray(v).tolist()
            out[f"{part}.{k}"] = [name[i] for i in v] if k == "txn" else [group[i] for i in v] if k == "group" else v
    out["rows"] = [np.asarray(h.txn_rows).tolist(), np.asarray(h.commit_rows).tolist()]
    return out


def test_every_form_gives_the_columns_of_json_lines(tmp_path: Path) -> None:
    jsonl, parquet = _both(tmp_path, _odd_forms())
    assert _named(parquet) == _named(jsonl)
    assert len(parquet.txn.txns.row) == 26 and len(parquet.txn.commits.row) == 11
    assert sorted(parquet.txn.txn_names) == sorted(jsonl.txn.txn_names)


def test_every_form_gives_the_verdicts_of_json_lines(tmp_path: Path) -> None:
    jsonl, parquet = _both(tmp_path, _odd_forms())
    assert [v.to_json() for v in run_checks(parquet, policy=False)] == [
        v.to_json() for v in run_checks(jsonl, policy=False)
    ]


def _found(parts: list[tuple[np.ndarray, dict[str, pa.Array | str]]]) -> dict[int, str]:
    """``parse``'s answer as {position: txn}."""
    out: dict[int, str] = {}
    for at, fields in parts:
        names = fields["txn"]
        assert isinstance(names, pa.Array)
        out.update(zip(at.tolist(), names.to_pylist()))
    return out


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ('{"op":"begin","txn":"p#1"}', "p#1"),
        ('{"op":"abort","txn":""}', ""),
        ('{"op":"begin","txn":"p"1"}', None),  # a quote in the name
        ('{"op":"begin","txn":"p\\\\1"}', None),  # an escape
        ('{"op":"begin","txn":"}', None),  # prefix and suffix overlap
        ('{"op":"begin","txn":"p"} ', None),
        ('{"op":"flush","txn":"p"}', None),
    ],
)
def test_a_fixed_form_accepts_what_the_regular_expression_accepts(text: str, name: str | None) -> None:
    col = pa.array([text])
    got = _found(parse(col, TXN_FIXED, []))
    assert got == _found(parse(col, [], [TXN_FORM]))
    assert got.get(0) == name


def test_send_forms_fixed_and_by_regular_expression() -> None:
    col = pa.array(['{"key":null,"txn":"a"}', '{"txn":"b"}', '{"key":"k","txn":"c"}', '{"key":null}', None])
    assert _found(parse(col, SEND_FIXED, [SEND_FORM])) == {0: "a", 1: "b", 2: "c"}


def test_events_fetched_by_row_across_row_groups(tmp_path: Path) -> None:
    src = _odd_forms().write(tmp_path / "h.jsonl")
    to_parquet(src, tmp_path / "h.parquet", batch_events=7)  # many row groups
    jsonl, parquet = load(src), load(tmp_path / "h.parquet")
    rows = [40, 3, 3, 0, 22, 41, 8]
    assert [e["index"] for e in parquet.events(rows)] == rows
    assert parquet.events(rows) == jsonl.events(rows)


def test_replicas_with_the_same_log_share_value_ids(tmp_path: Path) -> None:
    """Equal final reads share their values' encoding: the ids still say which values are equal."""
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "a", offset=0)
    b.send("producer-0", "t", 0, "b", offset=1)
    log = [(0, "a"), (1, "b")]
    b.final("t", 0, 1, 2, log)
    b.final("t", 0, 2, 2, log)  # the same log: shares the first one's encoding
    b.final("t", 0, 3, 1, [(0, "a"), (1, "c")])  # another
    b.final("t", 0, 4, 2, log)
    jsonl, parquet = _both(tmp_path, b)

    def same(h: HistoryData) -> list[list[bool]]:
        flat = np.concatenate([f.vids for f in h.finals] + [h.sends.vid])
        return (flat[:, None] == flat[None, :]).tolist()

    assert [f.offsets.tolist() for f in parquet.finals] == [f.offsets.tolist() for f in jsonl.finals]
    assert same(parquet) == same(jsonl)
    assert [v.to_json() for v in run_checks(parquet, policy=False)] == [
        v.to_json() for v in run_checks(jsonl, policy=False)
    ]
