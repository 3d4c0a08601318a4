"""The reads of a run both dialects share and both the repositories and the backends
use: a run by a key (with its configuration and metadata), its log batches, the calls of
one round. Below the repositories and the backends."""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa

from app.core.scope import Scope
from app.store.schema import run_messages, runs, select_runs, tool_calls
from app.store.scoping import p_tenant, scope_params


def of_tenant() -> sa.ColumnElement[bool]:
    """`runs.tenant_id = :p_tenant`: a read on behalf of a tenant sees its runs only (a
    run of another tenant is exactly like a missing one)."""
    return runs.c.tenant_id == p_tenant()


@functools.cache
def run_by(column: str, scoped: bool = False) -> sa.Select[Any]:
    """`SELECT runs.*, config, metadata WHERE <column> = :p_key` (`scoped`: and the run
    is `p_tenant`'s)."""
    stmt = select_runs().where(runs.c[column] == sa.bindparam("p_key"))
    return stmt.where(of_tenant()) if scoped else stmt


def key_params(value: str, scope: Scope) -> dict[str, Any]:
    """The parameters of `run_by(column, scoped(scope))`."""
    return {"p_key": value, **scope_params(scope)}


@functools.cache
def log_batches() -> sa.Select[Any]:
    """A run's log batches (`p_key`) in order."""
    return (
        sa.select(run_messages.c.body)
        .where(run_messages.c.run_id == sa.bindparam("p_key"))
        .order_by(run_messages.c.seq)
    )


@functools.cache
def calls_of_round() -> sa.Select[Any]:
    """The calls of one round (`p_id`, `p_round`) of a run, in order."""
    return (
        tool_calls.select()
        .where(
            tool_calls.c.run_id == sa.bindparam("p_id", type_=sa.String()),
            tool_calls.c.round == sa.bindparam("p_round", type_=sa.Integer()),
        )
        .order_by(tool_calls.c.position)
    )
