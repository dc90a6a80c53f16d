"""highwater: chaos and conformance runs on real Kafka clusters, their checks and reports.

Start with `highwater setup` (Kafka and Toxiproxy into the cache), then `highwater run` (suites
via pytest) or `highwater campaign` (the chaos campaign and its HTML report); `highwater check`
judges a history, `highwater report` a results tree. `highwater COMMAND --help` for each."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any

from harness.errors import HighwaterError

from . import cli_check, cli_cluster, cli_compose, cli_fault, cli_replay, cli_report, cli_run, cli_setup, cli_sweep

# Each subcommand module has ``register(subparsers)``; imported explicitly, so a missing or
# broken one fails loudly at import time instead of vanishing from the help.
SUBCOMMAND_MODULES = (
    cli_setup,
    cli_cluster,
    cli_check,
    cli_fault,
    cli_run,
    cli_sweep,
    cli_replay,
    cli_report,
    cli_compose,
)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written, and every option's default after its help, unless the help
    already says it or there is none to say (None, False, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            text
            and "default" not in text
            and action.option_strings
            and default not in (None, False, [], argparse.SUPPRESS)
            and not isinstance(action, argparse._VersionAction)
        ):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose subcommands' parsers (made by ``add_parser``, of this class)
    all show their defaults."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def version() -> str:
    try:
        return metadata.version("highwater")
    except metadata.PackageNotFoundError:  # a checkout used without installing it
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="highwater",
        description=__doc__,
        epilog="Exit status. check, report, replay: 0 every check held, 1 a violation, 2 a verdict that could not "
        "be judged (unknown never counts as valid) or unreadable input. run, campaign: pytest's (0 every test "
        "passed, 1 a test failed, 5 no test collected). Every command: 2 for bad input refused before anything "
        "started or a harness error, 130 when interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"highwater {version()}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except HighwaterError as exc:
        print(f"highwater: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("highwater: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
