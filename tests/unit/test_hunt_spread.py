"""``highwater hunt --master``'s pure parts: the lanes' seeds and budgets, each lane's command
(which the CLI parses back into the same hunt), the lanes' records merged into one, and the
exit status over the lanes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from highwater.cli import build_parser
from highwater.cli_hunt import lanes_for, settings_of
from highwater.exit_codes import Exit
from highwater.hunt import DRAFT_FILE, HUNT_FILE, HuntedRun, HuntReport, HuntSettings, lane_file
from highwater.hunt_draw import Draw, HuntError, HuntSpace
from highwater.hunt_spread import exit_of, lane_runs, lanes_of, merge_lanes
from highwater.pytest_runs import Shard
from highwater.sweep_cells import CellResult, CellSettings, parse_master

SPACE = HuntSpace(("3.9.1", "4.4.0"), ("java", "kafka-python"), ("plain", "group"), 60.0)
HUNT = HuntSettings(SPACE, seed=100, runs=7, results=Path("/shared/results"), campaign="night", tries=2)


def _args(*argv: str):  # type: ignore[no-untyped-def]
    return build_parser().parse_args(["hunt", *argv])


def test_the_lanes_play_every_seed_of_a_local_hunt_once() -> None:
    local = list(itertools.islice(HUNT.seeds(), 12))
    lanes = [HuntSettings(SPACE, seed=100, lane=Shard(i, 3)) for i in (1, 2, 3)]
    played = [s for lane in lanes for s in itertools.islice(lane.seeds(), 4)]
    assert sorted(played) == local == list(range(100, 112))
    assert list(itertools.islice(lanes[1].seeds(), 3)) == [101, 104, 107]


def test_a_budget_of_runs_is_split_and_a_lane_with_none_is_left_out() -> None:
    assert [lane_runs(7, Shard(i, 3)) for i in (1, 2, 3)] == [3, 2, 2]
    assert lane_runs(None, Shard(1, 3)) is None
    assert [lane.runs for lane in lanes_of(HuntSettings(SPACE, runs=2), 3)] == [1, 1]
    assert [str(lane.lane) for lane in lanes_of(HuntSettings(SPACE, minutes=30), 3)] == ["1/3", "2/3", "3/3"]


def test_a_lane_s_command_is_the_same_hunt_for_its_seeds() -> None:
    lane = lanes_of(HUNT, 3)[1]
    argv = lane.argv("python", CellSettings(campaign="night", results="/shared/results"), 1)
    assert argv[:4] == ["python", "-m", "highwater.cli", "hunt"]
    parsed = settings_of(_args(*argv[4:]), ["3.9.1", "4.4.0"])
    assert parsed.lane == Shard(2, 3)
    assert parsed.runs == 2
    assert parsed.seed == HUNT.seed and parsed.space == SPACE and parsed.tries == HUNT.tries
    assert (parsed.campaign, parsed.results) == ("night", Path("/shared/results"))
    assert lane.releases == SPACE.releases  # set up on the executor before the lane starts


def test_a_lane_writes_files_of_its_own() -> None:
    assert lane_file(HUNT_FILE, None) == "hunt.json"
    assert lane_file(HUNT_FILE, Shard(2, 4)) == "hunt.lane-2-of-4.json"
    assert lane_file(DRAFT_FILE, Shard(1, 2)) == "findings-draft.lane-1-of-2.toml"


def _lane_record(out: Path, lane: Shard, seeds: list[int], new: dict[int, str]) -> None:
    report = HuntReport(HuntSettings(SPACE, seed=100, lane=lane))
    for seed in seeds:
        d = Draw(seed, "4.4.0", "java", "plain", {"partitions": 1})
        found = (new[seed],) if seed in new else ()
        report.runs.append(HuntedRun(d, f"{out}/run-{seed}", "violated" if found else "valid", found, (), 1))
    (out / lane_file(HUNT_FILE, lane)).write_text(json.dumps(report.to_json()), encoding="utf-8")


def test_the_lanes_records_merge_into_one_hunt_by_seed(tmp_path: Path) -> None:
    lanes = lanes_of(HuntSettings(SPACE, seed=100, minutes=5), 3)
    _lane_record(tmp_path, Shard(1, 3), [100, 103], {103: "poll-skip"})
    _lane_record(tmp_path, Shard(2, 3), [101], {})
    (tmp_path / lane_file(DRAFT_FILE, Shard(1, 3))).write_text('[[finding]]\nid = "HW-DRAFT-103"\n\n')
    report = merge_lanes(HUNT, tmp_path, lanes)
    assert [r.draw.seed for r in report.runs] == [100, 101, 103]
    assert [r.new for r in report.new] == [("poll-skip",)]
    assert report.refused == [{"lane": "3/3", "why": "wrote no record", "log": "cells/lane-3-of-3.log"}]
    merged = json.loads((tmp_path / HUNT_FILE).read_text())
    assert merged["lanes"] == 3 and [r["draw"]["seed"] for r in merged["runs"]] == [100, 101, 103]
    assert "HW-DRAFT-103" in (tmp_path / DRAFT_FILE).read_text()


def test_a_lane_record_that_is_not_a_hunt_s_is_listed_and_the_others_merge(tmp_path: Path) -> None:
    (tmp_path / lane_file(HUNT_FILE, Shard(1, 2))).write_text('{"runs": [{"draw": {}}]}')
    _lane_record(tmp_path, Shard(2, 2), [101], {})
    report = merge_lanes(HUNT, tmp_path, lanes_of(HuntSettings(SPACE, minutes=1), 2))
    assert [r.draw.seed for r in report.runs] == [101]
    (bad,) = report.refused
    assert bad["lane"] == "1/2" and "not a hunt's record: a hunt draw must have" in bad["why"]


def test_a_lane_is_not_attempted_again_and_its_budget_keeps_its_digits() -> None:
    s = HuntSettings(SPACE, seed=100, minutes=0.1234567, results=Path("/r"), campaign="c")
    lane = lanes_of(s, 2)[0]
    assert lane.max_attempts == 1
    parsed = settings_of(_args(*lane.argv("python", CellSettings(campaign="c", results="/r"), 1)[4:]), ["3.9.1"])
    assert parsed.minutes == 0.1234567 and parsed.space.seconds == SPACE.seconds


def _result(code: int) -> CellResult:
    return CellResult("hunt lane 1/2", code, 1.0, 1)


def test_the_exit_status_over_the_lanes() -> None:
    clean, found = HuntReport(HUNT), HuntReport(HUNT)
    found.runs.append(HuntedRun(Draw(1, "4.4.0", "java", "plain"), "r", "violated", ("lost-write",), (), 1))
    assert exit_of(found, [_result(Exit.INTERRUPTED)]) == Exit.VIOLATIONS
    assert exit_of(clean, [_result(Exit.OK), _result(Exit.INTERRUPTED)]) == Exit.INTERRUPTED
    assert exit_of(clean, [_result(Exit.OK), _result(Exit.HARNESS)]) == Exit.HARNESS
    assert exit_of(clean, [_result(Exit.OK), _result(Exit.OK)]) == Exit.OK


def test_how_many_lanes() -> None:
    assert lanes_for(_args("--runs", "4", "--master", "local[3]"), parse_master("local[3]")) == 3
    assert lanes_for(_args("--runs", "4", "--lanes", "5"), parse_master("spark://m:7077")) == 5
    assert lanes_for(_args("--runs", "4"), parse_master("spark://m:7077")) == 2
    with pytest.raises(HuntError, match="--lanes must be at least 1"):
        lanes_for(_args("--runs", "4", "--lanes", "0"), parse_master("local[2]"))
    with pytest.raises(HuntError, match="--lane is a spread hunt's own option"):
        lanes_for(_args("--runs", "4", "--lane", "1/2"), parse_master("local[2]"))


def test_lanes_without_a_master_are_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from highwater.cli import main

    assert main(["hunt", "--runs", "2", "--lanes", "3"]) == Exit.HARNESS
    assert "--lanes spreads a hunt over Spark: give --master too" in capsys.readouterr().err


def test_a_hunt_counts_the_faults_its_runs_could_not_apply(tmp_path: Path) -> None:
    """A drawn fault whose target named nothing when its time came (no follower in the rack, no
    worker) is a ``fault`` ``fail`` event: the run went on without it, and the hunt says how many."""
    from highwater.core.history import HistoryWriter
    from highwater.hunt import faults_not_applied

    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as history:
        history.invoke("nemesis", "fault", {"kind": "latency"})
        history.ok("nemesis", "fault", {"kind": "latency"})
        history.fail("nemesis", "fault", {"kind": "restart"}, error=ValueError("no follower in rack-a right now"))
        history.fail("consumer-0", "commit", {"offset": 3}, error=ValueError("not a fault"))
        history.ok("nemesis", "heal", {"kind": "latency"})
    assert faults_not_applied(path) == 1
    assert faults_not_applied(tmp_path / "missing.jsonl") == 0

    run = HuntedRun(
        Draw(1, "4.4.0", "java", "plain"), "r", "valid", (), (), 2, kinds=("latency", "restart"), not_applied=1
    )
    assert HuntedRun.from_json(run.to_json()) == run
    old = {k: v for k, v in run.to_json().items() if k not in ("kinds", "not_applied")}  # a hunt.json of before
    assert HuntedRun.from_json(old).not_applied == 0
    report = HuntReport(HUNT)
    report.runs.append(run)
    assert "2 fault(s) drawn, 1 of them not applied" in report.line()


def test_a_harness_error_in_one_run_is_recorded_and_the_hunt_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 2-hour hunt of 2026-12-06 ended after 36 minutes (exit 4) when a broker would not start
    again at a disk-full's heal. Now that run is classed ``error`` with the reason, its release's
    cluster is stopped so the next run starts anew, the hunt plays on, and it exits 4 only if
    nothing new was found."""
    import highwater.hunt as hunt
    from highwater.faults.common import FaultError

    played: list[int] = []
    discarded: list[str] = []

    class Clusters:
        def __init__(self, settings: object, progress: object) -> None:
            pass

        def get(self, release: str) -> str:
            return release

        def discard(self, collect_logs_to: Path | None = None) -> None:
            discarded.append(str(collect_logs_to))

        def close(self) -> None:
            pass

    def play(self: hunt.Hunter, cluster: str, d: Draw) -> None:
        played.append(d.seed)
        if d.seed == 101:
            (tmp_path / "c" / "20261207T000000-plain-101-abcdef").mkdir(parents=True)  # the run got its folder
            raise FaultError("heal-all finished with errors: f1: kafka-1 exited during start-up")
        self.report.runs.append(HuntedRun(d, f"run-{d.seed}", "valid", (), (), 1))

    monkeypatch.setattr(hunt, "_Clusters", Clusters)
    monkeypatch.setattr(hunt.Hunter, "_play", play)
    settings = HuntSettings(SPACE, seed=100, runs=4, results=tmp_path, campaign="c")
    report = hunt.Hunter(settings, lambda line: None).run()
    assert sorted(played) == [100, 101, 102, 103]
    (error,) = report.errors
    assert (
        error.draw.seed == 101 and error.run_class == "error" and "kafka-1 exited during start-up" in str(error.error)
    )
    # the cluster is stopped with its logs kept in the run's folder (why the broker would not start)
    assert discarded == [str(tmp_path / "c" / "20261207T000000-plain-101-abcdef" / "logs")]
    assert "1 harness error(s): seed(s) 101" in report.line()
    written = json.loads((tmp_path / "c" / HUNT_FILE).read_text())
    assert [r.get("error") is not None for r in sorted(written["runs"], key=lambda r: r["draw"]["seed"])] == [
        False,
        True,
        False,
        False,
    ]
    assert exit_of(report, []) == Exit.HARNESS
    report.runs.append(HuntedRun(Draw(9, "4.4.0", "java", "plain"), "r", "violated", ("lost-write",), (), 1))
    assert exit_of(report, []) == Exit.VIOLATIONS  # what was found still says 1
