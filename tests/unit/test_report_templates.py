"""The HTML report's templates: autoescaping of hostile names, one self-contained file, links
relative to the report, and no silent truncation (every cut table says what it left out and
where the rest is)."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

from markupsafe import Markup

from highwater.reports.aggregate import ReportData
from highwater.reports.releases import release_view
from highwater.reports.render_html import FETCH_CSV, MAX_FETCH_ROWS, MAX_SCHEDULE_ROWS, render, write_html
from highwater.reports.svg import line_chart
from tests.unit.test_report_render import _data, _run

SCRIPT = "<script>alert('x')</script>"
ATTR_BREAK = "k'><img src=x onerror=alert(1)>"
QUOTES = 'it\'s "quoted" & <b>bold</b>'


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each script element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False if tag == "script" else self._in_script

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def _tags(html: str) -> _Tags:
    p = _Tags()
    p.feed(html)
    return p


def _fetch_row(i: int, consumer: str = "consumer-0") -> dict[str, Any]:
    return {
        "run": "c1/b",
        "consumer": consumer,
        "rack": "r1",
        "records": i,
        "by_replica": {"1": i},
        "unknown_replica": 0,
        "local_share": 0.5,
        "cross_rack_records": 1,
        "cross_rack_bytes": None,
    }


def _hostile() -> ReportData:
    """Names from histories and manifests that try to inject markup, everywhere they show."""
    d = _data()
    for r in d.runs:
        r["client"] = SCRIPT
        r["scenario"] = ATTR_BREAK
        r["repro"] = QUOTES
        r["verdicts"]["progress"]["notes"] = [SCRIPT]
    d.runs[1]["label"] = "c1/" + SCRIPT
    d.runs[1]["nemesis"] = {
        "kind": "scripted",
        "steps": [{"after": 1, "fault": f"kill --target {ATTR_BREAK}", "duration": 2}],
    }
    d.runs[1]["config"] = {"acks": SCRIPT}
    for m in d.matrix:
        m["client"], m["scenario"] = SCRIPT, ATTR_BREAK
    for c in d.columns:
        c["client"], c["scenario"] = SCRIPT, ATTR_BREAK
    d.timelines = {d.runs[1]["label"]: d.timelines["c1/b"]}
    d.timelines[d.runs[1]["label"]]["faults"][0]["kind"] = SCRIPT
    d.failures[0]["run"] = d.runs[1]["label"]
    d.failures[0]["notes"] = [ATTR_BREAK]
    d.failures[0]["examples"][0]["context"][0]["process"] = SCRIPT
    d.fetch = [_fetch_row(1, consumer=SCRIPT)]
    d.trends = [
        {"campaign": SCRIPT, "started_at": "t", "runs": 1, "failed_runs": 0, "unknown_runs": 0, "checks": {}},
        {"campaign": ATTR_BREAK, "started_at": "u", "runs": 1, "failed_runs": 1, "unknown_runs": 0, "checks": {}},
    ]
    d.disagreements = [
        {"run": SCRIPT, "check": "poll-skip", "python": True, "spark": False, "counts_differ": [ATTR_BREAK]}
    ]
    d.groups = [
        {
            "scenario": SCRIPT,
            "kafka_version": "4.4.0",
            "client": SCRIPT,
            "group_protocol": "consumer",
            "group_remote_assignor": ATTR_BREAK,
            "runs": 1,
            "duplicates": 0,
            "longest_stall_ms": 1,
            "slowest_resume_ms": None,
            "resumes": 1,
        }
    ]
    return d


def test_hostile_names_are_escaped_everywhere() -> None:
    html = render(_hostile())
    assert "<script>alert" not in html and "<img" not in html and "<b>bold" not in html
    p = _tags(html)
    # the page's own script is the only one, and no attribute was broken out of
    assert [t for t, _ in p.tags].count("script") == 1 and "alert" not in p.scripts[0]
    assert not [a for _, a in p.tags if "onerror" in a or "src" in a]
    # the hostile text is still there, as text and in attributes, exactly as given
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert any(a.get("data-run") == "c1/" + SCRIPT for t, a in p.tags if t == "tr")
    assert any(a.get("data-group", "").startswith("chaos/" + ATTR_BREAK) for _, a in p.tags)
    assert "it&#39;s &#34;quoted&#34; &amp; &lt;b&gt;bold&lt;/b&gt;" in html


def test_svg_charts_escape_their_text_and_are_markup() -> None:
    svg = line_chart([0, 1], [(SCRIPT, [1, 2])], title=ATTR_BREAK, faults=[{"start_s": 0, "end_s": 1, "kind": SCRIPT}])
    assert isinstance(svg, Markup)
    assert "<script>" not in svg and "<img" not in svg and "&lt;script&gt;" in svg
    assert [t for t, _ in _tags(svg).tags if t not in ("svg", "text", "rect", "title", "polyline")] == []


def test_one_self_contained_file() -> None:
    html = render(_data())
    p = _tags(html)
    assert not [a for t, a in p.tags if t in ("script", "img") and "src" in a]
    assert not [a for t, a in p.tags if t == "link" and a.get("rel") != "icon"]
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    css = (resources.files("reports") / "templates" / "report.css").read_text(encoding="utf-8").strip()
    js = (resources.files("reports") / "templates" / "report.js").read_text(encoding="utf-8").strip()
    assert f"<style>{css}</style>" in html and f"<script>{js}</script>" in html
    # what the page's script and the browser check look for
    for anchor in ("id='overall'", "id='matrix-table'", "id='runs'", "id='run-filter'", "id='only-bad'"):
        assert anchor in html


def test_templates_ship_with_the_package() -> None:
    names = {p.name for p in (resources.files("reports") / "templates").iterdir()}
    assert {"report.html", "report.css", "report.js", "matrix.html", "fetch.html", "power.html"} <= names
    assert all(n.rsplit(".", 1)[-1] in ("html", "css", "js") for n in names)  # pyproject's package data


def test_links_are_relative_to_the_report(tmp_path: Path) -> None:
    results = tmp_path / "results with space" / "camp#1"
    runs = [_run("s/a", {}, "3.9.2"), _run("s/b", {"poll-skip": False}, "4.0.2")]
    runs[1]["path"] = str(results / "run b")
    out = tmp_path / "out" / "report"
    out.mkdir(parents=True)
    data = replace(_data(), runs=runs, timelines={}, failures=[], releases=release_view(runs))
    write_html(data, out / "report.html")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "file:" not in html
    hrefs = [a["href"] for t, a in _tags(html).tags if t == "a" and not (a.get("href") or "#").startswith("#")]
    assert hrefs == ["../../results%20with%20space/camp%231/run%20b"]
    from urllib.parse import unquote

    assert (out / unquote(hrefs[0])).resolve() == (results / "run b").resolve()


def test_follower_table_says_when_rows_are_left_out_and_writes_them_all(tmp_path: Path) -> None:
    n = MAX_FETCH_ROWS + 7
    data = replace(_data(), fetch=[_fetch_row(i) for i in range(n)])
    write_html(data, tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    table = html[html.index("<table id='fetch-table'>") :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 1 + MAX_FETCH_ROWS
    note = html[html.index("id='fetch-truncated'") :]
    note = note[: note.index("</p>")]
    assert f"Showing the first {MAX_FETCH_ROWS:,} of {n:,} rows" in note
    assert f"<a href='{FETCH_CSV}'>" in note and "summary.json" in note
    with (tmp_path / FETCH_CSV).open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == n and rows[-1]["records"] == str(n - 1)
    assert json.loads(rows[-1]["by_replica"]) == {"1": n - 1} and rows[0]["cross_rack_bytes"] == ""
    # a report that shows every row says nothing, and leaves no stale full table behind
    write_html(replace(data, fetch=data.fetch[:MAX_FETCH_ROWS]), tmp_path / "report.html")
    assert "fetch-truncated" not in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert not (tmp_path / FETCH_CSV).exists()


def test_long_schedule_says_how_many_faults_are_left_out(tmp_path: Path) -> None:
    d = _data()
    run_dir = tmp_path / "results" / "c1" / "b"
    d.runs[1]["path"] = str(run_dir)
    d.runs[1]["nemesis"] = {
        "kind": "scripted",
        "steps": [{"after": 1, "fault": "kill --target broker:1", "duration": 1}] * (MAX_SCHEDULE_ROWS + 5),
    }
    html = render(d, tmp_path / "report")
    sec = html[html.index("<details class='timeline' data-run='c1/b'") :]
    sec = sec[: sec.index("</details>")]
    assert sec.count("<td><code>kill --target broker:1</code></td>") == MAX_SCHEDULE_ROWS
    assert f"\u2026 and 5 more (showing {MAX_SCHEDULE_ROWS} of {MAX_SCHEDULE_ROWS + 5})" in sec
    assert "<a href='../results/c1/b/run.json'>run.json</a>" in sec


def test_failures_say_which_runs_and_examples_are_left_out(tmp_path: Path) -> None:
    d = _data()
    d.failures[0]["runs_failing_check"] = 9  # the aggregation keeps details of the first few only
    run_dir = tmp_path / "c1" / "b"
    run_dir.mkdir(parents=True)
    (run_dir / "verdict.json").write_text("{}")
    d.runs[1]["path"] = str(run_dir)
    d.runs[1]["verdicts"]["poll-skip"]["examples"] = [{"kind": "poll-skip"}] * 5
    html = render(d, tmp_path)
    note = html[html.index("id='failures-partial'") :]
    assert "poll-skip: 1 of 9 runs" in note[: note.index("</p>")]
    assert "Showing 1 of 5 recorded examples; all are in the run's <a href='c1/b/verdict.json'>verdict.json</a>" in html


def test_long_json_values_and_many_notes_say_they_are_shortened() -> None:
    d = _data()
    d.failures[0]["counts"] = {f"k{i}": i for i in range(100)}
    full = len(json.dumps(d.failures[0]["counts"], separators=(",", ":")))
    for r in d.runs:
        r["verdicts"]["follower-fetch"].update(valid="not-applicable", notes=[f"note {i}" for i in range(5)])
    for m in d.matrix:
        if m["check"] == "follower-fetch":
            m.update(valid="not-applicable", not_applicable=m["runs"], passed=0)
    html = render(d)
    assert f"<code title='shortened: {full:,} characters in full'>" in html
    assert "note 0; note 1; note 2; and 2 more note(s) in the runs&#39; verdicts" in html
