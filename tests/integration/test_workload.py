"""Issue 3 end to end: a real workload on a real cluster with no faults keeps every promise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cluster import Cluster
from harness.history import read_history
from highwater.runner import RunSpec, execute_run


def test_fault_free_run_is_valid_on_every_check(cluster: Cluster, tmp_path: Path) -> None:
    spec = RunSpec(suite="workload", scenario="no-faults", campaign="test", results_root=tmp_path,
                   duration=12, partitions=2, rate=50, producers=2, topic="wl-assign")
    result = execute_run(cluster, spec, progress=print)
    by_check = {v.check: v for v in result.verdicts}
    assert {v.check: v.valid for v in result.verdicts if v.valid is not True} == {}, \
        json.dumps([v.to_json() for v in result.verdicts if v.valid is not True], default=str)[:3000]
    assert by_check["lost-write"].counts  # it judged something
    history = read_history(result.dir / "history.jsonl")
    kinds = {(e["process"].split("-")[0], e["f"], e["type"]) for e in history}
    assert {("producer", "send", "ok"), ("consumer", "poll", "ok"), ("consumer", "assign", "ok"),
            ("probe", "meta", "ok"), ("final", "final-read", "ok")} <= kinds
    finals = [e for e in read_history(result.dir / "history.jsonl") if e["f"] == "final-read"]
    assert len(finals) == 2 * 3  # every replica of every partition
    acked = sum(p["acked"] for p in result.stats["producers"].values())
    assert acked > 0 and sum(len(e["value"]["records"]) for e in finals) == 3 * acked
    run = json.loads((result.dir / "run.json").read_text())
    assert run["valid"] is True and run["kafka_version"] == cluster.kafka.version  # type: ignore[union-attr]


@pytest.mark.xfail(strict=False, reason=(
    "FINDING CANDIDATE HW-7 (not yet diagnosed): now and then one member of a kafka-python 3.0.12 "
    "group is assigned a partition and never fetches it; the progress check flags a ~38 s stall "
    "until the coordinator evicts the member and another one reads the partition from 0. Seen in "
    "1 of 4 CI runs; see README, Findings."))
@pytest.mark.parametrize("acks, idempotence", [("1", False), ("all", True)])
def test_group_consumers_with_acks_and_idempotence(cluster: Cluster, tmp_path: Path, acks: str,
                                                   idempotence: bool) -> None:
    """subscribe (group) mode records its assignments; acks and idempotence are recorded in the
    header, which is what the policy reads."""
    spec = RunSpec(suite="workload", scenario=f"group-acks{acks}", campaign="test", results_root=tmp_path,
                   duration=10, partitions=3, rate=50, consumer_mode="subscribe", acks=acks,
                   idempotence=idempotence, topic=f"wl-group-{acks}")
    result = execute_run(cluster, spec, progress=print)
    assert [v.check for v in result.verdicts if v.valid is False] == []
    history = read_history(result.dir / "history.jsonl")
    assert history.config["acks"] == acks and history.config["idempotence"] is idempotence
    assigns = [e for e in history if e["f"] == "assign" and e["value"]["reason"] == "rebalance"]
    assert {(e["value"]["topic"], e["value"]["partition"]) for e in assigns} == {(spec.topic, p) for p in range(3)}
