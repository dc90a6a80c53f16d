"""The seeded chaos campaign: random faults from a reproducible schedule while producers and
rack-aware consumers run, then every check. Each seed is one run in
``<results>/<campaign>/<run_id>/`` whose run.json holds the schedule and the repro command."""

from __future__ import annotations

import json

import pytest

from faults.schedule import DEFAULT_MIX, Schedule, ScheduleConfig
from highwater.nemesis import scheduled
from highwater.profiles import PROFILES
from suites.scenario import assert_verdicts, run_scenario

# A rolling restart needs minutes; keep it for runs long enough to hold one.
SHORT_MIX = tuple((k, w) for k, w in DEFAULT_MIX if k != "rolling_restart")


def _seeds(config: pytest.Config) -> list[int]:
    return list(PROFILES[config.getoption("--profile")].chaos_seeds)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "seed" in metafunc.fixturenames:
        metafunc.parametrize("seed", _seeds(metafunc.config))


def test_chaos(cluster, profile, campaign, results_root, repro, seed: int) -> None:  # type: ignore[no-untyped-def]
    topic = f"chaos{seed}"
    length = profile.chaos_seconds - 10  # the last seconds stay calm before healing and settling
    config = ScheduleConfig(length=length, duration=(5.0, 12.0), gap=(3.0, 8.0),
                            mix=DEFAULT_MIX if length >= 240 else SHORT_MIX,
                            partitions=(f"{topic}/0",), latency_ms=(50.0, 6000.0))
    schedule = Schedule.generate(cluster.topo, seed, config)
    assert Schedule.from_json(schedule.to_json()).faults == schedule.faults  # reproducible from its JSON
    result = run_scenario(cluster, suite="chaos", scenario=f"seed-{seed}", profile=profile, campaign=campaign,
                          results_root=results_root, repro=repro, nemesis=scheduled(schedule), topic=topic,
                          duration=profile.chaos_seconds, seed=seed, settle_timeout=90,
                          extra={"schedule": schedule.to_dict()})
    run = json.loads((result.dir / "run.json").read_text())
    assert run["spec"]["extra"]["schedule"]["seed"] == seed and run["repro"]
    assert_verdicts(result, must_hold=["lost-write", "uncommitted-read", "poll-skip"])
