"""``highwater hunt`` end to end on a real cluster: two drawn runs, the second with a planted
``poll-skip`` under its latency fault (``harness.workload.plant``, highwater's own tests only),
shrunk to the latency alone within two runs and written as a scenario file ``highwater replay``
takes (about 4 minutes: four runs of a minute)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from highwater.cli_replay import plan_replay
from highwater.core.manifest import RunManifest
from highwater.suites.nightly import nightly

#: seeds of kafka-python plain 60 s runs on the default release: 58 draws one consumer killed
#: and restarted; 59 a latency toxic and a consumer frozen, overlapping (tests/unit/test_hunt_draw.py
#: holds the draws to what this test expects)
FIRST_SEED = 58
HIGHWATER = str(Path(sys.executable).parent / "highwater")  # the installed command


@nightly(
    "the hunt's draws, schedules, shrink and scenario file are unit-tested (test_hunt_draw, test_shrink, "
    "test_manifest_replay); this end-to-end hunt takes four runs of a minute",
    270,
)
def test_a_hunt_of_two_runs_shrinks_its_planted_violation_to_the_latency_alone(tmp_path: Path) -> None:
    argv = [
        HIGHWATER,
        "hunt",
        "--client",
        "kafka-python",
        "--workloads",
        "plain",
        "--runs",
        "2",
        "--seed",
        str(FIRST_SEED),
        "--seconds",
        "60",
        "--tries",
        "1",
        "--shrink-runs",
        "2",
        "--test-plant",
        "latency",
        "--results",
        str(tmp_path),
        "--campaign",
        "hunt",
        "--progress",
        "plain",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
    lines = [line for line in done.stderr.splitlines() if line.startswith("highwater:")]
    assert done.returncode == 1, "\n".join(lines[-30:])  # a new violation found: exit 1
    hunt = json.loads((tmp_path / "hunt" / "hunt.json").read_text())
    runs = hunt["runs"]
    assert [r["draw"]["seed"] for r in runs] == [FIRST_SEED, FIRST_SEED + 1]
    assert "poll-skip" not in runs[0]["new"]  # no latency there: nothing planted
    assert "poll-skip" in runs[1]["new"], runs[1]
    shrunk = runs[1]["shrunk"]
    result = shrunk["result"]
    assert result["check"] == "poll-skip" and result["reproduced"]
    assert len(result["original"]["faults"]) == 2
    assert [f["fault"]["kind"] for f in result["shrunk"]["faults"]] == ["latency"], result["shrunk"]
    # --shrink-runs 2, the hunt's failing run counted as the first try: without the freeze it
    # fails, without the latency it passes
    assert result["runs"] == 2 and result["budget_spent"]
    assert any(line.startswith("highwater: hunt: 2 run(s)") for line in lines), lines[-5:]
    # the scenario file: the smallest failing run's manifest, replayable, with both schedules
    scenario = Path(shrunk["scenario"])
    manifest = RunManifest.read(scenario)
    plan = plan_replay(manifest, scenario.parent, results_root=tmp_path / "replays")
    assert plan.schedule is not None and [f.spec.kind.value for f in plan.schedule.faults] == ["latency"]
    assert len(plan.spec.extra["shrunk"]["original"]["schedule"]["faults"]) == 2
    assert plan.spec.extra["test_plant"] == {"skip_under": "latency"}  # a replay plants it too
    draft = (tmp_path / "hunt" / "findings-draft.toml").read_text()
    assert f'id = "HW-DRAFT-{FIRST_SEED + 1}"' in draft and "highwater replay" in draft
