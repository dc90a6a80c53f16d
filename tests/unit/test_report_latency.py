"""The report's latency table (reports.latency): per release and client, the medians of each
run's follower-latency medians, violations counted, runs that judged nothing apart, release order
numeric; escaped and present in the page."""

from __future__ import annotations

from typing import Any

from highwater.reports.latency import latency_rows


def run(
    version: str, valid: Any, leader_us: int | None, follower_us: int | None, client: str = "java 4.4.0"
) -> dict[str, Any]:
    counts: dict[str, Any] = {"leader_records": 200, "follower_records": 400, "bound_us": 325_000}
    if leader_us is not None and follower_us is not None:
        counts |= {
            "leader_median_us": leader_us,
            "follower_median_us": follower_us,
            "extra_us": follower_us - leader_us,
        }
    return {
        "kafka_version": version,
        "client": client,
        "verdicts": {"follower-latency": {"valid": valid, "counts": counts}},
    }


def test_rows_per_release_and_client_with_medians_of_the_runs() -> None:
    runs = [
        run("3.3.2", True, 1_000, 205_000),
        run("3.3.1", False, 1_500, 333_000),
        run("3.3.1", True, 2_500, 300_000),
        run("3.3.1", True, None, None),  # too few quiet records: not judged
        run("3.10.0", True, 1_000, 20_000),
        {
            "kafka_version": "3.3.1",
            "client": "java 4.4.0",
            "verdicts": {"follower-latency": {"valid": "not-applicable"}},
        },
        {"kafka_version": "3.3.1", "client": "java 4.4.0", "verdicts": {}},
    ]
    rows = latency_rows(runs)
    assert [r["kafka_version"] for r in rows] == ["3.3.1", "3.3.2", "3.10.0"]  # numeric order
    r331 = rows[0]
    assert (r331["runs"], r331["judged"], r331["violated"], r331["not_judged"]) == (3, 2, 1, 1)
    assert (r331["leader_median_ms"], r331["follower_median_ms"], r331["extra_median_ms"]) == (2.0, 316.5, 314.5)
    assert r331["bound_ms"] == 325.0 and (r331["leader_records"], r331["follower_records"]) == (400, 800)
    assert rows[1]["violated"] == 0 and rows[1]["extra_median_ms"] == 204.0
    assert latency_rows([]) == []


def test_the_page_shows_the_table_escaped() -> None:
    from dataclasses import replace
    from pathlib import Path

    from highwater.reports.render_html import render
    from tests.unit.test_report_render import _data, _run

    measured = run("3.3.1", False, 1_500, 333_000)
    row = _run("c/x", {}, "3.3.1")
    row = {**row, "client": "<java>", "verdicts": {**row["verdicts"], **measured["verdicts"]}}
    data = _data()
    html = render(replace(data, runs=[*data.runs, row]), Path("/y"))
    table = html[html.index("id='latency-table'") :]
    table = table[: table.index("</table>")]
    assert "&lt;java&gt;" in table and "<java>" not in table and "331.5" in table
    no_latency = [
        {**r, "verdicts": {c: v for c, v in r["verdicts"].items() if c != "follower-latency"}} for r in data.runs
    ]
    assert "id='latency-table'" not in render(replace(data, runs=no_latency))  # the section says none measured it
