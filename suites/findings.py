"""Findings that suites meet, as one pytest mark each (docs/findings.md). A suite applies the
mark to the runs of the client that shows the finding, so the test is an xfail there (strict:
CI turns red when the behaviour changes; not strict for a finding that strikes in most runs
only) and a plain test on every other client."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from harness.clients import UnknownClientError, parse_client_spec
from suites.scenario import RUN_OPTIONS, TimedChecksOnly


@dataclass(frozen=True)
class ClientFinding:
    """A finding one client shows in some suites' scenarios: ``expect(request)`` marks the
    running test an xfail (``mark``) when the test's client (``RUN_OPTIONS``, the session's or its
    turn in the rotation) is ``client`` or a version of it, and leaves it a plain test otherwise."""

    client: str
    mark: pytest.MarkDecorator

    def expect(self, request: pytest.FixtureRequest) -> None:
        try:
            running = parse_client_spec(RUN_OPTIONS.get().client).name
        except UnknownClientError:  # no client of ours, so not this finding's
            return
        if running == self.client:
            request.applymarker(self.mark)


def stall_finding(client: str, reason: str) -> ClientFinding:
    """A finding about a client's slowness that strikes in most runs, not all: a non-strict
    xfail for ``TimedChecksOnly`` alone, so any other broken check still fails the test."""
    return ClientFinding(client, pytest.mark.xfail(strict=False, raises=TimedChecksOnly, reason=reason))


#: HW-9: librdkafka keeps reading a follower that left the ISR but still answers
HW9 = ClientFinding(
    "confluent-kafka",
    pytest.mark.xfail(
        strict=True,
        reason=(
            "FINDING HW-9 (librdkafka 2.16.0): the preferred-replica lease is fixed at 5 minutes "
            "(rdkafka_fetcher.c, rd_kafka_toppar_fetch_decide), so the rack consumer of a follower that left the "
            "ISR but still answers (cut off from replication, or slowed) keeps fetching from it (follower-fetch: "
            "no-move-after-isr-loss; progress: a stall past its bound). See docs/findings.md."
        ),
    ),
)

#: HW-9 where a transaction coordinator is cut off (the transactions suite's coordinators-cut-pause):
#: the cut broker is a rack's in-sync follower of some partition too, and librdkafka reads it on. The
#: 10 s window keeps follower-fetch unjudged in most runs, not all (when the observer sees the ISR
#: shrink within 2.5 s, the move is judged): a non-strict xfail for the timed checks alone
HW9_COORDINATOR_CUT = stall_finding(
    "confluent-kafka",
    "FINDING HW-9 (librdkafka 2.16.0): the transaction coordinator cut off from every other node is also a "
    "follower in a rack consumer's rack; librdkafka keeps its 5-minute preferred-replica lease on it after it "
    "left the ISR (follower-fetch: no-move-after-isr-loss, judged when the ISR shrink is seen early; CI "
    "2026-11-26). See docs/findings.md.",
)

#: HW-12: kafkajs has no KIP-320 at all (the KIP-320 suite's tests cannot pass on it)
HW12 = ClientFinding(
    "kafkajs",
    pytest.mark.xfail(
        strict=True,
        reason=(
            "FINDING HW-12: kafkajs 2.2.4 never implemented KIP-320 (no OffsetForLeaderEpoch request, Fetch "
            "sends current_leader_epoch -1, Metadata only up to v6 so it knows no leader epochs): a consumer that "
            "read records an unclean election truncated is never told. Beyond the new log end it gets "
            "OFFSET_OUT_OF_RANGE and resets to its fromBeginning policy (to offset 0 with earliest: the whole log "
            "before the divergence point re-read; with latest the new records at the truncated offsets are "
            "skipped); inside the new log it would read on silently past them (by its source; not seen here, "
            "where every position was beyond the new log end). Measured in 3 runs: each of the 9 consumers that "
            "read truncated records reset to offset 0 (1-3 resets each) and re-read the 300-304 records below "
            "the divergence point. "
            "Repro: .venv/bin/pytest suites/conformance/test_kip320.py --client kafkajs --runxfail"
        ),
    ),
)

#: HW-13: a kafkajs consumer crashes when a broker it talks to dies, and restarts after a backoff.
#: Not strict: the stall passed its bound in 3 runs of 4 (kafkajs's retry times are randomized),
#: so a passing run is no change of behaviour. Only a run that broke timed checks alone is this
#: finding (KIP-392's killed replica, KIP-207's leader kills, durability's leader kill: 4 runs of 4,
#: 2026-11-27)
HW13 = stall_finding(
    "kafkajs",
    (
        "FINDING HW-13 (kafkajs 2.2.4): when a broker dies, a kafkajs consumer's requests to it fail "
        "(ECONNRESET through its proxy), its retries (5, kafkajs's default) run out within ~12 s, and the "
        "consumer crashes (KafkaJSNumberOfRetriesExceeded: Closed connection), leaves its group and restarts "
        "only after a backoff of 12-13 s, then rejoins: the rack consumer of an unaffected rack stalls 15-25 s "
        "(progress: a stall past its bound, 3 runs of 4), where the Java consumer goes on reading its own "
        "replica. See docs/findings.md."
    ),
)

#: HW-17: a kafkajs consumer's metadata refresh that picks a frozen broker blocks all its fetches.
#: Not strict: kafkajs picks the broker at random among those it is connected to (2 runs of 2)
HW17 = stall_finding(
    "kafkajs",
    (
        "FINDING HW-17 (kafkajs 2.2.4): a metadata refresh goes to a random broker kafkajs is connected to "
        "(BrokerPool#findConnectedBroker), a frozen one included, and every fetcher of the consumer waits for "
        "that one shared refresh (Cluster#refreshMetadataIfNecessary) until its request timeout (10 s): the "
        "rack consumer of the paused leader's rack reads no partition at all, its healthy leaders' included, "
        "for 12-18 s (follower-fetch: no move within 7.5 s of the ISR loss), where Java's picks the least "
        "loaded node. See docs/findings.md."
    ),
)

#: HW-14 and HW-13 as the transactions suite meets them on kafkajs. Not strict (aborted
#: transactions must overlap in one fetch), and not limited to timed checks: HW-14's aborted reads
#: are reported by aborted-read, uncommitted-read and truncation-undetected, and a member still
#: rejoining when the run ends leaves records undelivered (group-delivery)
KAFKAJS_TRANSACTIONS = ClientFinding(
    "kafkajs",
    pytest.mark.xfail(
        strict=False,
        reason=(
            "FINDINGS HW-14 and HW-13 (kafkajs 2.2.4): read_committed consumers return records of aborted "
            "transactions (aborted-read; the same records are uncommitted-read's and truncation-undetected's: "
            "the final log lacks them), 5-8 per run in coordinators-kill and coordinators-cut-pause (2026-11-26); "
            "after the group coordinator's broker is killed and restarted, a member keeps heartbeating and "
            "committing to it through NOT_COORDINATOR answers for 5 s and then takes 12.6 s to rejoin, so a "
            "partition goes unread to the end of the run (group-delivery, progress). See docs/findings.md."
        ),
    ),
)

expect_hw9 = HW9.expect
expect_hw12 = HW12.expect
expect_hw13 = HW13.expect
expect_hw17 = HW17.expect
expect_kafkajs_transactions = KAFKAJS_TRANSACTIONS.expect
