"""The ``highwater`` command. Subcommands live in small modules that register themselves here."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="highwater", description=__doc__)
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
