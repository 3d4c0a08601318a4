"""Who a request's caller is, as the kernel sees it: a `Principal` (its tenant, its
`Scope`, the permissions it holds as values), the `Permission` every API operation names,
and the protocols the API authenticates through (`Authenticator`, `RunTokens`).

What makes a caller (API keys, roles and their permission sets, browser tokens, dashboard
accounts) is the tenancy feature's (`app.tenancy`): the composition root hands its
implementations to `app.api.app.create_api`, which only knows this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from app.core.scope import Scope
from app.service.errors import ServiceError

#: The tenant of the keys in AGENTRUN_API_KEYS, of open mode, and of every run stored
#: before tenants existed. Its admins administer the deployment (tenants, metrics).
DEFAULT_TENANT = "default"
#: The role that holds every permission of its tenant (open mode's, the env keys').
ADMIN = "admin"


class Permission(StrEnum):
    RUNS_CREATE = "runs:create"
    RUNS_READ = "runs:read"
    RUNS_CANCEL = "runs:cancel"
    RUNS_RESOLVE = "runs:resolve"  # answer a parked invalid call; the dashboard's actions
    RUNS_OPERATE = "runs:operate"  # the dashboard's retry and extend
    RUNS_APPROVE = "runs:approve"  # approve or reject gated tool calls
    TOOL_RESULTS_SUBMIT = "tool-results:submit"
    QUEUES_WORK = "queues:work"  # lease, heartbeat and answer a queue's calls
    USAGE_READ = "usage:read"
    BROWSER_TOKENS_CREATE = "browser-tokens:create"
    KEYS_MANAGE = "keys:manage"  # the keys of the caller's own tenant
    AGENTS_MANAGE = "agents:manage"  # create, version and delete the tenant's named agents
    SCHEDULES_MANAGE = "schedules:manage"  # create, change, pause, trigger the schedules
    # Deployment-wide: only principals of DEFAULT_TENANT may hold these.
    TENANTS_MANAGE = "tenants:manage"
    METRICS_READ = "metrics:read"


#: Each role's name and the permissions it grants (`app.tenancy.access.GRANTS`): what the
#: OpenAPI document and a 403 name as "held by".
Grants = Mapping[str, frozenset[Permission]]


def roles_with(permission: Permission, grants: Grants) -> list[str]:
    """The roles of `grants` that hold `permission`, in their order."""
    return [role for role, held in grants.items() if permission in held]


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller. `role` names it (for messages); `permissions` decide.
    `actor` is what the event log records of it (never a secret); `run_id` confines a
    browser token to one run."""

    tenant: str
    role: str
    actor: str
    permissions: frozenset[Permission]
    key_id: str | None = None
    run_id: str | None = None

    @property
    def scope(self) -> Scope:
        """What this caller reads and writes: its own tenant's data, never `Scope.ALL`
        (a deployment-wide operation names ALL itself, after checking a permission)."""
        return Scope.of(self.tenant)

    def can(self, permission: Permission) -> bool:
        return permission in self.permissions


#: Open mode (no key configured, loopback only): one caller that may do everything.
OPEN_MODE = Principal(DEFAULT_TENANT, ADMIN, "open-mode", frozenset(Permission))


class Authenticator(Protocol):
    """Resolves a presented bearer secret to a caller."""

    async def open_mode(self) -> bool:
        """True when no key exists at all: every caller is `OPEN_MODE` (loopback only)."""
        ...

    async def authenticate(self, presented: str) -> Principal | None:
        """The caller `presented` identifies, or None when it is no valid key."""
        ...


class BrowserTokenInvalid(ServiceError):
    code = "browser-token-invalid"
    status = 401
    title = "Browser token invalid or expired"


class RunTokens(Protocol):
    """Bearer secrets that stand for a reader of one run (browser tokens), told apart from
    API keys by their form and verified without a lookup."""

    def recognises(self, presented: str) -> bool:
        """Whether `presented` has a token's form (then it is never tried as a key)."""
        ...

    async def verify(self, presented: str) -> Principal:
        """The caller of a valid token; `BrowserTokenInvalid` (401) otherwise."""
        ...


def sees_callbacks(principal: Principal) -> bool:
    """Whether `principal` is shown callback URLs. A callback URL answers a run's tool
    calls without a key, so a caller that may not submit tool results (a viewer, a browser
    token) must not read one: not in the run object, not in `run.requires_action`."""
    return principal.can(Permission.TOOL_RESULTS_SUBMIT)


def without_callback(data: dict[str, Any]) -> dict[str, Any]:
    """An event's data without the callback URL it may carry (`run.requires_action`)."""
    if "callback_url" not in data:
        return data
    return {k: v for k, v in data.items() if k != "callback_url"}
