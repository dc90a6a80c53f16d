"""The collector's threshold while records stream, and its restoration afterwards."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from highwater.harness.client_common import Outcome, SendOutcome
from highwater.harness.gcpasses import STREAMING, set_streaming, streaming


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_streaming_raises_the_first_threshold_and_restores_all(thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(700, 11, 12)
    with streaming():
        assert gc.get_threshold() == (STREAMING, 11, 12)
    assert gc.get_threshold() == (700, 11, 12)


def test_streaming_restores_after_an_error(thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), streaming():
        raise RuntimeError("a workload crashed")
    assert gc.get_threshold() == (700, 10, 10)


def test_set_streaming_keeps_the_older_generations(thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(700, 9, 8)
    set_streaming()
    assert gc.get_threshold() == (STREAMING, 9, 8)


def test_send_outcomes_made_fast_have_their_fields() -> None:
    assert SendOutcome.ok(7) == SendOutcome(Outcome.OK, 7, None)
    assert SendOutcome.ok(7).offset == 7 and SendOutcome.ok(7).outcome is Outcome.OK
    failed = SendOutcome.fail("KafkaError: boom")
    assert (failed.outcome, failed.offset, failed.error) == (Outcome.FAIL, None, "KafkaError: boom")
    unknown = SendOutcome.info("timed out")
    assert (unknown.outcome, unknown.offset, unknown.error) == (Outcome.INFO, None, "timed out")
