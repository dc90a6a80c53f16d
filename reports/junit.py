"""JUnit XML: one testcase per check × scenario, so CI systems show the compliance matrix.

A scenario here is one column of the matrix (suite/scenario, Kafka version, client), so a
check that holds on 4.3.1 and fails on 3.9.1 is two testcases. Mapping of the four values
(merged over the runs of a testcase like the matrix cell: false beats unknown beats true, and
not-applicable runs are ignored): true -> passed; false -> ``<failure>`` carrying the anomaly
examples and the repro command of each failing run; "unknown" -> ``<error type="unknown">``:
JUnit has no "could not judge", and counting it as skipped would turn CI green on runs that
proved nothing; "not-applicable" in every run -> ``<skipped>`` with the reason (the histories
do not carry the check's inputs, e.g. no racks or no meta events: nothing to prove there).

Attribution (``reports.attribution``): each testcase whose check applied carries the properties
``attribution`` (broker / clients / none / single-client / undecided, decided for that check
across the clients that ran the same suite/scenario on the same Kafka version) and
``attributed_clients`` when clients are blamed; where two or more clients ran it, a failure's
message ends with it (``...; attributed to: broker`` or ``...; attributed to: client java 4.4.0``).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

from highwater.core.checks.verdict import NOT_APPLICABLE
from highwater.reports.aggregate import ReportData, run_findings_of
from highwater.reports.attribution import attribute, describe

MAX_RUNS_IN_MESSAGE = 10
MAX_RUNS_LISTED = 50  # in a testcase's system-out; what is left out is counted there
MAX_PER_RUN = 3  # notes and examples per run in a failure's text
MAX_EVENTS = 4  # events per example there


def _left_out(n: int, what: str) -> list[str]:
    """What a list left out, said (``"... and 3 more run(s)"``), or nothing: a line or an item
    to add to what was shown."""
    return [f"... and {n} more {what}(s)"] if n > 0 else []


def _clip(text: str, limit: int) -> str:
    """``text`` shortened to ``limit`` characters, saying how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _scenario(r: dict[str, Any]) -> str:
    return f"{r['suite']}.{r['scenario']}[kafka={r['kafka_version']},client={r['client']}]"


def build_junit(data: ReportData) -> ET.Element:
    cases: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for r in data.runs:
        for check, v in r["verdicts"].items():
            cases[(_scenario(r), check)].append((r, v))
    root = ET.Element("testsuites", name="highwater")
    suites: dict[str, ET.Element] = {}
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    order = {c: i for i, c in enumerate(data.checks)}
    attr = attribute(data.matrix)
    for (scen, check), items in sorted(cases.items(), key=lambda x: (x[0][0], order.get(x[0][1], 99))):
        suite = suites.get(scen)
        if suite is None:
            suite = suites[scen] = ET.SubElement(root, "testsuite", name=scen)
            suite.attrib.update(tests="0", failures="0", errors="0", skipped="0")
        tc = ET.SubElement(suite, "testcase", classname=f"highwater.{scen}", name=check)
        r0 = items[0][0]
        group = attr.get((str(r0["suite"]), str(r0["scenario"]), str(r0["kafka_version"])))
        a = (group or {}).get("checks", {}).get(check)
        if a is not None:
            props = ET.SubElement(tc, "properties")
            ET.SubElement(props, "property", name="attribution", value=a["verdict"])
            if a["clients"]:
                ET.SubElement(props, "property", name="attributed_clients", value=", ".join(a["clients"]))
        failed = [(r, v) for r, v in items if v["valid"] is False]
        unknown = [(r, v) for r, v in items if v["valid"] == "unknown"]
        known = {f for r, _ in failed for f in run_findings_of(r)["known"].get(check, ())}
        # every failure explained by a known finding
        known_only = bool(failed) and all(check in run_findings_of(r)["known"] for r, _ in failed)
        kind = None
        if known_only:  # skipped with the findings' ids, not a failure: nothing new
            kind = "skipped"
            ids = ", ".join(sorted(known))
            ET.SubElement(
                props if a is not None else ET.SubElement(tc, "properties"), "property", name="known", value=ids
            )
            el = ET.SubElement(
                tc,
                "skipped",
                message=f"known: {ids} ({check} violated in {len(failed)}/{len(items)} run(s), each explained)",
            )
            el.text = _details(failed)
        elif failed:
            kind = "failures"
            why = f"; {describe(a)}" if a is not None and group and len(group["labels"]) > 1 else ""
            el = ET.SubElement(
                tc, "failure", type="violation", message=f"{check} violated in {len(failed)}/{len(items)} run(s){why}"
            )
            el.text = _details(failed)
        elif unknown:
            kind = "errors"
            el = ET.SubElement(
                tc,
                "error",
                type="unknown",
                message=f"{check} could not be judged in {len(unknown)}/{len(items)} run(s)",
            )
            el.text = _details(unknown)
        elif all(v["valid"] == NOT_APPLICABLE for _, v in items):
            kind = "skipped"
            notes = list(
                dict.fromkeys(str(n).removeprefix("not applicable: ") for _, v in items for n in v.get("notes", []))
            )
            ET.SubElement(
                tc,
                "skipped",
                message=f"{check} not applicable in {len(items)} run(s)"
                + (
                    f": {'; '.join([*notes[:MAX_PER_RUN], *_left_out(len(notes) - MAX_PER_RUN, 'note')])}"
                    if notes
                    else ""
                ),
            )
        out = ET.SubElement(tc, "system-out")
        listed = [f"{r['label']}={_word(v)}" for r, v in items[:MAX_RUNS_LISTED]]
        out.text = f"{len(items)} run(s): " + ", ".join([*listed, *_left_out(len(items) - MAX_RUNS_LISTED, "run")])
        suite.attrib["tests"] = str(int(suite.attrib["tests"]) + 1)
        totals["tests"] += 1
        if kind:
            suite.attrib[kind] = str(int(suite.attrib[kind]) + 1)
            totals[kind] += 1
    root.attrib.update({k: str(v) for k, v in totals.items()})
    return root


def _word(v: dict[str, Any]) -> str:
    if v["valid"] is True:
        return "allowed" if v.get("allowed") else "valid"
    if v["valid"] == NOT_APPLICABLE:
        return "not-applicable"
    return "violated" if v["valid"] is False else "unknown"


def _details(items: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    parts = []
    for r, v in items[:MAX_RUNS_IN_MESSAGE]:
        parts.append(
            f"run {r['label']}\n  repro: {r['repro'] or '(no repro command recorded)'}\n"
            f"  counts: {json.dumps(v.get('counts', {}))}"
        )
        notes, examples = v.get("notes", []), v.get("examples", [])
        parts += [f"  note: {n}" for n in notes[:MAX_PER_RUN]]
        parts += [f"  {s}" for s in _left_out(len(notes) - MAX_PER_RUN, "note")]
        for ex in examples[:MAX_PER_RUN]:
            brief = {k: x for k, x in ex.items() if k != "events"}
            parts.append(f"  example: {_clip(json.dumps(brief, default=str), 600)}")
            events = ex.get("events", [])
            parts += [f"    event: {_clip(json.dumps(e, default=str), 400)}" for e in events[:MAX_EVENTS]]
            parts += [f"    {s}" for s in _left_out(len(events) - MAX_EVENTS, "event")]
        parts += [f"  {s}, all in the run's verdict.json" for s in _left_out(len(examples) - MAX_PER_RUN, "example")]
    parts += _left_out(len(items) - MAX_RUNS_IN_MESSAGE, "run")
    return "\n".join(parts)


def write_junit(data: ReportData, path: Path) -> None:
    tree = ET.ElementTree(build_junit(data))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
