"""`/v1/keys` (admins: the keys of their own tenant) and `/v1/tenants` (deployment admins:
tenants:manage). A thin layer over `app.tenancy.keys.KeyAdmin` and
`app.tenancy.tenants.Tenants`; a new key's secret is in the answer that made it, once.

`?tenant=` on a /v1/keys route names another tenant's keys: only a caller that holds
tenants:manage may (a 403 naming it otherwise), so a deployment admin can give a new
tenant its first admin key, and revoke any tenant's key.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, Field

from app.api.problems import responses
from app.api.routes import AUTH, json_body
from app.api.security import Forbidden, authorize
from app.core.scope import Scope
from app.service.principals import Permission, Principal
from app.service.schemas import _AS_INT as AS_INT
from app.service.schemas import Body
from app.tenancy.access import GRANTS, TENANT_PATTERN, Role
from app.tenancy.keys import MAX_GRACE, MAX_LIFETIME, IssuedKey, KeyAdmin, KeyView
from app.tenancy.tenants import NAME, TenantLimits, Tenants, TenantView
from app.timestamps import Timestamp

keys_router = APIRouter(prefix="/v1/keys", tags=["keys"])
tenants_router = APIRouter(prefix="/v1/tenants", tags=["tenants"])

KeyManager = Annotated[Principal, Depends(authorize(Permission.KEYS_MANAGE))]
TenantManager = Annotated[Principal, Depends(authorize(Permission.TENANTS_MANAGE))]
KeyId = Annotated[str, Path(pattern=r"^[0-9a-f]{16}$", description="a key's lookup id")]
TenantId = Annotated[str, Path(pattern=TENANT_PATTERN, description="a tenant's id")]
OtherTenant = Annotated[
    str | None,
    Query(
        pattern=TENANT_PATTERN,
        description="another tenant's keys (needs tenants:manage); default: the caller's",
    ),
]


async def key_admin(request: Request) -> KeyAdmin:
    admin: KeyAdmin = request.app.state.keys
    return admin


async def tenant_admin(request: Request) -> Tenants:
    tenants: Tenants = request.app.state.tenants
    return tenants


Keys = Annotated[KeyAdmin, Depends(key_admin)]
TenantsOf = Annotated[Tenants, Depends(tenant_admin)]


def scope(principal: Principal, asked: str | None) -> str:
    """The tenant whose keys a request acts on: the caller's, or (tenants:manage only)
    the one its `?tenant=` names."""
    if asked is None or asked == principal.tenant:
        return principal.tenant
    if not principal.can(Permission.TENANTS_MANAGE):
        raise Forbidden(Permission.TENANTS_MANAGE, principal, GRANTS)
    return asked


# --- models ---------------------------------------------------------------------------------


class KeyCreate(Body):
    name: str = Field(min_length=1, max_length=80, pattern=NAME, description="what holds it")
    role: Role
    expires_in_seconds: Annotated[
        int | None, Field(ge=1, le=int(MAX_LIFETIME.total_seconds()), strict=True), AS_INT
    ] = Field(
        default=None,
        description="the key stops working this long after it is made (default: never)",
    )


class KeyRotate(Body):
    grace_seconds: Annotated[
        int, Field(ge=0, le=int(MAX_GRACE.total_seconds()), strict=True), AS_INT
    ] = Field(default=3600, description="how long the old secret keeps working (0: not at all)")


class KeyOut(BaseModel):
    id: str = Field(description="the public lookup id (the secret's second part)")
    tenant: str
    role: Role
    name: str
    state: str = Field(description="active, expiring (rotated, in its grace), expired, revoked")
    created_at: Timestamp
    created_by: str | None
    expires_at: Timestamp | None
    revoked_at: Timestamp | None
    rotated_from: str | None

    @classmethod
    def of(cls, view: KeyView) -> KeyOut:
        return cls(
            id=view.id,
            tenant=view.tenant,
            role=view.role,
            name=view.name,
            state=view.state(),
            created_at=view.created_at,
            created_by=view.created_by,
            expires_at=view.expires_at,
            revoked_at=view.revoked_at,
            rotated_from=view.rotated_from,
        )


class IssuedKeyOut(KeyOut):
    secret: str = Field(description="the bearer key: shown in this answer only, stored hashed")

    @classmethod
    def issued(cls, issued: IssuedKey) -> IssuedKeyOut:
        return cls(**KeyOut.of(issued.key).model_dump(), secret=issued.secret)


class KeyList(BaseModel):
    data: list[KeyOut]


class RotatedOut(BaseModel):
    old: KeyOut = Field(description="the key rotated: it works until its `expires_at`")
    new: IssuedKeyOut


class TenantCreate(Body):
    id: str = Field(pattern=TENANT_PATTERN)
    name: str | None = Field(default=None, min_length=1, max_length=200, pattern=NAME)
    limits: TenantLimits = Field(default_factory=TenantLimits)


class TenantPatch(Body):
    name: str | None = Field(default=None, min_length=1, max_length=200, pattern=NAME)
    limits: TenantLimits | None = Field(
        default=None, description="the limits named are set (null: unlimited), others kept"
    )
    disabled: bool | None = Field(
        default=None, strict=True, description="true: its keys are refused"
    )


class TenantOut(BaseModel):
    id: str
    name: str
    limits: TenantLimits
    created_at: Timestamp
    disabled_at: Timestamp | None

    @classmethod
    def of(cls, view: TenantView) -> TenantOut:
        return cls(
            id=view.id,
            name=view.name,
            limits=view.limits,
            created_at=view.created_at,
            disabled_at=view.disabled_at,
        )


class TenantList(BaseModel):
    data: list[TenantOut]


# --- /v1/keys -------------------------------------------------------------------------------


@keys_router.post(
    "",
    status_code=201,
    response_model=IssuedKeyOut,
    responses={**AUTH, **responses(400, 404, 413, 422)},
    summary="Create an API key (its secret is in this answer only)",
)
async def create_key(
    body: KeyCreate, keys: Keys, principal: KeyManager, tenant: OtherTenant = None
) -> Response:
    lifetime = (
        None if body.expires_in_seconds is None else timedelta(seconds=body.expires_in_seconds)
    )
    issued = await keys.create(
        scope(principal, tenant),
        body.role,
        body.name,
        expires_in=lifetime,
        created_by=principal.actor,
    )
    return json_body(IssuedKeyOut.issued(issued), status_code=201)


@keys_router.get(
    "",
    response_model=KeyList,
    responses={**AUTH, **responses(422)},
    summary="The tenant's API keys (never their secrets)",
)
async def list_keys(keys: Keys, principal: KeyManager, tenant: OtherTenant = None) -> Response:
    views = await keys.list(Scope.of(scope(principal, tenant)))
    return json_body(KeyList(data=[KeyOut.of(v) for v in views]))


@keys_router.get(
    "/{key_id}",
    response_model=KeyOut,
    responses={**AUTH, **responses(404, 422)},
    summary="One API key",
)
async def get_key(
    key_id: KeyId, keys: Keys, principal: KeyManager, tenant: OtherTenant = None
) -> Response:
    return json_body(KeyOut.of(await keys.get(key_id, Scope.of(scope(principal, tenant)))))


@keys_router.post(
    "/{key_id}/revoke",
    response_model=KeyOut,
    responses={**AUTH, **responses(404, 422)},
    summary="Revoke an API key: refused by every API process within a second",
)
async def revoke_key(
    key_id: KeyId, keys: Keys, principal: KeyManager, tenant: OtherTenant = None
) -> Response:
    return json_body(KeyOut.of(await keys.revoke(key_id, Scope.of(scope(principal, tenant)))))


@keys_router.post(
    "/{key_id}/rotate",
    status_code=201,
    response_model=RotatedOut,
    responses={**AUTH, **responses(400, 404, 413, 422)},
    summary="A new secret for a key; the old one works for the grace period",
)
async def rotate_key(
    key_id: KeyId,
    keys: Keys,
    principal: KeyManager,
    body: KeyRotate | None = None,
    tenant: OtherTenant = None,
) -> Response:
    grace = timedelta(seconds=(body or KeyRotate()).grace_seconds)
    old, issued = await keys.rotate(
        key_id, grace, Scope.of(scope(principal, tenant)), created_by=principal.actor
    )
    return json_body(
        RotatedOut(old=KeyOut.of(old), new=IssuedKeyOut.issued(issued)), status_code=201
    )


# --- /v1/tenants ----------------------------------------------------------------------------


@tenants_router.post(
    "",
    status_code=201,
    response_model=TenantOut,
    responses={**AUTH, **responses(400, 409, 413, 422)},
    summary="Create a tenant",
)
async def create_tenant(body: TenantCreate, tenants: TenantsOf, _: TenantManager) -> Response:
    view = await tenants.create(body.id, body.name, body.limits)
    return json_body(TenantOut.of(view), status_code=201)


@tenants_router.get(
    "", response_model=TenantList, responses=AUTH, summary="Every tenant with its limits"
)
async def list_tenants(tenants: TenantsOf, _: TenantManager) -> Response:
    return json_body(TenantList(data=[TenantOut.of(v) for v in await tenants.list()]))


@tenants_router.get(
    "/{tenant_id}",
    response_model=TenantOut,
    responses={**AUTH, **responses(404, 422)},
    summary="One tenant",
)
async def get_tenant(tenant_id: TenantId, tenants: TenantsOf, _: TenantManager) -> Response:
    return json_body(TenantOut.of(await tenants.get(tenant_id)))


@tenants_router.patch(
    "/{tenant_id}",
    response_model=TenantOut,
    responses={**AUTH, **responses(400, 404, 413, 422)},
    summary="Change a tenant's name, limits or state",
)
async def update_tenant(
    tenant_id: TenantId, body: TenantPatch, tenants: TenantsOf, _: TenantManager
) -> Response:
    limits = None if body.limits is None else body.limits.model_dump(exclude_unset=True)
    view = await tenants.update(tenant_id, name=body.name, limits=limits, disabled=body.disabled)
    return json_body(TenantOut.of(view))
