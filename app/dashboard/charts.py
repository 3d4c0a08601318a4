"""Chart geometry for the overview: stacked bars and lines, computed here and drawn by
the templates as inline SVG (`_charts.html`), so every chart is readable without
JavaScript and each mark carries its figure in a `<title>`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

#: Series colours, in order (colour-blind safe: Okabe–Ito), and the colour of "other".
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
OTHER = "#8a94a6"

LEFT, BOTTOM, TOP = 56.0, 22.0, 8.0  # room for the value axis, the bucket labels, the top


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    colour: str
    values: Sequence[float]  # one per bucket


@dataclass(frozen=True, slots=True)
class Rect:
    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str


@dataclass(frozen=True, slots=True)
class Label:
    x: float
    y: float
    text: str
    anchor: str = "middle"


@dataclass(frozen=True, slots=True)
class Line:
    colour: str
    points: str  # an SVG polyline's `points`
    title: str


@dataclass
class Chart:
    width: float
    height: float
    title: str
    rects: list[Rect] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)  # bucket labels and the axis
    gridlines: list[float] = field(default_factory=list)  # y of each value gridline
    legend: list[tuple[str, str]] = field(default_factory=list)  # (colour, name)


def nice_top(value: float) -> float:
    """A round axis maximum at or above `value` (1, 2, 2.5, 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # (unreachable: 10·power is always at or above)


def _axis(chart: Chart, top: float, plot_h: float, fmt: Callable[[float], str]) -> None:
    for fraction in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        chart.gridlines.append(y)
        chart.labels.append(Label(LEFT - 6, y + 4, fmt(top * fraction), "end"))


def _bucket_labels(chart: Chart, labels: Sequence[str], slot: float, every: int) -> None:
    for i, text in enumerate(labels):
        if i % every == 0:
            chart.labels.append(Label(LEFT + slot * (i + 0.5), chart.height - 6, text))


def _framed(
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    top_value: float,
    fmt: Callable[[float], str],
    width: float,
    height: float,
) -> tuple[Chart, float, float, float]:
    """A chart with its legend, value axis and bucket labels: and its axis maximum, the
    plot's height and one bucket's width, for the marks."""
    chart = Chart(width, height, title, legend=[(s.colour, s.name) for s in series])
    top = nice_top(top_value)
    plot_h = height - TOP - BOTTOM
    slot = (width - LEFT) / max(1, len(labels))
    if labels:
        _axis(chart, top, plot_h, fmt)
        _bucket_labels(chart, labels, slot, max(1, math.ceil(len(labels) / 12)))
    return chart, top, plot_h, slot


def stacked_bars(
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    fmt: Callable[[float], str],
    *,
    width: float = 1100,
    height: float = 200,
) -> Chart:
    """One bar per bucket (`labels`), stacked by series in their order."""
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    chart, top, plot_h, slot = _framed(
        title, labels, series, max(totals, default=0.0), fmt, width, height
    )
    for i, label in enumerate(labels):
        base = TOP + plot_h
        for s in series:
            value = s.values[i]
            if value <= 0:
                continue
            h = plot_h * value / top
            base -= h
            title_ = f"{label} · {s.name}: {fmt(value)}"
            x = LEFT + slot * i + slot * 0.12
            chart.rects.append(Rect(x, base, slot * 0.76, h, s.colour, title_))
    return chart


def lines(
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    fmt: Callable[[float], str],
    *,
    width: float = 1100,
    height: float = 160,
) -> Chart:
    """One polyline per series over the buckets (`labels`)."""
    peak = max((v for s in series for v in s.values), default=0.0)
    chart, top, plot_h, slot = _framed(title, labels, series, peak, fmt, width, height)
    if not labels:
        return chart
    for s in series:
        points = " ".join(
            f"{LEFT + slot * (i + 0.5):.1f},{TOP + plot_h * (1 - v / top):.1f}"
            for i, v in enumerate(s.values)
        )
        chart.lines.append(Line(s.colour, points, f"{s.name}: peak {fmt(max(s.values))}"))
    return chart
