"""The dashboard's runs list, read by keyset pages: of one status by that status's index
(every tenant's: each tenant's part of it, merged), of all by the creation index, of an
id prefix by the primary key's range; filters no index holds (provider, agent, metadata)
checked run by run along one bounded walk; and each listed run's prompt, by its log's
key. So a page's cost does not grow with the finished runs kept
(tests/store/test_report_plans.py EXPLAINs them on a seeded database)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.store.backend.base import Forms
from app.store.backend.dialect_forms import forms_for
from app.store.reports import reading
from app.store.run_records import RunRecord, utc
from app.store.schema import (
    CREATED,
    RUN_CREATED,
    created_beyond,
    newest_first,
    oldest_first,
    run_configs,
    run_messages,
    runs,
    select_runs,
)
from app.store.scoping import within

#: Statuses listed oldest first (they are waiting for something); the rest newest first.
WAITING = frozenset({RunStatus.REQUIRES_ACTION, RunStatus.QUEUED, RunStatus.RUNNING})


class BadCursor(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class RunFilter:
    status: RunStatus | None = RunStatus.REQUIRES_ACTION
    provider: str | None = None
    meta_key: str | None = None
    meta_value: str | None = None
    scope: Scope = field(kw_only=True)  # whose runs
    #: The named agent the runs started from (`name`, and its `version` if given).
    agent: str | None = field(default=None, kw_only=True)
    agent_version: int | None = field(default=None, kw_only=True)
    #: The first characters of the runs' ids: the page is then in id order, a walk of the
    #: primary key's range (the status and other filters checked along it), where ids
    #: compare byte by byte (`by_range`, which `page_of_runs` sets from
    #: `Forms.bytewise_ids`); elsewhere a check along the status's walk, as metadata's.
    id_prefix: str | None = field(default=None, kw_only=True)
    by_range: bool = field(default=True, kw_only=True)

    @property
    def id_range(self) -> bool:
        """Whether the walk is the primary key's range of `id_prefix`."""
        return self.id_prefix is not None and self.by_range

    @property
    def ascending(self) -> bool:
        return self.id_range or self.status in WAITING


def encode_cursor(created_at: datetime, run_id: str) -> str:
    raw = f"{created_at.isoformat()}|{run_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created, run_id = raw.split("|", 1)
        # (In UTC, so within what PostgreSQL's timestamps hold: year 1 to 9999 there.)
        value = utc(datetime.fromisoformat(created))
        assert value is not None
        value = value.astimezone(UTC)
        if "\x00" in run_id or len(run_id) > 40:  # (no run's id; PostgreSQL's text holds no NUL)
            raise ValueError(run_id)
    except (ValueError, UnicodeDecodeError, OverflowError):
        raise BadCursor("the cursor is malformed") from None
    assert value is not None
    return value, run_id


def _status(f: RunFilter) -> list[Any]:
    """The tenant and the status (the leading columns of the index walked)."""
    held = run_configs.c.tenant_id if f.status is None else runs.c.tenant_id
    where: list[Any] = within(held, f.scope)
    if f.status is None:
        return where
    # (A literal: the planner sees which partial index holds the status.)
    return [*where, runs.c.status == sa.literal_column(f"'{f.status.value}'")]


def _filters(f: RunFilter) -> list[Any]:
    """The provider, agent and metadata filters (on `run_configs`): no index holds them."""
    where: list[Any] = []
    if f.provider:
        where.append(run_configs.c.config[("model", "provider")].as_string() == f.provider)
    if f.agent:  # (the mark a create from a named agent writes: `{"name", "version"}`)
        where.append(run_configs.c.config[("agent", "name")].as_string() == f.agent)
        if f.agent_version is not None:
            version = run_configs.c.config[("agent", "version")].as_string()
            where.append(sa.cast(version, sa.String) == str(f.agent_version))
    if f.meta_key:
        value = run_configs.c.metadata[f.meta_key]
        if f.meta_value is None:
            where.append(value.as_string().is_not(None))
        else:
            # JSON strings and scalars alike: compare the text of the value.
            where.append(sa.cast(value.as_string(), sa.String) == f.meta_value)
    return where


def _checks(f: RunFilter) -> list[Any]:
    """What a walk checks of each run it reads (`hits_query`, `_passes`): the filters no
    index holds; along an id range, its status too and that its id starts with the prefix
    (the range's bounds are right under a bytewise collation, C's; this check under any)."""
    where = _filters(f)
    if f.id_prefix is not None:
        prefix = f.id_prefix
        where.append(sa.func.substr(runs.c.id, 1, len(prefix)) == prefix)
        if f.status is not None and f.id_range:
            where.append(runs.c.status == sa.literal_column(f"'{f.status.value}'"))
    return where


def chunked(f: RunFilter) -> bool:
    """Whether a page is found by a bounded walk that checks each run (`hits_query`)."""
    return bool(_checks(f))


def per_tenant(f: RunFilter) -> bool:
    """Whether the walk reads each tenant's part of its index (`tenants_query`) and merges
    them: every tenant's runs in creation order, which no index holds in that order."""
    return f.scope.is_all and not f.id_range and f.status != RunStatus.RUNNING


#: The most tenants whose walks a page of every tenant's runs merges (one branch of a
#: UNION ALL each; SQLite takes at most 500); past it, one walk across tenants, sorted.
MERGED_TENANTS = 200


def tenants_query() -> sa.Select[Any]:
    """The tenants that have runs, by a loose walk of ix_run_configs_created: one probe of
    the index per tenant (however many runs each has)."""
    held = run_configs.c.tenant_id
    first = sa.select(sa.func.min(held).label("id")).cte("tenant_ids", recursive=True)
    following = sa.select(sa.func.min(held)).where(held > first.c.id).scalar_subquery()
    walked = first.union_all(sa.select(following).where(first.c.id.is_not(None)))
    return sa.select(walked.c.id).where(walked.c.id.is_not(None))


def _id_range(prefix: str) -> list[Any]:
    """The primary key's range of the ids that start with `prefix`."""
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return [runs.c.id >= prefix, runs.c.id < upper]


def _walk(f: RunFilter, after: tuple[datetime, str] | None) -> tuple[Any, list[Any]]:
    """The keyset columns and the conditions of a walk in page order: of one status by
    that status's index on `runs` (ix_runs_waiting, ix_runs_ended; running runs by
    ix_runs_lease and a sort of the leased runs), of all by ix_run_configs_created."""
    on = RUN_CREATED if f.status is not None else CREATED
    where = _status(f)
    if after is not None:
        where.append(created_beyond(*after, ascending=f.ascending, on=on))
    return on, where


def _order(f: RunFilter, on: Any) -> tuple[Any, ...]:
    """The page order on the keys `on` (created_at, id): by id alone along an id range."""
    if f.id_range:
        return (on[1].asc(),)
    return (oldest_first if f.ascending else newest_first)(on)


def page_query(
    f: RunFilter,
    *,
    limit: int,
    after: tuple[datetime, str] | None,
    merging: Sequence[str] = (),
) -> sa.Select[Any]:
    """A keyset page on (created_at, id), without checks; every tenant's (`merging` the
    tenants of `tenants_query`, when `per_tenant`): each tenant's page, merged."""
    if merging:
        return _keyed(f, _keys(f, limit + 1, after, merging))
    on, where = _walk(f, after)
    return select_runs().where(*where).order_by(*_order(f, on)).limit(limit + 1)


def hits_query(
    f: RunFilter,
    *,
    window: int,
    limit: int,
    after: tuple[datetime, str] | None,
    merging: Sequence[str] = (),
) -> sa.Select[Any]:
    """The first `limit + 1` runs that pass the checks no index holds (`_checks`) among
    the next `window` runs of the walk (by index, in page order), each with `passes`; and
    when fewer pass, the walk's `window`-th run (where the next page goes on), `passes`
    or not. Each run is checked as the walk reaches it (`_passes`), and the walk stops
    once the page is found: at most `window` runs on."""
    chunk = _keys(f, window, after, merging)
    at, key = chunk.c
    order = _order(f, (at, key))
    n = sa.func.row_number().over(order_by=order).label("n")
    walked = sa.select(at, key, _passes(f, key).label("passes"), n).subquery("walked")
    w_at, w_key, w_passes, w_n = walked.c
    kept = sa.select(w_key, w_passes, w_n).where(sa.or_(w_passes, w_n == window))
    # (In the walk's order, not by `n`: the index's, so the walk stops at a page's runs.)
    hits = kept.order_by(*_order(f, (w_at, w_key))).limit(limit + 1).subquery("hits")
    h_key, h_passes, h_n = hits.c
    return (
        select_runs()
        .add_columns(h_passes.label("passes"), h_n.label("n"))
        .join(hits, h_key == runs.c.id)
        .order_by(h_n)
    )


def _passes(f: RunFilter, key: Any) -> Any:
    """Whether the run `key` passes `_checks(f)`: a lookup by its key (a correlated
    subquery, so a check is never turned into a scan of `run_configs` for its values)."""
    table: Any = run_configs
    if f.id_prefix is not None:  # (its status is on the run's row)
        table = run_configs.join(runs, runs.c.id == run_configs.c.run_id)
    checked = sa.select(sa.and_(sa.true(), *_checks(f))).select_from(table)
    return sa.func.coalesce(checked.where(run_configs.c.run_id == key).scalar_subquery(), False)


def _keys(
    f: RunFilter,
    size: int,
    after: tuple[datetime, str] | None,
    merging: Sequence[str],
) -> Any:
    """The next `size` keys (created_at, id) of the walk, as a subquery `chunk`: of an id
    range by the primary key; of every tenant (`merging` theirs), each tenant's next
    `size` merged."""

    def taken(keys: Any, on: Any) -> Any:
        return keys.order_by(*_order(f, on)).limit(size).subquery("chunk")

    if f.id_range:
        assert f.id_prefix is not None
        where = [*_id_range(f.id_prefix), *within(runs.c.tenant_id, f.scope)]
        if after is not None:
            where.append(runs.c.id > after[1])
        return taken(sa.select(*RUN_CREATED).where(*where), RUN_CREATED)
    on, where = _walk(f, after)
    table = runs if f.status is not None else run_configs
    keys = sa.select(*on).select_from(table).where(*where)
    if not merging:
        return taken(keys, on)
    held = table.c.tenant_id
    parts = [keys.where(held == t).order_by(*_order(f, on)).limit(size).subquery() for t in merging]
    merged = sa.union_all(*[sa.select(*part.c) for part in parts]).subquery("merged")
    return taken(sa.select(*merged.c), tuple(merged.c))


def _keyed(f: RunFilter, chunk: Any) -> sa.Select[Any]:
    """The runs of the keys `chunk`, in the walk's order."""
    at, key = chunk.c
    return select_runs().join(chunk, key == runs.c.id).order_by(*_order(f, (at, key)))


#: A page with checks no index holds walks at most this many pages' worth of runs.
WALK_PAGES = 40


async def page_of_runs(
    engine: AsyncEngine, f: RunFilter, *, limit: int, cursor: str | None
) -> tuple[list[RunRecord], str | None]:
    """One keyset page on (created_at, id): oldest first for waiting statuses, newest
    first otherwise, by id with an id prefix; the cursor of the next page, or None on the
    last one. With checks no index holds (provider, agent, metadata; an id range's
    status), a page holds what a bounded walk found (`hits_query`: possibly fewer runs
    than `limit`, with a cursor where the walk stopped)."""
    after = decode_cursor(cursor) if cursor else None
    async with reading(engine) as conn:
        if f.id_prefix is not None and not await forms_for(conn).bytewise_ids(conn):
            f = replace(f, by_range=False)
        merging: list[str] = []
        if per_tenant(f):
            merging = list((await conn.execute(tenants_query())).scalars())
            if not merging:
                return [], None
            if len(merging) > MERGED_TENANTS:  # (then one walk of every tenant's, sorted)
                merging = []
        if not chunked(f):
            stmt = page_query(f, limit=limit, after=after, merging=merging)
            rows = (await conn.execute(stmt)).all()
            return _page([RunRecord.from_row(r) for r in rows], limit)
        window = WALK_PAGES * (limit + 1)
        await forms_for(conn).in_order(conn)
        stmt = hits_query(f, window=window, limit=limit, after=after, merging=merging)
        rows = (await conn.execute(stmt)).all()
    found = [RunRecord.from_row(r) for r in rows if r._mapping["passes"]]
    if len(found) > limit or not rows or rows[-1]._mapping["n"] < window:
        return _page(found, limit)  # (a page found, or the walk's end)
    end = RunRecord.from_row(rows[-1])  # the window's last run: the walk goes on after it
    return found, encode_cursor(end.created_at, end.id)


def _page(records: list[RunRecord], limit: int) -> tuple[list[RunRecord], str | None]:
    more = len(records) > limit
    records = records[:limit]
    next_cursor = (
        encode_cursor(records[-1].created_at, records[-1].id) if more and records else None
    )
    return records, next_cursor


def prompts_query(run_ids: Sequence[str], forms: Forms) -> sa.Select[Any]:
    """Each run's prompt, the first message of its log's first batch (app.core.stored),
    as JSON text: by the log's primary key, the message taken out on the server (the
    batch also holds the history given, however long)."""
    first = forms.json_text(run_messages.c.body, "m", 0)
    return sa.select(run_messages.c.run_id, first).where(
        run_messages.c.run_id.in_(list(run_ids)), run_messages.c.seq == 1
    )


async def prompts(engine: AsyncEngine, run_ids: Sequence[str]) -> dict[str, str]:
    """The JSON text of each run's prompt message (`prompts_query`), of those that have one."""
    if not run_ids:
        return {}
    async with reading(engine) as conn:
        rows = (await conn.execute(prompts_query(run_ids, forms_for(conn)))).all()
    return {run_id: text for run_id, text in rows if isinstance(text, str)}
