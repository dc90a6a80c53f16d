"""Sweep planning, state and resumption, version lists and ranges (Kafka releases and client
versions), and ``highwater sweep --over client``, with stand-ins for PyPI, installing and running."""

from __future__ import annotations

import io
import json
import subprocess
import urllib.error
from pathlib import Path

import pytest

from highwater import cli, cli_sweep, preflight
from highwater.harness.distribution import SetupError
from highwater.sweep import (
    ReleaseStatus,
    SweepError,
    SweepState,
    clock,
    eta_seconds,
    load_or_start,
    newest,
    newest_patches,
    parse_range,
    parse_version_list,
    releases_in_range,
    run_sweep,
    select_versions,
    selection_text,
    summary_lines,
    version_key,
)

PUBLISHED = ["3.2.3", "3.3.1", "3.3.2", "3.4.0", "3.9.1", "4.0.0", "4.4.0"]
PLAN: dict[str, object] = {"range": "3.3.1..newest", "tests": ["suites/conformance"]}


def test_newest_patch_of_each_minor_line() -> None:
    assert newest_patches(["3.3.2", "3.3.1", "3.4.0", "3.9.0", "3.9.1", "4.0.0"]) == [
        "3.3.2",
        "3.4.0",
        "3.9.1",
        "4.0.0",
    ]


def test_ranges() -> None:
    assert parse_range("3.3.1..newest") == ("3.3.1", None)
    assert parse_range(" 3.3.1 .. 3.9.1 ") == ("3.3.1", "3.9.1")
    assert parse_range("3.9.1") == ("3.9.1", "3.9.1")
    for bad in ("3.3..newest", "x..4.0.0", "4.0.0..3.3.1"):
        with pytest.raises(SweepError) as err:
            parse_range(bad)
        assert "\n" not in str(err.value)


def test_releases_in_range_include_patches_and_never_predate_kraft() -> None:
    assert releases_in_range(PUBLISHED, "3.0.0", None) == ["3.3.1", "3.3.2", "3.4.0", "3.9.1", "4.0.0", "4.4.0"]
    assert releases_in_range(PUBLISHED, "3.3.2", "4.0.0") == ["3.3.2", "3.4.0", "3.9.1", "4.0.0"]
    with pytest.raises(SweepError, match="no published release"):
        releases_in_range(PUBLISHED, "3.5.0", "3.8.0")


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_a_sweep_skips_unassemblable_releases_and_resumes_after_an_interruption(tmp_path: Path) -> None:
    state_path = tmp_path / "sweep.json"
    releases = releases_in_range(PUBLISHED, "3.3.1", "4.0.0")
    clock_ = Clock()
    ran: list[str] = []
    said: list[str] = []

    def prepare(v: str) -> None:
        if v == "3.3.2":
            raise SetupError("Kafka 3.3.2 is incomplete on Maven Central: kafka-tools is missing")

    def run(v: str) -> int:
        ran.append(v)
        clock_.t += 600
        return {"3.4.0": 1, "3.9.1": 2}.get(v, 0)  # 3.9.1: Ctrl-C in the child

    state = run_sweep(load_or_start(state_path, PLAN, releases), state_path, prepare, run, said.append, clock_)
    assert ran == ["3.3.1", "3.4.0", "3.9.1"]
    assert {r: o.status for r, o in state.outcomes.items()} == {
        "3.3.1": ReleaseStatus.PASSED,
        "3.3.2": ReleaseStatus.SKIPPED,
        "3.4.0": ReleaseStatus.FAILED,
    }
    assert state.pending() == ["3.9.1", "4.0.0"]
    assert any(line.startswith("release 3.3.2 skipped: Kafka 3.3.2 is incomplete") for line in said)
    assert "release 4 of 5 (3.9.1): elapsed 20m00s, ETA 20m00s" in said  # median 10 min x 2 pending

    # the same command again: only what is not recorded runs
    ran.clear()
    resumed = load_or_start(state_path, PLAN, releases)
    assert resumed.pending() == ["3.9.1", "4.0.0"]
    state = run_sweep(resumed, state_path, prepare, lambda v: ran.append(v) or 0, said.append, clock_)
    assert ran == ["3.9.1", "4.0.0"] and not state.pending()
    lines = summary_lines(state)
    assert lines[-1] == "3 passed, 1 failed, 1 skipped, 0 pending"
    assert json.loads(state_path.read_text())["outcomes"]["3.4.0"]["exit_code"] == 1


def test_state_of_another_sweep_or_a_broken_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "sweep.json"
    SweepState(PLAN, ["3.3.1"]).save(path)
    with pytest.raises(SweepError, match="belongs to another sweep"):
        load_or_start(path, {**PLAN, "client": "java"}, ["3.3.1"])
    path.write_text("{not json")
    with pytest.raises(SweepError, match="unreadable sweep state"):
        load_or_start(path, PLAN, ["3.3.1"])
    path.write_text(json.dumps({"format": "highwater.sweep/1", "plan": {}}))
    with pytest.raises(SweepError, match="not a highwater.sweep/1 sweep state file"):
        load_or_start(path, PLAN, ["3.3.1"])


def test_eta_and_clock() -> None:
    assert eta_seconds([], 3) is None and clock(None) == "?"
    assert eta_seconds([60, 600, 120], 2) == 240
    assert clock(59) == "0m59s" and clock(3 * 3600 + 5 * 60) == "3h05m"


def test_cli_says_a_bad_range_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from highwater import cli

    assert cli.main(["sweep", "--kafka-versions", "3.3..newest"]) == 4  # refused
    assert capsys.readouterr().err.strip().splitlines() == [
        "highwater: error: bad release range '3.3..newest': expected LOW..HIGH, e.g. 3.3.1..newest or 3.3.1..3.9.1"
    ]


# -- version lists and ranges (Kafka releases and client versions alike) ----------------------------

KP = ["1.4.7", "2.0.1", "2.0.2", "2.2.21", "3.0.4", "3.0.5", "3.0.9", "3.0.10", "3.0.12"]


def test_a_version_list_must_be_published_and_supported() -> None:
    assert select_versions(KP, ["3.0.12", "3.0.5", "3.0.5"], floor=(2, 0, 2), what="kafka-python") == [
        "3.0.5",
        "3.0.12",
    ]
    with pytest.raises(SweepError) as err:
        select_versions(KP, ["3.0.5", "3.0.11"], floor=(2, 0, 2), what="kafka-python")
    assert (
        str(err.value) == "kafka-python 3.0.11 is not a published version (newest: 3.0.12, 3.0.10, 3.0.9, 3.0.5, 3.0.4)"
    )
    with pytest.raises(SweepError) as err:
        select_versions(KP, ["2.0.1"], floor=(2, 0, 2), what="kafka-python", why="the oldest its driver supports")
    assert str(err.value) == "kafka-python 2.0.1 is older than 2.0.2, the oldest its driver supports"


def test_a_range_is_resolved_against_the_published_versions_from_the_floor_on() -> None:
    # numeric order (3.0.10 after 3.0.9), bounds need not be published themselves
    assert select_versions(KP, low="3.0.5", high="3.0.11", floor=(2, 0, 2)) == ["3.0.5", "3.0.9", "3.0.10"]
    assert select_versions(KP, low="3.0.9", floor=(2, 0, 2)) == ["3.0.9", "3.0.10", "3.0.12"]
    assert select_versions(KP, low="3.0.9", high="newest", floor=(2, 0, 2)) == ["3.0.9", "3.0.10", "3.0.12"]
    assert select_versions(KP, low="1.0.0", high="2.2.21", floor=(2, 0, 2)) == ["2.0.2", "2.2.21"]  # from the floor
    assert select_versions(KP, high="2.2.21", floor=(2, 0, 2)) == ["2.0.2", "2.2.21"]
    assert select_versions(PUBLISHED, low="3.0.0", high="3.9.1", floor=(3, 3, 1)) == [
        "3.3.1",
        "3.3.2",
        "3.4.0",
        "3.9.1",
    ]
    with pytest.raises(SweepError, match=r"no published kafka-python version in 1.0.0..2.0.1 \(from 2.0.2 on"):
        select_versions(KP, low="1.0.0", high="2.0.1", floor=(2, 0, 2), what="kafka-python")
    with pytest.raises(SweepError, match="bad kafka-python range 3.0.9..3.0.5: 3.0.5 is older than 3.0.9"):
        select_versions(KP, low="3.0.9", high="3.0.5", what="kafka-python")


@pytest.mark.parametrize(
    ("listed", "low", "high", "message"),
    [
        (None, None, None, "say which versions to sweep: --versions A,B,... or a range --from A [--to B]"),
        (["3.0.5"], "3.0.4", None, "give the versions once: --versions A,B,... or a range --from A [--to B]"),
        (None, "3.0", None, "bad kafka-python version '3.0': expected MAJOR.MINOR.PATCH, e.g. 3.0.12"),
        (["3.0.5rc1"], None, None, "bad kafka-python version '3.0.5rc1': expected MAJOR.MINOR.PATCH, e.g. 3.0.12"),
    ],
)
def test_a_bad_selection_is_one_line(listed: list[str] | None, low: str | None, high: str | None, message: str) -> None:
    with pytest.raises(SweepError) as err:
        select_versions(KP, listed, low, high, what="kafka-python")
    assert str(err.value) == message


def test_version_lists_and_their_plan_text() -> None:
    assert parse_version_list(" 3.0.5, 3.0.12 ,", "kafka-python") == ["3.0.5", "3.0.12"]
    with pytest.raises(SweepError, match="no version in --versions ','"):
        parse_version_list(",")
    assert version_key("3.0.10") > version_key("3.0.9")
    assert selection_text(["3.0.5", "3.0.12"], None, None) == "3.0.5,3.0.12"
    assert selection_text(None, "3.0.5", None) == "3.0.5..newest"
    assert selection_text(None, None, "3.0.5") == "..3.0.5"


# -- client versions from PyPI -------------------------------------------------------------------


def pypi(monkeypatch: pytest.MonkeyPatch, releases: dict[str, list[dict[str, object]]]) -> list[str]:
    """Stands in for PyPI's JSON API; returns the URLs asked for."""
    asked: list[str] = []

    def urlopen(url: str, timeout: float = 0) -> io.BytesIO:
        asked.append(url)
        return io.BytesIO(json.dumps({"info": {}, "releases": releases}).encode())

    monkeypatch.setattr(cli_sweep.urllib.request, "urlopen", urlopen)
    return asked


FILE: dict[str, object] = {"filename": "x.whl", "yanked": False}


def test_kafka_python_versions_are_pypis_stable_installable_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = pypi(
        monkeypatch,
        {
            "3.0.10": [FILE],
            "3.0.9": [FILE],
            "3.0.0rc1": [FILE],  # a pre-release
            "2.0.2": [FILE],
            "1.4.7": [FILE],
            "3.0.3": [],  # no files: nothing to install
            "3.0.8": [{**FILE, "yanked": True}],
            "2.0.0.dev1": [FILE],
        },
    )
    assert cli_sweep.client_versions("kafka-python") == ["1.4.7", "2.0.2", "3.0.9", "3.0.10"]
    assert asked == ["https://pypi.org/pypi/kafka-python/json"]
    assert cli_sweep.oldest_driven("kafka-python") == cli_sweep.KAFKA_PYTHON_OLDEST == (3, 0, 0)


def test_an_unreachable_pypi_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def urlopen(url: str, timeout: float = 0) -> io.BytesIO:
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(cli_sweep.urllib.request, "urlopen", urlopen)
    with pytest.raises(SetupError) as err:
        cli_sweep.client_versions("confluent-kafka")
    assert str(err.value) == "cannot list confluent-kafka versions on PyPI: <urlopen error no route to host>"


def test_java_versions_are_kafkas_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_sweep, "published_versions", lambda: ["3.9.1", "4.4.0"])
    assert cli_sweep.client_versions("java") == ["3.9.1", "4.4.0"]


# -- highwater sweep --over client -----------------------------------------------------------------


class Cells:
    """Stands in for preparing and running: the preflight's installs and the child pytest runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, codes: dict[str, int] | None = None) -> None:
        self.argvs: list[list[str]] = []
        self.kafka: list[str] = []
        self.drivers: list[str] = []
        self.codes = codes or {}
        monkeypatch.setattr(preflight, "ensure_kafka", lambda v, progress=None: self.kafka.append(v))
        monkeypatch.setattr(preflight, "get_driver", self.driver)
        monkeypatch.setattr(cli_sweep, "default_version", lambda progress=None: "4.4.0")
        monkeypatch.setattr(subprocess, "call", self.call)

    def driver(self, spec: object) -> None:
        self.drivers.append(str(spec))
        if str(spec) == "kafka-python==3.0.9":
            raise SetupError("cannot install kafka-python==3.0.9: no matching distribution")

    def call(self, argv: list[str], **_: object) -> int:
        self.argvs.append(list(argv))
        return self.codes.get(self.option(argv, "--client"), 0)

    @staticmethod
    def option(argv: list[str], name: str) -> str:
        return argv[argv.index(name) + 1]


def _sweep(tmp_path: Path, *argv: str) -> int:
    return cli.main(["sweep", "--over", "client", *argv, "--results", str(tmp_path), "--campaign", "c"])


def test_a_client_sweep_runs_each_version_on_one_kafka_release_into_one_campaign(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pypi(monkeypatch, {v: [FILE] for v in KP})
    cells = Cells(monkeypatch, codes={"kafka-python==3.0.10": 1})
    rc = _sweep(tmp_path, "--client", "kafka-python", "--from", "3.0.5", "--kafka-version", "4.3.1", "suites/sweep")
    assert rc == 0
    assert cells.kafka == ["4.3.1"]  # the Kafka release, assembled up front
    assert [Cells.option(a, "--client") for a in cells.argvs] == [
        "kafka-python==3.0.5",
        "kafka-python==3.0.10",
        "kafka-python==3.0.12",
    ]  # 3.0.9 could not be installed: skipped
    assert {Cells.option(a, "--kafka-version") for a in cells.argvs} == {"4.3.1"}
    assert {Cells.option(a, "--campaign") for a in cells.argvs} == {"c"}
    assert all(a[a.index("-p") + 2].endswith("suites/sweep") for a in cells.argvs)
    state = json.loads((tmp_path / "c" / "sweep.json").read_text())
    assert state["plan"] == {
        "over": "client",
        "client": "kafka-python",
        "versions": "3.0.5..newest",
        "newest_patch_only": False,
        "kafka_version": "4.3.1",
        "tests": ["suites/sweep"],
        "profile": "ci",
        "backend": "local",
        "seed": None,
    }
    assert {r: o["status"] for r, o in state["outcomes"].items()} == {
        "3.0.5": "passed",
        "3.0.9": "skipped",
        "3.0.10": "failed",
        "3.0.12": "passed",
    }
    out, err = capsys.readouterr()
    assert "highwater: sweep c: 4 kafka-python versions on Kafka 4.3.1 (3.0.5, 3.0.9, 3.0.10, 3.0.12), 4 to run" in err
    assert "highwater: kafka-python 3.0.9 skipped: cannot install kafka-python==3.0.9: no matching distribution" in err
    assert out.splitlines()[-2] == "2 passed, 1 failed, 1 skipped, 0 pending"


def test_a_resumed_client_sweep_keeps_its_kafka_release(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pypi(monkeypatch, {v: [FILE] for v in KP})
    cells = Cells(monkeypatch, codes={"kafka-python==3.0.12": 2})  # interrupted
    assert _sweep(tmp_path, "--client", "kafka-python", "--versions", "3.0.5,3.0.12") == 130  # interrupted
    assert {Cells.option(a, "--kafka-version") for a in cells.argvs} == {"4.4.0"}  # the newest then
    # a day later the newest is 4.5.0, but the same command resumes on the sweep's release
    monkeypatch.setattr(cli_sweep, "default_version", lambda progress=None: "4.5.0")
    cells.argvs.clear()
    cells.codes.clear()
    assert _sweep(tmp_path, "--client", "kafka-python", "--versions", "3.0.5,3.0.12") == 0
    assert [(Cells.option(a, "--client"), Cells.option(a, "--kafka-version")) for a in cells.argvs] == [
        ("kafka-python==3.0.12", "4.4.0")
    ]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--client", "kafka-python==3.0.5", "--versions", "3.0.5"],
            "with --over client the versions are --versions or --from/--to: --client kafka-python, "
            "not --client kafka-python==3.0.5",
        ),
        (
            ["--client", "kafka-python,java", "--versions", "3.0.5"],
            "--over client sweeps one client library: --client NAME, not 'kafka-python,java'",
        ),
        (
            ["--client", "kafka-python", "--kafka-versions", "3.3.1..newest"],
            "--kafka-versions is the range of a Kafka sweep; with --over client give --versions A,B or "
            "--from A --to B (client versions) and --kafka-version V",
        ),
        (
            ["--client", "kafka-python", "--versions", "2.0.1,3.0.5"],
            "kafka-python 2.0.1 is older than 3.0.0, the oldest its driver supports",
        ),
        (["--client", "kafka-python"], "say which versions to sweep: --versions A,B,... or a range --from A [--to B]"),
        (
            ["--client", "nope", "--versions", "1.0.0"],
            "unknown client 'nope' (known: kafka-python, confluent-kafka, java, kafkajs, ckjs, franz-go, sarama)",
        ),
    ],
)
def test_a_bad_client_sweep_is_one_line_before_anything_runs(
    argv: list[str], line: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pypi(monkeypatch, {v: [FILE] for v in KP})
    cells = Cells(monkeypatch)
    assert _sweep(tmp_path, *argv) == 4  # refused
    assert capsys.readouterr().err.strip().splitlines() == [f"highwater: error: {line}"]
    assert cells.argvs == [] and cells.drivers == [] and not (tmp_path / "c").exists()


def test_a_kafka_sweep_takes_a_version_list_or_range_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_sweep, "published_versions", lambda: PUBLISHED)
    monkeypatch.setattr(cli_sweep, "ensure_kafka", lambda v, progress=None: None)
    cells = Cells(monkeypatch)
    base = ["sweep", "--client", "java", "--results", str(tmp_path)]
    assert cli.main([*base, "--campaign", "a", "--from", "3.9.0", "--to", "4.0.0"]) == 0
    assert [Cells.option(a, "--kafka-version") for a in cells.argvs] == ["3.9.1", "4.0.0"]
    assert {Cells.option(a, "--client") for a in cells.argvs} == {"java"} and cells.drivers == ["java"]
    assert json.loads((tmp_path / "a" / "sweep.json").read_text())["plan"]["range"] == "3.9.0..4.0.0"
    cells.argvs.clear()
    assert cli.main([*base, "--campaign", "b", "--versions", "4.4.0,3.3.2"]) == 0
    assert [Cells.option(a, "--kafka-version") for a in cells.argvs] == ["3.3.2", "4.4.0"]
    capsys.readouterr()
    for argv, line in [
        (["--versions", "3.2.3"], "Kafka 3.2.3 is older than 3.3.1, the first release with production KRaft"),
        (["--kafka-versions", "3.3.1..newest", "--versions", "4.4.0"], "give the releases once: --kafka-versions"),
        (["--versions", "4.4.0", "--kafka-version", "4.4.0"], "--kafka-version is for --over client;"),
    ]:
        assert cli.main([*base, "--campaign", "z", *argv]) == 4  # refused
        (err,) = capsys.readouterr().err.strip().splitlines()
        assert err.startswith(f"highwater: error: {line}")
    assert not (tmp_path / "z").exists()


def test_a_sharded_sweep_splits_the_releases_every_nth_and_keeps_a_state_per_shard(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--shard I/N: every N-th release from the I-th, the N shards covering the range once, each
    with its own state file in the one campaign; an empty shard runs nothing; without --campaign
    it is refused before anything runs."""
    monkeypatch.setattr(cli_sweep, "published_versions", lambda: PUBLISHED)
    monkeypatch.setattr(cli_sweep, "ensure_kafka", lambda v, progress=None: None)
    cells = Cells(monkeypatch)
    base = [
        "sweep",
        "--client",
        "java",
        "--results",
        str(tmp_path),
        "--campaign",
        "n",
        "--from",
        "3.3.1",
        "--to",
        "4.0.0",
    ]
    swept = []
    for i in (1, 2, 3):
        cells.argvs.clear()
        assert cli.main([*base, "--shard", f"{i}/3"]) == 0
        swept.append([Cells.option(a, "--kafka-version") for a in cells.argvs])
        assert (tmp_path / "n" / f"sweep.shard-{i}-of-3.json").exists()
    every = releases_in_range(PUBLISHED, "3.3.1", "4.0.0")
    assert sorted(v for s in swept for v in s) == sorted(every)  # a partition of the range
    assert swept[0] == every[0::3] and swept[1] == every[1::3]
    assert cli_sweep.shard_versions(["a"], cli_sweep.shard_spec("2/3")) == []
    cells.argvs.clear()
    assert cli.main([*base, "--shard", f"{len(every) + 1}/{len(every) + 1}"]) == 0 and cells.argvs == []
    capsys.readouterr()
    assert cli.main(["sweep", "--results", str(tmp_path), "--shard", "1/2"]) == 4
    assert "--shard needs --campaign" in capsys.readouterr().err


def test_sweep_argument_parsing() -> None:
    args = cli.build_parser().parse_args(
        [
            "sweep",
            "--over",
            "client",
            "--client",
            "kafka-python",
            "--versions",
            "3.0.5,3.0.12",
            "--kafka-version",
            "4.3.1",
            "t.py",
        ]
    )
    assert (args.over, args.client, args.versions, args.kafka_version, args.tests) == (
        "client",
        "kafka-python",
        "3.0.5,3.0.12",
        "4.3.1",
        ["t.py"],
    )
    args = cli.build_parser().parse_args(["sweep", "--from", "3.0.5", "--to", "3.0.12", "--newest-patch-only"])
    assert (args.over, args.low, args.high, args.newest_patch_only, args.kafka_versions) == (
        "kafka",
        "3.0.5",
        "3.0.12",
        True,
        None,
    )


def test_the_floors_are_the_drivers_own() -> None:
    from highwater.harness.clients import java, python

    assert cli_sweep.oldest_driven("kafka-python") == python.OLDEST["kafka-python"]
    assert cli_sweep.oldest_driven("confluent-kafka") == python.OLDEST["confluent-kafka"]
    assert cli_sweep.oldest_driven("java") == java.OLDEST


def test_newest_keeps_the_n_newest_versions_oldest_first() -> None:
    assert newest(["3.0.12", "3.0.5", "3.0.10", "3.0.9"], 2) == ["3.0.10", "3.0.12"]
    assert newest(["3.0.12", "3.0.5"], 5) == ["3.0.5", "3.0.12"]
    assert newest(["3.0.12", "3.0.5"], None) == ["3.0.5", "3.0.12"]


def test_a_client_sweep_of_the_newest_versions_records_n_in_its_plan(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pypi(monkeypatch, {v: [FILE] for v in KP})
    cells = Cells(monkeypatch, codes={})
    rc = _sweep(tmp_path, "--client", "kafka-python", "--newest", "2", "--kafka-version", "4.3.1", "suites/sweep")
    assert rc == 0
    assert [Cells.option(a, "--client") for a in cells.argvs] == ["kafka-python==3.0.10", "kafka-python==3.0.12"]
    assert json.loads((tmp_path / "c" / "sweep.json").read_text())["plan"]["newest"] == 2


@pytest.mark.parametrize("value", ["0", "-1", "three"])
def test_newest_must_be_a_whole_number_of_at_least_one(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(["sweep", "--newest", value])
    assert exc.value.code == 2
    assert "--newest" in capsys.readouterr().err
