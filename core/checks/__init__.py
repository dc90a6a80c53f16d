"""The checks of docs/checks.md: each a pure function ``HistoryData -> Verdict``.

Load a history once (``load(path)`` for .jsonl/.parquet, ``from_events(header, events)`` in
tests), then run any check on it; ``run_all_checks`` does both and, by default, applies the
policy table of ``core.policy`` to the header's config.

Every check declares the inputs it needs (``NEEDS``). ``run_checks`` does not run a check whose
inputs the history does not carry at all and gives it a ``not-applicable`` verdict instead;
a check that runs may still say "unknown" when its inputs are there but inconclusive. Called
directly (``CHECKS[name](h)``), a check always runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from highwater.core.checks.barrier import rebalance_barrier
from highwater.core.checks.copy import copy_exactly_once
from highwater.core.checks.data import HistoryData, from_events
from highwater.core.checks.groups import (
    commit_ahead_of,
    commit_regression_of,
    group_delivery_of,
    rebalance_rewind_of,
    rebalance_skip_of,
)
from highwater.core.checks.latency import follower_latency
from highwater.core.checks.liveness import follower_fetch, isr_stability, progress
from highwater.core.checks.loading import load
from highwater.core.checks.ownership import exclusive_read
from highwater.core.checks.raw import on_rows
from highwater.core.checks.reads import nonmonotonic_poll, poll_skip, truncation_undetected, uncommitted_read
from highwater.core.checks.replicas import hw_regression, replica_divergence
from highwater.core.checks.share import (
    share_delivery,
    share_delivery_limit,
    share_exclusive,
    share_release_redelivered,
    share_settled_redelivered,
)
from highwater.core.checks.tiered import log_start, remote_reset
from highwater.core.checks.timed import TIMED_CHECKS
from highwater.core.checks.torn import torn_transaction_of
from highwater.core.checks.txn import aborted_read_of, open_txn_read_of
from highwater.core.checks.upgrade import RELEASE_STEPS, upgrade
from highwater.core.checks.verdict import (
    NOT_APPLICABLE,
    UNKNOWN,
    Input,
    Overall,
    Valid,
    Verdict,
    merge_valid,
    overall_valid,
)
from highwater.core.checks.writes import duplicate, inconsistent_offsets, lost_write, nonmonotonic_send, unseen

Check = Callable[[HistoryData], Verdict]

#: every check, by its name in docs/checks.md, in report order
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
    "follower-latency": follower_latency,
    "isr-stability": isr_stability,
    "progress": progress,
    # transactions and consumer groups (over the transaction columns, ``core.checks.txn_data``)
    "aborted-read": aborted_read_of,
    "open-txn-read": open_txn_read_of,
    "torn-transaction": torn_transaction_of,
    "nonmonotonic-send": nonmonotonic_send,
    "commit-ahead": commit_ahead_of,
    "commit-regression": commit_regression_of,
    "rebalance-skip": rebalance_skip_of,
    "rebalance-rewind": rebalance_rewind_of,
    "group-delivery": group_delivery_of,
    "exclusive-read": exclusive_read,
    "rebalance-barrier": rebalance_barrier,
    # the copy's few events (its final reads, commits and transactions) read back by row
    "copy-exactly-once": on_rows(
        copy_exactly_once, lambda h: [*h.txn_rows, *h.commit_rows, *(f.row for f in h.finals)]
    ),
    # share groups (KIP-932)
    "share-delivery": share_delivery,
    "share-exclusive": share_exclusive,
    "share-settled-redelivered": share_settled_redelivered,
    "share-delivery-limit": share_delivery_limit,
    "share-release-redelivered": share_release_redelivered,
    # rolls and finalizations (faults.release): the few release-step events, by row
    "upgrade": on_rows(upgrade, lambda h: [f.row for f in h.faults if f.kind in RELEASE_STEPS]),
    # tiered storage (KIP-405)
    "remote-reset": remote_reset,
    "log-start": log_start,
}


#: what a check needs: every group must be carried, a group by any one of its inputs
Needs = tuple[frozenset[Input], ...]


def _needs(*groups: Input | frozenset[Input]) -> Needs:
    return tuple(g if isinstance(g, frozenset) else frozenset({g}) for g in groups)


_R, _S, _P, _F, _M = Input.RACKS, Input.SENDS, Input.POLLS, Input.FINAL_READS, Input.META
_T, _C, _X, _Q = Input.TXNS, Input.COMMITS, Input.COPY, Input.SHARE

#: the inputs each check needs (docs/checks.md's table, column "needs")
NEEDS: dict[str, Needs] = {
    "uncommitted-read": _needs(_P, _F),
    "poll-skip": _needs(_P, _F),
    "nonmonotonic-poll": _needs(_P),
    "lost-write": _needs(_S, _F),
    "unseen": _needs(_S, _P, _F),
    "duplicate": _needs(frozenset({_F, _P})),  # values placed by the final log or by polls
    "inconsistent-offsets": _needs(frozenset({_S, _P})),  # offsets reported by acks or polls
    "replica-divergence": _needs(_F),
    "hw-regression": _needs(_M),
    "truncation-undetected": _needs(_P, _F),
    "follower-fetch": _needs(_R, _P, _M),
    "follower-latency": _needs(_R, _S, _P, _M),
    "isr-stability": _needs(_M),
    "progress": _needs(frozenset({_S, _P})),
    "aborted-read": _needs(_T, _S, _P),
    "open-txn-read": _needs(_T, _S, _P),
    "torn-transaction": _needs(_T, _S, frozenset({_F, _P})),
    "nonmonotonic-send": _needs(_S),
    "commit-ahead": _needs(_C, _P),
    "commit-regression": _needs(_C),
    "rebalance-skip": _needs(_C, _P),
    "rebalance-rewind": _needs(_C, _P),
    "group-delivery": _needs(_C, _S, _P, _F),
    "exclusive-read": _needs(_C, _P),
    "rebalance-barrier": _needs(_C, _S, _P),
    "copy-exactly-once": _needs(_X, _C, _F),
    "share-delivery": _needs(_Q, _F),
    "share-exclusive": _needs(_Q),
    "share-settled-redelivered": _needs(_Q),
    "share-delivery-limit": _needs(_Q),
    "share-release-redelivered": _needs(_Q),
    "upgrade": _needs(Input.RELEASE_STEPS),
    "remote-reset": _needs(_P, _F),
    "log-start": _needs(_S, _M),
}
assert NEEDS.keys() == CHECKS.keys(), "every check declares its inputs"

_ORDER = list(Input)
#: the process that records final-read events (docs/history-format.md)
FINAL_READER = "final"


#: header key where a recorder lists the inputs it set out to record (``Input`` values)
PROMISED_KEY = "records"


def promised_inputs(header: dict[str, object]) -> frozenset[Input]:
    """The inputs the recorder promised in the header (``"records": ["sends", "polls", …]``).
    A run that crashed before its final read promised final reads: the final-read checks must
    then run and say unknown, not not-applicable. Unknown names are ignored (newer recorders)."""
    listed = header.get(PROMISED_KEY)
    if not isinstance(listed, list):
        return frozenset()
    known = {i.value: i for i in Input}
    return frozenset(known[x] for x in listed if isinstance(x, str) and x in known)


def present_inputs(h: HistoryData) -> frozenset[Input]:
    """The inputs this history carries (see ``Input`` for what counts), plus those its header
    promised (``promised_inputs``): a promised input that is absent is inconclusive, not absent."""
    racks = h.header.get("racks") or {}
    has = {
        Input.RACKS: isinstance(racks, dict) and bool(racks.get("brokers")) and bool(racks.get("clients")),
        Input.SENDS: len(h.sends.type) > 0 or h.sends.invokes > 0,
        Input.POLLS: len(h.polls.tp) > 0 or len(h.poll_errors) > 0 or len(h.positions.tp) > 0,
        # an unreadable replica leaves only an info final-read, which the loaders drop; its
        # process (``final``, the history format's name for the final reader) still shows that
        # final reads were attempted: then the checks run and say unknown
        Input.FINAL_READS: len(h.finals) > 0 or FINAL_READER in h.processes,
        Input.META: len(h.meta) > 0,
        Input.FAULTS: len(h.faults) > 0,
        Input.TXNS: len(h.txn_rows) > 0,
        Input.COMMITS: len(h.commit_rows) > 0,
        Input.COPY: bool(h.config.get("copy")),
        Input.SHARE: len(h.share_rows) > 0,
        Input.RELEASE_STEPS: any(f.kind in RELEASE_STEPS for f in h.faults),
    }
    return frozenset(i for i, yes in has.items() if yes) | promised_inputs(h.header)


def missing_inputs(check: str, present: Iterable[Input]) -> Needs:
    """The groups of ``NEEDS[check]`` that none of ``present`` satisfies (empty: applicable)."""
    have = set(present)
    return tuple(g for g in NEEDS[check] if not g & have)


def needs_text(needs: Needs) -> str:
    """``sends, final reads`` / ``final reads or polls``: for notes, the CLI and docs/checks.md."""
    return ", ".join(" or ".join(i.label for i in sorted(g, key=_ORDER.index)) for g in needs)


def not_applicable(check: str, missing: Needs) -> Verdict:
    """The verdict of a check that was not run: the history has none of some needed input."""
    why = " and ".join(f"no {' or '.join(i.label for i in sorted(g, key=_ORDER.index))}" for g in missing)
    return Verdict(
        check, NOT_APPLICABLE, notes=[f"not applicable: the history has {why} (needs {needs_text(NEEDS[check])})"]
    )


def history_verdict(h: HistoryData) -> Verdict:
    """A pseudo-check for the history file itself: unreadable lines make it unknown (the checks
    ran on the rest, but cannot vouch for what they did not see)."""
    errs = h.line_errors
    examples = [e.to_json() for e in errs[:5]]
    return Verdict(
        "history",
        UNKNOWN if errs else True,
        {"events": h.n_events, "unreadable_lines": len(errs)},
        examples,
        [f"line {e.line}: {e.message}" for e in errs[:5]],
    )


def run_checks(h: HistoryData, names: list[str] | None = None, *, policy: bool = True) -> list[Verdict]:
    """Run the named checks (default: all) on loaded data; the first verdict is ``history``.
    A check whose inputs the history lacks is not run: its verdict is not-applicable."""
    from highwater.core.policy import apply_policy

    selected = names or list(CHECKS)
    unknown = [n for n in selected if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s): {', '.join(unknown)} (known: {', '.join(CHECKS)})")
    done: dict[str, Verdict] = {}
    present = present_inputs(h)
    for n in selected:
        missing = missing_inputs(n, present)
        if missing:
            done[n] = not_applicable(n, missing)
    # run the checks that share a large derived input together, then free it (peak memory)
    running = {key: [n for n in users if n in selected and n not in done] for key, users in _SHARED.items()}
    grouped = [n for users in running.values() for n in users]
    last_user = {users[-1]: key for key, users in running.items() if users}
    for n in grouped + [n for n in selected if n not in grouped and n not in done]:
        done[n] = CHECKS[n](h)
        if n in last_user:
            h.cache.pop(last_user[n], None)
    verdicts = [history_verdict(h)] + [done[n] for n in selected]
    return apply_policy(verdicts, h.config) if policy else verdicts


#: cached inputs several checks share (``h.cache`` key -> its users, the last one frees it)
_SHARED = {
    "chains": ("poll-skip", "nonmonotonic-poll", "truncation-undetected"),
    "group_events": ("commit-regression",),
    "move_events": ("rebalance-skip", "rebalance-rewind"),
}


def run_all_checks(history: str | Path | HistoryData, *, policy: bool = True) -> list[Verdict]:
    """Load (if given a path) and run every check. Raises ``HistoryError`` if unreadable."""
    h = history if isinstance(history, HistoryData) else load(history)
    return run_checks(h, policy=policy)


def overall(verdicts: list[Verdict]) -> Overall:
    """False if any check failed, else unknown if any could not judge, else True. Checks that
    did not apply are ignored; if none but ``history`` applied, nothing was judged: unknown."""
    return overall_valid((v.check, v.valid) for v in verdicts)


__all__ = [
    "CHECKS",
    "TIMED_CHECKS",
    "NEEDS",
    "Input",
    "HistoryData",
    "Verdict",
    "from_events",
    "load",
    "run_checks",
    "run_all_checks",
    "overall",
    "merge_valid",
    "overall_valid",
    "history_verdict",
    "present_inputs",
    "missing_inputs",
    "needs_text",
    "not_applicable",
    "NOT_APPLICABLE",
    "UNKNOWN",
    "Valid",
]
