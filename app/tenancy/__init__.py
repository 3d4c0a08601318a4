"""Tenancy and access: tenants, API keys, roles and their permissions, browser tokens and
the dashboard's accounts, with their rows and routes. The kernel knows only what a caller
is (`app.service.principals`); the composition root (app.main) hands it this package's
authenticators, grants, browser tokens and `routers()`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter


def routers() -> list[APIRouter]:
    """The tenancy routes the API mounts (imported here, on demand: the command line and
    the worker never load the web stack)."""
    from app.tenancy import browser_routes, routes

    return [browser_routes.router, routes.keys_router, routes.tenants_router]
