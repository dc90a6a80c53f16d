"""Shrinking a failing run: the smallest schedule and workload that still make the same check
say no (``highwater hunt``, ``highwater shrink``; docs/hunting.md).

A *candidate* is what a run is made of that shrinking may reduce: its scheduled faults, its
producers and its rate. ``shrink`` is pure: it asks ``attempt(candidate)`` (one real run, in
practice) which checks said no that no known finding explains, and keeps a reduction only when
the target check said no again. Runs are not deterministic, so:

- a candidate is tried up to ``tries`` times, stopping at its first failure: it *still fails*
  when one try failed, and the failure is *gone* only when all ``tries`` passed (a flaky failure
  that hid in every try is reported as gone: the result is never smaller than what was seen
  failing, only possibly larger than the true minimum);
- the original is tried the same way first (the hunt's failing run counts as its first try,
  ``seen``); if it never fails again the shrink stops, "not reproduced in N tries";
- the final candidate's trial is completed to ``tries`` runs, and its failure count
  (``failed`` of ``tries``) says how flaky the shrunk failure is;
- a candidate seen passing is not run again (a reduction can be offered again after another
  was kept).

The reductions, tried in this order, from the current smallest failing candidate, until none
fails again or the run budget is spent: drop faults (halves, then quarters, down to one at a
time: as delta debugging does), shorten a fault's window (halved, never below ``shortest``, the
timed checks' longest bound with its margin, so a check that judges the window can still say
no), move the faults earlier (gaps closed to ``MIN_GAP``), fewer producers (down to one), a
lower rate (halved, down to ``MIN_RATE``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from highwater.faults.schedule import ScheduledFault

#: seconds of calm before the first fault and between faults of a compacted candidate
LEAD, MIN_GAP = 5.0, 2.0
#: the lowest rate a shrink tries (sends/s a producer): below it a run judges too few records
MIN_RATE = 10.0


@dataclass(frozen=True)
class Candidate:
    """What a shrink may reduce of a run."""

    faults: tuple[ScheduledFault, ...]
    producers: int
    rate: float

    @property
    def end(self) -> float:
        """When its last fault heals (0: no fault)."""
        return max((f.end for f in self.faults), default=0.0)

    def describe(self) -> str:
        kinds = ", ".join(f"{f.spec.kind.value}@{f.start:g}s/{f.duration:g}s" for f in self.faults) or "no fault"
        return f"{len(self.faults)} fault(s) [{kinds}], {self.producers} producer(s) at {self.rate:g}/s"

    def to_json(self) -> dict[str, Any]:
        return {
            "faults": [f.to_dict() for f in self.faults],
            "producers": self.producers,
            "rate": self.rate,
            "described": self.describe(),
        }


@dataclass(frozen=True)
class Outcome:
    """One run of a candidate: the checks that said no unexplained, and where the run is."""

    new: frozenset[str]
    run_dir: str = ""


@dataclass(frozen=True)
class Trial:
    """A candidate's tries: how many failed the target check, of how many, and their runs."""

    candidate: Candidate
    failed: int
    tries: int
    runs: tuple[str, ...] = ()
    failing_run: str = ""  # the last run in which it failed

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate.describe(),
            "failed": self.failed,
            "tries": self.tries,
            "runs": list(self.runs),
        }


@dataclass(frozen=True)
class ShrinkResult:
    """The original and the smallest candidate that still failed, with every trial on the way."""

    check: str
    original: Candidate
    shrunk: Candidate
    reproduced: bool
    original_trial: Trial
    final_trial: Trial | None
    trials: tuple[Trial, ...] = field(default_factory=tuple)
    budget_spent: bool = False
    runs: int = 0  # the runs the shrink made (not the hunt's run it started from)

    def line(self) -> str:
        if not self.reproduced:
            return f"{self.check}: not reproduced in {self.original_trial.tries} tries; nothing shrunk"
        final = self.final_trial
        flaky = f", failing {final.failed} of {final.tries} tries" if final else ""
        return (
            f"{self.check}: {self.original.describe()} -> {self.shrunk.describe()}{flaky} "
            f"({self.runs} runs{', budget spent' if self.budget_spent else ''})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "reproduced": self.reproduced,
            "original": self.original.to_json(),
            "shrunk": self.shrunk.to_json(),
            "original_trial": self.original_trial.to_json(),
            "final_trial": self.final_trial.to_json() if self.final_trial else None,
            "trials": [t.to_json() for t in self.trials],
            "runs": self.runs,
            "budget_spent": self.budget_spent,
        }


Attempt = Callable[[Candidate], Outcome]


def reductions(c: Candidate, shortest: float) -> Iterator[Candidate]:
    """Every one-step reduction of ``c``, smallest-first within each kind (module docstring)."""
    n = len(c.faults)
    size = max(1, n // 2) if n else 0  # the last fault too: a workload that fails alone is smaller still
    while size >= 1:
        for start in range(0, n, size):
            kept = c.faults[:start] + c.faults[start + size :]
            if len(kept) < n:
                yield replace(c, faults=kept)
        size //= 2
    for i, f in enumerate(c.faults):
        shorter = max(shortest, round(f.duration / 2, 3))
        if shorter < f.duration:
            yield replace(c, faults=c.faults[:i] + (replace(f, duration=shorter),) + c.faults[i + 1 :])
    compact = compacted(c.faults)
    if compact != c.faults:
        yield replace(c, faults=compact)
    if c.producers > 1:
        yield replace(c, producers=c.producers - 1)
    if c.rate / 2 >= MIN_RATE:
        yield replace(c, rate=c.rate / 2)


def compacted(faults: tuple[ScheduledFault, ...]) -> tuple[ScheduledFault, ...]:
    """The faults moved earlier: the first at ``LEAD`` s at the latest, each gap after a fault
    closed to ``MIN_GAP``; faults that overlapped keep their offset from the one before."""
    out: list[ScheduledFault] = []
    prev: ScheduledFault | None = None
    for f in sorted(faults, key=lambda f: (f.start, f.id)):
        if prev is None:
            start = min(f.start, LEAD)
        else:
            moved = out[-1]
            gap = f.start - prev.end
            start = moved.end + min(gap, MIN_GAP) if gap >= 0 else moved.start + (f.start - prev.start)
        out.append(replace(f, start=round(start, 3)))
        prev = f
    return tuple(out)


def shrink(
    original: Candidate,
    check: str,
    attempt: Attempt,
    *,
    tries: int = 3,
    shortest: float,
    max_runs: int | None = None,
    seen: Outcome | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> ShrinkResult:
    """The smallest reduction of ``original`` whose runs still fail ``check`` (module docstring)."""
    if tries < 1:
        raise ValueError(f"tries must be at least 1, not {tries}")
    spent = 0

    def budget_left() -> bool:
        return max_runs is None or spent < max_runs

    def trial(c: Candidate, *, full: bool = False, before: Trial | None = None) -> Trial:
        """Up to ``tries`` runs of ``c`` (after ``before``'s), stopping at a failure unless ``full``."""
        nonlocal spent
        failed, runs, failing = (before.failed, list(before.runs), before.failing_run) if before else (0, [], "")
        while len(runs) < tries and budget_left() and (full or not failed):
            outcome = attempt(c)
            spent += 1
            runs.append(outcome.run_dir)
            if check in outcome.new:
                failed += 1
                failing = outcome.run_dir
        return Trial(c, failed, len(runs), tuple(runs), failing)

    start = Trial(original, 1, 1, (seen.run_dir,), seen.run_dir) if seen is not None and check in seen.new else None
    first = start or trial(original)
    say(f"shrink {check}: the original failed {first.failed} of {first.tries} tries ({original.describe()})")
    if not first.failed:
        return ShrinkResult(check, original, original, False, first, None, (), not budget_left(), spent)
    current, current_trial, trials = original, first, []
    passed: set[str] = set()
    changed = True
    while changed and budget_left():
        changed = False
        for cand in reductions(current, shortest):
            key = json.dumps(cand.to_json(), sort_keys=True)
            if key in passed:
                continue
            if not budget_left():
                break
            t = trial(cand)
            trials.append(t)
            say(f"shrink {check}: {cand.describe()}: {'fails' if t.failed else 'passes'} ({t.failed} of {t.tries})")
            if t.failed:
                current, current_trial, changed = cand, t, True
                break
            passed.add(key)
    final = trial(current, full=True, before=current_trial)
    return ShrinkResult(check, original, current, True, first, final, tuple(trials), not budget_left(), spent)
