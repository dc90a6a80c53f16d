"""Issue 3 end to end: a real workload on a real cluster with no faults keeps every promise."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cluster import Cluster
from harness.history import read_history
from harness.runner import RunSpec, execute_run


def test_fault_free_run_is_valid_on_every_check(cluster: Cluster, tmp_path: Path) -> None:
    spec = RunSpec(suite="workload", scenario="no-faults", campaign="test", results_root=tmp_path,
                   duration=12, partitions=2, rate=50, producers=2)
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
