"""Small SVG charts drawn on the server, so the page needs no plotting library and works offline.

Every label passes through `html.escape`; a chart is plain markup with no script or event attribute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

WIDTH = 560
COLORS = ("#3b6fb6", "#d9822b", "#2e9e62", "#b8404a", "#7a5cb8", "#5b8f9e", "#a07a2c", "#555555")


def _frame(height: int, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}">'
            f'<title>{escape(title)}</title>' + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 11, weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'font-family="sans-serif">{escape(text)}</text>')


def interval_bars(title: str, groups: Mapping[str, Mapping[str, Any]], metric: str, *, low: float = 0.0,
                  high: float | None = None, percent: bool = True) -> str:
    """Horizontal bars of `groups[name][metric]["value"]` with their 95% interval as whiskers, each labelled
    with its task and episode counts."""
    names = list(groups)
    values = [groups[name][metric] for name in names]
    if high is None:
        found = [item["high"] if item["high"] is not None else item["value"] for item in values
                 if item["value"] is not None]
        high = max([1.0, *found]) if percent else max([1e-9, *found])
    row, top, left, right = 22, 30, 190, 70
    height = top + row * max(len(names), 1) + 30
    span = WIDTH - left - right
    scale = span / (high - low) if high > low else 1.0
    body = [_text(8, 18, title, size=13, weight="bold")]
    for position, (name, item) in enumerate(zip(names, values)):
        y = top + position * row
        group = groups[name]
        body.append(_text(left - 6, y + 14, f"{name} ({group['tasks']} tasks, {group['episodes']} ep.)",
                          anchor="end", size=10))
        value = item["value"]
        if value is None:
            body.append(_text(left + 4, y + 14, "no data", size=10))
            continue
        width = max(0.0, (min(value, high) - low) * scale)
        body.append(f'<rect x="{left}" y="{y + 4}" width="{width:.1f}" height="{row - 8}" fill="{COLORS[0]}"/>')
        if item["low"] is not None and item["high"] is not None:
            x1, x2 = left + (item["low"] - low) * scale, left + (min(item["high"], high) - low) * scale
            middle = y + row / 2
            body.append(f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{middle:.1f}" y2="{middle:.1f}" stroke="#111"/>'
                        f'<line x1="{x1:.1f}" x2="{x1:.1f}" y1="{middle - 5:.1f}" y2="{middle + 5:.1f}" stroke="#111"/>'
                        f'<line x1="{x2:.1f}" x2="{x2:.1f}" y1="{middle - 5:.1f}" y2="{middle + 5:.1f}" stroke="#111"/>')
        label = f"{value:.1%}" if percent else f"{value:.3g}"
        body.append(_text(left + span + 6, y + 14, label, size=10))
    axis_y = top + row * max(len(names), 1) + 4
    body.append(f'<line x1="{left}" x2="{left + span}" y1="{axis_y}" y2="{axis_y}" stroke="#999"/>')
    for fraction in (0.0, 0.5, 1.0):
        tick = low + (high - low) * fraction
        body.append(_text(left + span * fraction, axis_y + 14, f"{tick:.0%}" if percent else f"{tick:.3g}",
                          anchor="middle", size=9))
    return _frame(height, body, title)


def histogram(title: str, labels: Sequence[str], counts: Sequence[int], *, x_label: str) -> str:
    """Vertical bars, one per bin, with the count above each non-empty bar."""
    height, top, bottom, left = 220, 30, 40, 40
    span_x, span_y = WIDTH - left - 20, height - top - bottom
    body = [_text(8, 18, title, size=13, weight="bold")]
    if not counts:
        body.append(_text(left, top + 20, "no data"))
        return _frame(height, body, title)
    most = max(max(counts), 1)
    width = span_x / len(counts)
    for position, count in enumerate(counts):
        bar = span_y * count / most
        x = left + position * width
        body.append(f'<rect x="{x + 1:.1f}" y="{top + span_y - bar:.1f}" width="{max(width - 2, 1):.1f}" '
                    f'height="{bar:.1f}" fill="{COLORS[1]}"><title>{escape(labels[position])}: {count}</title></rect>')
        if count:
            body.append(_text(x + width / 2, top + span_y - bar - 2, str(count), anchor="middle", size=8))
    step = max(1, len(labels) // 10)
    for position in range(0, len(labels), step):
        body.append(_text(left + position * width + width / 2, top + span_y + 12, labels[position], anchor="middle",
                          size=9))
    body.append(_text(left + span_x / 2, height - 8, x_label, anchor="middle", size=10))
    body.append(f'<line x1="{left}" x2="{left + span_x}" y1="{top + span_y}" y2="{top + span_y}" stroke="#999"/>')
    return _frame(height, body, title)


def lines(title: str, series: Mapping[str, Sequence[tuple[float, float]]], *, x_label: str, y_label: str,
          y_range: tuple[float, float] | None = None, percent: bool = False) -> str:
    """Line chart of named (x, y) series with a legend; points are drawn when a series is short."""
    height, top, bottom, left, right = 240, 30, 42, 56, 120
    span_x, span_y = WIDTH - left - right, height - top - bottom
    body = [_text(8, 18, title, size=13, weight="bold")]
    points = [point for values in series.values() for point in values]
    if not points:
        body.append(_text(left, top + 20, "no data"))
        return _frame(height, body, title)
    x_low, x_high = min(x for x, _ in points), max(x for x, _ in points)
    y_low, y_high = y_range or (min(y for _, y in points), max(y for _, y in points))
    if x_high <= x_low:
        x_high = x_low + 1
    if y_high <= y_low:
        y_high = y_low + 1

    def place(x: float, y: float) -> tuple[float, float]:
        return left + (x - x_low) / (x_high - x_low) * span_x, top + span_y - (y - y_low) / (y_high - y_low) * span_y

    def tick(value: float) -> str:
        return f"{value:.0%}" if percent else f"{value:.3g}"

    body.append(f'<rect x="{left}" y="{top}" width="{span_x}" height="{span_y}" fill="none" stroke="#ccc"/>')
    for fraction in (0.0, 0.5, 1.0):
        body.append(_text(left - 4, top + span_y - span_y * fraction + 4, tick(y_low + (y_high - y_low) * fraction),
                          anchor="end", size=9))
        body.append(_text(left + span_x * fraction, top + span_y + 13, f"{x_low + (x_high - x_low) * fraction:.3g}",
                          anchor="middle", size=9))
    body.append(_text(left + span_x / 2, height - 8, x_label, anchor="middle", size=10))
    body.append(_text(4, top - 6, y_label, size=9))
    for position, (name, values) in enumerate(series.items()):
        color = COLORS[position % len(COLORS)]
        placed = [place(x, y) for x, y in values]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in placed)
        body.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{path}"/>')
        if len(placed) <= 30:
            body.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.2" fill="{color}"/>' for x, y in placed)
        legend_y = top + 12 + position * 14
        body.append(f'<rect x="{left + span_x + 8}" y="{legend_y - 8}" width="10" height="3" fill="{color}"/>')
        body.append(_text(left + span_x + 22, legend_y - 4, name, size=9))
    return _frame(height, body, title)
