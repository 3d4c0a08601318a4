"""Where the kernel's features read a tenant's stored limits, as a value the
composition root hands them (`app.features`: tenancy's `Tenants` answers it), so that
the limits read a tenant's daily budgets without importing tenancy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class StoredLimits(Protocol):
    def stored(self) -> Mapping[str, Any]:
        """The limits as stored (the keys set)."""
        ...


class TenantLimitsSource(Protocol):
    async def limits_of(self, tenant_id: str, /) -> StoredLimits:
        """A tenant's limits (none for a tenant that does not exist)."""
        ...
