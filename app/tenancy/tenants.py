"""Tenants: the unit of isolation and of quota. A tenant has an id (a slug), a name and
its limits (`TenantLimits`), which the flow-control and budget work will enforce; this
module only keeps them valid and answers `limits_of(tenant)`.

A disabled tenant's keys are refused (`app.tenancy.keys.DbKeys`); its runs stay stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, ValidationError

from app.clock import Clock
from app.service.errors import InvalidRequest, ServiceError
from app.service.principals import DEFAULT_TENANT
from app.service.schemas import _AS_INT as AS_INT
from app.service.schemas import Strict
from app.tenancy.access import TENANT_PATTERN
from app.tenancy.identities import Identities, TenantRecord


class TenantNotFound(ServiceError):
    code = "tenant-not-found"
    status = 404
    title = "Tenant not found"


class TenantExists(ServiceError):
    code = "tenant-exists"
    status = 409
    title = "A tenant with this id exists"


class TenantLimits(Strict):
    """What a tenant may use; each limit unset means unlimited. Stored in `tenants.limits`."""

    max_active_runs: Annotated[int | None, Field(ge=1, le=10_000_000, strict=True), AS_INT] = Field(
        default=None, description="runs queued, running or suspended"
    )
    daily_tokens: Annotated[int | None, Field(ge=1, le=10**15, strict=True), AS_INT] = Field(
        default=None, description="model tokens per UTC day"
    )
    daily_cost_usd: float | None = Field(
        default=None,
        gt=0,
        le=1e12,
        allow_inf_nan=False,
        strict=True,
        description="model cost per UTC day, in US dollars",
    )

    requests_per_minute: Annotated[int | None, Field(ge=1, le=10**9, strict=True), AS_INT] = Field(
        default=None, description="model calls per minute, over every worker"
    )
    tokens_per_minute: Annotated[int | None, Field(ge=1, le=10**12, strict=True), AS_INT] = Field(
        default=None, description="model tokens per minute (reserved at most, corrected)"
    )
    max_concurrent: Annotated[int | None, Field(ge=1, le=10**6, strict=True), AS_INT] = Field(
        default=None, description="model calls in flight at once, over every worker"
    )

    def stored(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


@dataclass(frozen=True, slots=True)
class TenantView:
    id: str
    name: str
    limits: TenantLimits
    created_at: datetime
    disabled_at: datetime | None

    @classmethod
    def of(cls, record: TenantRecord) -> TenantView:
        return cls(
            id=record.id,
            name=record.name,
            limits=limits_from(record.limits),
            created_at=record.created_at,
            disabled_at=record.disabled_at,
        )


def limits_from(stored: dict[str, Any]) -> TenantLimits:
    """The stored limits; a document this version cannot read counts as no limits (it
    was validated when written, so only a newer version's field can be in it)."""
    try:
        return TenantLimits.model_validate(stored)
    except ValidationError:
        known = {k: v for k, v in stored.items() if k in TenantLimits.model_fields}
        try:
            return TenantLimits.model_validate(known)
        except ValidationError:
            return TenantLimits()


def parse_limits(document: dict[str, Any]) -> TenantLimits:
    """Limits as given (command line, API): refused with a 422 that names the field."""
    try:
        return TenantLimits.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidRequest(f"limits.{where}: {first['msg']}") from None


def check_tenant_id(tenant_id: str) -> str:
    if not re.fullmatch(TENANT_PATTERN, tenant_id):
        raise InvalidRequest(
            f"tenant id {tenant_id!r}: lower-case letters, digits and '-', "
            "starting with a letter or digit, at most 63 characters"
        )
    return tenant_id


#: A display name (of a tenant, a key): no control characters.
NAME = r"^[^\u0000-\u001f\u007f-\u009f]+$"


def check_name(name: str, what: str = "name", limit: int = 200) -> str:
    if not re.fullmatch(NAME, name) or len(name) > limit:
        raise InvalidRequest(f"{what}: 1 to {limit} characters, no control characters")
    return name


class Tenants:
    """Create, list, change and read tenants."""

    def __init__(self, identities: Identities, clock: Clock) -> None:
        self.identities = identities
        self.clock = clock

    async def create(
        self, tenant_id: str, name: str | None = None, limits: TenantLimits | None = None
    ) -> TenantView:
        record = TenantRecord(
            id=check_tenant_id(tenant_id),
            name=check_name(name if name is not None else tenant_id),
            limits=(limits or TenantLimits()).stored(),
            created_at=self.clock.now(),
            disabled_at=None,
        )
        if not await self.identities.create_tenant(record):
            raise TenantExists(f"tenant {tenant_id!r} exists")
        return TenantView.of(record)

    async def list(self) -> list[TenantView]:
        return [TenantView.of(r) for r in await self.identities.tenants()]

    async def get(self, tenant_id: str) -> TenantView:
        record = await self.identities.tenant(tenant_id)
        if record is None:
            raise TenantNotFound(f"no tenant {tenant_id!r}")
        return TenantView.of(record)

    async def update(
        self,
        tenant_id: str,
        *,
        name: str | None = None,
        limits: dict[str, Any] | None = None,
        disabled: bool | None = None,
    ) -> TenantView:
        """Change what is given. `limits` is merged into the stored limits (a field set to
        None clears that limit), then validated as a whole."""
        current = await self.get(tenant_id)
        values: dict[str, Any] = {}
        if name is not None:
            values["name"] = check_name(name)
        if limits is not None:
            merged = {**current.limits.stored(), **limits}
            values["limits"] = parse_limits(merged).stored()
        if disabled is not None:
            if disabled and tenant_id == DEFAULT_TENANT:
                raise InvalidRequest("the default tenant cannot be disabled")
            if disabled != (current.disabled_at is not None):
                values["disabled_at"] = self.clock.now() if disabled else None
        if not values:
            return current
        record = await self.identities.update_tenant(tenant_id, values)
        if record is None:
            raise TenantNotFound(f"no tenant {tenant_id!r}")
        return TenantView.of(record)

    async def limits_of(self, tenant_id: str) -> TenantLimits:
        """The limits the flow-control and budget work key on (none for a missing tenant:
        the keys of AGENTRUN_API_KEYS and open mode belong to `default`, which exists)."""
        record = await self.identities.tenant(tenant_id)
        return TenantLimits() if record is None else limits_from(record.limits)
