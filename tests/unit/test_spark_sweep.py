"""``highwater sweep --master``'s pure parts: cells, each cell's command, retry or not by exit
code, progress lines, master URLs refused in one line; and the driver's bookkeeping and the
executor's attempts with stand-ins for Spark and for the runs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from highwater import cli, cli_sweep, spark_sweep, spread
from highwater.exit_codes import Exit
from highwater.pytest_runs import Shard
from highwater.sweep import ReleaseStatus, SweepError, SweepState, summary_lines
from highwater.sweep_cells import (
    REFUSE_FIRST_ENV,
    REFUSED_BACKEND,
    Cell,
    CellResult,
    CellSettings,
    Master,
    check_reachable,
    check_results,
    done_line,
    expand_tests,
    parse_master,
    plan_cells,
    refused_cells,
    retried,
    run_argv,
    setup_argv,
    status_of,
)

TEST = "suites/conformance/test_kip392_fetching.py::test_each_rack_reads_from_its_own_replica"
SETTINGS = CellSettings(campaign="c", results="/shared/results", profile="ci", backend="local", seed=None)


def test_cells_are_release_by_client_by_suite_and_the_knob_names_some() -> None:
    cells = plan_cells(
        ["4.3.1", "4.4.0"],
        kafka_of=lambda v: [v],
        clients_of=lambda _v: "kafka-python, confluent-kafka==2.16.1",
        tests=["suites/a/test_x.py", TEST],
        refuse_first=["confluent-kafka==2.16.1"],
    )
    assert [(c.kafka, c.client, c.test) for c in cells[:4]] == [
        ("4.3.1", "kafka-python", "suites/a/test_x.py"),
        ("4.3.1", "kafka-python", TEST),
        ("4.3.1", "confluent-kafka==2.16.1", "suites/a/test_x.py"),
        ("4.3.1", "confluent-kafka==2.16.1", TEST),
    ]
    assert len(cells) == 8
    assert [c.refuse_first for c in cells] == [False, False, True, True] * 2
    assert cells[1].key == f"4.3.1 kafka-python {TEST}"
    assert "/" not in cells[1].slug() and ":" not in cells[1].slug()


def test_a_client_sweep_has_one_client_per_version_on_one_release() -> None:
    cells = plan_cells(["3.0.5", "3.0.12"], lambda _v: ["4.4.0"], lambda v: f"kafka-python=={v}", [TEST])
    assert [c.key for c in cells] == [f"4.4.0 kafka-python=={v} {TEST}" for v in ("3.0.5", "3.0.12")]


def test_a_path_sweep_has_one_cell_per_path_named_by_the_path_and_run_from_its_start() -> None:
    paths = ["3.8.1->4.4.0", "3.9.1->4.4.0"]
    cells = plan_cells(
        paths,
        lambda p: [p.split("->")[1]],
        lambda _p: "java",
        [TEST],
        refuse_first=["3.9.1->4.4.0 java " + TEST],
        upgrade_from_of=lambda p: p.split("->")[0],
    )
    assert [c.key for c in cells] == [f"{p} java {TEST}" for p in paths]
    assert [c.refuse_first for c in cells] == [False, True]
    assert cells[0].releases == ("3.8.1", "4.4.0") and Cell("4.4.0", "java", TEST).releases == ("4.4.0",)
    argv = run_argv("/py", cells[0], SETTINGS, attempt=1)
    opts = dict(zip(argv[5::2], argv[6::2]))
    assert (opts["--kafka-version"], opts["--upgrade-from"]) == ("4.4.0", "3.8.1")
    assert "--upgrade-from" not in run_argv("/py", Cell("4.4.0", "java", TEST), SETTINGS, attempt=1)


def test_the_knob_is_read_from_the_environment_only_when_set() -> None:
    assert refused_cells({}) == []
    assert refused_cells({REFUSE_FIRST_ENV: "java, 4.4.0 kafka-python x"}) == ["java", "4.4.0 kafka-python x"]


def test_a_directory_is_its_test_modules_and_node_ids_stay(tmp_path: Path) -> None:
    suite = tmp_path / "suites" / "conformance"
    (suite / "deeper").mkdir(parents=True)
    for name in ("test_b.py", "test_a.py", "probes.py", "__init__.py", "deeper/test_c.py"):
        (suite / name).write_text("")

    def locate(name: str) -> str:
        return str(tmp_path / name)

    tests = expand_tests(["suites/conformance/", "suites/conformance/test_a.py::test_x"], locate)
    assert tests == [
        "suites/conformance/deeper/test_c.py",
        "suites/conformance/test_a.py",
        "suites/conformance/test_b.py",
        "suites/conformance/test_a.py::test_x",
    ]


def test_a_cell_runs_what_a_local_run_of_it_would_and_the_knob_refuses_its_first_attempt() -> None:
    cell = Cell("4.4.0", "confluent-kafka", TEST)
    argv = run_argv("/py", cell, SETTINGS, attempt=1)
    assert argv[:5] == ["/py", "-m", "highwater.cli", "run", TEST]
    opts = dict(zip(argv[5::2], argv[6::2]))
    assert opts == {
        "--campaign": "c",
        "--results": "/shared/results",
        "--profile": "ci",
        "--backend": "local",
        "--client": "confluent-kafka",
        "--kafka-version": "4.4.0",
        "--progress": "plain",
    }
    seeded = run_argv("/py", cell, CellSettings("c", "/r", seed=7), attempt=1)
    assert seeded[-2:] == ["--seed", "7"]
    refused = Cell("4.4.0", "confluent-kafka", TEST, refuse_first=True)
    assert REFUSED_BACKEND in run_argv("/py", refused, SETTINGS, attempt=1)
    assert run_argv("/py", refused, SETTINGS, attempt=2) == argv
    assert setup_argv("/py", "4.4.0") == ["/py", "-m", "highwater.cli", "setup", "--kafka-version", "4.4.0"]


@pytest.mark.parametrize(
    ("code", "attempt", "again"),
    [
        (Exit.HARNESS, 1, True),  # no verdict: tried again
        (-9, 1, True),  # a child killed by a signal: no verdict either
        (77, 1, True),  # a code of no one's
        (Exit.HARNESS, 2, False),  # the last attempt
        (Exit.OK, 1, False),  # verdicts never
        (Exit.VIOLATIONS, 1, False),
        (Exit.UNKNOWN, 1, False),
        (Exit.USAGE, 1, False),  # the same command would be refused again
        (Exit.INTERRUPTED, 1, False),
    ],
)
def test_only_a_harness_error_is_tried_again(code: int, attempt: int, again: bool) -> None:
    assert retried(code, attempt) is again


def test_outcomes_of_exit_codes() -> None:
    assert status_of(0) is ReleaseStatus.PASSED
    assert status_of(1) is ReleaseStatus.FAILED
    assert status_of(3) is ReleaseStatus.UNKNOWN
    assert status_of(4) is ReleaseStatus.ERROR
    assert status_of(-15) is ReleaseStatus.ERROR
    assert status_of(130) is None  # left pending


def test_progress_lines() -> None:
    ok = CellResult("4.4.0 kafka-python t", 0, 42.0, 1, "host-a", "/r/c/cells/x.log")
    assert done_line(ok, 1, 3, 50.0) == (
        "cell 1 of 3 done: 4.4.0 kafka-python t: valid in 0m42s, 1 attempt on host-a; elapsed 0m50s"
    )
    bad = CellResult("4.4.0 java t", 4, 5.0, 2, "host-b", "/r/c/cells/y.log")
    assert done_line(bad, 2, 3, 61.0) == (
        "cell 2 of 3 done: 4.4.0 java t: harness error, no verdict in 0m05s, 2 attempts on host-b; "
        "elapsed 1m01s; log /r/c/cells/y.log"
    )
    lost = CellResult("k", 4, 1.0, 0, reason="Spark task failed: executor lost")
    assert "(Spark task failed: executor lost)" in done_line(lost, 3, 3, 70.0)


@pytest.mark.parametrize(
    ("url", "addresses"),
    [
        ("local", ()),
        ("local[2]", ()),
        ("local[*]", ()),
        ("local[4,2]", ()),
        ("spark://127.0.0.1:7077", (("127.0.0.1", 7077),)),
        ("spark://m1:7077,m2.example.org:7078", (("m1", 7077), ("m2.example.org", 7078))),
    ],
)
def test_master_urls_taken(url: str, addresses: tuple[tuple[str, int], ...]) -> None:
    assert parse_master(url) == Master(url, addresses)


@pytest.mark.parametrize(
    "url", ["", "yarn", "local[0]", "local[x]", "spark://", "spark://host", "spark://h:0", "h:7077"]
)
def test_other_master_urls_are_one_line(url: str) -> None:
    with pytest.raises(SweepError) as err:
        parse_master(url)
    assert "\n" not in str(err.value) and "spark://HOST:PORT" in str(err.value)


def test_loopback_masters() -> None:
    assert parse_master("local[2]").loopback
    assert parse_master("spark://127.0.0.1:7077").loopback
    assert not parse_master("spark://10.0.0.5:7077").loopback


def test_an_unreachable_master_is_one_line_and_a_standby_that_answers_is_enough() -> None:
    def refuse(address: tuple[str, int], _timeout: float) -> None:
        if address[0] != "up":
            raise ConnectionRefusedError(111, "Connection refused")

    with pytest.raises(SweepError) as err:
        check_reachable(parse_master("spark://down:7077"), refuse)
    assert str(err.value) == (
        "Spark master spark://down:7077 is unreachable (down:7077: Connection refused); start it or fix --master"
    )
    check_reachable(parse_master("spark://down:7077,up:7077"), refuse)
    check_reachable(parse_master("local[2]"), refuse)  # nothing to reach


def test_the_results_store_is_a_path() -> None:
    check_results("/mnt/shared/results")
    check_results("results")
    with pytest.raises(SweepError, match="shared file system"):
        check_results("s3a://bucket/results")


def test_sweep_master_parses() -> None:
    args = cli.build_parser().parse_args(["sweep", "--master", "spark://h:7077", "--versions", "4.4.0"])
    assert args.master == "spark://h:7077"
    assert cli.build_parser().parse_args(["sweep", "--versions", "4.4.0"]).master is None


@pytest.mark.parametrize(
    ("master", "message"),
    [
        ("yarn", "expected local[N], local[*] or spark://HOST:PORT"),
        ("spark://127.0.0.1:1", "is unreachable"),
    ],
)
def test_a_bad_or_unreachable_master_is_refused_before_anything_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], master: str, message: str
) -> None:
    def nothing_may_start(*_a: object, **_k: object) -> list[str]:
        raise AssertionError("the sweep went on past a bad --master")

    monkeypatch.setattr(cli_sweep, "published_versions", nothing_may_start)
    monkeypatch.setattr(cli_sweep, "preflight", nothing_may_start)
    code = cli.main(["sweep", "--master", master, "--versions", "4.4.0", "--campaign", "x"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == Exit.HARNESS
    assert len(err) == 1 and message in err[0], err


def _spread_sweep(tmp_path: Path, run: Callable[[Sequence[Cell]], list[CellResult]]) -> tuple[int, list[str]]:
    said: list[str] = []

    def fake_spread(
        cells: Sequence[Cell], settings: CellSettings, master: Master, say: object, done: Callable[[CellResult], None]
    ) -> None:
        for result in run(cells):
            done(result)

    mp = pytest.MonkeyPatch()
    mp.setattr(spread, "spread", fake_spread)
    try:
        code = spread.sweep_spread(
            master=parse_master("local[2]"),
            settings=CellSettings("camp", str(tmp_path)),
            state_path=tmp_path / "camp" / spread.cells_state_file(None),
            plan={"range": "4.4.0"},
            versions=["4.4.0"],
            kafka_of=lambda v: [v],
            clients_of=lambda _v: "kafka-python,java",
            tests=[TEST],
            summary="1 releases",
            say=said.append,
        )
    finally:
        mp.undo()
    return code, said


def test_the_driver_records_each_cell_as_it_finishes_and_resumes_the_pending(tmp_path: Path) -> None:
    ran: list[list[str]] = []

    def first(cells: Sequence[Cell]) -> list[CellResult]:
        ran.append([c.key for c in cells])
        return [CellResult(cells[0].key, 0, 30.0, 1, "h"), CellResult(cells[1].key, 130, 3.0, 1, "h")]

    code, said = _spread_sweep(tmp_path, first)
    assert code == Exit.INTERRUPTED  # a cell left pending
    state = json.loads((tmp_path / "camp" / "sweep.cells.json").read_text())
    assert list(state["outcomes"]) == [f"4.4.0 kafka-python {TEST}"]
    assert state["plan"]["cells"] == "release x client x suite"
    assert any(line.startswith("cell 1 of 2 done: 4.4.0 kafka-python") for line in said)

    def second(cells: Sequence[Cell]) -> list[CellResult]:
        ran.append([c.key for c in cells])
        return [CellResult(cells[0].key, 4, 9.0, 2, "h", reason="")]

    code, _ = _spread_sweep(tmp_path, second)
    assert code == Exit.OK  # every cell has an outcome, whatever it is
    assert ran[1] == [f"4.4.0 java {TEST}"]
    outcomes = json.loads((tmp_path / "camp" / "sweep.cells.json").read_text())["outcomes"]
    assert outcomes[f"4.4.0 java {TEST}"]["status"] == "error"
    assert outcomes[f"4.4.0 java {TEST}"]["attempts"] == 2


def test_a_shard_keeps_a_cells_state_of_its_own() -> None:
    assert spread.cells_state_file(Shard(2, 4)) == "sweep.cells.shard-2-of-4.json"


def test_an_executor_tries_a_harness_error_again_and_sets_a_release_up_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    children: list[list[str]] = []
    codes = {"setup": [0], "run": [4, 1, 0]}  # refused, then a verdict; then another cell valid

    def child(argv: Sequence[str], log: Path, cwd: str | None) -> int:
        children.append(list(argv))
        return codes[argv[3]].pop(0)

    monkeypatch.setattr(spark_sweep, "_child", child)
    monkeypatch.setattr(spark_sweep, "_SET_UP", set())
    settings = CellSettings("camp", str(tmp_path))
    result = spark_sweep.run_cell(Cell("4.4.0", "kafka-python", TEST), settings)
    assert (result.code, result.attempts) == (1, 2)
    assert [a[3] for a in children] == ["setup", "run", "run"]
    again = spark_sweep.run_cell(Cell("4.4.0", "java", TEST), settings)
    assert (again.code, again.attempts) == (0, 1)
    assert [a[3] for a in children] == ["setup", "run", "run", "run"]  # set up once per worker
    log = Path(result.log).read_text()
    assert log.count("attempt") == 2 and result.log.startswith(str(tmp_path / "camp" / "cells"))


def test_an_executor_sets_up_both_ends_of_a_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    children: list[list[str]] = []

    def child(argv: Sequence[str], log: Path, cwd: str | None) -> int:
        children.append(list(argv))
        return 0

    monkeypatch.setattr(spark_sweep, "_child", child)
    monkeypatch.setattr(spark_sweep, "_SET_UP", {"4.4.0"})
    cell = Cell("4.4.0", "java", TEST, upgrade_from="3.9.1")
    assert spark_sweep.run_cell(cell, CellSettings("camp", str(tmp_path))).code == 0
    assert [(a[3], a[-1]) for a in children] == [("setup", "3.9.1"), ("run", "3.9.1")]  # --upgrade-from 3.9.1


def test_a_failed_setup_is_a_harness_error_tried_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(spark_sweep, "_child", lambda argv, log, cwd: 1 if argv[3] == "setup" else 0)
    monkeypatch.setattr(spark_sweep, "_SET_UP", set())
    result = spark_sweep.run_cell(Cell("4.4.0", "kafka-python", TEST), CellSettings("camp", str(tmp_path)))
    assert (result.code, result.attempts) == (Exit.HARNESS, 2)


def test_a_child_exit_code_is_returned(tmp_path: Path) -> None:
    assert spark_sweep._child([sys.executable, "-c", "raise SystemExit(4)"], tmp_path / "log", None) == 4


def test_help_says_what_master_does() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    help_text = sub.choices["sweep"].format_help()
    assert "--master URL" in help_text and "spark://HOST:PORT" in help_text


def test_a_summary_with_every_cell_pending_says_so() -> None:
    assert summary_lines(SweepState({}, ["a", "b"]))[-1] == "2 pending"
