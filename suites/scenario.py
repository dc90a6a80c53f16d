"""Running a scenario from a suite and judging it: one place for the RunSpec defaults a suite
shares, and for turning verdicts into a readable test failure (with the repro command)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from harness.checks.verdict import Verdict
from harness.cluster import Cluster
from highwater.runner import Nemesis, RunResult, RunSpec, execute_run
from highwater.profiles import Profile


def run_scenario(cluster: Cluster, *, suite: str, scenario: str, profile: Profile, campaign: str,
                 results_root: Path, repro: str, nemesis: Nemesis | None = None, **overrides: Any) -> RunResult:
    spec = RunSpec(suite=suite, scenario=scenario, campaign=campaign, results_root=results_root,
                   duration=overrides.pop("duration", profile.run_seconds), rate=overrides.pop("rate", profile.rate),
                   repro=repro, **overrides)
    return execute_run(cluster, spec, nemesis, progress=lambda m: print(f"[{suite}] {m}", flush=True))


def describe(verdicts: Iterable[Verdict]) -> str:
    return "\n".join(f"  {v.check}: {v.valid} counts={v.counts} example={json.dumps(v.examples[:1], default=str)[:600]}"
                     for v in verdicts)


def assert_verdicts(result: RunResult, *, must_hold: Iterable[str], judged: bool = True) -> None:
    """Every check in ``must_hold`` is True (not unknown: a check that could not judge proves
    nothing); no check at all is False. The message names the run dir and the repro command."""
    by = {v.check: v for v in result.verdicts}
    run = json.loads((result.dir / "run.json").read_text())
    bad = [v for v in result.verdicts if v.valid is False]
    weak = [by[c] for c in must_hold if by[c].valid is not True] if judged else []
    if bad or weak:
        raise AssertionError(
            f"run {result.run_id} broke Kafka's promises or could not judge them "
            f"(results: {result.dir}; repro: {run.get('repro')}):\n" + describe(bad + [w for w in weak if w not in bad]))
