"""The checks of DESIGN.md: each a pure function ``HistoryData -> Verdict``.

Load a history once (``load(path)`` for .jsonl/.parquet, ``from_events(header, events)`` in
tests), then run any check on it; ``run_all_checks`` does both and, by default, applies the
policy table of ``harness.policy`` to the header's config.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.checks.data import HistoryData, from_events, load
from harness.checks.liveness import follower_fetch, isr_stability, progress
from harness.checks.reads import nonmonotonic_poll, poll_skip, truncation_undetected, uncommitted_read
from harness.checks.replicas import hw_regression, replica_divergence
from harness.checks.verdict import UNKNOWN, Valid, Verdict, merge_valid
from harness.checks.writes import duplicate, inconsistent_offsets, lost_write, unseen

Check = Callable[[HistoryData], Verdict]

#: every check, by its name in DESIGN.md, in report order
CHECKS: dict[str, Check] = {
    "uncommitted-read": uncommitted_read,
    "poll-skip": poll_skip,
    "nonmonotonic-poll": nonmonotonic_poll,
    "lost-write": lost_write,
    "unseen": unseen,
    "duplicate": duplicate,
    "inconsistent-offsets": inconsistent_offsets,
    "replica-divergence": replica_divergence,
    "hw-regression": hw_regression,
    "truncation-undetected": truncation_undetected,
    "follower-fetch": follower_fetch,
    "isr-stability": isr_stability,
    "progress": progress,
}


def history_verdict(h: HistoryData) -> Verdict:
    """A pseudo-check for the history file itself: unreadable lines make it unknown (the checks
    ran on the rest, but cannot vouch for what they did not see)."""
    errs = h.line_errors
    examples = [e.to_json() for e in errs[:5]]
    return Verdict("history", UNKNOWN if errs else True,
                   {"events": h.n_events, "unreadable_lines": len(errs)}, examples,
                   [f"line {e.line}: {e.message}" for e in errs[:5]])


def run_checks(h: HistoryData, names: list[str] | None = None, *, policy: bool = True) -> list[Verdict]:
    """Run the named checks (default: all) on loaded data; the first verdict is ``history``."""
    from harness.policy import apply_policy

    selected = names or list(CHECKS)
    unknown = [n for n in selected if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s): {', '.join(unknown)} (known: {', '.join(CHECKS)})")
    done: dict[str, Verdict] = {}
    # run the checks that share the consumer chains together, then free them (peak memory)
    chain_users = [n for n in _CHAIN_USERS if n in selected]
    for n in chain_users + [n for n in selected if n not in chain_users]:
        done[n] = CHECKS[n](h)
        if n == (chain_users or [None])[-1]:
            h.cache.pop("chains", None)
    verdicts = [history_verdict(h)] + [done[n] for n in selected]
    return apply_policy(verdicts, h.config) if policy else verdicts


_CHAIN_USERS = ("poll-skip", "nonmonotonic-poll", "truncation-undetected")


def run_all_checks(history: str | Path | HistoryData, *, policy: bool = True) -> list[Verdict]:
    """Load (if given a path) and run every check. Raises ``HistoryError`` if unreadable."""
    h = history if isinstance(history, HistoryData) else load(history)
    return run_checks(h, policy=policy)


def overall(verdicts: list[Verdict]) -> Valid:
    return merge_valid(v.valid for v in verdicts)


__all__ = ["CHECKS", "HistoryData", "Verdict", "from_events", "load", "run_checks", "run_all_checks",
           "overall", "merge_valid", "history_verdict"]
