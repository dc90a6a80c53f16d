"""The run manifest (run.json): one versioned type for the runner and the reports; old files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from highwater.core.errors import HighwaterError
from highwater.core.manifest import (
    FORMAT,
    ClusterShape,
    ManifestError,
    NemesisRecord,
    Racks,
    RunManifest,
    RunStats,
    ScriptedStep,
    iso_utc,
)
from highwater.faults.schedule import Schedule, ScheduleConfig
from highwater.nemesis import Step, scheduled, scripted
from highwater.reports.layout import load_run
from highwater.run_spec import RunSpec, run_spec_from_json, run_spec_to_json
from highwater.runner import describe_nemesis, run_seed
from tests.unit.fault_topology import topo


def schedule(seed: int = 7) -> Schedule:
    return Schedule.generate(
        topo(3, 3), seed, ScheduleConfig(length=30, duration=(2.0, 4.0), gap=(1.0, 2.0), partitions=("t/0",))
    )


def full_manifest() -> RunManifest:
    spec = RunSpec(suite="chaos", scenario="seed-7", campaign="c", seed=7, extra={"note": "x"})
    return RunManifest(
        run_id="20260101T000000-seed-7-abcdef",
        suite="chaos",
        scenario="seed-7",
        campaign="c",
        kafka_version="4.3.1",
        client="kafka-python 2.2.3",
        config={"acks": "all", "bounds": {"x": 1}},
        seed=7,
        repro="highwater campaign --seed 7",
        started_at="2026-01-01T00:00:00Z",
        ended_at="2026-01-01T00:01:10Z",
        python="3.11.9",
        cluster=ClusterShape("local", 3, 3, 0, {"replica.lag.time.max.ms": "4000"}),
        racks=Racks({"1": "rack-a", "2": "rack-b"}, {"consumer-0": "rack-a"}),
        spec=run_spec_to_json(spec),
        nemesis=describe_nemesis(scheduled(schedule())),
        client_bytes={"rack-a": {"1": 100, "2": 0}},
        stats=RunStats(
            {"producer-0": {"sent": 10, "acked": 9}}, {"consumer-0": 9}, {}, {"settle": 2.5, "checks": 0.25}
        ),
        valid=True,
    )


def test_round_trip_through_json_text() -> None:
    m = full_manifest()
    back = RunManifest.from_json(json.loads(m.dumps()))
    assert back == m and back.format == FORMAT and not back.legacy
    assert back.schedule is not None and back.schedule["seed"] == 7
    assert Schedule.from_dict(back.schedule).faults == schedule().faults  # the schedule survives as data
    assert back.client_name == "kafka-python"


def test_write_and_read_a_run_dir(tmp_path: Path) -> None:
    m = full_manifest()
    m.write(tmp_path / "run.json")
    assert RunManifest.read(tmp_path) == m
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary file left


@pytest.mark.parametrize(
    "change, message",
    [
        ({"format": "highwater.run/2"}, "unsupported run manifest version 'highwater.run/2'"),
        ({"format": "something/1"}, "not a highwater run manifest"),
        ({"format": 3}, "not a highwater run manifest"),
        ({"schedule": {}}, "unknown field(s) in a highwater.run/1 manifest: schedule"),
        ({"run_id": ""}, "manifest lacks run_id"),
        ({"suite": None}, "manifest lacks suite"),
        ({"started_at": 1700000000.5}, "'started_at' must be an ISO 8601 time string"),
        ({"started_at": "yesterday"}, "not an ISO 8601 time"),
        ({"seed": "7"}, "'seed' must be an integer"),
        ({"nemesis": {"kind": "chaos"}}, "unknown nemesis kind 'chaos'"),
        ({"nemesis": {"kind": "scheduled"}}, "needs its 'schedule' object"),
        ({"nemesis": {"kind": "scripted", "steps": [{"after": 1}]}}, "malformed scripted step"),
        ({"cluster": {"brokers": "three"}}, "'cluster.brokers' must be an integer"),
        ({"cluster": {"nodes": 3}}, "unknown field(s) in cluster: nodes"),
        ({"client_bytes": {"rack-a": {"1": "many"}}}, "malformed client_bytes"),
        ({"valid": "maybe"}, "'valid' must be true, false"),
    ],
)
def test_malformed_or_unknown_version_is_one_clear_error(change: dict[str, Any], message: str) -> None:
    data = {**full_manifest().to_json(), **change}
    with pytest.raises(ManifestError) as err:
        RunManifest.from_json(data)
    assert message in str(err.value)
    assert isinstance(err.value, HighwaterError)  # the CLI prints it as one line


def test_read_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(ManifestError, match=r"run\.json: not readable as JSON"):
        RunManifest.read(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({**full_manifest().to_json(), "format": "highwater.run/9"}))
    with pytest.raises(ManifestError, match=r"run\.json: unsupported run manifest version"):
        RunManifest.read(tmp_path / "run.json")
    with pytest.raises(ManifestError, match="no run manifest"):
        RunManifest.read(tmp_path / "nowhere")
    (tmp_path / "run.json").write_text("[1, 2]")
    with pytest.raises(ManifestError, match="must be a JSON object"):
        RunManifest.read(tmp_path)


# -- old run.json files --------------------------------------------------------------------------

#: what the runner wrote before the manifest had a type (an untyped dict)
OLD_RUNNER = {
    "run_id": "20251101T101010-seed-1-0a0b0c",
    "suite": "chaos",
    "scenario": "seed-1",
    "campaign": "ci-1",
    "kafka_version": "4.1.0",
    "client": "kafka-python 2.2.3",
    "config": {"acks": "all"},
    "seed": 1,
    "repro": "highwater run suites/chaos",
    "started_at": 1762000000.25,
    "ended_at": 1762000070.0,
    "racks": {"brokers": {"1": "rack-a"}, "clients": {"consumer-0": "rack-a"}},
    "python": "3.11.2",
    "cluster": {"brokers": 3, "racks": 3, "controllers": 0, "broker_config": {}},
    "spec": {
        "suite": "chaos",
        "scenario": "seed-1",
        "seed": 1,
        "retired_field": 1,
        "extra": {"schedule": {"format": "highwater.schedule/1", "seed": 1, "faults": []}},
    },
    "client_bytes": {"rack-a": {"1": 5}},
    "stats": {
        "producers": {"producer-0": {"sent": 3, "acked": 3}},
        "consumers": {"consumer-0": 3},
        "worker_errors": {},
    },
    "valid": False,
}


def test_an_old_runner_manifest_keeps_its_schedule_and_start_time() -> None:
    m = RunManifest.from_json(OLD_RUNNER)
    assert m.legacy and m.format == FORMAT
    assert m.started_at == iso_utc(1762000000.25) == "2025-11-01T12:26:40Z"
    assert m.ended_at == "2025-11-01T12:27:50Z"
    assert m.nemesis.kind == "scheduled" and m.schedule == OLD_RUNNER["spec"]["extra"]["schedule"]  # type: ignore[index]
    assert m.cluster == ClusterShape("local", 3, 3, 0, {}) and m.valid is False
    assert m.client_bytes == {"rack-a": {"1": 5}} and m.stats is not None and m.stats.consumers == {"consumer-0": 3}
    # re-written, it is a current manifest
    assert RunManifest.from_json(json.loads(m.dumps())).schedule == m.schedule


def test_hand_written_and_partial_old_manifests() -> None:
    m = RunManifest.from_json(
        {
            "suite": "s",
            "scenario": "x",
            "repro": "cmd",
            "started_at": "2025-01-01T00:00:00Z",
            "schedule": {"faults": [{"kind": "kill"}]},
            "racks": "garbage",
            "seed": True,
        }
    )
    assert m.started_at == "2025-01-01T00:00:00Z" and m.schedule == {"faults": [{"kind": "kill"}]}
    assert m.racks == Racks() and m.seed is None and m.repro == "cmd"
    bare = RunManifest.from_legacy({}, run_id="dir-name")
    assert (bare.run_id, bare.suite, bare.nemesis.kind, bare.started_at) == ("dir-name", "default", "unrecorded", None)
    assert not bare.nemesis.replayable


# -- the report reads run.json through the type -----------------------------------------------------


def test_the_report_reads_schedule_and_start_time(tmp_path: Path) -> None:
    d = tmp_path / "c" / "r1"
    d.mkdir(parents=True)
    full_manifest().write(d / "run.json")
    info = load_run(tmp_path, d, 0)
    assert info.started_at == "2026-01-01T00:00:00Z"
    assert info.schedule is not None and info.schedule["seed"] == 7
    assert (info.suite, info.scenario, info.campaign, info.run_id) == (
        "chaos",
        "seed-7",
        "c",
        "20260101T000000-seed-7-abcdef",
    )
    assert info.racks["brokers"] == {"1": "rack-a", "2": "rack-b"} and info.client_bytes == {
        "rack-a": {"1": 100, "2": 0}
    }
    assert info.repro == "highwater campaign --seed 7" and info.seed == 7


def test_the_report_reads_old_manifests_and_survives_bad_ones(tmp_path: Path) -> None:
    old = tmp_path / "ci-1" / "old"
    old.mkdir(parents=True)
    (old / "run.json").write_text(json.dumps(OLD_RUNNER))
    info = load_run(tmp_path, old, 0)
    assert info.started_at == "2025-11-01T12:26:40Z"  # not the file's mtime
    assert info.schedule == {"format": "highwater.schedule/1", "seed": 1, "faults": []}
    bad = tmp_path / "ci-1" / "bad"
    bad.mkdir()
    (bad / "run.json").write_text(json.dumps({**full_manifest().to_json(), "format": "highwater.run/2"}))
    info = load_run(tmp_path, bad, 1)
    assert any("unsupported run manifest version" in p for p in info.problems)
    assert info.manifest is None and info.suite == "default" and info.run_id == "bad"
    partial = tmp_path / "x" / "partial"
    partial.mkdir(parents=True)
    (partial / "run.json").write_text(json.dumps({"scenario": "only"}))
    info = load_run(tmp_path, partial, 2)
    assert (info.campaign, info.suite, info.scenario, info.run_id) == ("x", "default", "only", "partial")


# -- what the runner records ------------------------------------------------------------------------


def test_the_nemesis_is_recorded_as_data() -> None:
    steps = [Step(4, "kill --target leader:{topic}/0", 20), Step(1, "cut --target broker:1", 5)]
    rec = describe_nemesis(scripted(steps))
    assert rec.kind == "scripted" and rec.replayable
    assert rec.steps == (
        ScriptedStep(4.0, "kill --target leader:{topic}/0", 20.0),
        ScriptedStep(1.0, "cut --target broker:1", 5.0),
    )
    assert describe_nemesis(None) == NemesisRecord("none")
    sched = describe_nemesis(scheduled(schedule()))
    assert sched.kind == "scheduled" and sched.schedule == schedule().to_dict()

    def my_nemesis(injector: Any, cluster: Any, spec: Any) -> None:
        pass

    custom = describe_nemesis(my_nemesis)
    assert custom.kind == "custom" and not custom.replayable and custom.name is not None
    assert custom.name.endswith("my_nemesis")


def test_the_seed_reaches_the_manifest_and_must_match_the_schedule() -> None:
    sched = describe_nemesis(scheduled(schedule(7)))
    assert run_seed(RunSpec("s", "x", seed=7), sched) == 7
    assert run_seed(RunSpec("s", "x"), sched) == 7  # the schedule's seed when the spec has none
    assert run_seed(RunSpec("s", "x", seed=3), NemesisRecord("none")) == 3
    assert run_seed(RunSpec("s", "x"), NemesisRecord("none")) is None
    with pytest.raises(HighwaterError, match="run seed 8 differs from the seed of its fault schedule"):
        run_seed(RunSpec("s", "x", seed=8), sched)


def test_run_spec_round_trips_and_old_specs_load() -> None:
    spec = RunSpec(suite="s", scenario="x", results_root=Path("/tmp/r"), seed=5, rate=12.5, extra={"a": [1]})
    data = json.loads(json.dumps(run_spec_to_json(spec)))
    assert run_spec_from_json(data) == spec
    assert run_spec_from_json(data, campaign="replay", results_root="/tmp/q").results_root == Path("/tmp/q")
    old = run_spec_from_json({"suite": "s", "scenario": "x", "retired_field": 1})
    assert old == RunSpec(suite="s", scenario="x")
    with pytest.raises(HighwaterError, match="lacks suite"):
        run_spec_from_json({"scenario": "x"})
