"""Consumer groups: through a member's death and its return, every partition keeps being read.

A group of three members (one per rack) reads a 3-partition topic, committing after each poll.
consumer-1 is killed (SIGKILL: its session expires, the group rebalances without it) and started
again (it rejoins: a second rebalance). With the eager protocol every member gives up all its
partitions at each rebalance and may get some of them back. The promise judged here is the
group's delivery, at least once: every acknowledged record that the final log holds was returned
by some member by the end of the run (the ``group-delivery`` check). Together with the group's
safety checks (``rebalance-skip``, ``commit-ahead``, ``commit-regression``) and the durability
ones.

kafka-python 3.0.0 .. 3.0.8 break it: a member that kept a partition across a rebalance never
fetched it again when a rebalance listener was set (kafka-python #3131, fixed in 3.0.9); the
scenario is what ``tests/integration/test_client_bisect.py`` bisects kafka-python over.

``member-faults`` runs the group under both rebalance protocols (``harness.clients.groups``):
``classic`` and KIP-848's ``consumer`` (the group coordinator assigns; the group's session
timeout is a group config). One member is killed and started again, one frozen past the
session timeout (evicted; it must find itself fenced when it thaws), one frozen for less (a GC
pause: it keeps its partitions). A client without the consumer protocol is skipped with the one
line that says so. The consumer protocol runs with each of KIP-848's server-side assignors
(``group.remote.assignor``): ``[consumer]`` with ``uniform`` (the brokers' default, named), and
``[consumer-range]`` with ``range`` (nightly: ``make test`` leaves it out);
each is a report column of its own (``member-faults-consumer-uniform``,
``member-faults-consumer-range``), beside ``member-faults-classic``.

Three more member-fault scenarios (nightly: ``make test`` leaves them out), with
member-faults' promises and its assertion, on the classic protocol and KIP-848's (uniform):

- ``leader-member-faults`` (classic only: KIP-848's consumer protocol has no leader member, the
  coordinator assigns): the member the coordinator chose as the group's leader
  (``group-leader:<group>``, asked of the coordinator when the fault is applied) killed and
  started again, then the leader of the settled group frozen past the session timeout.
- ``majority-member-faults``: a majority of the members (``members:<group>``: two of three,
  lowest client ids first) killed at once and held past the session timeout, then started
  again; then a majority restarted at once.
- ``member-churn``: members leaving and joining while the load runs, a seeded schedule of
  kills and restarts of one member at a time, 8-10 s apart
  (``suites.scenario.member_churn_steps``).
- ``seeded-member-faults``: a seeded fault schedule (``faults.schedule``, replayable from its
  JSON in run.json) of kills, freezes and restarts drawn over the member selectors: one member
  (``members:<group>:1``), a majority (``members:<group>``), every member, a rack's consumer
  and, on the classic protocol, the leader member (``suites.scenario.member_fault_schedule``).

On KIP-848's consumer protocol every one of them must also keep ``rebalance-barrier``: a member
whose assignment held keeps consuming through another member's rebalance.

Each asserts too that the history records every fault with the client ids it resolved to.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.core.history import read_history
from highwater.core.run_dir import RunDir
from highwater.core.versions import leading_numbers
from highwater.faults.schedule import Schedule
from highwater.harness.clients import get_driver
from highwater.harness.clients.groups import group_protocol_refusal
from highwater.nemesis import PlannedNemesis, scheduled
from highwater.suites.findings import explained_only_by
from highwater.suites.nightly import cases, nightly
from highwater.suites.scenario import (
    GROUP_SESSION_MS,
    PLANS,
    RUN_OPTIONS,
    Plan,
    assert_verdicts,
    check_verdicts,
    client_topic,
    member_fault_schedule,
    run_plan,
)

PLAN = PLANS["groups/member-restart"]
FAULTS = PLANS["groups/member-faults"]
#: member-faults' runs by test id: the group protocol and, with KIP-848's, the server-side assignor
GROUP_RUNS: dict[str, tuple[str, str | None]] = {
    "classic": ("classic", None),
    "consumer": ("consumer", "uniform"),
    "consumer-range": ("consumer", "range"),
}


LEADER_FAULTS = PLANS["groups/leader-member-faults"]
MAJORITY_FAULTS = PLANS["groups/majority-member-faults"]
CHURN = PLANS["groups/member-churn"]
SEEDED = PLANS["groups/seeded-member-faults"]
MIGRATION = PLANS["groups/protocol-migration"]
VERSION_ROLL = PLANS["groups/member-version-roll"]
MEMBERS = ("consumer-0", "consumer-1", "consumer-2")
#: the older release of each client a group starts on before member-version-roll rolls it to the
#: session's: one with the group fixes the suite relies on (kafka-python #3131, fixed in 3.0.9),
#: and for Java and confluent-kafka the first with KIP-848's protocol
ROAD_FROM = {
    "kafka-python": "3.0.9",
    "confluent-kafka": "2.12.0",
    "java": "4.0.0",
    "kafkajs": "2.2.3",
    "franz-go": "1.21.3",
}


def group_run_scenario(protocol: str, assignor: str | None, plan: Plan = FAULTS) -> str:
    """A member-faults run's scenario, a report column of its own: ``member-faults-classic``,
    ``member-faults-consumer-uniform``, ``member-faults-consumer-range`` (``reports.groups``
    strips the suffix and keys its rows by protocol and assignor); the same for the other
    member-fault plans (``leader-member-faults-classic``, ...)."""
    return "-".join([plan.scenario, protocol, *([assignor] if assignor else [])])


def assert_group_delivered(verdicts: list[Verdict]) -> None:
    """The scenario's own assertion: group-delivery holds, and judged something: records were
    owed and every partition had a final read."""
    check_verdicts(verdicts, ("group-delivery",))
    delivery = next(v for v in verdicts if v.check == "group-delivery")
    assert delivery.counts["owed"] > 0, "nothing acknowledged: nothing to judge"
    assert delivery.counts["unjudged"] == 0, f"partitions without a final read: {delivery.counts}"


@nightly("member-faults' first step kills and restarts a member", 50)
def test_every_partition_is_read_through_a_member_restart(cluster, profile, campaign, results_root, repro) -> None:  # type: ignore[no-untyped-def]
    result = run_plan(
        cluster,
        PLAN,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        topic="groups-restart",
        partitions=3,
        consumer_mode="subscribe",
        session_timeout_ms=GROUP_SESSION_MS,
        settle_timeout=10.0,
    )
    assert_verdicts(result, must_hold=PLAN.must_hold)
    assert_group_delivered(result.verdicts)


# make test (--client-rotation kafka-python,confluent-kafka,java,kafkajs): classic on confluent-kafka,
# consumer (uniform) on Java; the None holds kafka-python's turn (its group members are killed and
# restarted in the client bisect, tests/integration/test_client_bisect.py, in the nightly slices;
# make test's franz-go bisect replaced it there). consumer-range is the
# nightly's (make test leaves it out); under the rotation it takes Java's turn again, the seventh
# place of a four-client turn (the Nones hold kafkajs's, kafka-python's and confluent-kafka's),
# so uniform and range meet on one client.
@pytest.mark.client_rotation("group_run", [None, "classic", "consumer", None, None, None, "consumer-range"])
@pytest.mark.parametrize(
    "group_run",
    cases(GROUP_RUNS, {"consumer-range": nightly("the consumer protocol's uniform assignor runs in make test", 45)}),
)
def test_members_killed_and_frozen_lose_nothing(  # type: ignore[no-untyped-def]
    cluster, profile, campaign, results_root, repro, group_run
) -> None:
    events = run_member_faults(FAULTS, group_run, "groups-faults", cluster, profile, campaign, results_root, repro)
    assert_members_faulted_and_back(events)


def assert_members_faulted_and_back(events: list[dict[str, Any]]) -> None:
    """The history shows the faults as planned, the killed member's death (its worker gone, said
    in its next event), and every member reading again after the last fault."""
    faults = [e for e in events if e["process"] == "nemesis" and e["f"] == "fault" and e["type"] == "ok"]
    assert [(e["value"]["kind"], e["value"]["targets"]) for e in faults] == [
        ("client_kill", ["consumer-1"]),
        ("client_freeze", ["consumer-2"]),
        ("client_freeze", ["consumer-0"]),
    ]
    killed_at, last = faults[0]["time_ns"], faults[-1]["time_ns"]
    death = [e for e in events if e["process"] == "consumer-1" and e["type"] == "info" and e["time_ns"] >= killed_at]
    assert death and "WorkerGone" in str(death[0]["error"]) and "client-kill" in str(death[0]["error"]), death[:3]
    for member in ("consumer-0", "consumer-1", "consumer-2"):
        back = [e for e in events if e["process"] == member and e["f"] == "poll" and e["type"] == "ok"]
        assert back and back[-1]["time_ns"] > last, f"{member} read nothing after the faults"


def run_member_faults(  # type: ignore[no-untyped-def]
    plan: Plan,
    group_run: str,
    topic: str,
    cluster,
    profile,
    campaign,
    results_root,
    repro,
    nemesis: PlannedNemesis | None = None,
    **overrides: Any,
) -> list[dict[str, Any]]:
    """Run ``plan`` on ``group_run``'s protocol (skipped with the one line where the client has
    not got it; its steps, or ``nemesis``; ``overrides``: more of the run's settings), judge it
    as member-faults is judged, and return its history's events."""
    protocol, assignor = GROUP_RUNS[group_run]
    driver = get_driver(RUN_OPTIONS.get().client)
    refused = group_protocol_refusal(driver.name, driver.version, cluster.kafka_version, protocol, assignor)
    if refused is not None:
        pytest.skip(refused)
    result = run_plan(
        cluster,
        dataclasses.replace(plan, scenario=group_run_scenario(protocol, assignor, plan)),
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        topic=f"{topic}-{group_run}",
        partitions=3,
        consumer_mode="subscribe",
        session_timeout_ms=GROUP_SESSION_MS,
        group_protocol=protocol,
        group_remote_assignor=assignor,
        settle_timeout=10.0,
        **({"nemesis": nemesis} if nemesis is not None else {}),
        **overrides,
    )
    history = read_history(RunDir(result.dir).history)
    assert history.config["group_protocol"] == protocol  # the header says which protocol it judged
    assert history.config.get("group_remote_assignor") == assignor  # and which assignor
    # KIP-848's promise of no group-wide barrier: judged on the consumer protocol only (classic's
    # eager rebalances stop every member by design; group-measures.json measures both)
    barrier = ("rebalance-barrier",) if protocol == "consumer" else ()
    # HW-29: a ckjs commit resolves once queued, so a next owner may start below one that
    # "returned"; the run is an xfail when the rewind and the regression are all it broke
    why = explained_only_by("HW-29", f"groups/{history.header['scenario']}", result.verdicts, plan.must_hold)
    if why is not None:
        pytest.xfail(why)
    assert_verdicts(result, must_hold=(*plan.must_hold, *barrier))
    assert_group_delivered(result.verdicts)
    return list(history)


def assert_faults_resolved(events: list[dict[str, Any]], plan: Plan, sizes: list[int]) -> list[list[str]]:
    """Every step of ``plan`` applied once, in order, with its selector in the recorded spec and
    the client ids it resolved to (``sizes[i]`` of them, all members) as its targets; every member
    reads again after the last fault. Returns the targets, step by step."""
    faults = [e for e in events if e["process"] == "nemesis" and e["f"] == "fault" and e["type"] == "ok"]
    assert [e["value"]["kind"] for e in faults] == [s.kind.value for s in plan.steps], faults
    targets = [list(e["value"]["targets"]) for e in faults]
    for step, fault, n in zip(plan.steps, faults, sizes, strict=True):
        selector = step.fault.split("--target ")[1].split()[0].split(":")[0]
        assert f"--target {selector}" in fault["value"]["spec"], (step.fault, fault["value"]["spec"])
        assert len(fault["value"]["targets"]) == n and set(fault["value"]["targets"]) <= set(MEMBERS), fault["value"]
    last = faults[-1]["time_ns"]
    for member in MEMBERS:
        back = [e for e in events if e["process"] == member and e["f"] == "poll" and e["type"] == "ok"]
        assert back and back[-1]["time_ns"] > last, f"{member} read nothing after the faults"
    return targets


# Nightly only (make test leaves them out): each runs on whichever client the session names
# (--client), on the protocols that have the fault; member-faults' kills and freezes run in make test.
GROUP_FAULTS_NIGHTLY = "member-faults on both protocols (make test) kill and freeze members of a live group"


@nightly(GROUP_FAULTS_NIGHTLY, 50)
@pytest.mark.parametrize("group_run", ["classic"])  # the consumer protocol has no leader member
def test_the_leader_member_killed_then_frozen_loses_nothing(  # type: ignore[no-untyped-def]
    cluster, profile, campaign, results_root, repro, group_run
) -> None:
    events = run_member_faults(
        LEADER_FAULTS, group_run, "groups-leader", cluster, profile, campaign, results_root, repro
    )
    assert_faults_resolved(events, LEADER_FAULTS, [1, 1])


@nightly(GROUP_FAULTS_NIGHTLY, 50)
@pytest.mark.parametrize("group_run", ["classic", "consumer"])
def test_a_majority_of_members_killed_then_restarted_loses_nothing(  # type: ignore[no-untyped-def]
    cluster, profile, campaign, results_root, repro, group_run
) -> None:
    events = run_member_faults(
        MAJORITY_FAULTS, group_run, "groups-majority", cluster, profile, campaign, results_root, repro
    )
    # floor(3/2)+1 = 2 members, lowest client ids first
    assert assert_faults_resolved(events, MAJORITY_FAULTS, [2, 2]) == [["consumer-0", "consumer-1"]] * 2


@nightly(GROUP_FAULTS_NIGHTLY, 105)
@pytest.mark.parametrize("group_run", ["classic", "consumer"])
def test_member_churn_loses_nothing(  # type: ignore[no-untyped-def]
    cluster, profile, campaign, results_root, repro, group_run
) -> None:
    events = run_member_faults(CHURN, group_run, "groups-churn", cluster, profile, campaign, results_root, repro)
    targets = assert_faults_resolved(events, CHURN, [1] * len(CHURN.steps))
    assert targets == [[s.fault.rsplit(":", 1)[1]] for s in CHURN.steps]


@nightly(GROUP_FAULTS_NIGHTLY, 65)
@pytest.mark.parametrize("group_run", ["classic", "consumer"])
def test_seeded_member_faults_lose_nothing(  # type: ignore[no-untyped-def]
    cluster, profile, campaign, results_root, repro, group_run
) -> None:
    topic = "groups-seeded"
    protocol = GROUP_RUNS[group_run][0]
    group = client_topic(f"{topic}-{group_run}", RUN_OPTIONS.get().client) + "-group"  # RunSpec.group_id()
    schedule = member_fault_schedule(cluster.topo, group, protocol)
    assert Schedule.from_json(schedule.to_json()) == schedule  # replayable from run.json
    events = run_member_faults(
        SEEDED, group_run, topic, cluster, profile, campaign, results_root, repro, nemesis=scheduled(schedule)
    )
    applied = [e for e in events if e["process"] == "nemesis" and e["f"] == "fault" and e["type"] == "ok"]
    assert [e["value"]["spec"] for e in applied] == [str(sf.spec) for sf in schedule.faults], applied
    assert all(e["value"]["targets"] and set(e["value"]["targets"]) <= set(MEMBERS) for e in applied), applied


# -- clients on the road between releases: a group's members restarted one at a time on a
# newer client, or migrated online from the classic protocol to KIP-848's (nightly; the upgrade
# suite's roll-kill-finalize runs in make test)
ROAD_NIGHTLY = (
    "member-faults (make test) restart members of a live group; upgrades/roll-kill-finalize rolls the brokers"
)


def assert_members_relaunched(events: list[dict[str, Any]], key: str, before: str, after: str) -> None:
    """Each member restarted once, in turn, and the history says what on: its ``key`` (the
    client, or the group protocol) went from ``before`` to ``after``; every member reads again
    after its own restart and after the last one."""
    faults = [e for e in events if e["process"] == "nemesis" and e["f"] == "fault" and e["type"] == "ok"]
    assert [(e["value"]["kind"], e["value"]["targets"]) for e in faults] == [
        ("client_restart", [m]) for m in MEMBERS
    ], faults
    for fault, member in zip(faults, MEMBERS, strict=True):
        moved = (fault["value"].get("members") or {}).get(member) or {}
        got = ((moved.get("from") or {}).get(key), (moved.get("to") or {}).get(key))
        assert got == (before, after), f"{member}'s restart recorded {key} {got}, not {(before, after)}"
        reads = [e for e in events if e["process"] == member and e["f"] == "poll" and e["type"] == "ok"]
        assert any(e["time_ns"] > fault["time_ns"] for e in reads), f"{member} read nothing after its restart"
    last = faults[-1]["time_ns"]
    for member in MEMBERS:
        back = [e for e in events if e["process"] == member and e["f"] == "poll" and e["type"] == "ok"]
        assert back and back[-1]["time_ns"] > last, f"{member} read nothing after the last restart"


@nightly(ROAD_NIGHTLY, 60)
def test_a_classic_group_migrates_online_to_the_consumer_protocol(  # type: ignore[no-untyped-def]
    cluster, profile, campaign, results_root, repro
) -> None:
    driver = get_driver(RUN_OPTIONS.get().client)
    refused = group_protocol_refusal(driver.name, driver.version, cluster.kafka_version, "consumer")
    if refused is not None:
        pytest.skip(refused)
    events = run_member_faults(
        MIGRATION, "classic", "groups-migration", cluster, profile, campaign, results_root, repro
    )
    assert_members_relaunched(events, "group_protocol", "classic", "consumer")
    assert_group_converted(events)


def assert_group_converted(events: list[dict[str, Any]]) -> None:
    """From the first member's restart on the consumer protocol on, the group's coordinator lists
    a consumer group (KIP-848's online migration converted the classic group)."""
    faults = [e for e in events if e["process"] == "nemesis" and e["f"] == "fault" and e["type"] == "ok"]
    types = [m.get("group_type") for e in faults for m in (e["value"].get("members") or {}).values()]
    assert types == ["consumer"] * len(MEMBERS), f"the group's type after each restart: {types}"


@nightly(ROAD_NIGHTLY, 60)
def test_a_group_rolled_to_a_newer_client_loses_nothing(  # type: ignore[no-untyped-def]
    cluster, profile, campaign, results_root, repro
) -> None:
    session = get_driver(RUN_OPTIONS.get().client)
    start = ROAD_FROM.get(session.name)
    if start is None or leading_numbers(session.version) <= leading_numbers(start):
        pytest.skip(f"no older {session.name} release on record to roll a group from to {session.version}")
    events = run_member_faults(
        VERSION_ROLL,
        "classic",
        "groups-client-roll",
        cluster,
        profile,
        campaign,
        results_root,
        repro,
        client=f"{session.name}=={start}",
        client_to=session.version,
    )
    assert_members_relaunched(events, "client", f"{session.name} {start}", f"{session.name} {session.version}")
