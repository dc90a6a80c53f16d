"""The report's comparison of consumer group protocols: each group run's measures
(``core.checks.group_measures``, written by the runner as ``group-measures.json``), gathered
per scenario, Kafka release, client, group protocol and KIP-848 server-side assignor, so
classic and KIP-848's consumer protocol (with ``uniform`` and with ``range``) stand side by side
on the same scenario.

Plain Python, not Spark: one small JSON file per group run."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from highwater.core.run_dir import GROUP_MEASURES
from highwater.reports.layout import RunInfo


def _assignor(r: RunInfo) -> str:
    """The run's ``group.remote.assignor`` as its header (or manifest) config names it; "" when
    none was asked for (classic, or the broker's default: runs before the suite named it)."""
    for config in (r.config, r.header.get("config")):
        if isinstance(config, dict) and config.get("group_remote_assignor"):
            return str(config["group_remote_assignor"])
    return ""


def _base_scenario(scenario: str, protocol: str, assignor: str) -> str:
    """A scenario run on each protocol and assignor carries them in its name
    (``member-faults-consumer-range``, ``member-faults-classic``): the name without them."""
    for suffix in ([f"-{protocol}-{assignor}"] if assignor else []) + [f"-{protocol}"]:
        if scenario.endswith(suffix):
            return scenario.removesuffix(suffix)
    return scenario


def group_rows(runs: list[RunInfo]) -> list[dict[str, Any]]:
    """One row per (suite/scenario, Kafka release, client, group protocol, assignor) with group
    runs (``group_remote_assignor``: "" when the run asked for none):
    ``runs``, ``duplicates`` (the most of one run), ``longest_stall_ms`` (the longest of any
    member in any run, its own faults left out), ``slowest_resume_ms`` (the longest a faulted
    member's partition went unread; None when one never was read again, ``resumes`` 0 when no
    member was faulted)."""
    acc: dict[tuple[str, str, str, str, str], dict[str, Any]] = defaultdict(
        lambda: {"runs": 0, "duplicates": 0, "longest_stall_ms": 0, "slowest_resume_ms": 0, "resumes": 0}
    )
    never: set[tuple[str, str, str, str, str]] = set()
    for r in runs:
        m = r.measures(GROUP_MEASURES)
        if m is None:
            continue
        protocol = str(m.get("group_protocol", "classic"))
        assignor = _assignor(r)
        # one row per protocol and assignor of a scenario: its runs side by side
        key = (
            f"{r.suite}/{_base_scenario(r.scenario, protocol, assignor)}",
            r.kafka_version,
            r.client,
            protocol,
            assignor,
        )
        row = acc[key]
        row["runs"] += 1
        row["duplicates"] = max(row["duplicates"], int(m.get("duplicates", 0)))
        row["longest_stall_ms"] = max([row["longest_stall_ms"], *map(int, (m.get("longest_stall_ms") or {}).values())])
        for resume in m.get("resumes") or []:
            row["resumes"] += 1
            if resume.get("resume_ms") is None:
                never.add(key)
            else:
                row["slowest_resume_ms"] = max(row["slowest_resume_ms"], int(resume["resume_ms"]))
    out = []
    for key in sorted(acc):
        scenario, kafka, client, protocol, assignor = key
        row = {
            "scenario": scenario,
            "kafka_version": kafka,
            "client": client,
            "group_protocol": protocol,
            "group_remote_assignor": assignor,
            **acc[key],
        }
        if key in never:
            row["slowest_resume_ms"] = None
        out.append(row)
    return out
