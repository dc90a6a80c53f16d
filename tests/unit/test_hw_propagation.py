"""hw-propagation (core.checks.hw_propagation): a follower whose median time to learn an
acknowledged write's high watermark passes the bound is found; followers within it pass (a slow
maximum alone included); a follower without samples is unknown, never valid."""

from __future__ import annotations

from highwater.core.checks.bounds import Settings, derive
from highwater.core.checks.hw_propagation import hw_propagation
from highwater.core.checks.verdict import UNKNOWN

BOUND = derive(Settings(replica_fetch_wait_max_ms=200))["hw_propagation_bound_ms"].ms


def m(median: float, maximum: float | None = None, samples: int = 20) -> dict[str, float]:
    return {"median_ms": median, "max_ms": maximum if maximum is not None else median + 5, "samples": samples}


def test_the_bound_is_a_wait_and_a_half() -> None:
    assert BOUND == 300


def test_a_follower_that_learns_the_hw_late_is_found() -> None:
    v = hw_propagation({"2": m(203.7), "3": m(410.0)}, BOUND)  # as if it learnt it only a wait later
    assert (
        v.valid is False
        and v.counts["late"] == 1
        and v.examples == [{"follower": "3", "median_ms": 410.0, "bound_ms": 300}]
    )


def test_followers_within_the_bound_pass_even_with_a_slow_maximum() -> None:
    v = hw_propagation({"2": m(203.7, 209.3), "3": m(205.6, 2_000.0)}, BOUND)  # 4.4.0, and one slow write
    assert v.valid is True and v.counts == {"followers": 2, "late": 0, "unmeasured": 0, "slowest_median_ms": 205}


def test_no_sample_is_unknown() -> None:
    assert hw_propagation({"2": m(203.7), "3": m(0.0, 0.0, samples=0)}, BOUND).valid == UNKNOWN
    assert hw_propagation({}, BOUND).valid == UNKNOWN
