"""The transactions suite's subtraction of HW-10 / HW-15 (``without_hw10``): a transaction that
committed although one of its sends failed for good explains exactly the losses and tears of
that send, for kafka-python (HW-10) and kafkajs (HW-15); a loss it does not explain still fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.suites.conformance.test_transactions import COMMITS_AFTER_FAILED_SEND, without_hw10
from tests.synth.histories import HistoryBuilder


def history(tmp_path: Path, failed_value: str) -> Path:
    """One transaction, ``p#1``: two sends, the second failed for good (``info``), then an ok commit."""
    b = HistoryBuilder()
    b.event("producer-0", "ok", "txn", {"op": "begin", "txn": "p#1"})
    for value, outcome in (("v0", "ok"), (failed_value, "info")):
        b.event("producer-0", "invoke", "send", {"topic": "t", "partition": 0, "value": value, "txn": "p#1"})
        b.event("producer-0", outcome, "send", {"topic": "t", "partition": 0, "value": value, "txn": "p#1"})
    b.event("producer-0", "invoke", "txn", {"op": "commit", "txn": "p#1"})
    b.event("producer-0", "ok", "txn", {"op": "commit", "txn": "p#1"})
    return b.write(tmp_path / "h.jsonl")


def lost(value: str) -> Verdict:
    example: dict[str, Any] = {"kind": "lost-write", "events": [{"value": {"value": value, "txn": "p#1"}}]}
    return Verdict("lost-write", False, counts={"lost": 1}, examples=[example])


def torn() -> Verdict:
    return Verdict("torn-transaction", False, counts={"torn-final": 1}, examples=[{"txn": "p#1"}])


@pytest.mark.parametrize("client", sorted(COMMITS_AFTER_FAILED_SEND))
def test_the_failed_send_of_a_committed_transaction_is_subtracted(
    tmp_path: Path, client: str, capsys: pytest.CaptureFixture[str]
) -> None:
    finding = COMMITS_AFTER_FAILED_SEND[client]
    kept = without_hw10([lost("v1"), torn(), Verdict("progress", True)], history(tmp_path, "v1"), finding, client)
    assert [v.check for v in kept] == ["progress"]
    assert f"{finding}: 1 write(s) of 1 committed transaction(s) failed for good ({client})" in capsys.readouterr().out


def test_a_loss_the_failed_send_does_not_explain_still_fails(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="losses beyond HW-15"):
        without_hw10([lost("v0"), torn()], history(tmp_path, "v1"), "HW-15", "kafkajs")  # v0 was acknowledged


def test_a_clean_run_is_left_alone(tmp_path: Path) -> None:
    clean = [Verdict("lost-write", True), Verdict("torn-transaction", True)]
    assert without_hw10(clean, history(tmp_path, "v1"), "HW-15", "kafkajs") == clean
