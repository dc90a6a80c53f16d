"""The shrinker on synthetic runs: a fake executor whose check fails exactly when the candidate
holds a known minimal set of faults (and enough producers), deterministic and flaky."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from highwater.faults.schedule import ScheduledFault
from highwater.faults.spec import parse_fault
from highwater.shrink import LEAD, MIN_GAP, MIN_RATE, Candidate, Outcome, compacted, reductions, shrink

SHORTEST = 29.0
KINDS = ["latency --target broker:1", "pause --target broker:2", "kill --target broker:3", "cut --target broker:1"]


def fault(i: int, start: float, duration: float = 40.0, kind: str | None = None) -> ScheduledFault:
    text = kind or KINDS[i % len(KINDS)]
    return ScheduledFault(i, start, duration, parse_fault(text))


def candidate(n: int, producers: int = 3, rate: float = 100.0) -> Candidate:
    return Candidate(tuple(fault(i, 10.0 + 50.0 * i) for i in range(n)), producers, rate)


class Executor:
    """Fails ``check`` when every fault id of ``needed`` is in the candidate and it has at least
    ``producers`` producers; ``p`` is the chance a failing candidate shows it in one try."""

    def __init__(self, needed: set[int], producers: int = 1, p: float = 1.0, seed: int = 0) -> None:
        self.needed, self.producers, self.p = needed, producers, p
        self.rng = random.Random(seed)
        self.runs = 0

    def __call__(self, c: Candidate) -> Outcome:
        self.runs += 1
        ids = {f.id for f in c.faults}
        fails = self.needed <= ids and c.producers >= self.producers and self.rng.random() < self.p
        return Outcome(frozenset({"poll-skip"} if fails else set()), f"run-{self.runs}")


@given(st.integers(min_value=1, max_value=8), st.data())
@settings(max_examples=40, deadline=None)
def test_a_deterministic_failure_shrinks_to_exactly_its_faults(n: int, data: st.DataObject) -> None:
    needed = set(data.draw(st.sets(st.integers(min_value=0, max_value=n - 1), min_size=1, max_size=min(n, 3))))
    run = Executor(needed, producers=2)
    found = shrink(candidate(n), "poll-skip", run, tries=2, shortest=SHORTEST)
    assert found.reproduced
    assert {f.id for f in found.shrunk.faults} == needed
    assert found.shrunk.producers == 2  # fewer stops the failure
    assert found.shrunk.rate == 100.0 / 2 / 2 / 2 and found.shrunk.rate / 2 < MIN_RATE
    assert all(f.duration == SHORTEST for f in found.shrunk.faults)  # windows shortened to the floor
    assert found.final_trial is not None and (found.final_trial.failed, found.final_trial.tries) == (2, 2)
    assert found.runs == run.runs


def test_a_failure_that_needs_nothing_but_the_workload_shrinks_to_no_fault() -> None:
    found = shrink(candidate(3), "poll-skip", Executor(set()), tries=1, shortest=SHORTEST)
    assert found.shrunk.faults == ()


def test_a_flaky_failure_still_shrinks_and_says_how_often_it_failed() -> None:
    run = Executor({1, 2}, p=0.6, seed=7)
    found = shrink(candidate(5), "poll-skip", run, tries=6, shortest=SHORTEST)
    assert found.reproduced
    # never smaller than what was seen failing: every kept step failed at least once
    assert {1, 2} <= {f.id for f in found.shrunk.faults}
    assert found.final_trial is not None and found.final_trial.tries == 6 and 0 < found.final_trial.failed <= 6


def test_a_failure_gone_in_every_try_of_the_original_is_not_reproduced() -> None:
    run = Executor({0}, p=0.0)
    found = shrink(candidate(3), "poll-skip", run, tries=3, shortest=SHORTEST)
    assert not found.reproduced and found.shrunk == found.original and run.runs == 3
    assert "not reproduced in 3 tries" in found.line()


def test_the_hunt_s_failing_run_counts_as_the_original_s_first_try() -> None:
    run = Executor({0})
    found = shrink(
        candidate(1), "poll-skip", run, tries=1, shortest=SHORTEST, seen=Outcome(frozenset({"poll-skip"}), "hunt-run")
    )
    assert found.original_trial.runs == ("hunt-run",)
    assert found.shrunk.faults[0].id == 0


def test_another_check_failing_is_not_the_same_failure() -> None:
    def other(c: Candidate) -> Outcome:
        return Outcome(frozenset({"lost-write"}))

    assert not shrink(candidate(2), "poll-skip", other, tries=2, shortest=SHORTEST).reproduced


def test_the_run_budget_stops_the_shrink_with_what_it_has() -> None:
    run = Executor({3})
    found = shrink(candidate(6), "poll-skip", run, tries=1, shortest=SHORTEST, max_runs=3)
    assert run.runs == 3 and found.budget_spent
    assert 3 in {f.id for f in found.shrunk.faults} and len(found.shrunk.faults) < 6


def test_a_candidate_seen_passing_is_not_run_again() -> None:
    run = Executor({0, 1}, producers=3)
    found = shrink(candidate(2), "poll-skip", run, tries=1, shortest=SHORTEST)
    keys = [t.candidate.describe() for t in found.trials]
    assert len(keys) == len(set(keys))


def test_tries_must_be_positive() -> None:
    with pytest.raises(ValueError):
        shrink(candidate(1), "poll-skip", Executor({0}), tries=0, shortest=SHORTEST)


def test_compacting_moves_faults_earlier_and_keeps_overlaps() -> None:
    faults = (fault(0, 20.0, 30.0), fault(1, 70.0, 30.0), fault(2, 80.0, 30.0))  # 1 and 2 overlap by 20 s
    c = compacted(faults)
    assert [f.start for f in c] == [LEAD, LEAD + 30.0 + MIN_GAP, LEAD + 30.0 + MIN_GAP + 10.0]
    assert compacted(c) == c  # already compact: no candidate offered again


def test_reductions_never_shorten_below_the_floor() -> None:
    c = Candidate((fault(0, 5.0, SHORTEST),), 1, MIN_RATE)
    assert [r for r in reductions(c, SHORTEST) if r.faults and r.faults[0].duration < SHORTEST] == []
    assert list(reductions(c, SHORTEST)) == [replace(c, faults=())]  # only dropping the fault is left
