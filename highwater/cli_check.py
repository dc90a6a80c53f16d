"""``highwater check HISTORY.jsonl|.parquet [--json]``: run every check, print the verdicts.

Exit status (``highwater.exit_codes``): 0 all valid, 1 some violation, 3 unknown (something
could not be judged, and nothing said no), 4 the history is unreadable. A check whose inputs the
history does not carry at all (no racks in the header, no meta events, no final reads...) is
listed as not-applicable and does not change the exit status, unless no check applied at all
(then nothing was judged: 3).
``highwater.cli`` calls ``register(subparsers)``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from highwater.core.checks import CHECKS, NEEDS, Input, load, needs_text, overall, present_inputs, run_checks
from highwater.core.checks.verdict import NOT_APPLICABLE, Verdict
from highwater.core.history import HistoryError

from .exit_codes import Exit, of_verdict


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "check",
        help="check a history against Kafka's promises",
        description="Run the checks of docs/checks.md on a history and print their verdicts. "
        "Exit 0: valid, 1: violations, 3: unknown (nothing said no, something could not be judged), "
        "4: unreadable history. Checks whose inputs the history lacks are listed as not-applicable "
        "and do not change the exit status (if none applied, nothing was judged: 3).",
    )
    p.add_argument("history", help="history file (.jsonl or .parquet)")
    p.add_argument("--json", action="store_true", help="print verdicts as JSON (default: a table)")
    p.add_argument(
        "--check",
        action="append",
        dest="checks",
        metavar="NAME",
        choices=list(CHECKS),
        help="run only this check (repeatable)",
    )
    p.add_argument("--no-policy", action="store_true", help="report raw anomalies, without the configuration's policy")
    p.add_argument("--examples", action="store_true", help="print examples in the text output")
    p.set_defaults(func=cmd_check)
    return p


def cmd_check(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        h = load(args.history)
    except HistoryError as e:
        _emit_error(args, out, str(e))
        return Exit.HARNESS
    verdicts = run_checks(h, getattr(args, "checks", None), policy=not getattr(args, "no_policy", False))
    valid = overall(verdicts)
    inputs = present_inputs(h)
    if args.json:
        json.dump(
            {
                "history": str(args.history),
                "valid": valid,
                "header": h.header,
                "inputs": [i.value for i in Input if i in inputs],
                "not_applicable": [v.check for v in verdicts if v.valid == NOT_APPLICABLE],
                "verdicts": [v.to_json() for v in verdicts],
            },
            out,
            indent=2,
            default=str,
        )
        out.write("\n")
    else:
        _print_text(verdicts, valid, out, getattr(args, "examples", False), inputs)
    return of_verdict(valid)


def _emit_error(args: argparse.Namespace, out: TextIO, message: str) -> None:
    if getattr(args, "json", False):
        json.dump({"history": str(args.history), "valid": "unknown", "error": message}, out)
        out.write("\n")
    else:
        print(f"highwater check: unreadable history: {message}", file=sys.stderr)


def _label(v: Verdict) -> str:
    if v.valid is True:
        return "allowed" if v.allowed else "valid"
    if v.valid == NOT_APPLICABLE:
        return "not-applicable"
    return "VIOLATED" if v.valid is False else "unknown"


def _print_text(
    verdicts: list[Verdict], valid: Any, out: TextIO, examples: bool, inputs: frozenset[Input] = frozenset()
) -> None:
    width = max(len(v.check) for v in verdicts)
    lw = max(len(_label(v)) for v in verdicts)
    for v in verdicts:
        if v.valid == NOT_APPLICABLE:
            why = "; ".join(n.removeprefix("not applicable: ") for n in v.notes)
            out.write(f"{v.check:<{width}}  {_label(v):<{lw}}  {why or 'needs ' + needs_text(NEEDS[v.check])}\n")
            continue
        counts = " ".join(f"{k}={n}" for k, n in v.counts.items())
        out.write(f"{v.check:<{width}}  {_label(v):<{lw}}  {counts}\n")
        for note in v.notes:
            out.write(f"{'':<{width}}  {'':<{lw}}  note: {note}\n")
        if examples:
            for ex in v.examples:
                brief = {k: x for k, x in ex.items() if k != "events"}
                rows = [e.get("index") for e in ex.get("events", [])]
                out.write(f"{'':<{width}}  {'':<{lw}}  e.g. {json.dumps(brief)} events={rows}\n")
    skipped = [v.check for v in verdicts if v.valid == NOT_APPLICABLE]
    out.write(f"inputs: {', '.join(i.label for i in Input if i in inputs) or 'none'}\n")
    if skipped:
        out.write(f"not applicable ({len(skipped)}): {', '.join(skipped)}\n")
    out.write(f"overall: {({True: 'valid', False: 'VIOLATED'}).get(valid, 'unknown')}\n")
