"""Tenancy and access: tenants, API keys, roles and their permissions, browser tokens and
the dashboard's accounts, with their rows and routes. The kernel knows only what a caller
is (`app.service.principals`); the composition root (app.main) hands it this package's
authenticators, grants, browser tokens and `routers()`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter

    from app.clock import Clock
    from app.service.tenant_limits import TenantLimitsSource
    from app.store.runs import RunStore


def limits_source(store: RunStore, clock: Clock) -> TenantLimitsSource:
    """Where the limits read a tenant's limits (`Tenants.limits_of`), for `app.features`."""
    from app.tenancy.identities import Identities
    from app.tenancy.tenants import Tenants

    return Tenants(Identities(store.backend), clock)


def routers() -> list[APIRouter]:
    """The tenancy routes the API mounts (imported here, on demand: the command line and
    the worker never load the web stack)."""
    from app.tenancy import browser_routes, routes

    return [browser_routes.router, routes.keys_router, routes.tenants_router]
