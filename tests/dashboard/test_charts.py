"""The overview's chart geometry (app.dashboard.charts): bars stack to their bucket's
total on a round axis, each mark titled with its figure; lines peak where their values
do; no bucket draws nothing."""

from __future__ import annotations

import pytest

from app.dashboard import charts


@pytest.mark.parametrize(
    ("value", "top"),
    [(0, 1), (0.3, 0.5), (1, 1), (7, 10), (12, 20), (180, 200), (2400, 2500), (51, 100)],
)
def test_the_axis_ends_at_a_round_value_at_or_above_the_largest(value: float, top: float) -> None:
    assert charts.nice_top(value) == pytest.approx(top)


def test_stacked_bars_reach_each_buckets_total() -> None:
    series = [
        charts.Series("a", "#000", [10, 0, 30]),
        charts.Series("b", "#111", [5, 20, 0]),
    ]
    chart = charts.stacked_bars("t", ["x", "y", "z"], series, lambda v: f"{v:g}")
    plot = chart.height - charts.TOP - charts.BOTTOM
    top = charts.nice_top(30)
    by_bucket: dict[float, float] = {}
    for rect in chart.rects:
        by_bucket[round(rect.x)] = by_bucket.get(round(rect.x), 0) + rect.height
    assert sorted(by_bucket.values()) == pytest.approx(sorted(plot * t / top for t in (15, 20, 30)))
    assert [r.title for r in chart.rects] == ["x · a: 10", "x · b: 5", "y · b: 20", "z · a: 30"]
    assert all(r.y + r.height <= charts.TOP + plot + 1e-9 for r in chart.rects)
    assert chart.legend == [("#000", "a"), ("#111", "b")]


def test_lines_and_empty_charts() -> None:
    chart = charts.lines("t", ["1", "2"], [charts.Series("q", "#000", [0, 5])], str)
    (line,) = chart.lines
    first, second = (tuple(map(float, p.split(","))) for p in line.points.split())
    assert first[1] == charts.TOP + (chart.height - charts.TOP - charts.BOTTOM)  # zero
    assert second[1] == charts.TOP  # the peak, at the axis's top (5 is round)
    assert line.title == "q: peak 5"
    empty = charts.stacked_bars("t", [], [], str)
    assert empty.rects == [] and empty.labels == []
