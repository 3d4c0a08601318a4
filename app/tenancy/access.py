"""Who may do what: tenants, roles and the permissions each role grants.

Every operation of the API names one permission (`app.api.security.authorize`), and the
OpenAPI document lists, per operation, the permission and the roles that hold it (the
kernel reads `GRANTS`, handed to `create_api`). A caller is a `Principal`
(`app.service.principals`): a tenant, a role, the permissions it holds and the actor the
event log records. Keys, dashboard accounts and browser tokens all resolve to one through
`principal_of(...)` here; nothing else decides access.
"""

from __future__ import annotations

from enum import StrEnum

from app.service.principals import ADMIN, DEFAULT_TENANT, Permission, Principal

#: A tenant id: lower-case letters, digits and `-`, starting with a letter or digit.
TENANT_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"

#: Permissions that look across tenants: a key of another tenant never holds them,
#: whatever its role.
DEPLOYMENT = frozenset({Permission.TENANTS_MANAGE, Permission.METRICS_READ})


class Role(StrEnum):
    ADMIN = ADMIN
    OPERATOR = "operator"
    CREATOR = "creator"
    EXECUTOR = "executor"
    VIEWER = "viewer"


P = Permission
_READ = frozenset({P.RUNS_READ, P.USAGE_READ})
#: (Keyed by `Role`, a `str`: the kernel's `Grants` as it is.)
GRANTS: dict[str, frozenset[Permission]] = {
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


def permissions_of(tenant: str, role: Role) -> frozenset[Permission]:
    """What `role` grants in `tenant`: deployment-wide permissions in the default tenant only."""
    held = GRANTS[role]
    return held if tenant == DEFAULT_TENANT else held - DEPLOYMENT


def principal_of(
    tenant: str,
    role: Role,
    actor: str,
    *,
    key_id: str | None = None,
    run_id: str | None = None,
) -> Principal:
    """The caller of `role` in `tenant`, with the permissions the role grants there."""
    return Principal(
        tenant, role, actor, permissions_of(tenant, role), key_id=key_id, run_id=run_id
    )
