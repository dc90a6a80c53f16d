"""Transactions (KIP-98) and consumer groups: a read_committed consumer never returns a record of
an aborted or still open transaction, and a committed transaction is visible whole; a group
never commits past what its members read, never lets its committed offset go backwards, and
never skips records when a partition moves to another member.

Producers write transactions of four records spread over the three partitions, a quarter of
them aborted on purpose (seeded); two consumers read committed, the third uncommitted, side by
side (so the aborted data is there to be misread). Scenarios: ``coordinators-kill`` kills the two
coordinators the KIP adds, the transaction coordinator of producer-0's transactional id and the
group coordinator of the consumers' group (subscribe mode, offsets committed after every poll,
each commit recorded); ``exactly-once-copy`` adds two copiers that copy the topic in
transactions with the consumed offsets inside (``harness.workload.copy``) and kills the source
partition's leader, then copier-0's transaction coordinator. Checks: ``aborted-read``,
``open-txn-read``, ``torn-transaction``, ``lost-write`` (a committed transaction's writes),
``commit-ahead``, ``commit-regression``, ``rebalance-skip``, ``copy-exactly-once``, and the
durability checks (``docs/checks.md``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from highwater.core.checks.txn import txn_ends
from highwater.core.checks.verdict import Verdict
from highwater.core.findings import find
from highwater.core.history import read_history
from highwater.core.history.format import source_of
from highwater.core.run_dir import RunDir
from highwater.harness.clients import TransactionalClient, get_driver, parse_client_spec
from highwater.harness.clients.txnversion import transaction_version_refusal
from highwater.runner import record_beyond
from highwater.suites.findings import FINDINGS, HW9_COORDINATOR_CUT, HW23_TRANSACTIONS, expect_kafkajs_transactions
from highwater.suites.hw8 import without_hw8
from highwater.suites.hw27 import HW27_CLIENTS, without_hw27
from highwater.suites.nightly import cases, nightly
from highwater.suites.scenario import (
    PRODUCER_LINKS,
    RUN_OPTIONS,
    TRANSACTION_PLANS,
    check_verdicts,
    describe,
    run_once,
    run_plan,
)

#: the suite's scenarios by name (their plans are data in ``highwater.suites.scenario``)
TXN_PLANS = {p.scenario: p for p in TRANSACTION_PLANS}
#: the suite's workload: transactional producers, acks=all on two in-sync replicas, read_committed
#: consumers and one read_uncommitted beside them
TXN_WORKLOAD: dict[str, Any] = {
    "acks": "all",
    "min_insync_replicas": 2,
    "transactional": True,
    "isolation_level": "read_committed",
    "read_uncommitted_consumers": 1,
}
#: HW-10, HW-15 and HW-26 (docs/findings.md): kafka-python, kafkajs and franz-go commit a
#: transaction one of whose records failed for good. The first two have deterministic repros as
#: strict xfails (tests/integration/test_findings_by_client.py); here they strike when a fault outlasts the
#: delivery timeout (kafkajs: its retries), so their losses are subtracted, exactly, and
#: everything else is judged as for any client.
#: The clients and the checks come from their records (core/findings.toml).
COMMITS_AFTER_FAILED_SEND = {c: fid for fid in ("HW-10", "HW-15", "HW-26") for c in find(FINDINGS, fid).clients}
HW10 = COMMITS_AFTER_FAILED_SEND["kafka-python"]
#: the checks whose anomalies HW-10 can explain (each is checked against the history below)
HW10_CHECKS = frozenset(c for s in find(FINDINGS, HW10).shows for c in s.checks)


def hw10_writes(history: Path) -> tuple[set[str], set[str]]:
    """The values and transactions HW-10 explains: sends that did not end ``ok`` (their batch
    failed for good: expired, ``Expiring ... record(s)``, or a retriable error out of retries,
    e.g. KIP-890's ``NotEnoughReplicasError: Unable to verify the partition has been added to
    the transaction`` while the transaction coordinator is cut off) inside a transaction whose
    commit is ``ok``. Only the writes the log lacks are subtracted (lost-write counts no other)."""
    events = list(read_history(history))
    committed = {txn for txn, (ok, _) in txn_ends(events).items() if ok}
    expired: dict[str, str] = {}
    for ev in events:
        v = ev.get("value") or {}
        if ev["f"] == "send" and ev["type"] in ("info", "fail") and v.get("txn"):
            expired[str(v["value"])] = v["txn"]
    values = {val for val, txn in expired.items() if txn in committed}
    return values, {expired[val] for val in values}


def without_hw10(
    verdicts: list[Verdict], history: Path, finding: str = HW10, client: str = "kafka-python"
) -> list[Verdict]:
    """The verdicts with lost-write, torn-transaction and copy-exactly-once dropped when HW-10
    (or HW-15, kafkajs's same behaviour: ``finding`` of ``client``) explains every loss, every
    tear and every missing copy they report (their counts and examples are checked against the
    history); any other copy anomaly is not explained."""
    values, txns = hw10_writes(history)
    by = {v.check: v for v in verdicts}
    lost, torn = by["lost-write"], by["torn-transaction"]
    if all(v.valid is not False for v in (lost, torn, by.get("copy-exactly-once", lost))):
        return verdicts
    copy = by.get("copy-exactly-once")
    lost_values = {e["events"][0]["value"]["value"] for e in lost.examples}
    torn_txns = {e["txn"] for e in torn.examples}
    # an exactly-once copy whose copies failed for good: its source records are missing in the sink
    copied_away = {source_of(v) for v in values}
    missing = {e["value"] for e in copy.examples if e["kind"] == "missing"} if copy else set()
    explained = (
        lost.counts.get("lost", 0) <= len(values)
        and lost_values <= values
        and torn.counts.get("torn-final", 0) + torn.counts.get("torn-reads", 0) <= 3 * len(txns)
        and torn_txns <= txns
        and (
            copy is None
            or copy.valid is not False
            or (
                copy.counts["missing"] <= len(copied_away)
                and copy.counts["missing"] == sum(copy.counts[k] for k in ("missing", "duplicated", "phantom"))
                and missing <= copied_away
            )
        )
    )
    if not explained:  # the run's class says so too: the finding does not explain these here
        record_beyond(
            history.parent, finding, [v.check for v in (lost, torn, copy) if v is not None and v.valid is False]
        )
    assert explained, f"losses beyond {finding}:\n" + describe([v for v in (lost, torn, copy) if v is not None])
    print(f"{finding}: {len(values)} write(s) of {len(txns)} committed transaction(s) failed for good ({client})")
    if copy is not None and copy.counts.get("missing"):
        print(
            f"{finding}: {copy.counts['missing']} record(s) of the exactly-once copy lost: "
            "their offsets committed, their copies not"
        )
    return [v for v in verdicts if v.check not in HW10_CHECKS]


#: the consumers of each scenario: assign mode, or one group in subscribe mode
MODES = {"coordinators-kill": "subscribe", "coordinators-cut-pause": "subscribe", "exactly-once-copy": "assign"}
#: exactly-once copiers per scenario (harness.workload.copy)
COPIERS = {"exactly-once-copy": 2}
#: RunSpec settings of a scenario beyond the suite's: the copy runs one source producer, so the
#: nine clients of one Python process (GIL) keep up with the bounds of the timed checks
OVERRIDES = {"exactly-once-copy": {"producers": 1}}


@pytest.mark.client_rotation("scenario", list(TXN_PLANS))  # make test: one scenario per client
@pytest.mark.parametrize(
    "scenario",
    cases(
        TXN_PLANS,
        {"coordinators-cut-pause": nightly("coordinators-kill and exactly-once-copy stay in make test", 50)},
    ),
)
def test_read_committed_sees_only_whole_committed_transactions(
    request,
    cluster,
    profile,
    campaign,
    results_root,
    repro,
    kafka_version,  # type: ignore[no-untyped-def]
    scenario,
) -> None:
    client = RUN_OPTIONS.get().client
    if not isinstance(get_driver(client), TransactionalClient):
        pytest.skip(f"{client} has no transactional producer in highwater yet")
    # HW-14's aborted reads strike in any scenario, HW-13's stalls where a broker dies: one mark,
    # since pytest applies only the first xfail mark that matches
    expect_kafkajs_transactions(request)
    HW23_TRANSACTIONS.expect(request)  # franz-go's rack consumers stay on a killed follower
    if scenario == "coordinators-cut-pause":
        HW9_COORDINATOR_CUT.expect(request)
    result = run_once(
        kafka_version,
        f"transactions/{scenario}",
        lambda: run_plan(
            cluster,
            TXN_PLANS[scenario],
            profile=profile,
            campaign=campaign,
            results_root=results_root,
            repro=repro,
            topic=f"txn-{scenario}",
            **TXN_WORKLOAD,
            consumer_mode=MODES[scenario],
            copiers=COPIERS.get(scenario, 0),
            **OVERRIDES.get(scenario, {}),
        ),
    )
    by = {v.check: v for v in result.verdicts}
    stats = result.stats["producers"]
    # the workload did what it says: transactions committed and aborted, aborted data was there
    assert sum(p["committed"] for p in stats.values()) > 0, stats
    assert sum(p["aborted"] for p in stats.values()) > 0, stats
    assert by["aborted-read"].counts["reads"] > 0 and by["torn-transaction"].counts["judged-final"] > 0
    assert by["uncommitted-read"].counts.get("txn_uncommitted_allowed", 0) > 0, (
        "the read_uncommitted consumer read no aborted record"
    )
    verdicts, must_hold = result.verdicts, TXN_PLANS[scenario].must_hold
    name = parse_client_spec(client).name
    if name in COMMITS_AFTER_FAILED_SEND:
        verdicts = without_hw10(verdicts, RunDir(result.dir).history, COMMITS_AFTER_FAILED_SEND[name], name)
    verdicts, zombie = without_hw8(verdicts, RunDir(result.dir).history)
    for z in zombie:
        print(z)
    kept = {v.check for v in verdicts}
    must_hold = tuple(c for c in must_hold if c in kept)
    check_verdicts(verdicts, must_hold, f" in run {result.run_id} ({result.dir})")
    if MODES[scenario] == "subscribe":
        assert by["commit-ahead"].counts["commits"] > 0
    if COPIERS.get(scenario):
        copied = sum(result.stats["producers"][c].get("copied", 0) for c in result.stats["producers"])
        assert copied > 0 and by["copy-exactly-once"].counts["judged"] > 0, by["copy-exactly-once"]
        assert by["commit-ahead"].counts["commits"] > 0


@nightly("make test's transactions run on the release's default transaction.version", 65)
@pytest.mark.parametrize("version", [1, 2])
def test_transactions_v1_and_v2_through_faults_on_the_producer_s_links(  # type: ignore[no-untyped-def]
    cluster, profile, campaign, results_root, repro, kafka_version, version
) -> None:
    """The same transactional workload and faults on each transaction.version (nightly: make
    test leaves it out); a client or release without v2 is skipped with the line that says so."""
    client = RUN_OPTIONS.get().client
    driver = get_driver(client)
    if not isinstance(driver, TransactionalClient):
        pytest.skip(f"{client} has no transactional producer in highwater yet")
    refused = transaction_version_refusal(driver.name, driver.version, cluster.kafka_version, version)
    if refused is not None:
        pytest.skip(refused)
    result = run_once(
        kafka_version,
        f"transactions/producer-links-v{version}",
        lambda: run_plan(
            cluster,
            dataclasses.replace(PRODUCER_LINKS, scenario=f"{PRODUCER_LINKS.scenario}-tv{version}"),  # own report column
            profile=profile,
            campaign=campaign,
            results_root=results_root,
            repro=repro,
            topic=f"txn-links-v{version}",
            transaction_version=version,
            **TXN_WORKLOAD,
        ),
    )
    config = read_history(RunDir(result.dir).history).config  # the header says which version it judged
    assert config.get("transaction_version", 1) == version, config.get("transaction_version")
    stats = result.stats["producers"]
    assert sum(p["committed"] for p in stats.values()) > 0 and sum(p["aborted"] for p in stats.values()) > 0, stats
    verdicts = result.verdicts
    name = parse_client_spec(client).name
    if name in COMMITS_AFTER_FAILED_SEND:
        verdicts = without_hw10(verdicts, RunDir(result.dir).history, COMMITS_AFTER_FAILED_SEND[name], name)
    if name in HW27_CLIENTS:  # a consumer stranded by a broker missing from its metadata
        verdicts = without_hw27(verdicts, RunDir(result.dir).history)
    # HW-8's stalls subtracted exactly, as the suite's other transactional runs do (a stall
    # beyond it still fails, and the run's class records it)
    verdicts, _ = without_hw8(verdicts, RunDir(result.dir).history)
    kept = {v.check for v in verdicts}
    check_verdicts(verdicts, tuple(c for c in PRODUCER_LINKS.must_hold if c in kept), f" in run {result.run_id}")
