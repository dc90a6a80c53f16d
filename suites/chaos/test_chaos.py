"""The seeded chaos campaign: random faults from a reproducible schedule while producers and
rack-aware consumers run, then every check. Each seed is one run in
``<results>/<campaign>/<run_id>/`` whose run.json holds the schedule and the repro command."""

from __future__ import annotations

import json

import pytest

from faults.schedule import Schedule
from highwater.nemesis import scheduled
from highwater.profiles import PROFILES
from suites.scenario import assert_verdicts, chaos_schedule_config, run_scenario


def _seeds(config: pytest.Config) -> list[int]:
    """``--seed N`` runs that seed alone; otherwise the profile's seeds."""
    seed = config.getoption("--seed")
    return [int(seed)] if seed is not None else list(PROFILES[config.getoption("--profile")].chaos_seeds)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "seed" in metafunc.fixturenames:
        metafunc.parametrize("seed", _seeds(metafunc.config))


def test_chaos(cluster, profile, campaign, results_root, repro, seed: int) -> None:  # type: ignore[no-untyped-def]
    topic = f"chaos{seed}"
    config = chaos_schedule_config(profile, topic)
    schedule = Schedule.generate(cluster.topo, seed, config)
    assert Schedule.from_json(schedule.to_json()).faults == schedule.faults  # reproducible from its JSON
    result = run_scenario(
        cluster,
        suite="chaos",
        scenario=f"seed-{seed}",
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        nemesis=scheduled(schedule),
        topic=topic,
        duration=profile.chaos_seconds,
        seed=seed,
        settle_timeout=90,
        extra={"schedule": schedule.to_dict()},
    )
    run = json.loads((result.dir / "run.json").read_text())
    assert run["spec"]["extra"]["schedule"]["seed"] == seed and run["repro"]
    assert_verdicts(result, must_hold=["lost-write", "uncommitted-read", "poll-skip"])
