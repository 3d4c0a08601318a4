"""`agentrun purge`: delete finished runs older than an age (their usage is kept per day)."""

from __future__ import annotations

import argparse
import asyncio
from datetime import timedelta

from app.settings import Settings


def parse_age(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `3600s`, or a bare number of days."""
    units = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
    value, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "d")
    try:
        amount = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an age: {text!r} (e.g. 30d, 12h)") from None
    if not amount > 0 or amount == float("inf"):
        raise argparse.ArgumentTypeError(f"the age must be positive: {text!r}")
    return timedelta(**{units[unit]: amount})


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    purge = sub.add_parser(
        "purge", help="delete finished runs older than an age (their usage is kept per day)"
    )
    purge.add_argument(
        "--older-than",
        required=True,
        type=parse_age,
        help="age of the runs to delete: 30d, 12h, 90m, 3600s (a bare number is days)",
    )
    purge.add_argument("--batch", type=int, default=500, help="runs per transaction")
    purge.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.main import purge

    deleted = asyncio.run(
        purge(
            settings.database_url,
            args.older_than,
            args.batch,
            pgbouncer=settings.database_pgbouncer,
        )
    )
    print(f"deleted {deleted} finished runs")
    return 0
