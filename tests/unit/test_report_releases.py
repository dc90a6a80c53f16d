"""The release × scenario view: a verdict change between releases is found and marked; clean
sweeps, unknown cells and one-release campaigns mark none."""

from __future__ import annotations

from typing import Any

from highwater.reports.releases import (
    FAIL,
    PASS,
    UNKNOWN,
    bisect_command,
    cell_verdict,
    changes,
    release_key,
    release_view,
)


def run(version: str, valid: Any, scenario: str = "follower-pause", label: str = "") -> dict[str, Any]:
    return {
        "suite": "sweep",
        "scenario": scenario,
        "client": "kafka-python 3.0.12",
        "kafka_version": version,
        "valid": valid,
        "label": label or f"s/{scenario}-{version}",
        "path": f"/results/s/{scenario}-{version}",
    }


def test_releases_sort_numerically() -> None:
    assert sorted(["4.0.2", "3.10.0", "3.9.2", "unknown"], key=release_key) == ["3.9.2", "3.10.0", "4.0.2", "unknown"]


def test_a_cell_is_fail_on_any_violation_and_never_passes_on_unknown() -> None:
    assert cell_verdict([True, False, "unknown"]) == FAIL
    assert cell_verdict([True, "unknown"]) == UNKNOWN
    assert cell_verdict(["not-applicable"]) == UNKNOWN
    assert cell_verdict([True, True, "not-applicable"]) == PASS


def test_the_release_where_a_verdict_changes_is_marked_with_its_failing_runs() -> None:
    runs = [run("3.9.2", True), run("4.0.2", False, label="s/bad"), run("4.0.2", True), run("4.4.0", False)]
    runs += [run(v, True, scenario="leader-stop") for v in ("3.9.2", "4.0.2", "4.4.0")]
    view = release_view(runs)
    assert view["releases"] == ["3.9.2", "4.0.2", "4.4.0"]
    pause = next(r for r in view["rows"] if r["scenario"] == "follower-pause")
    cell = pause["cells"]["4.0.2"]
    assert cell["verdict"] == FAIL and cell["changed"] and (cell["runs"], cell["passed"], cell["failed"]) == (2, 1, 1)
    assert cell["failing"] == [{"label": "s/bad", "path": "/results/s/follower-pause-4.0.2"}]
    assert not pause["cells"]["4.4.0"]["changed"]  # still failing: no new change
    stop = next(r for r in view["rows"] if r["scenario"] == "leader-stop")
    assert not any(c["changed"] for c in stop["cells"].values())
    assert changes(view) == [
        {
            "suite": "sweep",
            "scenario": "follower-pause",
            "client": "kafka-python 3.0.12",
            "release": "4.0.2",
            "from_release": "3.9.2",
            "from": PASS,
            "to": FAIL,
            "bisect": None,  # no run recorded a repro command
        }
    ]


def test_an_unknown_release_in_between_is_no_change_either_way() -> None:
    view = release_view([run("3.9.2", True), run("4.0.2", "unknown"), run("4.4.0", True)])
    assert changes(view) == [] and not any(c["changed"] for c in view["rows"][0]["cells"].values())
    assert view["rows"][0]["cells"]["4.0.2"]["passed"] == 0  # an unknown run is not a passed one
    # a fix seen across an unknown release is still found, at the release that shows it
    fixed = release_view([run("3.9.2", False), run("4.0.2", "unknown"), run("4.4.0", True)])
    assert [(c["release"], c["from"], c["to"]) for c in changes(fixed)] == [("4.4.0", FAIL, PASS)]


def test_one_release_gives_no_rows() -> None:
    assert release_view([run("4.4.0", False), run("4.4.0", True)])["rows"] == []


REPRO = (
    "highwater run --profile ci --kafka-version {v} --backend local --client java "
    "'suites/sweep/test_min_isr_hw.py::test_acks1[follower pause]'"
)


def test_each_change_carries_the_bisect_that_finds_it() -> None:
    """A regression bisects with the passing release as good; a fix with the newer, passing one
    as good; the node id, client, profile and backend come from a run's repro command."""
    runs = [
        {**run(v, ok), "repro": REPRO.format(v=v)} for v, ok in (("3.9.2", True), ("4.0.2", False), ("4.4.0", True))
    ]
    got = [(c["from_release"], c["release"], c["bisect"]) for c in changes(release_view(runs))]
    node = "'suites/sweep/test_min_isr_hw.py::test_acks1[follower pause]'"
    tail = "--client java --profile ci --backend local"
    assert got == [
        ("3.9.2", "4.0.2", f"highwater bisect {node} --good 3.9.2 --bad 4.0.2 {tail}"),
        ("4.0.2", "4.4.0", f"highwater bisect {node} --good 4.4.0 --bad 4.0.2 {tail}"),
    ]
    assert bisect_command("highwater run --client java", "1", "2") is None  # no test named
    assert bisect_command("'unbalanced", "1", "2") is None
