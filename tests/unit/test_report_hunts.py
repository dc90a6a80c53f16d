"""The report's Hunts section: each campaign's hunt.json (``highwater hunt``) read into rows, one
per shrunk failure with its original and shrunk schedules side by side; a malformed hunt.json
is skipped with a note, never failing the report, and a report without a hunt has no section."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from highwater.reports.hunts import find_hunt_files, load_hunts
from highwater.reports.layout import find_run_dirs
from highwater.reports.render_html import render
from tests.synth.reports import RunSpec, write_run
from tests.unit.test_report_render import _data

CAMPAIGN = "hunt-camp"
LATENCY = "latency --target follower-in:rack-b@hunt-12/0 --direction both --jitter 34 --latency 1889"


def _fault(fid: int, start: float, duration: float, kind: str, target: str, cli: str) -> dict[str, Any]:
    """A ``ScheduledFault.to_dict()``, as a hunt writes it."""
    return {
        "id": fid,
        "start": start,
        "duration": duration,
        "fault": {"kind": kind, "target": target, "params": {}},
        "cli": cli,
    }


def _candidate(faults: list[dict[str, Any]], producers: int, rate: float) -> dict[str, Any]:
    return {"faults": faults, "producers": producers, "rate": rate, "described": f"{len(faults)} fault(s)"}


def _hunt(camp: Path) -> dict[str, Any]:
    """A trimmed copy of a real hunt.json: a valid run, and a violated one shrunk from two
    faults to one (the latency dropped, the kill shortened and moved), one producer fewer, whose
    check failed on the second client too."""
    original = _candidate(
        [
            _fault(0, 2.476, 34.02, "latency", "follower-in:rack-b@hunt-12/0", LATENCY),
            _fault(1, 9.982, 33.0, "kill", "controller", "kill --target controller"),
        ],
        3,
        20.0,
    )
    shrunk = _candidate([_fault(1, 5.0, 16.5, "kill", "controller", "kill --target controller")], 2, 20.0)
    draw = {"release": "4.4.0", "client": "kafka-python", "workload": "plain", "settings": {}}
    return {
        "format": "highwater.hunt/1",
        "space": {"releases": ["4.4.0"], "clients": ["kafka-python", "java"], "workloads": ["plain"]},
        "first_seed": 11,
        "tries": 3,
        "runs": [
            {
                "draw": {**draw, "seed": 11},
                "run_dir": str(camp / "run-11"),
                "class": "valid",
                "new": [],
                "findings": [],
                "faults": 1,
                "shrunk": None,
            },
            {
                "draw": {**draw, "seed": 12},
                "run_dir": str(camp / "run-12"),
                "class": "violated",
                "new": ["poll-skip", "isr-stability"],
                "findings": ["HW-8"],
                "faults": 2,
                "shrunk": {
                    "result": {
                        "check": "isr-stability",
                        "reproduced": True,
                        "original": original,
                        "shrunk": shrunk,
                        "original_trial": {"candidate": "", "failed": 1, "tries": 1, "runs": []},
                        "final_trial": {"candidate": "", "failed": 2, "tries": 3, "runs": []},
                        "trials": [],
                        "runs": 7,
                        "budget_spent": False,
                    },
                    "scenario": str(camp / "shrunk" / "run-12-try.json"),
                    "second_client": {"client": "java", "new": ["isr-stability"], "run_dir": str(camp / "run-j")},
                },
            },
        ],
        "refused": [],
        "line": "hunt: 2 run(s) (1 valid, 1 violated)",
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results root with one campaign: a synthetic run and the hunt.json beside it."""
    root = tmp_path_factory.mktemp("results")
    write_run(root, RunSpec(CAMPAIGN, "run-11", seed=11, writes=24))
    (root / CAMPAIGN / "hunt.json").write_text(json.dumps(_hunt(root / CAMPAIGN), indent=2), encoding="utf-8")
    return root


def _write(root: Path, campaign: str, data: Any) -> Path:
    camp = root / campaign
    camp.mkdir(parents=True, exist_ok=True)
    path = camp / "hunt.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _section(html: str) -> str:
    start = html.index("<h2 id='hunts'>")
    return html[start : html.index("<h2", start + 1)]


def test_a_shrunk_failure_is_one_row_with_both_schedules(results: Path) -> None:
    found = load_hunts(results, find_run_dirs(results))
    assert found.notes == []
    (hunt,) = found.hunts
    assert (hunt.campaign, hunt.runs, hunt.classes, hunt.new_found) == (CAMPAIGN, 2, {"valid": 1, "violated": 1}, 1)
    assert hunt.summary == "2 run(s) (1 valid, 1 violated); 1 with a new violation, 1 shrunk"
    (f,) = hunt.shrunk
    assert (f.seed, f.release, f.client, f.workload) == (12, "4.4.0", "kafka-python", "plain")
    assert (f.check, f.reproduced, f.failed, f.tries, f.shrink_runs, f.budget_spent) == (
        "isr-stability",
        True,
        2,
        3,
        7,
        False,
    )
    assert f.new == ("poll-skip", "isr-stability")
    assert f.scenario == str(results / CAMPAIGN / "shrunk" / "run-12-try.json")
    assert [(x.at_s, x.duration_s, x.kind, x.cli) for x in f.original.faults] == [
        (2.476, 34.02, "latency", LATENCY),
        (9.982, 33.0, "kill", "kill --target controller"),
    ]
    assert [(x.at_s, x.duration_s, x.kind, x.target) for x in f.shrunk.faults] == [(5.0, 16.5, "kill", "controller")]
    assert (f.original.producers, f.original.rate, f.shrunk.producers, f.shrunk.rate) == (3, 20.0, 2, 20.0)
    assert f.second is not None and (f.second.client, f.second.same) == ("java", True)


def test_a_campaign_directory_is_an_input_too(results: Path) -> None:
    assert find_hunt_files(results / CAMPAIGN) == [results / CAMPAIGN / "hunt.json"]
    assert [h.campaign for h in load_hunts(results / CAMPAIGN).hunts] == [CAMPAIGN]


def test_a_hunt_deeper_down_is_found_through_its_runs(tmp_path: Path) -> None:
    camp = tmp_path / "nightly" / "2025-01-01" / CAMPAIGN
    run = camp / "run-11"
    run.mkdir(parents=True)
    _write(camp.parent, CAMPAIGN, _hunt(camp))
    assert find_hunt_files(tmp_path) == []  # two levels down: not a campaign of the root
    assert find_hunt_files(tmp_path, [run]) == [camp / "hunt.json"]
    assert find_hunt_files(tmp_path / "nightly", [tmp_path / "elsewhere" / "run"]) == []


def test_the_html_shows_the_original_and_the_shrunk_schedule_side_by_side(results: Path) -> None:
    html = render(replace(_data(), results_dir=str(results)))
    hunts = _section(html)
    original, shrunk = hunts.split("<b>original</b>")[1].split("<b>shrunk</b>")
    assert original.count("<tr><td") + original.count("<tr class='v-na'") == 2
    assert "<tr class='v-na' title='dropped by the shrink'><td>2.476s</td><td>latency</td>" in original
    assert "<td>9.982s</td><td>kill</td>" in original
    assert shrunk.count("<tr><td") == 1
    assert "title='was 9.982s'>5s</td><td>kill</td>" in shrunk and "title='was 33s'>16.5s</td>" in shrunk
    assert "<span class='changed'>2 producer(s) at 20/s</span>" in shrunk
    assert hunts.count("class='compact schedule'") == 2
    assert "isr-stability" in hunts and "failed 2 of 3 tries" in hunts and "7 shrink run(s)" in hunts
    scenario = results / CAMPAIGN / "shrunk" / "run-12-try.json"
    assert f"<code>highwater replay {scenario}</code>" in hunts
    assert "on java: <span class='badge v-false'>same check failed: the broker&#39;s?</span>" in hunts


def test_a_check_not_seen_on_the_second_client_points_at_the_first(tmp_path: Path) -> None:
    data = _hunt(tmp_path / CAMPAIGN)
    data["runs"][1]["shrunk"]["second_client"]["new"] = []
    _write(tmp_path, CAMPAIGN, data)
    hunts = _section(render(replace(_data(), results_dir=str(tmp_path))))
    assert "<span class='badge v-allowed'>not seen: the client&#39;s?</span>" in hunts


def test_a_failure_not_reproduced_says_so(tmp_path: Path) -> None:
    data = _hunt(tmp_path / CAMPAIGN)
    result = data["runs"][1]["shrunk"]["result"]
    result.update(reproduced=False, final_trial=None, shrunk=result["original"])
    result["original_trial"]["tries"] = 3
    del data["runs"][1]["shrunk"]["scenario"], data["runs"][1]["shrunk"]["second_client"]
    _write(tmp_path, CAMPAIGN, data)
    (f,) = load_hunts(tmp_path).hunts[0].shrunk
    assert (f.reproduced, f.failed, f.tries, f.scenario, f.second) == (False, None, None, None, None)
    hunts = _section(render(replace(_data(), results_dir=str(tmp_path))))
    assert "not reproduced in 3 tries; nothing shrunk" in hunts and "highwater replay" not in hunts


@pytest.mark.parametrize(
    "bad",
    [
        "{not json",
        "[]",
        {"format": "highwater.hunt/0", "runs": []},
        {"format": "highwater.hunt/1", "runs": {"a": 1}},
    ],
    ids=["unparsable", "not-an-object", "other-format", "runs-not-a-list"],
)
def test_a_malformed_hunt_is_skipped_with_a_note_and_the_report_still_renders(
    tmp_path: Path, results: Path, bad: Any
) -> None:
    root = tmp_path / "results"
    good = copy.deepcopy(_hunt(root / CAMPAIGN))
    _write(root, CAMPAIGN, good)
    broken = _write(root, "broken", bad)
    found = load_hunts(root)
    assert [h.campaign for h in found.hunts] == [CAMPAIGN]
    assert len(found.notes) == 1 and found.notes[0].startswith(f"{broken}: skipped, ")
    hunts = _section(render(replace(_data(), results_dir=str(root))))
    assert f"{broken}: skipped" in hunts and "failed 2 of 3 tries" in hunts


def test_a_malformed_run_entry_is_left_out_and_the_rest_kept(tmp_path: Path) -> None:
    data = _hunt(tmp_path / CAMPAIGN)
    broken = copy.deepcopy(data["runs"][1])
    broken["shrunk"]["result"]["original"]["faults"][0]["start"] = "soon"
    data["runs"].append(broken)
    data["runs"].append("not a run")
    path = _write(tmp_path, CAMPAIGN, data)
    found = load_hunts(tmp_path)
    (hunt,) = found.hunts
    assert hunt.runs == 2 and len(hunt.shrunk) == 1
    assert found.notes == [
        f"{path}: run 3 left out, original.faults[0].start: expected a number, got str",
        f"{path}: run 4 left out, runs[3]: expected an object, got str",
    ]


def test_a_report_without_a_hunt_has_no_hunts_section(tmp_path: Path) -> None:
    write_run(tmp_path, RunSpec("plain-camp", "run-1", seed=1, writes=24))
    assert not load_hunts(tmp_path, find_run_dirs(tmp_path)).found
    html = render(replace(_data(), results_dir=str(tmp_path)))
    assert "id='hunts'" not in html and "Hunts" not in html
    assert "id='hunts'" not in render(_data())  # a results directory that is not there


def test_names_from_a_hunt_are_escaped(tmp_path: Path) -> None:
    data = _hunt(tmp_path / CAMPAIGN)
    data["runs"][1]["draw"]["client"] = "<script>alert(1)</script>"
    data["runs"][1]["shrunk"]["result"]["shrunk"]["faults"][0]["cli"] = "kill --target '><img src=x>"
    _write(tmp_path, CAMPAIGN, data)
    hunts = _section(render(replace(_data(), results_dir=str(tmp_path))))
    assert "<script>" not in hunts and "<img" not in hunts
    assert re.search(r"&lt;script&gt;alert\(1\)&lt;/script&gt;", hunts)
