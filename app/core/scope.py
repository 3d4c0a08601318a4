"""Whose data a read or a write may touch: one tenant's, or (`Scope.ALL`) every tenant's.

Every read and write of tenant-owned data takes a `Scope`, never an optional tenant: an
argument forgotten is a TypeError (and a mypy error), not a silent widening to every
tenant. `Scope.ALL` is an explicit value that only deployment-wide operations name (the
sweeps, retention, metrics gauges, deployment admins' tools); a caller authenticated as a
tenant gets `Scope.of(its tenant)` (`app.tenancy.access.Principal.scope`).

Runs stored before tenants existed belong to the `default` tenant (the column is never
null), so "the default tenant" is `Scope.of("default")`, one tenant like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class Scope:
    """One tenant (`Scope.of(t)`) or every tenant (`Scope.ALL`); build it with those two.
    `only` is the tenant, None for ALL: only the store's SQL helper reads it."""

    only: str | None
    ALL: ClassVar[Scope]

    @classmethod
    def of(cls, tenant: str) -> Scope:
        """The scope of one tenant (an empty id is refused: it must not mean "any")."""
        if not isinstance(tenant, str) or not tenant:
            raise ValueError(f"a scope's tenant is a non-empty string, not {tenant!r}")
        return cls(tenant)

    @property
    def is_all(self) -> bool:
        return self.only is None

    def admits(self, tenant: str) -> bool:
        """Whether a record of `tenant` is in this scope."""
        return self.only is None or self.only == tenant

    def __repr__(self) -> str:
        return "Scope.ALL" if self.only is None else f"Scope.of({self.only!r})"


Scope.ALL = Scope(None)
