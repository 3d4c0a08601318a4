"""The one place a `Scope` becomes SQL: a tenant's scope adds `tenant_id = <tenant>`, the
scope of every tenant (`Scope.ALL`) adds nothing. The statements built here and there
never look at a tenant themselves; they ask these helpers.

Two forms: a statement cached once per shape takes the tenant as the bind parameter
`p_tenant` (`scoped(scope)` picks the shape, `scope_params(scope)` fills it); a statement
built per call compares with the value (`within`).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from app.core.scope import Scope


def p_tenant() -> sa.BindParameter[str]:
    """The bind parameter of a cached statement's tenant."""
    return sa.bindparam("p_tenant", type_=sa.String())


def scoped(scope: Scope) -> bool:
    """Whether a cached statement for `scope` carries the `p_tenant` predicate."""
    return not scope.is_all


def scope_params(scope: Scope) -> dict[str, Any]:
    """The parameters of a statement shaped by `scoped(scope)`: `p_tenant` or none."""
    return {} if scope.only is None else {"p_tenant": scope.only}


def within(column: Any, scope: Scope) -> list[sa.ColumnElement[bool]]:
    """The conditions that keep `column` (a `tenant_id`) in `scope`: none for ALL."""
    return [] if scope.only is None else [column == scope.only]
