"""``highwater replay``: what a replay is planned from a manifest (no cluster here; the end-to-end
replay on a real cluster is tests/integration/test_replay.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from highwater.cli import main
from highwater.cli_replay import plan_replay
from highwater.core.errors import HighwaterError
from highwater.core.manifest import ClusterShape, NemesisRecord, RunManifest, ScriptedStep
from highwater.nemesis import Step, scripted
from highwater.runner import describe_nemesis
from tests.unit.test_manifest import OLD_RUNNER, full_manifest, schedule


def test_a_scheduled_run_is_planned_as_recorded(tmp_path: Path) -> None:
    m = full_manifest()
    plan = plan_replay(m, tmp_path / "orig", results_root=tmp_path / "out")
    assert plan.backend == "local"
    assert (plan.cluster.brokers, plan.cluster.racks, plan.cluster.controllers) == (3, 3, 0)
    assert plan.cluster.kafka_version == "4.3.1"
    assert dict(plan.cluster.broker_config) == {"replica.lag.time.max.ms": "4000"}
    assert (plan.spec.suite, plan.spec.scenario, plan.spec.seed, plan.spec.client) == (
        "chaos",
        "seed-7",
        7,
        "kafka-python",
    )
    assert plan.spec.campaign == "replay-c" and plan.spec.results_root == tmp_path / "out"
    assert plan.spec.repro == f"highwater replay {tmp_path / 'orig'}"
    assert plan.spec.extra["note"] == "x" and plan.spec.extra["replay_of"]["run_id"] == m.run_id
    assert plan.schedule is not None and plan.schedule.faults == schedule().faults
    assert plan.nemesis is not None and describe_nemesis(plan.nemesis) == m.nemesis  # the same faults again


def test_a_scripted_run_keeps_its_steps(tmp_path: Path) -> None:
    steps = [Step(4, "kill --target leader:{topic}/0", 20)]
    m = replace(full_manifest(), nemesis=describe_nemesis(scripted(steps)))
    plan = plan_replay(m, tmp_path, results_root=tmp_path, campaign="again")
    assert plan.spec.campaign == "again" and plan.schedule is None
    assert describe_nemesis(plan.nemesis).steps == (ScriptedStep(4.0, "kill --target leader:{topic}/0", 20.0),)
    quiet = plan_replay(replace(m, nemesis=NemesisRecord("none")), tmp_path, results_root=tmp_path)
    assert quiet.nemesis is None


def test_an_old_runner_manifest_with_a_schedule_is_replayable(tmp_path: Path) -> None:
    sched = schedule(1).to_dict()
    old = {**OLD_RUNNER, "spec": {**OLD_RUNNER["spec"], "extra": {"schedule": sched}}}  # type: ignore[dict-item]
    plan = plan_replay(RunManifest.from_json(old), tmp_path, results_root=tmp_path)
    assert plan.schedule is not None and plan.schedule.seed == 1 and plan.spec.seed == 1
    assert plan.cluster.kafka_version == "4.1.0"


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"nemesis": NemesisRecord("custom", name="suites.x.unclean_truncation.<locals>.run")},
            "its nemesis was code, not data (suites.x.unclean_truncation.<locals>.run)",
        ),
        ({"nemesis": NemesisRecord("unrecorded")}, "predates recorded nemeses"),
        ({"cluster": None}, "records no cluster shape"),
        ({"cluster": ClusterShape(backend="cloud")}, "unknown backend 'cloud'"),
        ({"spec": {}}, "records no run spec"),
    ],
)
def test_what_cannot_be_replayed_is_refused_in_one_line(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(HighwaterError) as err:
        plan_replay(replace(full_manifest(), **change), tmp_path, results_root=tmp_path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_an_unknown_client_is_refused(tmp_path: Path) -> None:
    m = full_manifest()
    with pytest.raises(HighwaterError, match="rdkafka-9"):
        plan_replay(replace(m, spec={**m.spec, "client": "rdkafka-9"}), tmp_path, results_root=tmp_path)


def test_the_command_refuses_before_starting_a_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "run"
    d.mkdir()
    replace(full_manifest(), nemesis=NemesisRecord("custom", name="f")).write(d / "run.json")
    assert main(["replay", str(d)]) == 4  # refused
    assert "cannot be replayed: its nemesis was code" in capsys.readouterr().err
    (d / "run.json").write_text(json.dumps({**full_manifest().to_json(), "format": "highwater.run/2"}))
    assert main(["replay", str(d / "run.json")]) == 4
    assert "unsupported run manifest version" in capsys.readouterr().err
