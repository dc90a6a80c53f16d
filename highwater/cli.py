"""highwater: chaos and conformance runs on real Apache Kafka clusters, the checks that judge
what the clients saw, and the reports.

Start with `highwater setup` (Kafka, Toxiproxy and the client workers into the cache), then
`highwater run` (the suites, through pytest) or `highwater campaign` (the chaos campaign and its
HTML report). `highwater sweep` runs suites across Kafka releases or client versions and
`highwater bisect` finds the version where a scenario's verdict changes. `highwater check`
judges one history, `highwater report` a results tree (`highwater export` writes it as a CSV or
Parquet table), `highwater replay` runs a recorded run again. `highwater cluster up` / `fault apply` / `fault heal` poke a cluster by hand.
`highwater COMMAND --help` for each (`highwater fault apply KIND --help` for a fault kind);
docs/cli.md says more."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import textwrap
import traceback
from collections.abc import Callable
from importlib import metadata
from typing import Any

from highwater.core.errors import HighwaterError

from .exit_codes import Exit, table

# Each subcommand module has ``register(subparsers)``; imported when the parser is built (not
# for ``--version``, which answers at once), each by name, so a missing or broken one fails
# loudly instead of vanishing from the help.
SUBCOMMAND_MODULES = (
    "cli_setup",
    "cli_cluster",
    "cli_check",
    "cli_fault",
    "cli_run",
    "cli_sweep",
    "cli_replay",
    "cli_hunt",
    "cli_report",
    "cli_export",
    "cli_compose",
)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions wrapped to the terminal paragraph by paragraph (a paragraph with indented
    lines, a list or a table, as written), and every option's default after its help, unless
    the help already says it or there is none to say (None, False, an empty list)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for para in text.strip("\n").split("\n\n"):
            lines = para.splitlines()
            if any(line.startswith(" ") for line in lines):
                paragraphs.append("\n".join(indent + line for line in lines))
            else:
                paragraphs.append(
                    textwrap.fill(" ".join(para.split()), width, initial_indent=indent, subsequent_indent=indent)
                )
        return "\n\n".join(paragraphs) + "\n"

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
        epilog="exit status (every command; docs/cli.md):\n" + table() + "\n"
        "run and campaign translate pytest's: a failed test is 1; pytest's internal error, usage error\n"
        "and 'no test collected' are 4; an interrupted session 130.",
    )
    parser.add_argument("--version", action="version", version=f"highwater {version()}", help="print the version")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output (to stderr)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(f"highwater.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit status (``highwater.exit_codes``): argparse's usage error is
    raised as ``SystemExit(2)``, everything else is returned."""
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:  # at once: without the subcommands' imports
        print(f"highwater {version()}")
        return Exit.OK
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        # the harness's own admin connections (kafka-python) log each connection a fault or a
        # roll drops at ERROR: those drops are what was asked for, and the command says what it did
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return Exit.USAGE
    try:
        return int(func(args) or 0)
    except HighwaterError as exc:  # input refused, or setup failed: one line, no traceback
        print(f"highwater: error: {exc}", file=sys.stderr)
        return Exit.HARNESS
    except KeyboardInterrupt:
        print("highwater: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - a bug is a harness error, never a verdict (1)
        traceback.print_exc()
        print(f"highwater: harness error: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return Exit.HARNESS


if __name__ == "__main__":
    sys.exit(main())
