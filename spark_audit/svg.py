"""Small inline-SVG charts for the HTML report: no scripts, no fonts or styles from the network.

Each function returns one ``<svg>`` element as text. Every mark has a
``<title>``, so hovering shows the exact number; labels are escaped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

#: Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
OTHER = "#9a9a9a"
AXIS = "#6b6b6b"
GRID = "#e4e4e4"
FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="11"'


def _t(text: object) -> str:
    return escape(str(text), quote=True)


def _fmt(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"


def _nice_max(value: float, ticks: int = 4, *, whole: bool = False) -> float:
    """A round axis maximum at or above ``value`` that ``ticks`` equal steps divide into round numbers.

    ``whole``: the data are counts, so every step is a whole number (no "2.5 requests").
    """
    if value <= 0:
        return float(ticks) if whole else 1.0
    raw = value / ticks
    exponent = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        step = factor * exponent
        if whole and step != int(step):
            continue
        if raw <= step:
            return float(max(step, 1) * ticks if whole else step * ticks)
    return float(10 * exponent * ticks)


def _axis(value: float, *, whole: bool = False) -> tuple[float, int]:
    """(axis maximum, number of steps): the tighter of four or five round steps."""
    return min((_nice_max(value, ticks, whole=whole), ticks) for ticks in (4, 5))


def _svg(width: int, height: int, label: str, body: Sequence[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
        f'preserveAspectRatio="xMinYMin meet" role="img" aria-label="{_t(label)}" {FONT}>' + "".join(body) + "</svg>"
    )


def color_for(index: int, name: str = "") -> str:
    return OTHER if name == "other" else PALETTE[index % len(PALETTE)]


def legend(names: Sequence[str]) -> str:
    """An HTML legend (wraps with the page, unlike text inside an SVG)."""
    items = [
        f'<span class="key"><span class="swatch" style="background:{color_for(i, n)}"></span>{_t(n)}</span>' for i, n in enumerate(names)
    ]
    return '<div class="legend">' + "".join(items) + "</div>"


def stacked_columns(
    categories: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], *, label: str, width: int = 920, height: int = 240
) -> str:
    """Columns over ``categories`` (e.g. time buckets), one stacked segment per series."""
    left, right, top, bottom = 48, 8, 10, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [sum(values[i] for _, values in series) for i in range(len(categories))]
    peak, ticks = _axis(max(totals, default=0.0), whole=all(v == int(v) for v in totals))
    body = []
    for step in range(ticks + 1):
        value = peak * step / ticks
        y = top + plot_h - plot_h * step / ticks
        body.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
        body.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{AXIS}">{_t(_fmt(value))}</text>')
    slot = plot_w / max(len(categories), 1)
    bar = max(min(slot * 0.8, 48), 1.0)
    every = max(1, math.ceil(len(categories) / 8))
    for i, category in enumerate(categories):
        x = left + slot * i + (slot - bar) / 2
        y = top + plot_h
        for index, (name, values) in enumerate(series):
            value = values[i]
            if value <= 0:
                continue
            h = plot_h * value / peak
            y -= h
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{color_for(index, name)}">'
                f"<title>{_t(category)} · {_t(name)}: {_t(_fmt(value))}</title></rect>"
            )
        if i % every == 0:
            body.append(f'<text x="{x + bar / 2:.1f}" y="{height - bottom + 16}" text-anchor="middle" fill="{AXIS}">{_t(category)}</text>')
    body.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="{AXIS}"/>')
    return _svg(width, height, label, body)


def horizontal_bars(items: Sequence[tuple[str, float]], *, label: str, color: str = PALETTE[5], width: int = 440) -> str:
    """One labelled bar per item, longest first as given."""
    row, top, label_w, value_w = 22, 4, 170, 56
    height = top * 2 + row * max(len(items), 1)
    peak = max((value for _, value in items), default=0.0) or 1.0
    body = []
    for i, (name, value) in enumerate(items):
        y = top + row * i
        w = (width - label_w - value_w) * value / peak
        short = name if len(name) <= 26 else name[:25] + "…"
        body.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end"><title>{_t(name)}</title>{_t(short)}</text>')
        body.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row - 7}" rx="2" fill="{color}">'
            f"<title>{_t(name)}: {_t(_fmt(value))}</title></rect>"
        )
        body.append(f'<text x="{label_w + w + 5:.1f}" y="{y + 15}" fill="{AXIS}">{_t(_fmt(value))}</text>')
    return _svg(width, height, label, body)


def heatmap(rows: Sequence[str], columns: Sequence[str], values: Mapping[tuple[str, str], float], *, label: str, width: int = 920) -> str:
    """A grid of ``rows`` x ``columns``; darker cells hold more."""
    label_w, header_h, cell_h = 150, 110, 24
    # a few methods should not stretch into bars across the page
    cell_w = min((width - label_w) / max(len(columns), 1), 120)
    height = header_h + cell_h * max(len(rows), 1) + 4
    peak = max(values.values(), default=0.0) or 1.0
    body = []
    for j, column in enumerate(columns):
        x = label_w + cell_w * j + cell_w / 2
        short = column.removeprefix("kafka.")
        body.append(
            f'<text transform="translate({x:.1f},{header_h - 6}) rotate(-40)" fill="{AXIS}"><title>{_t(column)}</title>{_t(short)}</text>'
        )
    for i, row_name in enumerate(rows):
        y = header_h + cell_h * i
        body.append(f'<text x="{label_w - 6}" y="{y + 16}" text-anchor="end">{_t(row_name)}</text>')
        for j, column in enumerate(columns):
            value = values.get((row_name, column), 0.0)
            x = label_w + cell_w * j
            if value <= 0:
                body.append(f'<rect x="{x + 1:.1f}" y="{y + 1}" width="{cell_w - 2:.1f}" height="{cell_h - 2}" fill="#f6f6f6"/>')
                continue
            # square root: one busy principal should not wash out everyone else
            strength = 0.15 + 0.85 * math.sqrt(value / peak)
            text_fill = "#ffffff" if strength > 0.55 else "#1a1a1a"
            body.append(
                f'<rect x="{x + 1:.1f}" y="{y + 1}" width="{cell_w - 2:.1f}" height="{cell_h - 2}" fill="{PALETTE[0]}" fill-opacity="{strength:.2f}">'
                f"<title>{_t(row_name)} · {_t(column)}: {_t(_fmt(value))}</title></rect>"
            )
            body.append(f'<text x="{x + cell_w / 2:.1f}" y="{y + 16}" text-anchor="middle" fill="{text_fill}">{_t(_fmt(value))}</text>')
    return _svg(width, height, label, body)


def latency_ranges(items: Sequence[tuple[str, float, float, float, float]], *, label: str, width: int = 920) -> str:
    """Per API: a bar to p50, lighter to p90 and p99, and a tick at the maximum (milliseconds)."""
    label_w, row, top, axis_h = 190, 26, 6, 24
    plot_w = width - label_w - 96
    height = top + row * max(len(items), 1) + axis_h
    peak, ticks = _axis(max((item[3] for item in items), default=0.0))
    body = []
    for step in range(ticks + 1):
        x = label_w + plot_w * step / ticks
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{height - axis_h}" stroke="{GRID}"/>')
        body.append(f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle" fill="{AXIS}">{_t(_fmt(peak * step / ticks))} ms</text>')
    for i, (name, p50, p90, p99, top_value) in enumerate(items):
        y = top + row * i
        body.append(f'<text x="{label_w - 6}" y="{y + 17}" text-anchor="end">{_t(name.removeprefix("kafka."))}</text>')
        tip = f"{name}: p50 {_fmt(p50)} ms, p90 {_fmt(p90)} ms, p99 {_fmt(p99)} ms, max {_fmt(top_value)} ms"
        for value, opacity in ((p99, 0.25), (p90, 0.5), (p50, 1.0)):
            w = plot_w * min(value, peak) / peak
            body.append(
                f'<rect x="{label_w}" y="{y + 5}" width="{max(w, 1):.1f}" height="{row - 10}" fill="{PALETTE[0]}" fill-opacity="{opacity}">'
                f"<title>{_t(tip)}</title></rect>"
            )
        mx = label_w + plot_w * min(top_value, peak) / peak
        body.append(
            f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{y + 3}" y2="{y + row - 3}" stroke="{PALETTE[5]}" stroke-width="2"><title>{_t(tip)}</title></line>'
        )
        body.append(f'<text x="{label_w + plot_w + 10}" y="{y + 17}" fill="{AXIS}">p99 {_t(_fmt(p99))}</text>')
    return _svg(width, height, label, body)
