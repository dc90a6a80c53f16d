"""The ``highwater`` command explains itself: every option of every subcommand has help (with
its default shown), ``--version`` answers, and ``fault apply KIND --help`` lists that kind's
options instead of failing."""

from __future__ import annotations

import argparse

import pytest

from faults.spec import PARAMS, FaultKind, kind_help
from highwater.cli import build_parser, main


def parsers(parser: argparse.ArgumentParser, path: str = "highwater") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if name.startswith("_"):  # internal (cluster _serve), hidden from the help
                    continue
                found += parsers(sub, f"{path} {name}")
    return found


def test_every_option_of_every_command_says_what_it_does() -> None:
    silent = [
        f"{path} {' / '.join(a.option_strings) or a.dest}"
        for path, parser in parsers(build_parser())
        for a in parser._actions
        if not isinstance(a, argparse._SubParsersAction) and not a.help
    ]
    assert silent == []


def test_defaults_are_shown_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["cluster", "up", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "broker nodes (default: 3)" in out
    assert "name of the cluster (default: manual)" in out
    assert "(default: None)" not in out and "(default: False)" not in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("highwater ")


def test_fault_apply_kind_help_lists_the_kinds_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fault", "apply", "latency", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--latency INT  ms (default: 1000)" in out and "--jitter INT  ms (default: 0)" in out
    assert "--peer SELECTOR" in out and "--duration S" in out


@pytest.mark.parametrize("kind", list(FaultKind))
def test_every_kind_has_help_naming_each_of_its_params(kind: FaultKind) -> None:
    text = kind_help(kind)
    assert f"highwater fault apply {kind.cli} --target" in text
    assert all(f"--{p.name.replace('_', '-')} " in text for p in PARAMS[kind])
    assert ("--flow" in text) == kind.is_link  # a process fault takes no link options


def test_an_unknown_kind_asking_for_help_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fault", "apply", "nosuch", "--help"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("highwater: error: unknown fault kind 'nosuch'") and err.count("\n") == 1
