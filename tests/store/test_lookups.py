"""A service secret: made by the first process to ask, the same for every other."""

from __future__ import annotations

import asyncio
import itertools

from app.store.runs import RunStore


async def test_the_first_writer_of_a_secret_wins_and_a_later_ask_reads_it(
    store: RunStore,
) -> None:
    made = itertools.count()
    values = await asyncio.gather(
        *[store.secret("shared", lambda: f"value-{next(made)}") for _ in range(5)]
    )
    assert len(set(values)) == 1 and values[0].startswith("value-")
    assert await store.secret("shared", lambda: "another") == values[0]
    assert await store.secret("other", lambda: "its own") == "its own"
