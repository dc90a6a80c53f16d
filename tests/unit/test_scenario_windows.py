"""Every scripted fault of every conformance scenario lasts longer than the bound of each timed
check its assertions rely on, by the stated margin (``core.checks.bounds.required_window_ms``);
and the run lasts long enough after the last heal for progress to judge it. The schedules are
``suites.scenario.PLANS`` (data: no cluster needed). Also prints the table of the note: every
scenario with its bounds, its fault windows and its broken twin (``pytest -s``)."""

from __future__ import annotations

import pytest

from highwater.core.checks.bounds import required_window_ms
from highwater.profiles import PROFILES
from highwater.suites.scenario import PLANS, TIMED_CHECKS, Plan


@pytest.mark.parametrize("key", sorted(PLANS))
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_window_outlasts_the_bounds_that_judge_it(key: str, profile: str) -> None:
    p = PLANS[key]
    too_short = []
    for i, step in enumerate(p.steps):
        for check, bound in p.judging(step).items():
            need = required_window_ms(bound.ms)
            if step.duration * 1000 < need:
                too_short.append(
                    f"step {i} ({step.fault}): {step.duration:g} s < {need} ms needed by {check} "
                    f"({bound.name} = {bound.ms} ms = {bound.formula} = {bound.computed}, plus margin)"
                )
    assert not too_short, f"{key}: " + "; ".join(too_short)
    if "progress" in p.must_hold and p.steps:
        tail = p.duration(PROFILES[profile].run_seconds) - sum(s.after + s.duration for s in p.steps)
        need = required_window_ms(p.bounds()["progress_bound_ms"].ms)
        assert tail * 1000 >= need, f"{key}: {tail} s after the last heal < {need} ms (progress after heal)"


def test_a_plan_with_a_short_window_is_caught() -> None:
    """The walk above would fail on the windows of issue 11 (14 s against a 16.5 s bound)."""
    old = PLANS["kip-392/replica-cut-off"]
    short = Plan(old.suite, old.scenario, (old.steps[0].__class__(3, old.steps[0].fault, 14),), old.must_hold)
    judging = short.judging(short.steps[0])
    assert judging and any(14_000 < required_window_ms(b.ms) for b in judging.values())


def test_timed_checks_judge_the_kip392_faults_with_bounds_of_seconds() -> None:
    for how in ("killed", "cut-off", "slowed"):
        p = PLANS[f"kip-392/replica-{how}"]
        judging = p.judging(p.steps[0])
        assert "follower-fetch" in judging
        assert all(1_000 <= b.ms <= 30_000 for b in judging.values()), judging
        # every bound of a window (the latency and HW-propagation bounds bound medians, and
        # the transaction hold how long an open transaction may hold a partition, not windows)
        not_windows = ("follower_latency_bound_ms", "hw_propagation_bound_ms", "txn_hold_bound_ms")
        assert all(1_000 <= b.ms <= 30_000 for n, b in p.bounds().items() if n not in not_windows)


def test_the_plans_settings_are_what_a_run_records() -> None:
    """``Plan.settings`` (for this walk) and ``RunSpec.header_config`` (in the history header)
    derive the bounds from the same settings."""
    from types import SimpleNamespace

    from highwater.harness.config import ClusterSpec
    from highwater.run_spec import RunSpec

    for p in PLANS.values():
        cluster = SimpleNamespace(
            spec=ClusterSpec(brokers=p.brokers, broker_config=dict(p.broker_config)),
            topo=SimpleNamespace(controllers=()),
        )
        config = RunSpec(suite=p.suite, scenario=p.scenario, observe_interval=p.observe_interval).header_config(cluster)  # type: ignore[arg-type]
        assert config["bounds"] == {n: b.to_json() for n, b in p.bounds().items()}, p.key


TWINS = {
    "kip-392/rack-local-reads": "reads served by another rack; bytes from another rack",
    "kip-392/replica-killed": "the consumer never moves (nothing for the whole fault, all at once after the heal); "
    "never returns to its rack replica",
    "kafka-4485/high-rate-small": "a follower leaves the ISR while quiet",
    "kafka-4485/slowed-follower": "the follower leaves and stays out; never leaves",
    "kip-207/leader-kills": "the HW goes back",
    "durability": "a lost write; a read from above the HW; a skipped offset",
    "kip-320/unclean-truncation": "truncation undetected; reset instead of KIP-320",
}


def test_note_table() -> None:
    """The note of issue 11: scenario, timed checks asserted, bounds, windows, twin."""
    lines = [
        "| scenario | asserts (timed) | fault windows (s) | bounds that judge them (ms) | broken twin |",
        "|---|---|---|---|---|",
    ]
    for key, p in PLANS.items():
        windows = ", ".join(f"{s.fault.split()[0]} {s.duration:g}" for s in p.steps) or "none"
        judged = "; ".join(f"{c}: {b.name}={b.ms}" for s in p.steps for c, b in p.judging(s).items()) or "-"
        twin = TWINS.get(key) or TWINS.get(p.suite) or TWINS["kip-392/replica-killed"]
        timed = ", ".join(c for c in p.must_hold if c in TIMED_CHECKS) or "-"
        lines.append(f"| {key} | {timed} | {windows} | {judged} | {twin} |")
    print("\n".join(lines))
    assert len(lines) == len(PLANS) + 2


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_chaos_schedules_draw_only_windows_the_timed_checks_can_judge(profile: str) -> None:
    """Every fault a seeded chaos schedule draws outlasts every timed check's bound (plus margin),
    for the profile's seeds and a few more; at least one fault fits in the run; the run's last
    ``tail_seconds`` stay calm for progress after the last heal."""
    from highwater.faults.schedule import Schedule
    from highwater.suites.scenario import CHAOS, chaos_schedule_config
    from tests.unit.fault_topology import topo

    p = PROFILES[profile]
    config = chaos_schedule_config(p, "chaos")
    longest = max(
        CHAOS.bounds()[n].ms for n in ("consumer_stall_hang_bound_ms", "follower_fetch_bound_ms", "isr_leave_bound_ms")
    )
    for seed in (*p.chaos_seeds, 11, 12, 13):
        schedule = Schedule.generate(topo(3, 3), seed, config)
        assert schedule.faults, f"{profile} seed {seed}: no fault fits in {config.length} s"
        for sf in schedule.faults:
            assert sf.duration * 1000 >= required_window_ms(longest), (profile, seed, sf)
            assert sf.end <= p.chaos_seconds - CHAOS.tail_seconds(), (profile, seed, sf)


def test_the_chaos_walk_sees_a_short_window() -> None:
    from dataclasses import replace

    from highwater.faults.schedule import Schedule
    from highwater.suites.scenario import CHAOS, chaos_schedule_config
    from tests.unit.fault_topology import topo

    short = replace(chaos_schedule_config(PROFILES["ci"], "chaos"), duration=(5.0, 12.0))
    longest = CHAOS.bounds()["consumer_stall_hang_bound_ms"].ms
    faults = Schedule.generate(topo(3, 3), 1, short).faults
    assert any(sf.duration * 1000 < required_window_ms(longest) for sf in faults)
