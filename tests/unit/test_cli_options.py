"""``--client`` and ``--seed`` on ``highwater run`` / ``campaign`` and pytest: an unknown client is
one line before anything starts; the options reach pytest and the plugin's fixtures."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from highwater import cli, cli_run


@pytest.mark.parametrize("command", ["run", "campaign"])
def test_cli_refuses_an_unknown_client_in_one_line(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([command, "--client", "nope"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "highwater: error: unknown client 'nope' (known: kafka-python, confluent-kafka, java)"
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
            "kafka-python,confluent-kafka==2.3.0",
            str(test),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "CLIENT kafka-python" in run.stdout and "CLIENT confluent-kafka==2.3.0" in run.stdout
    assert "test_each[kafka-python]" in run.stdout and "test_each[confluent-kafka==2.3.0]" in run.stdout


def test_help_lists_the_known_clients() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert "kafka-python" in sub.choices["run"].format_help()
