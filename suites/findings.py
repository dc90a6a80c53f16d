"""Findings that suites meet, as pytest marks made from their records (``highwater.core.findings``,
``core/findings.toml``: the one source of truth). A suite applies the mark to the runs of a
client the finding applies to, so the test is an xfail there (strict where the record's ``shows``
entry for the scenario is: CI turns red when the behaviour changes; not strict for a finding that
strikes in most runs only, and then, where every check it names is timed, for ``TimedChecksOnly``
alone, so any other broken check still fails the test) and a plain test on every other client."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.core.findings import Finding, find, load
from highwater.harness.clients import UnknownClientError, parse_client_spec
from highwater.suites.scenario import RUN_OPTIONS, TIMED_CHECKS, TimedChecksOnly

#: the bundled records (a project's own findings extend them in its runs, not in these marks)
FINDINGS: tuple[Finding, ...] = load()


def finding_mark(fids: str | Sequence[str], scenario: str) -> pytest.MarkDecorator:
    """The xfail mark of finding(s) ``fids`` in ``scenario`` (``suite/scenario``): strict when
    every record's ``shows`` entry for the scenario is, limited to ``TimedChecksOnly`` when it is
    not strict and every check it names is timed; the reason is the records' own."""
    ids = [fids] if isinstance(fids, str) else list(fids)
    shows = []
    for fid in ids:
        f = find(FINDINGS, fid)
        entry = next((s for s in f.shows if s.covers(scenario)), None)
        if entry is None:
            raise ValueError(f"finding {fid} shows in no scenario {scenario!r} (core/findings.toml)")
        shows.append(entry)
    strict = all(s.strict for s in shows)
    timed = all(set(s.checks) <= set(TIMED_CHECKS) for s in shows)
    reason = " ".join(find(FINDINGS, fid).reason for fid in ids)
    if not strict and timed:
        return pytest.mark.xfail(strict=False, raises=TimedChecksOnly, reason=reason)
    return pytest.mark.xfail(strict=strict, reason=reason)


@dataclass(frozen=True)
class ClientFinding:
    """A finding some clients show in some suites' scenarios: ``expect(request)`` marks the
    running test an xfail (``mark``) when the test's client (``RUN_OPTIONS``, the session's or its
    turn in the rotation) is one of ``clients`` or a version of one, and leaves it a plain test
    otherwise (HW-9 is librdkafka's, so both clients built on it show it)."""

    clients: frozenset[str]
    mark: pytest.MarkDecorator

    @classmethod
    def of(cls, fids: str | Sequence[str], scenario: str) -> ClientFinding:
        """The mark of ``finding_mark`` for the clients the finding(s) name."""
        ids = [fids] if isinstance(fids, str) else list(fids)
        clients = frozenset(c for fid in ids for c in find(FINDINGS, fid).clients)
        if not clients:
            raise ValueError(f"{', '.join(ids)} name(s) no client (core/findings.toml)")
        return cls(clients, finding_mark(ids, scenario))

    def expect(self, request: pytest.FixtureRequest) -> None:
        try:
            running = parse_client_spec(RUN_OPTIONS.get().client).name
        except UnknownClientError:  # no client of ours, so not this finding's
            return
        if running in self.clients:
            request.applymarker(self.mark)


def explained_only_by(fid: str, scenario: str, verdicts: Iterable[Verdict], must_hold: Iterable[str]) -> str | None:
    """Finding ``fid``'s reason when the running client is the one it names and every check that
    said no or could not judge in ``must_hold`` (``scenario.check_verdicts``' failures) is one the
    finding shows in ``scenario``; else None. A suite that meets a finding in some runs only
    then xfails exactly those runs, and a run that broke anything else still fails."""
    f = find(FINDINGS, fid)
    entry = next((s for s in f.shows if s.covers(scenario)), None)
    if entry is None:
        raise ValueError(f"finding {fid} shows in no scenario {scenario!r} (core/findings.toml)")
    try:
        running = parse_client_spec(RUN_OPTIONS.get().client).name
    except UnknownClientError:
        return None
    if running not in f.clients:
        return None
    vs = list(verdicts)
    by = {v.check: v for v in vs}
    failing = {v.check for v in vs if v.valid is False} | {c for c in must_hold if by[c].valid is not True}
    return f.reason if failing and failing <= set(entry.checks) else None


#: HW-9: librdkafka keeps reading a follower that left the ISR but still answers (strict)
HW9 = ClientFinding.of("HW-9", "kip-392/replica-cut-off")
#: HW-9 where a tiered topic's leader is cut off during a catch-up read: the cut broker follows the
#: other two partitions, and its rack's librdkafka consumer reads them on. Not strict, timed checks alone
HW9_TIERED = ClientFinding.of("HW-9", "tiered/catch-up-leader-partition")
#: HW-9 where a transaction coordinator is cut off (the transactions suite's coordinators-cut-pause):
#: the cut broker is a rack's in-sync follower of some partition too, and librdkafka reads it on. The
#: 10 s window keeps follower-fetch unjudged in most runs, not all: not strict, timed checks alone
HW9_COORDINATOR_CUT = ClientFinding.of("HW-9", "transactions/coordinators-cut-pause")
#: HW-12: kafkajs has no KIP-320 at all (the KIP-320 suite's tests cannot pass on it)
HW12 = ClientFinding.of("HW-12", "kip-320/unclean-truncation")
#: HW-28: Sarama has no KIP-320 either (the KIP-320 suite's tests cannot pass on it)
HW28 = ClientFinding.of("HW-28", "kip-320/unclean-truncation")
#: HW-13: a kafkajs consumer crashes when a broker it talks to dies, and restarts after a backoff.
#: Not strict: the stall passed its bound in 3 runs of 4 (kafkajs's retry times are randomized)
HW13 = ClientFinding.of("HW-13", "durability/leader-kill")
#: HW-13 in the upgrades suite: its cases kill or restart the brokers the consumers read from
HW13_UPGRADES = ClientFinding.of("HW-13", "upgrades/roll-kill-finalize")
#: HW-17: a kafkajs consumer's metadata refresh that picks a frozen broker blocks all its fetches.
#: Not strict: kafkajs picks the broker at random among those it is connected to (2 runs of 2)
HW17 = ClientFinding.of("HW-17", "durability/leader-pause")
#: HW-14 and HW-13 as the transactions suite meets them on kafkajs. Not strict (aborted
#: transactions must overlap in one fetch), and not limited to timed checks: HW-14's aborted reads
#: are reported by aborted-read, uncommitted-read and truncation-undetected, and a member still
#: rejoining when the run ends leaves records undelivered (group-delivery)
KAFKAJS_TRANSACTIONS = ClientFinding.of(("HW-14", "HW-13"), "transactions/coordinators-kill")
#: HW-22: kafka-python hands one follower-served partition per consumer over late at a quiet rate.
#: Not strict (its median crossed follower-latency's bound in 2 runs of 3), timed checks alone
HW22 = ClientFinding.of("HW-22", "kip-392/quiet-follower-latency")
#: HW-22 where a tiered broker is busy copying to a failing, slow or full remote store: every
#: follower-served partition is late on kafka-python. Not strict (over the bound in 1 run of 3),
#: timed checks alone
HW22_TIERED = ClientFinding.of("HW-22", "tiered/store-failing")
#: HW-23: franz-go stays on its preferred replica, dead or out of the ISR, for 30 minutes. Not
#: strict (two runs of each case so far), timed checks alone
HW23 = ClientFinding.of("HW-23", "kip-392/replica-cut-off")
#: HW-23 as the transactions suite meets it on franz-go: a killed leader or coordinator is a
#: rack's follower of other partitions. Not strict, timed checks alone
HW23_TRANSACTIONS = ClientFinding.of("HW-23", "transactions/coordinators-kill")

#: HW-23 as the durability, KIP-207, KAFKA-4485 and chaos suites meet it on franz-go: the broker
#: they fault is a rack's in-sync follower of other partitions. Not strict, timed checks alone
HW23_FAULTED_FOLLOWER = ClientFinding.of("HW-23", "durability/leader-kill")
expect_hw9 = HW9.expect
expect_hw9_tiered = HW9_TIERED.expect
expect_hw12 = HW12.expect
expect_hw28 = HW28.expect
expect_hw13 = HW13.expect
expect_hw17 = HW17.expect
expect_hw22 = HW22.expect
expect_hw22_tiered = HW22_TIERED.expect
expect_hw23 = HW23.expect
expect_kafkajs_transactions = KAFKAJS_TRANSACTIONS.expect
