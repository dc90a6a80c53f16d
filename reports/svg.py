"""Hand-written inline SVG charts: the report must open offline, with no plotting library.

Small and deterministic: a line chart with optional step interpolation, gaps where a value is
missing (None), fault windows as shaded bands with a tooltip, min/max axis labels and a legend.

A chart is markup built here, so every text put into it (title, unit, legend names, fault
kinds and targets, x labels) is escaped with ``html.escape`` (quotes too: some go into
attributes); numbers are formatted by this module and colours come from ``PALETTE``. That is what
lets ``line_chart`` return ``Markup``, which the report's autoescaping templates insert as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from markupsafe import Markup

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
W, H = 620, 150
ML, MR, MT, MB = 48, 10, 18, 22


def _fmt(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v / 1000:.1f}k"
    if abs(v) >= 10 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.2f}"


def line_chart(
    x: Sequence[float],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    title: str,
    unit: str = "",
    faults: Sequence[dict[str, Any]] = (),
    step: bool = False,
    x_unit: str = "s",
    x_labels: Sequence[str] | None = None,
    y_min: float | None = 0.0,
) -> Markup:
    """An SVG line chart (markup safe to insert: see the module's docstring). ``faults``:
    windows ``{start_s, end_s, kind, targets}`` on the x axis."""
    pw, ph = W - ML - MR, H - MT - MB
    xs = list(x)
    if not xs:
        return Markup("")
    x0, x1 = xs[0], xs[-1] if xs[-1] > xs[0] else xs[0] + 1
    vals = [v for _, s in series for v in s if v is not None]
    lo = min(vals) if vals else 0.0
    hi = max(vals) if vals else 1.0
    if y_min is not None:
        lo = min(lo, y_min)
    if hi <= lo:
        hi = lo + 1

    def px(v: float) -> float:
        return ML + (v - x0) / (x1 - x0) * pw

    def py(v: float) -> float:
        return MT + ph - (v - lo) / (hi - lo) * ph

    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" '
        f'width="{W}" height="{H}" role="img" aria-label="{escape(title)}">',
        f'<text x="{ML}" y="12" class="ct">{escape(title)}{" (" + escape(unit) + ")" if unit else ""}</text>',
        f'<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" class="plot"/>',
    ]
    for f in faults:
        a, b = max(px(f["start_s"]), ML), min(px(f["end_s"]), ML + pw)
        if b <= a:
            b = a + 1
        band = str(f.get("band") or "fault")  # "mixed": nodes on different releases (timelines.mixed_version_window)
        label = f"{f.get('kind')} {f.get('targets')} {f['start_s']:.1f}s-{f['end_s']:.1f}s"
        out.append(
            f'<rect class="{escape(band)}" x="{a:.1f}" y="{MT}" width="{b - a:.1f}" height="{ph}">'
            f"<title>{'fault: ' if band == 'fault' else ''}{escape(label)}</title></rect>"
        )
    for i, (name, s) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        for seg in _segments(xs, s, step):
            pts = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in seg)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{pts}"/>')
        out.append(
            f'<text x="{ML + 6 + (i % 4) * 140}" y="{MT + 12 + (i // 4) * 12}" '
            f'fill="{color}" class="lg">{escape(name)}</text>'
        )
    out.append(f'<text x="{ML - 4}" y="{MT + 8}" class="ax" text-anchor="end">{_fmt(hi)}</text>')
    out.append(f'<text x="{ML - 4}" y="{MT + ph}" class="ax" text-anchor="end">{_fmt(lo)}</text>')
    if x_labels:
        for xv, lab in zip(xs, x_labels):
            out.append(f'<text x="{px(xv):.1f}" y="{H - 6}" class="ax" text-anchor="middle">{escape(lab)}</text>')
    else:
        for frac in (0, 0.25, 0.5, 0.75, 1):
            xv = x0 + frac * (x1 - x0)
            out.append(f'<text x="{px(xv):.1f}" y="{H - 6}" class="ax" text-anchor="middle">{_fmt(xv)}{x_unit}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def _segments(xs: Sequence[float], ys: Sequence[float | None], step: bool) -> list[list[tuple[float, float]]]:
    """Polyline pieces, broken where a value is missing; steps hold a value until the next."""
    segs: list[list[tuple[float, float]]] = []
    cur: list[tuple[float, float]] = []
    for i, (a, b) in enumerate(zip(xs, ys)):
        if b is None:
            if cur:
                segs.append(cur if len(cur) > 1 else cur * 2)  # a lone point still draws
            cur = []
            continue
        if step and cur:
            cur.append((a, cur[-1][1]))
        cur.append((a, float(b)))
        if i == len(xs) - 1 and step:
            cur.append((a, float(b)))
    if cur:
        segs.append(cur if len(cur) > 1 else cur * 2)
    return segs
