"""Bisecting a scenario's verdict to the release that changed it.

``highwater bisect SCENARIO --good V1 --bad V2 [--runs N]`` orders the releases from ``V1`` to
``V2`` (``V1`` may be newer: then it finds the release that *fixed* something) and looks for the
first release, walking from ``V1``, whose verdict is ``V2``'s. Faults under chaos make failures
probabilistic, so each probed release is run ``N`` times with the same seeds (``seed``,
``seed+1``...), paired across releases, and judged:

- **bad**: at least one run failed -- a failure seen is a failure;
- **good**: every run passed;
- **unknown**: some run could not be judged (error, interrupted) and none failed. Unknown is
  never counted as good: the release is set aside (as ``git bisect skip`` does) and its
  neighbours are probed instead; if it ends up next to the boundary, the answer is a range.

**Confidence.** A release judged good may be bad but lucky. With ``p`` the failure rate seen on
the releases judged bad (pooled), a bad release passes ``n`` runs with probability
``(1-p)^n``; the boundary is right when every good judgement was right, so the confidence is the
product of ``1 - (1-p)^n`` over the good judgements (1.0 when every bad release failed every
run). It assumes a good release never fails (a flaky good side shows up as a bad ``V1``, which
is refused). ``runs_for(p, 0.95)`` says how many runs per release would reach 95 %.

The search itself is a pure function of a ``judge`` callback, so it is unit-tested without
clusters; ``highwater.cli_sweep`` gives it a judge that runs pytest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from highwater.core.errors import HighwaterError


class BisectError(HighwaterError, ValueError):
    """The endpoints do not differ, or cannot be judged."""


class Judgement(str, Enum):
    GOOD = "good"
    BAD = "bad"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Probe:
    """The runs of one release: how many, how many failed, how many could not be judged."""

    version: str
    runs: int
    failed: int
    unknown: int = 0

    @property
    def judgement(self) -> Judgement:
        if self.failed:
            return Judgement.BAD
        return Judgement.UNKNOWN if self.unknown or not self.runs else Judgement.GOOD


@dataclass
class BisectResult:
    #: the last release judged good and the first judged bad, walking from V1 to V2; between
    #: them lie only releases judged unknown (none: an exact boundary)
    last_good: str
    first_bad: str
    between_unknown: list[str]
    probes: list[Probe] = field(default_factory=list)

    @property
    def failure_rate(self) -> float:
        bad = [p for p in self.probes if p.judgement is Judgement.BAD]
        runs = sum(p.runs for p in bad)
        return sum(p.failed for p in bad) / runs if runs else 0.0

    @property
    def confidence(self) -> float:
        p = self.failure_rate
        conf = 1.0
        for probe in self.probes:
            if probe.judgement is Judgement.GOOD:
                conf *= 1.0 - (1.0 - p) ** probe.runs
        return conf

    @property
    def exact(self) -> bool:
        return not self.between_unknown


def runs_for(failure_rate: float, confidence: float) -> int | None:
    """Runs per release so that a bad release passes them all with probability < 1-confidence
    (None when nothing ever failed)."""
    if failure_rate <= 0.0:
        return None
    if failure_rate >= 1.0:
        return 1
    return math.ceil(math.log(1.0 - confidence) / math.log(1.0 - failure_rate))


Judge = Callable[[str], Probe]


def bisect(versions: Sequence[str], judge: Judge, say: Callable[[str], None] = lambda _: None) -> BisectResult:
    """The boundary between ``versions[0]`` (expected good) and ``versions[-1]`` (expected bad),
    ordered in the direction of the search. Both endpoints are probed first and must be good
    and bad respectively."""
    if len(versions) < 2:
        raise BisectError("need two different releases to bisect between")
    probes: dict[str, Probe] = {}

    def probe(v: str) -> Judgement:
        if v not in probes:
            probes[v] = judge(v)
            p = probes[v]
            say(f"{v}: {p.judgement.value} ({p.failed} of {p.runs} runs failed, {p.unknown} unknown)")
        return probes[v].judgement

    first, last = versions[0], versions[-1]
    if probe(first) is not Judgement.GOOD:
        raise BisectError(f"the good end {first} is not good: {_describe(probes[first])}")
    if probe(last) is not Judgement.BAD:
        raise BisectError(f"the bad end {last} does not fail: {_describe(probes[last])}")
    lo, hi = 0, len(versions) - 1  # versions[lo] good, versions[hi] bad
    skipped: set[int] = set()
    while True:
        candidates = [i for i in range(lo + 1, hi) if i not in skipped]
        if not candidates:
            break
        mid = min(candidates, key=lambda i: abs(i - (lo + hi) / 2))
        j = probe(versions[mid])
        if j is Judgement.GOOD:
            lo = mid
        elif j is Judgement.BAD:
            hi = mid
        else:
            skipped.add(mid)
    return BisectResult(
        last_good=versions[lo],
        first_bad=versions[hi],
        between_unknown=[versions[i] for i in range(lo + 1, hi)],
        probes=[probes[v] for v in versions if v in probes],
    )


def _describe(p: Probe) -> str:
    return f"{p.failed} of {p.runs} runs failed, {p.unknown} could not be judged"


def report_lines(
    result: BisectResult, runs: int, span: Sequence[str] | None = None, elapsed_s: float | None = None
) -> list[str]:
    """What ``highwater bisect`` prints at the end; with ``span`` (the versions searched) and
    ``elapsed_s``, also what was probed and how long it took (the figures a write-up needs)."""
    lines = [
        f"first release with the bad verdict: {result.first_bad} (last good: {result.last_good})"
        if result.exact
        else f"boundary between {result.last_good} (good) and {result.first_bad} (bad); "
        f"not judged in between: {', '.join(result.between_unknown)}",
        f"failure rate on bad releases: {result.failure_rate:.0%}; confidence in the boundary: {result.confidence:.0%}",
    ]
    need = runs_for(result.failure_rate, 0.95)
    if need is not None and result.confidence < 0.95 and need > runs:
        lines.append(f"for 95 % confidence, run again with --runs {need}")
    if span is not None:
        probed = [p.version for p in result.probes]
        ordered = [v for v in span if v in probed]
        total_runs = sum(p.runs for p in result.probes)
        took = f" in {elapsed_s / 60:.1f} min" if elapsed_s is not None else ""
        lines.append(f"probed {len(ordered)} of {len(span)} versions ({', '.join(ordered)}), {total_runs} runs{took}")
    return lines
