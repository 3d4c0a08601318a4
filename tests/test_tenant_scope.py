"""Tenant filters are required `Scope` values (app/core/scope.py), so a forgotten argument
is a TypeError and never widens a read to every tenant; `Scope.ALL` is named only by
deployment-wide code, never produced for a tenant's caller.

The walk below fails on any function in app/ with a parameter named `tenant`,
`tenants` or `tenant_id` that may be None (its annotation mentions None, or its default
is None): the old form of "every tenant". A parameter that is the value of a record
(a new run's tenant, a key's) is a plain `str`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.core.scope import Scope
from app.service.principals import DEFAULT_TENANT, OPEN_MODE
from app.tenancy.access import Role, principal_of

APP = Path(__file__).resolve().parent.parent / "app"
NAMES = {"tenant", "tenants", "tenant_id"}
#: (file, function) whose `tenant` may be None: the `?tenant=` query of /v1/keys, which
#: `app.tenancy.routes.scope` turns into one tenant (the caller's by default), and of the
#: dashboard's lists, which `app.dashboard.web.viewing` turns into a scope (the caller's
#: tenant's by default; another's or every tenant's only for a deployment's admins).
ALLOWED = {
    ("tenancy/routes.py", name)
    for name in ("create_key", "list_keys", "get_key", "revoke_key", "rotate_key")
}
#: Where `Scope.ALL` may appear in the front ends: /metrics (deployment-wide gauges,
#: metrics:read, which only the default tenant's principals hold), and the dashboard's
#: reads for a deployment's admins (tenants:manage: `viewing`, `reading_scope`).
ALL_IN_FRONT_ENDS = {"api/metrics.py", "dashboard/web.py"}


def _optional_tenants(source: str, where: str) -> list[str]:
    found = []
    tree = ast.parse(source, where)
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        a = node.args
        positional = [*a.posonlyargs, *a.args]
        defaults = dict(
            zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True)
        )
        defaults.update(
            {k: d for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None}
        )
        for arg in [*positional, *a.kwonlyargs]:
            if arg.arg not in NAMES:
                continue
            annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
            default = defaults.get(arg)
            none_default = isinstance(default, ast.Constant) and default.value is None
            if "None" in annotation or "Optional" in annotation or none_default:
                name = getattr(node, "name", "<lambda>")
                found.append(f"{where}:{node.lineno} {name}({arg.arg})")
    return found


def test_no_function_takes_a_tenant_that_may_be_none() -> None:
    found = [
        f
        for path in sorted(APP.rglob("*.py"))
        for f in _optional_tenants(path.read_text(), str(path.relative_to(APP)))
        if (f.split(":")[0], f.split(" ")[1].split("(")[0]) not in ALLOWED
    ]
    assert not found, "take a `Scope` (app.core.scope), not an optional tenant:\n" + "\n".join(
        found
    )


def test_the_walk_finds_the_old_form() -> None:
    """(The check itself: the forms it must refuse.)"""
    sample = (
        "def a(tenant: str | None = None): ...\n"
        "async def b(*, tenant_id: 'Optional[str]'): ...\n"
        "def c(tenants=None): ...\n"
        "def d(tenant: str, scope: object = None): ...\n"
    )
    found = [f.split(" ")[1] for f in _optional_tenants(sample, "sample.py")]
    assert found == ["a(tenant)", "b(tenant_id)", "c(tenants)"]


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("tenant", [DEFAULT_TENANT, "acme"])
def test_a_principal_of_any_tenant_and_role_gets_its_tenants_scope(role: Role, tenant: str) -> None:
    """Keys, dashboard accounts and browser tokens all resolve to a `Principal`; the
    API and the dashboard scope every read and write by `principal.scope`."""
    scope = principal_of(tenant, role, "someone").scope
    assert scope == Scope.of(tenant) and scope is not Scope.ALL and not scope.is_all
    assert not scope.admits("other-tenant")
    assert OPEN_MODE.scope == Scope.of(DEFAULT_TENANT)


def test_a_principal_without_a_tenant_has_no_scope_at_all() -> None:
    with pytest.raises(ValueError):
        _ = principal_of("", Role.ADMIN, "someone").scope


def test_the_front_ends_name_all_only_for_deployment_wide_reads() -> None:
    """A request reaches the service through app/api or app/dashboard: apart from
    /metrics they pass `principal.scope`, never `Scope.ALL`."""
    named = sorted(
        str(path.relative_to(APP))
        for front in ("api", "dashboard")
        for path in (APP / front).rglob("*.py")
        if "Scope.ALL" in path.read_text() or "Scope(None)" in path.read_text()
    )
    assert set(named) <= ALL_IN_FRONT_ENDS, named
