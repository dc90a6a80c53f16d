"""``--client`` and ``--seed`` on ``highwater run`` / ``campaign`` and pytest: an unknown client is
one line before anything starts; the options reach pytest and the plugin's fixtures. The
preflight (``highwater.preflight``): a Kafka release that does not exist or a client version
that cannot be installed is one line, before pytest starts (CLI) or before collection (plugin)."""

from __future__ import annotations

import argparse
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from highwater import cli, cli_run, cli_sweep, preflight
from highwater.core.errors import SetupError
from highwater.exit_codes import Exit
from highwater.harness import distribution
from highwater.harness.clients import ClientSpec
from highwater.harness.distribution import UnknownKafkaVersion


@pytest.mark.parametrize("command", ["run", "campaign"])
def test_cli_refuses_an_unknown_client_in_one_line(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([command, "--client", "nope"]) == Exit.HARNESS
    assert capsys.readouterr().err.strip().splitlines() == [
        "highwater: error: unknown client 'nope' (known: kafka-python, confluent-kafka, java, kafkajs, ckjs, franz-go, sarama)"
    ]


def test_run_passes_client_and_seed_to_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda argv: seen.append(list(argv)) or 0)
    args = cli.build_parser().parse_args(["run", "--client", "kafka-python", "--seed", "7", "suites/chaos"])
    assert cli_run.cmd_run(args) == 0
    argv = seen[0]
    assert argv[argv.index("--client") + 1] == "kafka-python" and argv[argv.index("--seed") + 1] == "7"
    # without --seed the suites keep their own seeds
    seen.clear()
    cli_run.cmd_run(cli.build_parser().parse_args(["run", "suites/chaos"]))
    assert "--seed" not in seen[0]


def test_pytest_plugin_gives_the_fixtures_and_refuses_an_unknown_client(tmp_path: Path) -> None:
    test = tmp_path / "test_opts.py"
    test.write_text(
        "def test_opts(client_name, run_seed):\n    assert (client_name, run_seed) == ('kafka-python', 11)\n"
    )
    ok = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--seed", "11", str(test)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--client", "nope", str(test)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert bad.returncode == 4 and "unknown client 'nope' (known: kafka-python, confluent-kafka" in bad.stderr


#: the confluent-kafka installed with highwater: a version the plugin's preflight need not install
CK = importlib.metadata.version("confluent-kafka")


def test_a_client_list_runs_every_test_on_each_client(tmp_path: Path) -> None:
    test = tmp_path / "test_each.py"
    test.write_text("def test_each(client_name):\n    print('CLIENT', client_name)\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-v",
            "-s",
            "--client",
            f"kafka-python,confluent-kafka=={CK}",
            str(test),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "CLIENT kafka-python" in run.stdout and f"CLIENT confluent-kafka=={CK}" in run.stdout
    assert "test_each[kafka-python]" in run.stdout and f"test_each[confluent-kafka=={CK}]" in run.stdout


def test_help_lists_the_known_clients() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert "kafka-python" in sub.choices["run"].format_help()


# -- the preflight -------------------------------------------------------------------------------


class Started:
    """Stands in for everything that would start work: child pytest runs (``subprocess.call``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.argvs: list[list[str]] = []
        monkeypatch.setattr(subprocess, "call", lambda argv, **_: self.argvs.append(list(argv)) or 0)


def _no_kafka(version: str, progress: object = None) -> None:
    if version == "9.9.9":
        raise UnknownKafkaVersion(f"Kafka {version} is not on Maven Central (newest: 4.4.0, 4.3.1)")


def _no_client(spec: ClientSpec) -> None:
    raise SetupError(f"{spec.name} {spec.version} is not on PyPI (or not for Python 3.11)")


def _any_client(spec: ClientSpec) -> None:
    pass


@pytest.mark.parametrize("command", ["run", "campaign"])
def test_cli_refuses_a_kafka_release_that_does_not_exist_before_pytest_starts(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started = Started(monkeypatch)
    monkeypatch.setattr(preflight, "ensure_kafka", _no_kafka)
    monkeypatch.setattr(preflight, "get_driver", _any_client)
    argv = [command, "--kafka-version", "4.3.1,9.9.9"]
    assert cli.main(argv + (["suites/conformance/test_durability.py"] if command == "run" else [])) == Exit.HARNESS
    assert capsys.readouterr().err.strip().splitlines() == [
        "highwater: error: Kafka 9.9.9 is not on Maven Central (newest: 4.4.0, 4.3.1)"
    ]
    assert started.argvs == []  # neither pytest nor the report started


@pytest.mark.parametrize("command", ["run", "campaign"])
def test_cli_refuses_a_client_version_that_cannot_be_installed_before_pytest_starts(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started = Started(monkeypatch)
    made: list[ClientSpec] = []

    def get_driver(spec: ClientSpec) -> None:
        made.append(spec)
        if spec.version == "99.0":
            _no_client(spec)

    monkeypatch.setattr(preflight, "get_driver", get_driver)
    assert cli.main([command, "--client", "kafka-python,confluent-kafka==99.0"]) == Exit.HARNESS
    assert capsys.readouterr().err.strip().splitlines() == [
        "highwater: error: confluent-kafka 99.0 is not on PyPI (or not for Python 3.11)"
    ]
    assert made == [ClientSpec("kafka-python"), ClientSpec("confluent-kafka", "99.0")]
    assert started.argvs == []


def test_run_prepares_each_release_and_client_once_then_starts_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    started = Started(monkeypatch)
    kafka: list[str] = []
    clients: list[ClientSpec] = []
    monkeypatch.setattr(preflight, "ensure_kafka", lambda v, progress=None: kafka.append(v))
    monkeypatch.setattr(preflight, "get_driver", clients.append)
    argv = ["run", "--kafka-version", "4.3.1,3.9.1", "--kafka-version", "4.3.1", "--client", "java,java", "suites/x"]
    assert cli.main(argv) == 0
    assert kafka == ["4.3.1", "3.9.1"] and clients == [ClientSpec("java")]
    (child,) = started.argvs
    assert [child[i + 1] for i, a in enumerate(child) if a == "--kafka-version"] == ["4.3.1", "3.9.1"]


def test_preflight_with_an_external_cluster_only_looks_the_release_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "ensure_kafka", lambda *a, **k: pytest.fail("nothing to assemble"))
    monkeypatch.setattr(distribution, "published_versions", lambda: ["3.9.1", "4.3.1", "4.4.0"])
    preflight.preflight(["4.3.1"], backend="external")
    with pytest.raises(UnknownKafkaVersion) as err:
        preflight.preflight(["9.9.9"], backend="external")
    assert str(err.value) == "Kafka 9.9.9 is not on Maven Central (newest: 4.4.0, 4.3.1, 3.9.1)"
    with pytest.raises(UnknownKafkaVersion, match="older than 3.3.1"):
        preflight.preflight(["3.2.3"], backend="external")


def test_split_versions() -> None:
    assert preflight.split_versions(["4.3.1, 3.9.1", "", "4.3.1", "4.4.0"]) == ["4.3.1", "3.9.1", "4.4.0"]


@pytest.mark.parametrize(
    "argv",
    [
        ["sweep", "--kafka-versions", "3.3.1..newest", "--client", "confluent-kafka==99.0"],
        ["sweep", "--versions", "4.3.1", "--client", "confluent-kafka==99.0"],
        ["bisect", "suites/x.py::test_y", "--good", "3.9.1", "--bad", "4.3.1", "--client", "confluent-kafka==99.0"],
    ],
)
def test_sweep_and_bisect_refuse_a_client_that_cannot_be_installed_before_any_run(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    started = Started(monkeypatch)
    monkeypatch.setattr(cli_sweep, "published_versions", lambda: ["3.3.1", "3.9.1", "4.3.1"])
    monkeypatch.setattr(preflight, "get_driver", _no_client)
    assert cli.main([*argv, "--results", str(tmp_path)]) == Exit.HARNESS
    assert capsys.readouterr().err.strip().splitlines() == [
        "highwater: error: confluent-kafka 99.0 is not on PyPI (or not for Python 3.11)"
    ]
    assert started.argvs == [] and not list(tmp_path.iterdir())  # no run, no campaign, no state file


@pytest.mark.parametrize("command", ["sweep", "bisect"])
def test_client_sweep_and_bisect_refuse_a_kafka_release_that_does_not_exist_before_any_run(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    started = Started(monkeypatch)
    monkeypatch.setattr(cli_sweep, "pypi_versions", lambda name: ["3.0.4", "3.0.5", "3.0.12"])
    monkeypatch.setattr(preflight, "ensure_kafka", _no_kafka)
    monkeypatch.setattr(preflight, "get_driver", _any_client)
    versions = ["--versions", "3.0.5,3.0.12"] if command == "sweep" else ["X::y", "--good", "3.0.5", "--bad", "3.0.12"]
    argv = [command, *versions, "--over", "client", "--client", "kafka-python", "--kafka-version", "9.9.9"]
    assert cli.main([*argv, "--results", str(tmp_path)]) == Exit.HARNESS
    assert capsys.readouterr().err.strip().splitlines() == [
        "highwater: error: Kafka 9.9.9 is not on Maven Central (newest: 4.4.0, 4.3.1)"
    ]
    assert started.argvs == [] and not list(tmp_path.iterdir())


PATCHES = {
    "kafka": "import highwater.preflight as p\n"
    "from highwater.harness.distribution import UnknownKafkaVersion\n"
    "def no(v, progress=None):\n"
    "    raise UnknownKafkaVersion(f'Kafka {v} is not on Maven Central (newest: 4.4.0)')\n"
    "p.ensure_kafka = no\n",
    "client": "import highwater.preflight as p\n"
    "from highwater.core.errors import SetupError\n"
    "def no(spec):\n"
    "    if spec.version == '99.0':\n"
    "        raise SetupError(f'{spec.name} {spec.version} is not on PyPI')\n"
    "p.get_driver = no\n",
}


@pytest.mark.parametrize(
    ("what", "options", "line"),
    [
        ("kafka", ["--kafka-version", "9.9.9"], "ERROR: Kafka 9.9.9 is not on Maven Central (newest: 4.4.0)"),
        ("client", ["--client", "confluent-kafka==99.0"], "ERROR: confluent-kafka 99.0 is not on PyPI"),
        (
            "client",
            ["--client-rotation", "kafka-python,confluent-kafka==99.0"],
            "ERROR: confluent-kafka 99.0 is not on PyPI",
        ),
    ],
)
def test_pytest_plugin_refuses_bad_input_before_collection(
    what: str, options: list[str], line: str, tmp_path: Path
) -> None:
    (tmp_path / "conftest.py").write_text(PATCHES[what])  # stands in for Maven Central / PyPI
    collected = tmp_path / "collected"
    (tmp_path / "test_any.py").write_text(
        f"import pathlib\npathlib.Path({str(collected)!r}).touch()\n\ndef test_any():\n    pass\n"
    )
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *options, "test_any.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert res.returncode == 4, res.stdout + res.stderr
    assert [x for x in res.stderr.splitlines() if x.strip()] == [line]
    assert not collected.exists() and "passed" not in res.stdout  # not even collected
