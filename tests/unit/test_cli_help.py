"""The ``highwater`` command explains itself: every option of every subcommand has help (with
its default shown), ``--version`` answers, and ``fault apply KIND --help`` lists that kind's
options instead of failing."""

from __future__ import annotations

import argparse

import pytest

from highwater.cli import HelpFormatter, build_parser, main, version
from highwater.cli_fault import KIND_SUMMARY, kind_text
from highwater.exit_codes import Exit
from highwater.faults.spec import PARAMS, FaultKind, kind_help


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


def _has_a_default(action: argparse.Action) -> bool:
    return bool(action.option_strings) and action.default not in (None, False, [], argparse.SUPPRESS)


def test_every_default_is_shown() -> None:
    """The formatter adds ``(default: X)``; a help that words its default itself names it."""
    unsaid = []
    for path, parser in parsers(build_parser()):
        formatter = HelpFormatter(path)
        for a in parser._actions:
            if isinstance(a, (argparse._SubParsersAction, argparse._VersionAction)) or not _has_a_default(a):
                continue
            text = formatter._expand_help(a)
            if str(a.default) not in text:
                unsaid.append(f"{path} {a.option_strings[0]}: {text!r}")
    assert unsaid == []


def test_every_command_has_a_description_or_help() -> None:
    parser = build_parser()
    assert "chaos and conformance runs on real Apache Kafka clusters" in (parser.description or "")
    silent = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            silent += [name for name in action.choices if not helps.get(name)]
    assert silent == []


def test_the_top_level_help_says_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for code in Exit:
        assert f"{int(code):>3}  " in out
    assert "unknown is never valid" in out


def test_defaults_are_shown_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["cluster", "up", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "broker nodes (default: 3)" in out
    assert "name of the cluster (default: manual)" in out
    assert "(default: None)" not in out and "(default: False)" not in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0  # answered before the subcommands are imported
    assert capsys.readouterr().out == f"highwater {version()}\n"
    with pytest.raises(SystemExit) as done:  # with other options: argparse's version action
        main(["-v", "--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"highwater {version()}\n"


def test_version_is_the_installed_package() -> None:
    from importlib import metadata

    assert version() == metadata.version("highwater")


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == Exit.USAGE == 2
    assert "usage: highwater" in capsys.readouterr().err


def test_fault_apply_kind_help_lists_the_kinds_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fault", "apply", "latency", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--latency INT  ms (default: 1000)" in out and "--jitter INT  ms (default: 0)" in out
    assert "--peer SELECTOR" in out and "--duration S" in out
    assert out.splitlines()[1] == f"latency: {KIND_SUMMARY[FaultKind.LATENCY]}"


@pytest.mark.parametrize("kind", list(FaultKind))
def test_every_kind_has_help_naming_each_of_its_params(kind: FaultKind, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fault", "apply", kind.cli, "--help"]) == 0
    assert capsys.readouterr().out == kind_text(kind)
    assert KIND_SUMMARY.get(kind), f"highwater.cli_fault.KIND_SUMMARY says nothing of {kind.cli}"
    assert f"{kind.cli}: {KIND_SUMMARY[kind]}" in kind_text(kind)
    text = kind_help(kind)
    assert f"highwater fault apply {kind.cli} --target" in text
    assert all(f"--{p.name.replace('_', '-')} " in text for p in PARAMS[kind])
    assert ("--flow" in text) == kind.is_link  # a process fault takes no link options


def test_fault_apply_help_lists_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fault", "apply", "--help"])
    out = capsys.readouterr().out
    assert all(f"  {kind.cli} " in out for kind in FaultKind)


def test_an_unknown_kind_asking_for_help_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fault", "apply", "nosuch", "--help"]) == Exit.HARNESS
    err = capsys.readouterr().err
    assert err.startswith("highwater: error: unknown fault kind 'nosuch'") and err.count("\n") == 1
