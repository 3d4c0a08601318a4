"""Who may do what: tenants, roles and the permissions each role grants.

Every operation of the API names one permission (`app.api.security.authorize`), and the
OpenAPI document lists, per operation, the permission and the roles that hold it. A
caller is a `Principal`: a tenant, a role, and the actor the event log records. Keys,
dashboard accounts and browser tokens all resolve to one; nothing else decides access.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.core.scope import Scope

#: The tenant of the keys in AGENTRUN_API_KEYS, of open mode, and of every run stored
#: before tenants existed. Its admins administer the deployment (tenants, metrics).
DEFAULT_TENANT = "default"
#: A tenant id: lower-case letters, digits and `-`, starting with a letter or digit.
TENANT_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"


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
    # Deployment-wide: only principals of DEFAULT_TENANT may hold these.
    TENANTS_MANAGE = "tenants:manage"
    METRICS_READ = "metrics:read"


#: Permissions that look across tenants: a key of another tenant never holds them,
#: whatever its role.
DEPLOYMENT = frozenset({Permission.TENANTS_MANAGE, Permission.METRICS_READ})


class Role(StrEnum):
    ADMIN = "admin"
    OPERATOR = "operator"
    CREATOR = "creator"
    EXECUTOR = "executor"
    VIEWER = "viewer"


P = Permission
_READ = frozenset({P.RUNS_READ, P.USAGE_READ})
GRANTS: dict[Role, frozenset[Permission]] = {
    Role.ADMIN: frozenset(Permission),
    # The dashboard's people: see everything of their tenant and act on stuck runs.
    Role.OPERATOR: _READ
    | {
        P.RUNS_CANCEL,
        P.RUNS_RESOLVE,
        P.RUNS_OPERATE,
        P.RUNS_APPROVE,
        P.TOOL_RESULTS_SUBMIT,
        P.BROWSER_TOKENS_CREATE,
        P.METRICS_READ,
    },
    # A backend that starts runs: it may follow, cancel and answer its runs inline (the
    # client's `run()` executes tools in-process) and mint browser tokens for its users.
    Role.CREATOR: _READ
    | {
        P.RUNS_CREATE,
        P.RUNS_CANCEL,
        P.RUNS_APPROVE,
        P.TOOL_RESULTS_SUBMIT,
        P.BROWSER_TOKENS_CREATE,
    },
    # A tool executor: serves calls (queues, tool results) and reads nothing else.
    Role.EXECUTOR: frozenset({P.QUEUES_WORK, P.TOOL_RESULTS_SUBMIT}),
    Role.VIEWER: _READ,
}


def roles_with(permission: Permission) -> list[Role]:
    """The roles that hold `permission`, in the order of `Role`."""
    return [role for role in Role if permission in GRANTS[role]]


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller. `actor` is what the event log records of it (never a
    secret); `run_id` confines a browser token to one run."""

    tenant: str
    role: Role
    actor: str
    key_id: str | None = None
    run_id: str | None = None

    @property
    def scope(self) -> Scope:
        """What this caller reads and writes: its own tenant's data, never `Scope.ALL`
        (a deployment-wide operation names ALL itself, after checking a permission)."""
        return Scope.of(self.tenant)

    def can(self, permission: Permission) -> bool:
        if permission in DEPLOYMENT and self.tenant != DEFAULT_TENANT:
            return False
        return permission in GRANTS[self.role]


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


#: Open mode (no key configured, loopback only): one caller that may do everything.
OPEN_MODE = Principal(DEFAULT_TENANT, Role.ADMIN, "open-mode")
