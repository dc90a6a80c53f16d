"""The verdict of one check, and how verdicts merge.

``valid`` is four-valued:

* ``True``: the check judged what it needs and found no violation (or the policy allowed it);
* ``False``: a violation;
* ``"unknown"``: the history carries the check's inputs, but they were inconclusive (nothing
  judged, or some of it unjudged: a partition without a final read, an observer that saw the
  high watermark only once). Unknown is never counted as ok;
* ``"not-applicable"``: the history does not carry the check's inputs at all (no racks in the
  header, no ``meta`` event, no final read...); the check was not run. See ``Input`` and
  ``core.checks.NEEDS``.

Merging is pessimistic and ignores not-applicable: False beats "unknown" beats True; only
not-applicable values merge to not-applicable. An overall verdict is never not-applicable:
where no check applied at all, nothing was judged and it is "unknown" (``overall_valid``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Literal

Valid = bool | Literal["unknown", "not-applicable"]
#: what a whole history (or run, or report) gets: never not-applicable
Overall = bool | Literal["unknown"]
UNKNOWN: Literal["unknown"] = "unknown"
NOT_APPLICABLE: Literal["not-applicable"] = "not-applicable"


class Input(str, Enum):
    """An input a check reads. A history carries it when it has at least one such item."""

    RACKS = "racks"  # header racks.brokers and racks.clients, both non-empty
    SENDS = "sends"  # send events (invoked or completed, whatever the outcome)
    POLLS = "polls"  # consumer events: polled records, failed polls, assign/seek
    FINAL_READS = "final-reads"  # final-read events (a replica's log after healing), any outcome
    META = "meta"  # meta observations (leader, ISR, high watermark), ok or info
    FAULTS = "faults"  # fault/heal events
    TXNS = "transactions"  # txn events (a transaction's begin, commit or abort), any outcome
    COMMITS = "commits"  # commit events (offsets committed for a consumer group), any outcome
    COPY = "copy"  # header config.copy: an exactly-once copy ran (its source, sink and group)
    SHARE = "share"  # acquire/ack events (a share group's deliveries and acknowledgements)
    RELEASE_STEPS = "release-steps"  # fault events of a roll or finalize (faults.release)

    @property
    def label(self) -> str:
        return self.value.replace("-", " ")


#: how many examples a verdict carries at most (the counts carry the totals)
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Verdict:
    """Result of one check: is the history valid, how many of what, and a few examples.

    ``counts`` are named totals (anomalies, items judged, items that could not be judged).
    ``examples`` are dicts describing single anomalies; each carries ``events``, the events
    involved (large final-read events are trimmed to the offsets that matter).
    ``notes`` say why a verdict is unknown, or that the policy allowed an anomaly.
    """

    check: str
    valid: Valid
    counts: dict[str, int] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    allowed: bool = False  # True when a policy turned a violation into an allowed anomaly

    @property
    def applicable(self) -> bool:
        return self.valid != NOT_APPLICABLE

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "valid": self.valid,
            "counts": dict(self.counts),
            "examples": list(self.examples),
            "notes": list(self.notes),
            "allowed": self.allowed,
        }

    def with_(self, **changes: Any) -> Verdict:
        return replace(self, **changes)


def merge_valid(values: Iterable[Valid]) -> Valid:
    """False beats "unknown" beats True; not-applicable values are ignored, and merging only
    not-applicable values gives not-applicable; merging nothing is True."""
    out: Valid = True
    seen = applicable = False
    for v in values:
        seen = True
        if v == NOT_APPLICABLE:
            continue
        applicable = True
        if v is False:
            return False
        if v == UNKNOWN:
            out = UNKNOWN
    return NOT_APPLICABLE if seen and not applicable else out


def overall_valid(checks: Iterable[tuple[str, Valid]]) -> Overall:
    """The verdict of a whole history from ``(check, valid)`` pairs: ``merge_valid``, except
    that when no check other than the ``history`` pseudo-check applied, nothing was judged and
    the answer is "unknown" (an empty history vouches for nothing)."""
    pairs = list(checks)
    merged = merge_valid(v for _, v in pairs)
    if merged is False:
        return False
    if merged == UNKNOWN:
        return UNKNOWN
    if pairs and not any(c != "history" and v != NOT_APPLICABLE for c, v in pairs):
        return UNKNOWN
    return True


def decide(violations: int, judged: int, unjudged: int = 0) -> Valid:
    """The usual rule of a safety check: any violation is False; nothing judged, or anything
    left unjudged, is unknown (we cannot vouch for what we could not see)."""
    if violations:
        return False
    if judged == 0 or unjudged:
        return UNKNOWN
    return True
