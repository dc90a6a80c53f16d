"""The self-contained HTML compliance report: one file, inline CSS/JS/SVG, no network.

It must open from a CI artifact store or an air-gapped laptop, so nothing is fetched: no CDN,
no fonts, no favicon (a ``data:`` icon stops the browser from asking for /favicon.ico). Every
text that comes from a history is escaped. Sections: verdict matrix (with a row that
attributes each suite/scenario and Kafka version's violations to the broker or to clients,
``reports.attribution``), runs, failures with the
events around each anomaly and the repro command, per-run timelines with fault windows,
follower fetching, trends across campaigns, versions and configuration. Each run's section
(under Timelines) also lists its nemesis schedule, the longest consumer stall per consumer and
partition during each fault and after each heal with the bound that judged it, and the time
bounds of its config (which the configuration table leaves out of its grouping).
"""

from __future__ import annotations

import json
from collections import Counter
from html import escape
from pathlib import Path
from typing import Any

from harness.checks.verdict import NOT_APPLICABLE
from reports.aggregate import ReportData
from reports.attribution import BROKER, CLIENTS, NONE, SINGLE, attribute, describe
from reports.summary import as_dict, config_key, fault_rows, longest_stall_ms, run_bounds, stall_rows
from reports.svg import line_chart

#: runs without a plotted timeline still get a details section (schedule, stalls), up to this many
MAX_DETAIL_ONLY_RUNS = 200
#: a stall row longer than its bound
OVER_BOUND = " class='v-false'"

WORD = {True: "valid", False: "violated", "unknown": "unknown", "not-applicable": "not applicable"}
MARK = {True: "\u2713", False: "\u2717", "unknown": "?", "not-applicable": "n/a"}

CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 2em 4em;color:#222}
h1{margin:.6em 0 .2em}h2{border-bottom:2px solid #ddd;padding-top:.8em}
nav a{margin-right:1em}code,pre{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace}
pre{background:#f6f6f6;padding:.5em;overflow-x:auto;white-space:pre-wrap}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.matrix td.cell{text-align:center;font-weight:600;min-width:4.5em}
.v-true{background:#d9f2d9;color:#1b5e20}.v-false{background:#f8d0d0;color:#8b0000}
.changed{outline:3px solid #e65100;outline-offset:-3px}
.v-unknown{background:#fff1c2;color:#7a5900}.v-allowed{background:#e4ecf7;color:#234}
.v-na{background:#f1f1f1;color:#777;font-weight:400;font-style:italic}
.badge{display:inline-block;padding:2px 10px;border-radius:10px;font-weight:700}
tr.involved td{background:#ffe4b3}.small{font-size:12px;color:#555}
table.compact td,table.compact th{padding:1px 5px;font-size:12px}
svg.chart{display:block;margin:4px 0}svg .plot{fill:#fcfcfc;stroke:#ccc}
svg .fault{fill:#e53935;fill-opacity:.13}svg .ct{font-size:12px;font-weight:600}
svg .ax,svg .lg{font-size:10px}details{margin:.4em 0}summary{cursor:pointer}
.hidden{display:none}
"""

JS = """
(function(){
  var box=document.getElementById('run-filter');
  if(box){box.addEventListener('input',function(){
    var q=box.value.toLowerCase();
    document.querySelectorAll('#runs tbody tr').forEach(function(tr){
      tr.classList.toggle('hidden', q!=='' && tr.textContent.toLowerCase().indexOf(q)<0);});
  });}
  var only=document.getElementById('only-bad');
  if(only){only.addEventListener('change',function(){
    document.querySelectorAll('#runs tbody tr').forEach(function(tr){
      tr.classList.toggle('hidden', only.checked && tr.dataset.valid==='true');});
  });}
  var all=document.getElementById('expand-all');
  if(all){all.addEventListener('click',function(){
    document.querySelectorAll('#timelines details').forEach(function(d){d.open=true;});});}
})();
"""


def _cls(valid: Any, allowed: bool = False) -> str:
    if valid is True and allowed:
        return "v-allowed"
    if valid == NOT_APPLICABLE:
        return "v-na"
    return {True: "v-true", False: "v-false"}.get(valid, "v-unknown")


def _j(v: Any, limit: int = 300) -> str:
    s = json.dumps(v, default=str, separators=(",", ":"))
    return escape(s if len(s) <= limit else s[:limit] + "\u2026")


def _valid_key(v: Any) -> str:
    if v == NOT_APPLICABLE:
        return NOT_APPLICABLE
    return "true" if v is True else "false" if v is False else "unknown"


def render(data: ReportData) -> str:
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        "<link rel='icon' href='data:,'>",
        f"<title>highwater compliance report: {escape(WORD[data.valid])}</title>",
        f"<style>{CSS}</style></head><body>",
        _header(data),
        _matrix(data),
        _releases(data),
        _runs(data),
        _failures(data),
        _timelines(data),
        _fetch(data),
        _groups(data),
        _power(data),
        _trends(data),
        _versions(data),
        _disagreements(data),
        f"<script>{JS}</script></body></html>",
    ]
    return "\n".join(parts)


def _header(d: ReportData) -> str:
    n = Counter(_valid_key(r["valid"]) for r in d.runs)
    return (
        f"<h1>highwater compliance report</h1>"
        f"<p>Overall: <span id='overall' class='badge {_cls(d.valid)}' data-valid='{_valid_key(d.valid)}'>"
        f"{escape(WORD[d.valid])}</span> &nbsp; {len(d.runs)} run(s): {n['true']} valid, "
        f"{n['false']} violated, {n['unknown']} unknown.</p>"
        f"<p class='small'>Generated {escape(d.generated_at)} from <code>{escape(d.results_dir)}</code> "
        f"with Spark master <code>{escape(d.master)}</code>. Unknown means a check had its inputs "
        f"but could not settle; it never counts as valid. Not applicable means the history does "
        f"not carry the check's inputs at all (the check did not run).</p>"
        "<nav><a href='#matrix'>Matrix</a><a href='#releases'>Releases</a><a href='#runs-sec'>Runs</a><a href='#failures'>Failures</a>"
        "<a href='#timelines'>Timelines</a><a href='#fetch'>Follower fetching</a><a href='#groups'>Groups</a><a href='#power'>Power loss</a>"
        "<a href='#trends'>Trends</a><a href='#versions'>Versions &amp; config</a></nav>"
    )


def _matrix(d: ReportData) -> str:
    cols = d.columns
    cell = {(m["check"], m["suite"], m["scenario"], m["kafka_version"], m["client"]): m for m in d.matrix}
    head = ["<tr><th rowspan='3'>check</th>"]
    head += [f"<th>{escape(c['suite'])}/{escape(c['scenario'])}</th>" for c in cols]
    head.append("</tr><tr>")
    head += [f"<th>Kafka {escape(c['kafka_version'])}</th>" for c in cols]
    head.append("</tr><tr>")
    head += [f"<th>{escape(c['client'])}</th>" for c in cols]
    head.append("</tr>")
    attr = attribute(d.matrix)
    head.append(_attribution_row(cols, attr))
    rows = []
    for check in d.checks:
        tds = [f"<th>{escape(check)}</th>"]
        for ci, c in enumerate(cols):
            m = cell.get((check, c["suite"], c["scenario"], c["kafka_version"], c["client"]))
            if m is None:
                tds.append("<td class='cell'>-</td>")
                continue
            allowed = bool(m["allowed"]) and m["valid"] is True
            na = int(m.get("not_applicable") or 0)
            judged = m["runs"] - na  # runs where the check applied
            tip = (
                f"{m['runs']} run(s): {m['passed']} valid ({m['allowed']} allowed by policy), "
                f"{m['failed']} violated, {m['unknown']} unknown, {na} not applicable"
            )
            a = attr.get((c["suite"], c["scenario"], c["kafka_version"]), {}).get("checks", {}).get(check)
            if (
                a is not None
                and a["verdict"] != NONE
                and len(attr[(c["suite"], c["scenario"], c["kafka_version"])]["labels"]) > 1
            ):
                tip += f"; {describe(a)}"
            if m["valid"] == NOT_APPLICABLE:
                notes = _na_notes(d, check, c)
                tip += (": " + "; ".join(notes)) if notes else ""
                text = MARK[NOT_APPLICABLE]
            elif m["valid"] is False:
                text = f"{MARK[False]} {m['failed']}/{judged}"
            else:
                text = f"{MARK[m['valid']]} {m['passed']}/{judged}"
            tds.append(
                f"<td class='cell {_cls(m['valid'], allowed)}' data-check='{escape(check)}' "
                f"data-col='{ci}' data-valid='{_valid_key(m['valid'])}' title='{escape(tip)}'>"
                f"{escape(text)}</td>"
            )
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return (
        "<h2 id='matrix'>Verdict matrix</h2><p class='small'>Check × suite/scenario × Kafka "
        "version × client. A cell is violated if any run violated the check, else unknown if "
        "any run could not judge it; \u2713 n/m counts valid runs, \u2717 n/m violating ones, "
        "out of the m runs where the check applied. "
        "Blue: an anomaly the configuration allows (policy table). Grey n/a: not applicable, "
        "the histories do not carry the check's inputs (e.g. no racks, no meta events); "
        "it counts neither as valid nor as violated. The attribution row says, for each "
        "suite/scenario and Kafka version run with two or more clients, where a violation lies: "
        "broker (every client failed the same check), the clients named (only they failed it), "
        "none, or undecided (a client could not judge it); single client: cannot attribute.</p>"
        f"<table class='matrix' id='matrix-table'><thead>{''.join(head)}</thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


ATTR_CLASS = {BROKER: "v-false", CLIENTS: "v-allowed", NONE: "v-true", SINGLE: "v-na"}


def _attribution_row(cols: list[dict[str, str]], attr: dict[tuple[str, str, str], dict[str, Any]]) -> str:
    """One header cell per column group (suite/scenario, Kafka version; its columns are
    adjacent, sorted by client) with the group's attribution and the checks behind it."""
    cells = ["<tr class='attribution'><th>attribution</th>"]
    i = 0
    while i < len(cols):
        key = (cols[i]["suite"], cols[i]["scenario"], cols[i]["kafka_version"])
        n = 1
        while (
            i + n < len(cols) and (cols[i + n]["suite"], cols[i + n]["scenario"], cols[i + n]["kafka_version"]) == key
        ):
            n += 1
        a = attr.get(key)
        if a is None:
            cells.append(f"<td colspan='{n}'>-</td>")
        else:
            v = a["verdict"]
            text = {CLIENTS: "clients: " + ", ".join(a["clients"])}.get(v, v)
            tip = "; ".join(
                f"{c}: {describe(x)}"
                for c, x in a["checks"].items()
                if x["verdict"] not in (NONE, SINGLE) or x["failed"]
            )
            cells.append(
                f"<td colspan='{n}' class='attr {ATTR_CLASS.get(v, 'v-unknown')}' data-attribution='{escape(v)}' "
                f"data-group='{escape('/'.join(key))}' title='{escape(tip or describe(a))}'>{escape(text)}</td>"
            )
        i += n
    return "".join(cells) + "</tr>"


def _na_notes(d: ReportData, check: str, col: dict[str, str]) -> list[str]:
    """Why a check did not apply in a matrix column: its verdicts' notes, once each."""
    notes = (
        n
        for r in d.runs
        if all(r[k] == col[k] for k in ("suite", "scenario", "kafka_version", "client"))
        for n in r["verdicts"].get(check, {}).get("notes", [])
    )
    notes = (str(n).removeprefix("not applicable: ") for n in notes)
    return list(dict.fromkeys(notes))[:3]


def _releases(d: ReportData) -> str:
    """Each scenario's verdict across Kafka releases (reports.releases); a changed cell is
    outlined and says from what; failing runs link to their directories."""
    view = d.releases or {}
    rels, rows = view.get("releases", []), view.get("rows", [])
    if not rows:
        return (
            "<h2 id='releases'>Across releases</h2><p class='small'>The runs cover one Kafka release; "
            "a sweep (<code>highwater sweep</code>) fills this view.</p>"
        )
    head = "".join(f"<th>Kafka {escape(r)}</th>" for r in rels)
    body = []
    for row in rows:
        tds = []
        for rel in rels:
            c = row["cells"].get(rel)
            if c is None:
                tds.append("<td class='v-na'>&ndash;</td>")
                continue
            valid = {"pass": True, "fail": False}.get(c["verdict"], "unknown")
            links = " ".join(
                f"<a href='{escape(_file_url(f['path']))}'>{escape(f['label'])}</a>" for f in c["failing"] if f["path"]
            )
            mark = " changed" if c["changed"] else ""
            title = "verdict changed at this release" if c["changed"] else ""
            tds.append(
                f"<td class='{_cls(valid)}{mark}' data-release='{escape(rel)}' data-verdict='{c['verdict']}' "
                f"title='{title}'>{escape(c['verdict'])} <span class='small'>{c['passed']}/{c['runs']}"
                f"</span>{'<br>' + links if links else ''}</td>"
            )
        body.append(
            f"<tr><td>{escape(row['suite'])}/{escape(row['scenario'])}</td><td>{escape(row['client'])}</td>"
            f"{''.join(tds)}</tr>"
        )
    return (
        "<h2 id='releases'>Across releases</h2><p class='small'>Each scenario's verdict over all its runs "
        "on a release (passed runs / runs); outlined: the verdict differs from the nearest earlier "
        "release with a known verdict. Unknown is never a pass.</p>"
        f"<table id='releases-table'><tr><th>suite/scenario</th><th>client</th>{head}</tr>{''.join(body)}</table>"
    )


def _file_url(path: str) -> str:
    return Path(path).resolve().as_uri()


def _runs(d: ReportData) -> str:
    rows = []
    for r in d.runs:
        bad = [c for c, v in r["verdicts"].items() if v["valid"] is False]
        unk = [c for c, v in r["verdicts"].items() if v["valid"] == "unknown"]
        na = [c for c, v in r["verdicts"].items() if v["valid"] == NOT_APPLICABLE]
        rows.append(
            f"<tr data-run='{escape(r['label'])}' data-valid='{_valid_key(r['valid'])}'>"
            f"<td>{escape(r['label'])}</td><td>{escape(r['suite'])}/{escape(r['scenario'])}</td>"
            f"<td>{escape(r['kafka_version'])}</td><td>{escape(r['client'])}</td>"
            f"<td class='{_cls(r['valid'])}'>{escape(WORD[r['valid']])}</td>"
            f"<td>{escape(', '.join(bad))}</td><td>{escape(', '.join(unk))}</td>"
            f"<td class='small'>{escape(', '.join(na))}</td>"
            f"<td><code>{escape(r['repro'] or '')}</code></td></tr>"
        )
    return (
        "<h2 id='runs-sec'>Runs</h2><p><input id='run-filter' placeholder='filter runs' "
        "aria-label='filter runs'> <label><input type='checkbox' id='only-bad'> only not valid"
        "</label></p><table id='runs'><thead><tr><th>run</th><th>suite/scenario</th><th>Kafka</th>"
        "<th>client</th><th>verdict</th><th>violated</th><th>unknown</th><th>not applicable</th>"
        "<th>repro</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _failures(d: ReportData) -> str:
    if not d.failures:
        return "<h2 id='failures'>Failures</h2><p>No violations.</p>"
    out = ["<h2 id='failures'>Failures</h2>"]
    for f in d.failures:
        out.append(
            f"<div class='failure' data-check='{escape(f['check'])}' data-run='{escape(f['run'])}'>"
            f"<h3>{escape(f['check'])} in {escape(f['run'])}</h3>"
            f"<p>counts: <code>{_j(f['counts'])}</code> ({f['runs_failing_check']} run(s) "
            f"violate this check)</p>"
        )
        for n in f["notes"]:
            out.append(f"<p class='small'>note: {escape(str(n))}</p>")
        out.append(
            f"<p>Reproduce: <code class='repro'>{escape(f['repro'] or '(no repro command recorded in run.json)')}"
            "</code></p>"
        )
        for ex in f["examples"]:
            out.append(f"<p>Anomaly: <code>{_j(ex['what'], 600)}</code></p>")
            if ex["context"]:
                out.append(
                    "<table class='events'><tr><th>index</th><th>time (ms)</th><th>process</th>"
                    "<th>type</th><th>f</th><th>value</th><th>error</th></tr>"
                )
                for e in ex["context"]:
                    out.append(
                        f"<tr class='{'involved' if e['involved'] else ''}'><td>{e['index']}</td>"
                        f"<td>{e['time_ns'] / 1e6:.1f}</td><td>{escape(e['process'])}</td>"
                        f"<td>{escape(e['type'])}</td><td>{escape(e['f'])}</td>"
                        f"<td><code>{_j(e['value'], 240)}</code></td>"
                        f"<td>{escape(e['error'] or '')}</td></tr>"
                    )
                out.append("</table>")
        out.append("</div>")
    return "".join(out)


def _timelines(d: ReportData) -> str:
    out = [
        "<h2 id='timelines'>Timelines</h2><p class='small'>Per run, bucketed; red bands are "
        "fault windows (hover for kind and targets). Failing runs first. "
        "<button id='expand-all' type='button'>expand all</button></p>"
    ]
    runs = {r["label"]: r for r in d.runs}
    for label, tl in d.timelines.items():
        r = runs[label]
        t, fw = tl["t"], tl["faults"]
        charts = [
            line_chart(
                t,
                [("acks/s", tl["acks"]), ("polled/s", tl["polled"]), ("send errors/s", tl["send_errors"])],
                title="throughput",
                unit="records/s",
                faults=fw,
            )
        ]
        if any(v is not None for v in tl["latency_p99_ms"]):
            note = f", 1/{tl['latency_sampled']} of values" if tl["latency_sampled"] > 1 else ""
            charts.append(
                line_chart(
                    t,
                    [("p50", tl["latency_p50_ms"]), ("p99", tl["latency_p99_ms"])],
                    title="end-to-end latency" + note,
                    unit="ms",
                    faults=fw,
                )
            )
        if tl["partitions"]:
            charts.append(
                line_chart(
                    t,
                    [(p, s["isr"]) for p, s in sorted(tl["partitions"].items())],
                    title="ISR size",
                    faults=fw,
                    step=True,
                )
            )
            charts.append(
                line_chart(
                    t,
                    [(p, s["leader"]) for p, s in sorted(tl["partitions"].items())],
                    title="leader (broker id)",
                    faults=fw,
                    step=True,
                    y_min=None,
                )
            )
        if tl["lag"]:
            charts.append(
                line_chart(
                    t, sorted(tl["lag"].items()), title="consumer lag (HW - position)", unit="records", faults=fw
                )
            )
        faults = "".join(
            f"<li>{escape(str(w.get('kind')))} {escape(str(w.get('targets')))}: "
            f"{w['start_s']:.1f}s \u2013 {w['end_s']:.1f}s"
            f"{' (never healed)' if w.get('unhealed') else ''}</li>"
            for w in fw
        )
        out.append(
            f"<details class='timeline' data-run='{escape(label)}' {'open' if r['valid'] is False else ''}>"
            f"<summary><span class='badge {_cls(r['valid'])}'>{escape(WORD[r['valid']])}</span> "
            f"{escape(label)}</summary>{''.join(charts)}"
            f"<p class='small'>fault windows:</p><ul>{faults or '<li>none</li>'}</ul>"
            f"{_run_detail(r)}</details>"
        )
    if not d.timelines:
        out.append("<p>No histories to plot.</p>")
    rest = [r for r in d.runs if r["label"] not in d.timelines]
    if rest:
        out.append(
            f"<p class='small'>Runs without a plotted timeline ({len(rest)}): schedule, "
            f"stalls and bounds{'' if len(rest) <= MAX_DETAIL_ONLY_RUNS else f' of the first {MAX_DETAIL_ONLY_RUNS} (all are in summary.json)'}.</p>"
        )
        for r in rest[:MAX_DETAIL_ONLY_RUNS]:
            out.append(
                f"<details class='run-detail' data-run='{escape(r['label'])}'>"
                f"<summary><span class='badge {_cls(r['valid'])}'>{escape(WORD[r['valid']])}</span> "
                f"{escape(r['label'])}</summary>{_run_detail(r)}</details>"
            )
    return "".join(out)


def _run_detail(r: dict[str, Any]) -> str:
    """A run's schedule, its longest stalls with their bounds, and its time bounds."""
    return (
        _schedule(r)
        + _stalls(r)
        + f"<p class='small run-bounds'>time bounds: {_bounds_line(r.get('config') or {})}</p>"
    )


def _schedule(r: dict[str, Any]) -> str:
    nem = as_dict(r.get("nemesis"))
    sched = as_dict(nem.get("schedule")) or as_dict(r.get("schedule"))
    kind = str(nem.get("kind") or ("scheduled" if sched else "not recorded"))
    extra = f" {nem['name']}" if nem.get("name") else ""
    if sched.get("seed") is not None:
        extra += f", seed {sched['seed']}"
    rows = fault_rows(r)
    head = (
        f"<p class='small'>nemesis: <b>{escape(kind)}</b>{escape(extra)}{f', {len(rows)} fault(s)' if rows else ''}</p>"
    )
    if not rows:
        return head
    trs = "".join(
        f"<tr><td>{x['at_s']:g}s</td><td>{escape(x['kind'])}</td><td>{escape(x['target'] or '-')}</td>"
        f"<td>{x['duration_s']:g}s</td><td><code>{escape(x['cli'])}</code></td></tr>"
        for x in rows[:100]
    )
    more = f"<p class='small'>\u2026 and {len(rows) - 100} more</p>" if len(rows) > 100 else ""
    return (
        f"{head}<table class='compact schedule'><tr><th>at</th><th>kind</th><th>target</th>"
        f"<th>duration</th><th>fault</th></tr>{trs}</table>{more}"
    )


def _stalls(r: dict[str, Any]) -> str:
    longest = longest_stall_ms(r)
    rows = stall_rows(r)
    if not longest and not rows:
        return ""
    head = (
        "<p class='small'>longest consumer stall (no record of a partition while records of it "
        "were acknowledged): " + escape(", ".join(f"{c} {ms} ms" for c, ms in longest.items())) + "</p>"
    )
    if not rows:
        return head
    trs = "".join(
        f"<tr{OVER_BOUND if x['over_bound'] else ''}><td>{escape(str(x['consumer']))}</td>"
        f"<td>{escape(str(x['topic']))}-{escape(str(x['partition']))}</td>"
        f"<td>#{escape(str(x['window']))} {escape(str(x['fault_kind']))}</td>"
        f"<td>{'after heal' if x['phase'] == 'after-heal' else escape(str(x['phase']))}</td>"
        f"<td>{_s(x['window_start_ns'])} \u2013 {_s(x['window_end_ns'])}</td>"
        f"<td>{escape(str(x['stall_ms']))}</td><td>{escape(str(x['bound_ms']))}</td>"
        f"<td>{escape(', '.join(x['checks']))}</td></tr>"
        for x in rows
    )
    return (
        f"{head}<table class='compact stalls'><tr><th>consumer</th><th>partition</th><th>fault</th>"
        "<th>phase</th><th>phase span</th><th>longest stall (ms)</th><th>bound (ms)</th><th>reported by</th>"
        f"</tr>{trs}</table>"
    )


def _s(ns: Any) -> str:
    return f"{ns / 1e9:.1f}s" if isinstance(ns, (int, float)) and not isinstance(ns, bool) else "?"


def _bounds_line(config: dict[str, Any]) -> str:
    """The time bounds of a config, one compact line; formulas on hover."""
    b = run_bounds(config)
    if not b:
        return "-"
    return " &middot; ".join(
        f"<span title='{escape(v['formula'] + ' = ' + v['computed'])}'>{escape(n.removesuffix('_ms'))} "
        f"{v['ms']} ms{' (given)' if v['given'] else ''}</span>"
        for n, v in b.items()
    )


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _fetch(d: ReportData) -> str:
    if not d.fetch:
        return "<h2 id='fetch'>Follower fetching</h2><p>No polled records.</p>"
    rows = "".join(
        f"<tr><td>{escape(f['run'])}</td><td>{escape(f['consumer'])}</td><td>{escape(str(f['rack'] or '-'))}</td>"
        f"<td>{f['records']}</td><td>{_pct(f['local_share'])}</td>"
        f"<td>{'-' if f['cross_rack_records'] is None else f['cross_rack_records']}</td>"
        f"<td>{'-' if f['cross_rack_bytes'] is None else f['cross_rack_bytes']}</td>"
        f"<td><code>{_j(f['by_replica'])}</code></td></tr>"
        for f in d.fetch[:2000]
    )
    return (
        "<h2 id='fetch'>Follower fetching (KIP-392)</h2><p class='small'>Share of polled records "
        "served by a replica in the consumer's own rack (racks from run.json or the history "
        "header), records served across racks, and cross-rack bytes from Toxiproxy's counters "
        "where run.json has them.</p><table id='fetch-table'><tr><th>run</th><th>consumer</th>"
        "<th>rack</th><th>records</th><th>same-rack share</th><th>cross-rack records</th>"
        f"<th>cross-rack bytes</th><th>records by replica</th></tr>{rows}</table>"
    )


def _groups(d: ReportData) -> str:
    if not d.groups:
        return "<h2 id='groups'>Consumer groups</h2><p>No group runs.</p>"
    rows = "".join(
        f"<tr><td>{escape(g['scenario'])}</td><td>{escape(g['kafka_version'])}</td><td>{escape(g['client'])}</td>"
        f"<td>{escape(g['group_protocol'])}</td><td>{escape(g.get('group_remote_assignor') or '-')}</td>"
        f"<td>{g['runs']}</td><td>{g['duplicates']}</td>"
        f"<td>{g['longest_stall_ms']}</td>"
        f"<td>{'never' if g['slowest_resume_ms'] is None else g['slowest_resume_ms'] if g['resumes'] else '-'}</td></tr>"
        for g in d.groups
    )
    return (
        "<h2 id='groups'>Consumer groups: classic and KIP-848 side by side</h2><p class='small'>Per scenario, "
        "release, client, group protocol and KIP-848 server-side assignor (group.remote.assignor; - for "
        "classic or none named): the most records one run's group returned twice, the longest "
        "any member went without a record (its own kill or freeze left out), and the longest a faulted "
        "member's partition went unread until some member read it again (never: not within the run).</p>"
        "<table id='groups-table'><tr><th>scenario</th><th>Kafka</th><th>client</th><th>protocol</th>"
        "<th>assignor</th><th>runs</th>"
        "<th>duplicates (max)</th><th>longest member stall (ms)</th><th>slowest resume after a member fault (ms)</th>"
        f"</tr>{rows}</table>"
    )


def _count_cell(n: int | None, bad_if_positive: bool) -> str:
    """A measured count: unknown shown as such, a count the policy forbids marked as a violation."""
    if n is None:
        return "<td class='v-unknown'>unknown</td>"
    return f"<td class='v-false'>{n}</td>" if bad_if_positive and n > 0 else f"<td>{n}</td>"


def _power(d: ReportData) -> str:
    if not d.power:
        return "<h2 id='power'>Power loss</h2><p>No power-loss runs.</p>"
    rows = "".join(
        f"<tr><td>{escape(p['scenario'])}</td><td>{escape(p['kafka_version'])}</td><td>{escape(p['client'])}</td>"
        f"<td>{p['replicas']}</td><td>{escape(p['elr'])}</td><td>{'on' if p['unclean'] else 'off'}</td>"
        f"<td>{'no loss' if p['promised'] else 'none'}</td><td>{p['runs']}</td>"
        + _count_cell(p["acked_lost"], p["promised"])
        + _count_cell(p["served_vanished"], p["promised"])
        + f"<td>{'never back' if p['longest_unavailable_ms'] is None else p['longest_unavailable_ms']}</td></tr>"
        for p in d.power
    )
    return (
        "<h2 id='power'>Power loss: what Kafka promises and what happened</h2><p class='small'>Per scenario, "
        "release, client, eligible leader replicas (KIP-966 level; - where the release has none) and unclean "
        "election: how many replicas of a partition lost power at once, what the policy table says Kafka "
        "promises then (no loss while fewer than min.insync.replicas replicas lose their page cache), and "
        "the most of one run: acknowledged writes lost, records consumers were served that later vanished, "
        "and the longest a partition took no write after the power loss (never "
        "back: not within the run).</p>"
        "<table id='power-table'><tr><th>scenario</th><th>Kafka</th><th>client</th><th>replicas lost</th>"
        "<th>ELR</th><th>unclean</th><th>promise</th><th>runs</th><th>acked writes lost</th>"
        "<th>served, then vanished</th><th>longest unavailable (ms)</th>"
        f"</tr>{rows}</table>"
    )


def _trends(d: ReportData) -> str:
    if not d.trends:
        return "<h2 id='trends'>Trends</h2><p>No campaigns.</p>"
    xs = list(range(len(d.trends)))
    labels = [t["campaign"] for t in d.trends]
    fail = [100.0 * t["failed_runs"] / t["runs"] for t in d.trends]
    unk = [100.0 * t["unknown_runs"] / t["runs"] for t in d.trends]
    chart = (
        line_chart(
            xs,
            [("violated runs %", fail), ("unknown runs %", unk)],
            title="runs not valid per campaign",
            unit="%",
            x_labels=labels,
        )
        if len(xs) > 1
        else ""
    )
    checks = sorted({c for t in d.trends for c in t["checks"]})
    head = "".join(f"<th>{escape(c)}</th>" for c in checks)
    rows = "".join(
        f"<tr><td>{escape(t['campaign'])}</td><td>{escape(t['started_at'] or '')}</td><td>{t['runs']}</td>"
        f"<td>{t['failed_runs']}</td><td>{t['unknown_runs']}</td>"
        + "".join(
            f"<td>{t['checks'].get(c, {}).get('failed', 0)} \u2717 / {t['checks'].get(c, {}).get('unknown', 0)} ?</td>"
            for c in checks
        )
        + "</tr>"
        for t in d.trends
    )
    return (
        f"<h2 id='trends'>Trends across campaigns</h2>{chart}<table id='trends-table'><tr>"
        f"<th>campaign</th><th>started</th><th>runs</th><th>violated</th><th>unknown</th>{head}</tr>"
        f"{rows}</table>"
    )


def _versions(d: ReportData) -> str:
    groups: Counter[tuple[str, str, str]] = Counter()
    by_bounds: dict[str, list[str]] = {}
    for r in d.runs:
        cfg = r.get("config") or {}
        groups[(r["kafka_version"], r["client"], json.dumps(config_key(cfg), sort_keys=True, default=str))] += 1
        by_bounds.setdefault(_bounds_line(cfg), []).append(r["label"])
    rows = "".join(
        f"<tr><td>{escape(k)}</td><td>{escape(c)}</td><td><code>{escape(cfg)}</code></td><td>{n}</td></tr>"
        for (k, c, cfg), n in sorted(groups.items())
    )
    blines = "".join(
        f"<li><span class='small'>{escape(', '.join(labels[:5]))}"
        f"{f' and {len(labels) - 5} more' if len(labels) > 5 else ''}:</span> {line}</li>"
        for line, labels in sorted(by_bounds.items(), key=lambda x: x[1][0])
    )
    return (
        "<h2 id='versions'>Versions and configuration</h2><p class='small'>The config column "
        "leaves out the derived time bounds (<code>bounds</code> with their formulas, and each "
        "bound's <code>*_ms</code> key); they follow the table, grouped by runs with the same "
        "bounds (formulas on hover).</p><table id='config-table'><tr><th>Kafka</th><th>client</th>"
        f"<th>config</th><th>runs</th></tr>{rows}</table>"
        f"<details id='bounds-list'><summary>time bounds ({len(by_bounds)} distinct)</summary>"
        f"<ul>{blines}</ul></details>"
    )


def _disagreements(d: ReportData) -> str:
    if not d.disagreements:
        return (
            "<p class='small' id='agreement'>Spark's poll-skip and lost-write agree with the "
            "Python checks on every run that has both.</p>"
        )
    rows = "".join(
        f"<li>{escape(x['run'])} {escape(x['check'])}: python={x['python']} "
        f"spark={x['spark']} counts differ: {escape(', '.join(x['counts_differ']))}</li>"
        for x in d.disagreements
    )
    return f"<h2 id='agreement'>Harness bug: Spark and Python disagree</h2><ul>{rows}</ul>"


def write_html(data: ReportData, path: Path) -> None:
    path.write_text(render(data), encoding="utf-8")
