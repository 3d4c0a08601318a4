"""The overview, /admin/overview: what it is costing and whether it is healthy.

Runs by status, suspended ages and the last hour as before; over a chosen window (24
hours by the hour, 7 or 30 days by the UTC day): tokens and cost split by model, agent or
tenant (`RunReads.spend_of`: the rollups, exact to the token as /v1/usage), model calls
per profile and model with their latency percentiles and error and 429 rates, and what
was waiting over time (`RunReads.waiting_over`: the workers' minute samples). Every chart
is SVG drawn on the server (`app.dashboard.charts`), with its figures in tables beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.core.lifecycle import RunStatus
from app.dashboard import charts, present
from app.dashboard.web import Session, Viewed, now, reads_of, render
from app.service.spend import KEPT, SPLITS, WINDOWS, Span, Spend, health, spend, waiting

router = APIRouter(prefix="/admin", include_in_schema=False)

#: Split keys drawn apart; the rest are summed as "other".
SHOWN = len(charts.PALETTE) - 1


def spend_series(s: Spend, n: int, value: str) -> list[charts.Series]:
    """Stacked series of `value` (a `Sums` field): the costliest keys, then "other"."""

    def of(key: str, i: int) -> float:
        cell = s.cells.get((key, i))
        return float(getattr(cell, value) or 0.0) if cell is not None else 0.0

    shown, rest = s.keys[:SHOWN], s.keys[SHOWN:]
    series = [
        charts.Series(k, charts.PALETTE[j], [of(k, i) for i in range(n)])
        for j, k in enumerate(shown)
    ]
    if rest:
        other = [sum(of(k, i) for k in rest) for i in range(n)]
        series.append(charts.Series(f"other ({len(rest)})", charts.OTHER, other))
    return series


def tokens(value: float) -> str:
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.0f}"


def dollars(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"


def count(value: float) -> str:
    return f"{value:g}"


def _choice(value: str | None, allowed: Sequence[str], default: str) -> tuple[str, str | None]:
    if value is None or value == "":
        return default, None
    if value in allowed:
        return value, None
    return default, f"unknown choice {value!r}: one of {', '.join(allowed)}"


@router.get("/overview", response_class=HTMLResponse)
async def overview(
    request: Request,
    session: Session,
    view: Viewed,
    window: str | None = None,
    split: str | None = None,
) -> HTMLResponse:
    t = now(request)
    errors = [e for e in (view.error,) if e]
    window, error = _choice(window, list(WINDOWS), "24h")
    errors += [error] if error else []
    split, error = _choice(split, SPLITS, "model")
    errors += [error] if error else []
    reads = reads_of(request)
    o = await reads.overview(t, view.scope)
    span = Span.of(window, t)
    ledger = await reads.spend_of(span.start, t, view.scope, agents=split == "agent")
    s = spend(ledger, span, split)
    n = len(span.starts)
    labels = [span.label(b) for b in span.starts]
    _, _, sample_step = WINDOWS[window]
    sample_start = max(span.start, t - KEPT)
    sample_start = sample_start - (sample_start - span.start) % sample_step
    sample_n = int(-(-(t - sample_start) // sample_step))
    w = waiting(
        await reads.waiting_over(sample_start, t, view.scope), sample_start, sample_step, sample_n
    )
    per_minute = [(str(i), n_) for i, n_ in enumerate(o.activity.completed_per_minute)]
    context: dict[str, Any] = {
        "view": view,
        "errors": errors,
        "window": window,
        "windows": list(WINDOWS),
        "split": split,
        "splits": SPLITS if view.wide else SPLITS[:2],
        "counts": [(st.value, o.counts.get(st.value, 0)) for st in RunStatus],
        "total": sum(o.counts.values()),
        "age_bars": present.bars(o.age_histogram),
        "oldest": max(o.suspended_ages) if o.suspended_ages else None,
        "activity": o.activity,
        "minute_bars": present.bars(per_minute, width=480, height=80),
        "span": span,
        "labels": labels,
        "spend": s,
        "tokens_chart": charts.stacked_bars(
            f"Tokens per {'hour' if n == 24 else 'day'} by {split}",
            labels,
            spend_series(s, n, "total_tokens"),
            tokens,
        ),
        "cost_chart": charts.stacked_bars(
            f"Cost per {'hour' if n == 24 else 'day'} by {split} (USD)",
            labels,
            spend_series(s, n, "cost_usd"),
            dollars,
        )
        if s.total.cost_usd
        else None,
        "health": health(ledger),
        "waiting": w,
        "waiting_chart": charts.lines(
            "Runs waiting (the largest count in each interval)",
            w.labels,
            [
                charts.Series(RunStatus.QUEUED.value, charts.PALETTE[0], w.queued),
                charts.Series(RunStatus.RUNNING.value, charts.PALETTE[2], w.running),
                charts.Series("suspended", charts.PALETTE[1], w.suspended),
            ],
            count,
        ),
        "oldest_chart": charts.lines(
            "Longest wait of a suspended run",
            w.labels,
            [charts.Series("oldest suspended", charts.PALETTE[5], w.oldest)],
            lambda v: present.duration(v),
        ),
        "sample_step": sample_step.total_seconds(),
        "kept_days": KEPT.days,
        "now": t,
        "tokens": tokens,
        "dollars": dollars,
    }
    return await render(request, "overview.html", context, session=session)
