"""The verdict of one check, and how verdicts merge.

``valid`` is three-valued on purpose: a check that could not see what it needs (no final read,
no observer, no consumer) says "unknown", and unknown is never counted as ok. Merging is
pessimistic: False beats "unknown" beats True.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Valid = bool | Literal["unknown"]
UNKNOWN: Literal["unknown"] = "unknown"

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
    """False beats "unknown" beats True; merging nothing is True."""
    out: Valid = True
    for v in values:
        if v is False:
            return False
        if v == UNKNOWN:
            out = UNKNOWN
    return out


def decide(violations: int, judged: int, unjudged: int = 0) -> Valid:
    """The usual rule of a safety check: any violation is False; nothing judged, or anything
    left unjudged, is unknown (we cannot vouch for what we could not see)."""
    if violations:
        return False
    if judged == 0 or unjudged:
        return UNKNOWN
    return True
