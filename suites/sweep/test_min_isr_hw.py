"""The high watermark of a partition whose ISR shrank below ``min.insync.replicas``: a scenario
written to probe a documented change of Kafka's replication rules (KAFKA-15583, "strict min
ISR", Apache Kafka 3.7.0: the leader advances the HW only while the ISR holds at least
``min(min.insync.replicas, replicas)`` members, whatever the producer's acks).

The scenario: one partition, 3 replicas, ``min.insync.replicas=2``, producers with ``acks=1``
(acknowledged by the leader alone, so they keep being acknowledged under min ISR). The leader's
replication listener is cut for 22 s: both followers leave the ISR, the leader stays leader
(its controller link is intact) and alone in the ISR. Up to 3.6 the HW follows the leader's log
end and consumers read the new records during the cut; from 3.7.0 on the HW stays where it was
until a follower is back in the ISR, and every consumer stalls for the whole window. The test
asserts the pre-3.7 promise (acks=1 records become readable while the leader is alone in the ISR:
``progress``, with ``lost-write`` and ``poll-skip``), so it passed on 3.5.2-3.6.2 and fails from
3.7.0 on (``highwater bisect`` located 3.7.0: docs/sweeps.md, "A bisect on a real difference"):
a deliberate change, not a bug.
"""

from __future__ import annotations

import pytest

from highwater.harness.distribution import parse_version
from highwater.nemesis import Step, scripted
from highwater.suites.scenario import check_verdicts, run_scenario

#: the cut lasts longer than the progress bound (12.5 s) plus the followers' ISR leave (9 s)
CUT_SECONDS = 22
MUST_HOLD = ("lost-write", "poll-skip", "progress")
#: the first release with the strict min ISR rule (KAFKA-15583)
STRICT_MIN_ISR = (3, 7, 0)
#: from 3.7.0 on the pre-3.7 promise no longer holds, by design; ``--runxfail`` (as ``highwater
#: bisect`` runs) judges it by what happened
STRICT_MIN_ISR_MARK = pytest.mark.xfail(
    strict=True,
    reason=(
        "KAFKA-15583 (Kafka 3.7.0, deliberate): the HW does not advance while the ISR is below "
        "min.insync.replicas, so acks=1 records stay unreadable while the leader is alone in the ISR. "
        "Repro: highwater bisect suites/sweep/test_min_isr_hw.py::"
        "test_acks1_records_readable_while_the_leader_is_alone_in_the_isr --good 3.6.0 --bad 3.7.2 --runs 2"
    ),
)


def test_acks1_records_readable_while_the_leader_is_alone_in_the_isr(  # type: ignore[no-untyped-def]
    request, cluster, kafka_version, profile, campaign, results_root, repro
) -> None:
    if parse_version(kafka_version) >= STRICT_MIN_ISR:
        request.applymarker(STRICT_MIN_ISR_MARK)
    result = run_scenario(
        cluster,
        suite="sweep",
        scenario="leader-alone-acks1",
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        nemesis=scripted([Step(3, "cut --target leader:{topic}/0 --listener replication", CUT_SECONDS)]),
        duration=3 + CUT_SECONDS + 12,
        topic="sw-alone-acks1",
        partitions=1,
        acks="1",
        min_insync_replicas=2,
    )
    check_verdicts(result.verdicts, MUST_HOLD, f" (results {result.dir}; repro: {repro})")
