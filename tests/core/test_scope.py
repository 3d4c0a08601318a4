"""`Scope`: one tenant's or every tenant's, never an absent value that means "all"."""

from __future__ import annotations

import pytest

from app.core.scope import Scope


def test_a_tenants_scope_admits_its_tenant_only() -> None:
    acme = Scope.of("acme")
    assert acme.admits("acme") and not acme.admits("default") and not acme.is_all
    assert acme == Scope.of("acme") and acme != Scope.of("default")
    assert repr(acme) == "Scope.of('acme')"


def test_all_admits_every_tenant_and_is_one_value() -> None:
    assert Scope.ALL.is_all and Scope.ALL.admits("acme") and Scope.ALL.admits("default")
    assert repr(Scope.ALL) == "Scope.ALL"
    assert Scope.of("default") != Scope.ALL  # (the default tenant is one tenant)


@pytest.mark.parametrize("tenant", ["", None])
def test_an_empty_tenant_is_refused_rather_than_widened(tenant: object) -> None:
    with pytest.raises(ValueError):
        Scope.of(tenant)  # type: ignore[arg-type]


def test_a_scope_is_frozen() -> None:
    with pytest.raises(AttributeError):
        Scope.of("acme").only = None  # type: ignore[misc]
