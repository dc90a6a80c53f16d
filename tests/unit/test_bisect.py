"""The bisect search and its confidence, with judges that stand in for runs (pure logic), and what
``highwater bisect`` refuses before any run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from highwater import cli, cli_sweep, preflight
from highwater.bisect import BisectError, Judgement, Probe, bisect, report_lines, runs_for
from highwater.cli_sweep import search_order

VERSIONS = [f"3.{minor}.0" for minor in range(3, 10)] + ["4.0.0", "4.1.0"]


def boundary_judge(first_bad: str, runs: int = 3, fail_runs: int = 3, unknown: frozenset[str] = frozenset()):
    """A judge whose releases from ``first_bad`` on fail ``fail_runs`` of ``runs`` runs."""
    seen: list[str] = []

    def judge(v: str) -> Probe:
        seen.append(v)
        if v in unknown:
            return Probe(v, runs=runs, failed=0, unknown=1)
        bad = VERSIONS.index(v) >= VERSIONS.index(first_bad)
        return Probe(v, runs=runs, failed=fail_runs if bad else 0)

    judge.seen = seen  # type: ignore[attr-defined]
    return judge


@pytest.mark.parametrize("first_bad", VERSIONS[1:])
def test_finds_every_possible_boundary_in_log_probes(first_bad: str) -> None:
    judge = boundary_judge(first_bad)
    result = bisect(VERSIONS, judge)
    assert (result.first_bad, result.exact) == (first_bad, True)
    assert result.last_good == VERSIONS[VERSIONS.index(first_bad) - 1]
    assert len(judge.seen) <= 2 + 4  # both ends, then at most ceil(log2(9)) probes
    assert result.confidence == 1.0  # every bad release failed every run


def test_a_fix_is_found_walking_from_the_newer_good_release() -> None:
    # failing up to 3.6.0, fixed in 3.7.0: good = 4.1.0, bad = 3.3.0
    order = search_order(VERSIONS, "4.1.0", "3.3.0")
    assert order[0] == "4.1.0" and order[-1] == "3.3.0"

    def judge(v: str) -> Probe:
        return Probe(v, runs=2, failed=2 if VERSIONS.index(v) < VERSIONS.index("3.7.0") else 0)

    result = bisect(order, judge)
    assert (result.last_good, result.first_bad) == ("3.7.0", "3.6.0")


def test_unknown_releases_are_set_aside_never_counted_good() -> None:
    judge = boundary_judge("3.7.0", unknown=frozenset({"3.6.0"}))
    result = bisect(VERSIONS, judge)
    # 3.6.0 could not be judged: the boundary is a range around it, not "3.6.0 good"
    assert (result.last_good, result.first_bad, result.between_unknown) == ("3.5.0", "3.7.0", ["3.6.0"])
    assert not result.exact
    assert any(p.judgement is Judgement.UNKNOWN for p in result.probes)
    assert "not judged in between: 3.6.0" in report_lines(result, 3)[0]


def test_endpoints_must_differ() -> None:
    with pytest.raises(BisectError, match="good end 3.3.0 is not good"):
        bisect(VERSIONS, boundary_judge("3.3.0"))
    with pytest.raises(BisectError, match="bad end 4.1.0 does not fail"):
        bisect(VERSIONS, lambda v: Probe(v, runs=3, failed=0))
    with pytest.raises(BisectError, match="two different releases"):
        bisect(["3.3.0"], boundary_judge("3.3.0"))


def test_confidence_falls_with_a_low_failure_rate_and_says_how_many_runs_would_do() -> None:
    result = bisect(VERSIONS, boundary_judge("3.8.0", runs=3, fail_runs=1))
    assert result.failure_rate == pytest.approx(1 / 3)
    good = [p for p in result.probes if p.judgement is Judgement.GOOD]
    assert result.confidence == pytest.approx((1 - (2 / 3) ** 3) ** len(good))
    assert result.confidence < 0.95
    lines = report_lines(result, 3)
    assert lines[0].startswith("first release with the bad verdict: 3.8.0")
    assert lines[-1] == f"for 95 % confidence, run again with --runs {runs_for(1 / 3, 0.95)}"


def test_runs_for() -> None:
    assert runs_for(0.0, 0.95) is None
    assert runs_for(1.0, 0.95) == 1
    assert runs_for(0.5, 0.95) == 5  # 0.5^5 = 3.1 % < 5 % <= 0.5^4
    assert runs_for(0.1, 0.9) == 22


def test_probe_judgement() -> None:
    assert Probe("v", runs=3, failed=1, unknown=2).judgement is Judgement.BAD  # a failure seen is a failure
    assert Probe("v", runs=3, failed=0, unknown=1).judgement is Judgement.UNKNOWN
    assert Probe("v", runs=0, failed=0).judgement is Judgement.UNKNOWN
    assert Probe("v", runs=3, failed=0).judgement is Judgement.GOOD


def test_search_order_refuses_unpublished_versions() -> None:
    with pytest.raises(BisectError, match="9.9.9 is not a published version"):
        search_order(VERSIONS, "9.9.9", "3.3.0")


# -- highwater bisect: what is refused before any run, and a client bisect's cells -----------------


class Runs:
    """Stands in for installing, assembling and the child pytest runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, failing_from: tuple[int, ...] = (3, 0, 9)) -> None:
        self.argvs: list[list[str]] = []
        self.kafka: list[str] = []
        self.drivers: list[str] = []
        self.failing_from = failing_from
        monkeypatch.setattr(preflight, "ensure_kafka", lambda v, progress=None: self.kafka.append(v))
        monkeypatch.setattr(preflight, "get_driver", lambda spec: self.drivers.append(str(spec)))
        monkeypatch.setattr(cli_sweep, "default_version", lambda progress=None: "4.4.0")
        monkeypatch.setattr(cli_sweep, "pypi_versions", lambda name: ["2.3.3", "3.0.0", "3.0.5", "3.0.9", "3.0.12"])
        monkeypatch.setattr(subprocess, "call", self.call)

    def call(self, argv: list[str], **_: object) -> int:
        self.argvs.append(list(argv))
        version = argv[argv.index("--client") + 1].split("==")[1]
        return int(tuple(map(int, version.split("."))) >= self.failing_from)


def test_a_kafka_python_bisect_runs_each_probed_version_on_one_kafka_release(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = Runs(monkeypatch)
    argv = ["bisect", "X::y", "--over", "client", "--client", "kafka-python", "--good", "3.0.0", "--bad", "3.0.12"]
    assert cli.main([*argv, "--runs", "1", "--results", str(tmp_path)]) == 0
    assert runs.kafka == ["4.4.0"]  # the newest release, assembled before any run
    clients = [a[a.index("--client") + 1] for a in runs.argvs]
    assert clients[:2] == ["kafka-python==3.0.0", "kafka-python==3.0.12"]  # both ends first
    assert runs.drivers == clients  # each version installed before its runs
    assert {a[a.index("--kafka-version") + 1] for a in runs.argvs} == {"4.4.0"}
    out, err = capsys.readouterr()
    assert "over 4 client versions on Kafka 4.4.0, 1 runs each" in err
    assert out.splitlines()[0] == "first release with the bad verdict: 3.0.9 (last good: 3.0.5)"


class PathRuns(Runs):
    """Runs over Kafka releases: those from ``failing_from`` on fail."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, failing_from: tuple[int, ...] = (3, 0, 9)) -> None:
        super().__init__(monkeypatch, failing_from)
        monkeypatch.setattr(cli_sweep, "ensure_kafka", lambda v, progress=None: self.kafka.append(v))

    def call(self, argv: list[str], **_: object) -> int:
        self.argvs.append(list(argv))
        return int(tuple(map(int, argv[argv.index("--kafka-version") + 1].split("."))) >= self.failing_from)


def test_the_end_of_an_upgrade_path_is_bisected_from_one_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = PathRuns(monkeypatch, failing_from=(4, 3, 1))
    monkeypatch.setattr(cli_sweep, "published_versions", lambda: ["3.9.1", "4.0.0", "4.1.0", "4.2.0", "4.3.1", "4.4.0"])
    argv = ["bisect", "X::y", "--client", "java", "--good", "4.0.0", "--bad", "4.4.0", "--upgrade-from", "3.9.1"]
    assert cli.main([*argv, "--runs", "1", "--results", str(tmp_path)]) == 0
    assert {a[a.index("--upgrade-from") + 1] for a in runs.argvs} == {"3.9.1"}  # every run rolled from 3.9.1
    assert "3.9.1" in runs.kafka  # the start assembled too
    out, err = capsys.readouterr()
    assert "as the end of an upgrade path" in err
    assert out.splitlines()[0] == "first release with the bad verdict: 4.3.1 (last good: 4.2.0)"


def test_the_start_of_an_upgrade_path_is_bisected_to_one_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = PathRuns(monkeypatch)

    def call(argv: list[str], **_: object) -> int:  # starts from 3.8 on fail
        runs.argvs.append(list(argv))
        return int(argv[argv.index("--upgrade-from") + 1] >= "3.8")

    monkeypatch.setattr(subprocess, "call", call)
    monkeypatch.setattr(cli_sweep, "published_versions", lambda: ["3.5.2", "3.6.2", "3.7.2", "3.8.1", "3.9.1", "4.4.0"])
    argv = ["bisect", "X::y", "--client", "java", "--good", "3.5.2", "--bad", "3.9.1", "--upgrade-to", "4.4.0"]
    assert cli.main([*argv, "--runs", "1", "--results", str(tmp_path)]) == 0
    assert {a[a.index("--kafka-version") + 1] for a in runs.argvs} == {"4.4.0"}  # every run rolled to 4.4.0
    assert capsys.readouterr().out.splitlines()[0] == "first release with the bad verdict: 3.8.1 (last good: 3.7.2)"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--good", "3.9.1", "--bad", "4.4.0", "--upgrade-from", "4.3.1"],
            "upgrade path 4.3.1 -> 3.9.1: 3.9.1 is not newer than 4.3.1 (a roll back is a roll step, not a path)",
        ),
        (
            [
                "--over",
                "client",
                "--client",
                "kafka-python",
                "--good",
                "3.0.0",
                "--bad",
                "3.0.12",
                "--upgrade-to",
                "4.4.0",
            ],
            "--upgrade-from and --upgrade-to bisect Kafka releases on a path, not --over client",
        ),
        (
            ["--over", "client", "--client", "kafka-python", "--good", "2.3.3", "--bad", "3.0.12"],
            "kafka-python 2.3.3 is older than its driver supports (3.0.0): choose --good and --bad from there on",
        ),
        (
            ["--over", "client", "--client", "kafka-python", "--good", "3.0.0", "--bad", "3.0.11"],
            "kafka-python 3.0.11 is not a published version (newest: 3.0.5, 3.0.9, 3.0.12)",
        ),
        (
            ["--over", "client", "--client", "kafka-python==3.0.5", "--good", "3.0.0", "--bad", "3.0.12"],
            "with --over client the versions are --good and --bad: --client kafka-python, not --client kafka-python==3.0.5",
        ),
        (
            ["--over", "client", "--client", "kafka-python@/src/kafka-python", "--good", "3.0.0", "--bad", "3.0.12"],
            "--over client bisects released versions of a library, not a local build: --client kafka-python",
        ),
        (
            ["--good", "3.9.1", "--bad", "4.4.0", "--kafka-version", "4.4.0"],
            "--kafka-version is for --over client; bisecting Kafka releases, they are --good..--bad",
        ),
        (
            ["--good", "3.2.3", "--bad", "4.4.0"],
            "Kafka 3.2.3 is older than 3.3.1, the first release with production KRaft; highwater runs KRaft clusters only",
        ),
        (["--good", "3.9.1", "--bad", "9.9.9"], "Kafka 9.9.9 is not a published version (newest: 3.9.1, 4.3.1, 4.4.0)"),
    ],
)
def test_a_bad_bisect_is_one_line_before_anything_is_installed_or_run(
    argv: list[str], line: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = Runs(monkeypatch)
    monkeypatch.setattr(cli_sweep, "published_versions", lambda: ["3.2.3", "3.9.1", "4.3.1", "4.4.0"])
    assert cli.main(["bisect", "X::y", *argv, "--results", str(tmp_path)]) == 4  # refused
    assert capsys.readouterr().err.strip().splitlines() == [f"highwater: error: {line}"]
    assert runs.argvs == [] and runs.drivers == [] and runs.kafka == []
