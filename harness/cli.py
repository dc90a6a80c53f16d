"""The ``highwater`` command. Subcommands live in small modules that register themselves here."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Callable

from .errors import HighwaterError

# Modules that add subcommands: each has ``register(subparsers)``; a missing one is skipped so
# the CLI works while parts of the project are still being built.
SUBCOMMAND_MODULES = (
    "harness.cli_setup",
    "harness.cli_cluster",
    "harness.cli_check",
    "harness.cli_fault",
    "harness.cli_run",
    "reports.cli_report",
)


def progress(msg: str) -> None:
    print(f"highwater: {msg}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="highwater", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
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
