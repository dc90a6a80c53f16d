"""``highwater replay`` end to end on real clusters: a short seeded run on a cluster of a
non-default shape, then ``highwater replay RUN_DIR``, which starts a cluster of the recorded
shape and runs the recorded spec and schedule again into a new run directory.

The two clusters run one after the other (the original is stopped before the replay starts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from highwater.cli import main as highwater
from highwater.core.history import read_history
from highwater.core.manifest import RunManifest
from highwater.exit_codes import Exit
from highwater.faults.schedule import Schedule, ScheduleConfig
from highwater.harness.backends import start_backend
from highwater.harness.config import ClusterSpec
from highwater.nemesis import scheduled
from highwater.run_spec import RunSpec
from highwater.runner import execute_run
from highwater.suites.nightly import nightly


def fault_kinds(run_dir: Path) -> list[str]:
    return [
        e["value"]["kind"] for e in read_history(run_dir / "history.jsonl") if e["f"] == "fault" and e["type"] == "ok"
    ]


@nightly("a replay's plan from a recorded manifest is unit-tested (test_manifest_replay); this reruns a whole run", 45)
def test_replay_reruns_a_recorded_run(
    backend: str, kafka_version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shape = ClusterSpec(
        brokers=3, racks=2, kafka_version=kafka_version, broker_config={"replica.lag.time.max.ms": "5000"}
    )
    cluster = start_backend(backend, shape, print)
    try:
        config = ScheduleConfig(
            length=6,
            duration=(2.0, 3.0),
            gap=(1.0, 2.0),
            mix=(("latency", 1.0),),
            latency_ms=(20.0, 60.0),
            partitions=("rp/0",),
        )
        schedule = Schedule.generate(cluster.topo, 5, config)
        assert schedule.faults, "the schedule has faults"
        spec = RunSpec(
            suite="replay",
            scenario="seeded",
            campaign="orig",
            results_root=tmp_path / "results",
            duration=10,
            partitions=1,
            rate=40,
            topic="rp",
            seed=5,
            producers=1,
        )
        original = execute_run(cluster, spec, scheduled(schedule))
    finally:
        cluster.stop()
    capsys.readouterr()

    rc = highwater(["replay", str(original.dir), "--results", str(tmp_path / "results")])
    out = capsys.readouterr().out.strip().splitlines()
    assert out, "replay prints the new run directory"
    new_dir = Path(out[-1])
    assert new_dir.parent == tmp_path / "results" / "replay-orig" and new_dir != original.dir
    valid = RunManifest.read(new_dir).valid
    assert rc == {True: Exit.OK, False: Exit.VIOLATIONS}.get(valid, Exit.UNKNOWN), (rc, valid)  # type: ignore[arg-type]

    a, b = RunManifest.read(original.dir), RunManifest.read(new_dir)
    assert (b.suite, b.scenario, b.seed, b.kafka_version, b.client) == (
        a.suite,
        a.scenario,
        5,
        a.kafka_version,
        a.client,
    )
    assert b.cluster == a.cluster and a.cluster is not None
    assert (a.cluster.brokers, a.cluster.racks, a.cluster.broker_config) == (3, 2, {"replica.lag.time.max.ms": "5000"})
    assert b.nemesis == a.nemesis and b.schedule == schedule.to_dict()
    assert b.racks == a.racks
    same = {k: v for k, v in a.spec.items() if k not in ("campaign", "results_root", "repro", "extra")}
    assert {k: b.spec[k] for k in same} == same
    assert b.spec["extra"]["replay_of"]["run_id"] == a.run_id
    assert b.repro == f"highwater replay {original.dir}"
    assert fault_kinds(new_dir) == fault_kinds(original.dir) == [f.spec.kind.value for f in schedule.faults]
