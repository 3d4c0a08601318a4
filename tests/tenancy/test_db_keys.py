"""Keys in the database (`DbKeys`, `KeyAdmin`) and tenants (`Tenants`), on both databases:
who a key is, what revoking, rotating, expiring and disabling do, the per-process cache
(bounded staleness, one read for many requests), open mode, and tenants' limits."""

from __future__ import annotations

import asyncio
import secrets
import weakref
from datetime import timedelta
from typing import Any

import pytest

from app.clock import SYSTEM_CLOCK
from app.core.scope import Scope
from app.service.errors import InvalidRequest
from app.service.principals import DEFAULT_TENANT, OPEN_MODE
from app.store.runs import RunStore
from app.tenancy import keys as keys_module
from app.tenancy.access import Role
from app.tenancy.identities import Identities
from app.tenancy.keys import DbKeys, KeyAdmin, KeyNotFound, actor_of, key_actor, lookup_id
from app.tenancy.tenants import TenantExists, TenantLimits, TenantNotFound, Tenants
from tests.helpers import wait_for

FAST = 0.05  # a short cache, so that the tests wait tens of milliseconds, not half seconds


_IDENTITIES: weakref.WeakKeyDictionary[RunStore, Identities] = weakref.WeakKeyDictionary()


def identities_of(store: RunStore) -> Identities:
    """One `Identities` per store, so that a test's patched read is the one keys use."""
    found = _IDENTITIES.get(store)
    if found is None:
        found = _IDENTITIES[store] = Identities(store.backend)
    return found


def new_tenant_id() -> str:
    return f"t-{secrets.token_hex(4)}"


@pytest.fixture
def admin(store: RunStore) -> KeyAdmin:
    return KeyAdmin(identities_of(store), clock=SYSTEM_CLOCK)


@pytest.fixture
def tenants(store: RunStore) -> Tenants:
    return Tenants(identities_of(store), clock=SYSTEM_CLOCK)


def keyed(store: RunStore, cache_seconds: float = FAST) -> DbKeys:
    """Database keys only, never open mode (so a refusal is a refusal)."""
    return DbKeys(
        identities_of(store),
        [],
        open_allowed=False,
        cache_seconds=cache_seconds,
        clock=SYSTEM_CLOCK,
    )


async def refused(db: DbKeys, secret: str) -> None:
    """Refused within a second (the issue's bound): polled, not slept."""
    await wait_for(lambda: db.authenticate(secret), lambda p: p is None, timeout=1.0)


async def test_a_key_is_its_tenant_role_and_name_and_nothing_else_is(
    store: RunStore, admin: KeyAdmin, tenants: Tenants
) -> None:
    tenant = (await tenants.create(new_tenant_id(), "Acme")).id
    issued = await admin.create(tenant, "executor", "gpu-box-1")
    db = keyed(store)
    found = await db.authenticate(issued.secret)
    assert found is not None
    assert (found.tenant, found.role, found.key_id) == (tenant, Role.EXECUTOR, issued.key.id)
    assert found.actor == f"key:gpu-box-1#{issued.key.id}" and issued.secret not in found.actor
    assert lookup_id(issued.secret) == issued.key.id
    assert issued.secret.startswith(f"ark_{issued.key.id}_")
    # The same id with another secret, a truncated key, an unknown id: refused.
    assert (
        await db.authenticate(issued.secret[:-1] + ("A" if issued.secret[-1] != "A" else "B"))
        is None
    )
    assert await db.authenticate(issued.secret[:-5]) is None
    assert await db.authenticate(f"ark_{'0' * 16}_{'x' * 43}") is None
    assert await db.authenticate("") is None
    # Nothing stored holds the secret.
    (row,) = [k for k in await identities_of(store).keys(Scope.of(tenant))]
    assert issued.secret not in repr(row) and row.secret_hash != issued.secret


async def test_an_unknown_lookup_id_never_reaches_the_hash(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = DbKeys(identities_of(store), ["env-key"], clock=SYSTEM_CLOCK)

    def no_hash(*_: Any) -> Any:
        raise AssertionError("hashed a key whose lookup id is unknown")

    monkeypatch.setattr(keys_module, "digest", no_hash)
    assert await db.authenticate(f"ark_{'a' * 16}_{'s' * 43}") is None
    assert await db.authenticate(f"ark_{'a' * 16}_{'s' * 43}") is None  # (cached)


async def test_env_keys_stay_admins_of_the_default_tenant(store: RunStore, admin: KeyAdmin) -> None:
    issued = await admin.create(DEFAULT_TENANT, "viewer", "dash")
    db = DbKeys(identities_of(store), ["env-key-1"], clock=SYSTEM_CLOCK)
    env = await db.authenticate("env-key-1")
    assert env is not None and (env.tenant, env.role) == (DEFAULT_TENANT, Role.ADMIN)
    assert env.actor == actor_of("env-key-1")
    viewer = await db.authenticate(issued.secret)
    assert viewer is not None and viewer.role == Role.VIEWER
    assert await db.authenticate("env-key-2") is None
    assert not await db.open_mode()


async def test_a_revoked_key_is_refused_once_the_cache_lapses(
    store: RunStore, admin: KeyAdmin
) -> None:
    issued = await admin.create(DEFAULT_TENANT, "creator", "backend")
    db = keyed(store)
    assert await db.authenticate(issued.secret) is not None
    revoked = await admin.revoke(issued.key.id, scope=Scope.ALL)
    assert revoked.state() == "revoked" and revoked.revoked_at is not None
    await refused(db, issued.secret)
    again = await admin.revoke(
        issued.key.id, scope=Scope.ALL
    )  # a second revocation keeps the first time
    assert again.revoked_at == revoked.revoked_at
    with pytest.raises(KeyNotFound):
        await admin.revoke("0" * 16, scope=Scope.ALL)
    with pytest.raises(KeyNotFound):  # another tenant's key is no key of this one
        await admin.revoke(issued.key.id, scope=Scope.of("elsewhere"))


async def test_the_cache_serves_repeated_lookups_without_reading_again(
    store: RunStore, admin: KeyAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    issued = await admin.create(DEFAULT_TENANT, "admin", "ops")
    db = DbKeys(identities_of(store), [], cache_seconds=60, clock=SYSTEM_CLOCK)
    reads: list[str] = []
    read = identities_of(store).key

    async def counted(key_id: str) -> Any:
        reads.append(key_id)
        await asyncio.sleep(0)  # let the other lookups arrive while this one reads
        return await read(key_id)

    monkeypatch.setattr(identities_of(store), "key", counted)
    found = await asyncio.gather(*(db.authenticate(issued.secret) for _ in range(20)))
    assert all(p is not None and p.key_id == issued.key.id for p in found)
    for _ in range(5):
        assert await db.authenticate(issued.secret) is not None
    assert reads == [issued.key.id]


async def test_rotation_keeps_the_old_secret_for_the_grace_period(
    store: RunStore, admin: KeyAdmin
) -> None:
    issued = await admin.create(DEFAULT_TENANT, "executor", "box")
    db = keyed(store)
    old, new = await admin.rotate(
        issued.key.id, timedelta(hours=1), created_by="test", scope=Scope.ALL
    )
    assert old.state() == "expiring" and old.expires_at is not None
    assert (new.key.role, new.key.name, new.key.rotated_from) == (Role.EXECUTOR, "box", old.id)
    assert new.key.id != old.id and new.secret != issued.secret
    assert (await db.authenticate(issued.secret)) is not None
    fresh = await db.authenticate(new.secret)
    assert fresh is not None and fresh.key_id == new.key.id
    # Rotating the successor without grace: its secret stops at once.
    _, newer = await admin.rotate(new.key.id, timedelta(0), scope=Scope.ALL)
    await refused(db, new.secret)
    assert await db.authenticate(newer.secret) is not None
    with pytest.raises(KeyNotFound):  # an expired key has no successor
        await admin.rotate(new.key.id, timedelta(hours=1), scope=Scope.ALL)
    await admin.revoke(newer.key.id, scope=Scope.ALL)
    with pytest.raises(KeyNotFound):
        await admin.rotate(newer.key.id, timedelta(hours=1), scope=Scope.ALL)
    with pytest.raises(InvalidRequest):
        await admin.rotate(old.id, timedelta(days=365), scope=Scope.ALL)


async def test_an_expired_key_is_refused_even_from_the_cache(
    store: RunStore, admin: KeyAdmin
) -> None:
    issued = await admin.create(
        DEFAULT_TENANT, "viewer", "short", expires_in=timedelta(seconds=0.3)
    )
    db = keyed(store, cache_seconds=60)
    assert await db.authenticate(issued.secret) is not None
    await refused(db, issued.secret)


async def test_a_disabled_tenants_keys_are_refused(
    store: RunStore, admin: KeyAdmin, tenants: Tenants
) -> None:
    tenant = (await tenants.create(new_tenant_id())).id
    issued = await admin.create(tenant, "admin", "theirs")
    db = keyed(store)
    assert await db.authenticate(issued.secret) is not None
    assert (await tenants.update(tenant, disabled=True)).disabled_at is not None
    await refused(db, issued.secret)
    await tenants.update(tenant, disabled=False)
    await wait_for(lambda: db.authenticate(issued.secret), lambda p: p is not None, timeout=1.0)
    with pytest.raises(InvalidRequest):
        await tenants.update(DEFAULT_TENANT, disabled=True)


async def test_open_mode_is_no_usable_key_and_only_where_allowed(
    store: RunStore, admin: KeyAdmin
) -> None:
    db = DbKeys(identities_of(store), [], cache_seconds=FAST, clock=SYSTEM_CLOCK)
    assert await db.open_mode()
    assert await db.authenticate("anything") == OPEN_MODE
    assert not await DbKeys(
        identities_of(store), [], open_allowed=False, clock=SYSTEM_CLOCK
    ).open_mode()
    issued = await admin.create(DEFAULT_TENANT, "admin", "first")
    await wait_for(db.open_mode, lambda open_: not open_, timeout=1.0)
    assert await db.authenticate("anything") is None
    await admin.revoke(issued.key.id, scope=Scope.ALL)
    await wait_for(db.open_mode, lambda open_: open_, timeout=1.0)
    assert not await DbKeys(
        identities_of(store), [], open_allowed=False, clock=SYSTEM_CLOCK
    ).open_mode()


async def test_a_key_needs_an_existing_tenant_a_known_role_and_a_name(admin: KeyAdmin) -> None:
    with pytest.raises(TenantNotFound):
        await admin.create("no-such-tenant", "admin", "x")
    with pytest.raises(InvalidRequest):
        await admin.create(DEFAULT_TENANT, "root", "x")
    with pytest.raises(InvalidRequest):
        await admin.create(DEFAULT_TENANT, "admin", "line\nbreak")
    with pytest.raises(InvalidRequest):
        await admin.create(DEFAULT_TENANT, "admin", "x", expires_in=timedelta(days=-1))


def test_the_actor_tag_names_the_key_within_100_characters() -> None:
    tag = key_actor("n" * 300, "0123456789abcdef")
    assert len(tag) == 100 and tag.startswith("key:nnn") and tag.endswith("#0123456789abcdef")
    assert key_actor("gpu-box-1", "ab" * 8) == "key:gpu-box-1#abababababababab"
    assert lookup_id("ark_0123456789abcdef_s3cret") == "0123456789abcdef"
    assert lookup_id("ark_0123456789abcdefXs3cret") is None
    assert lookup_id("ark_0123456789ABCDEF_s3cret") is None  # (never read: not hex)
    assert lookup_id("test-key-1") is None


async def test_tenants_and_their_limits(tenants: Tenants) -> None:
    tenant_id = new_tenant_id()
    made = await tenants.create(tenant_id, "Acme", TenantLimits(max_active_runs=5))
    assert (made.name, made.limits.max_active_runs, made.disabled_at) == ("Acme", 5, None)
    with pytest.raises(TenantExists):
        await tenants.create(tenant_id)
    with pytest.raises(InvalidRequest):
        await tenants.create("Not A Slug")
    changed = await tenants.update(
        tenant_id, limits={"daily_tokens": 1000, "max_active_runs": None}
    )
    assert changed.limits == TenantLimits(daily_tokens=1000)
    assert await tenants.limits_of(tenant_id) == TenantLimits(daily_tokens=1000)
    with pytest.raises(InvalidRequest):
        await tenants.update(tenant_id, limits={"daily_cost_usd": -1})
    with pytest.raises(InvalidRequest):
        await tenants.update(tenant_id, limits={"burst": 3})
    assert await tenants.limits_of(tenant_id) == TenantLimits(daily_tokens=1000)
    assert await tenants.limits_of(DEFAULT_TENANT) == TenantLimits()
    assert await tenants.limits_of("missing") == TenantLimits()
    with pytest.raises(TenantNotFound):
        await tenants.update("missing", name="x")
    assert tenant_id in {t.id for t in await tenants.list()}
    assert (await tenants.get(tenant_id)).name == "Acme"


async def test_a_cancelled_request_neither_cancels_the_read_nor_fails_the_others(
    store: RunStore, admin: KeyAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    issued = await admin.create(DEFAULT_TENANT, "viewer", "shared")
    db = keyed(store, cache_seconds=60)
    reading, go_on = asyncio.Event(), asyncio.Event()
    read = identities_of(store).key
    reads: list[str] = []

    async def held(key_id: str) -> Any:
        reads.append(key_id)
        reading.set()
        await go_on.wait()
        return await read(key_id)

    monkeypatch.setattr(identities_of(store), "key", held)
    first = asyncio.ensure_future(db.authenticate(issued.secret))
    await asyncio.wait_for(reading.wait(), 5)
    first.cancel()
    second = asyncio.ensure_future(db.authenticate(issued.secret))
    go_on.set()
    found = await asyncio.wait_for(second, 5)
    assert found is not None and found.key_id == issued.key.id
    assert first.cancelled()
    assert reads == [issued.key.id]  # the first one's read went on and served the second


async def test_a_failed_read_reaches_its_waiters_and_is_not_cached(
    store: RunStore, admin: KeyAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    issued = await admin.create(DEFAULT_TENANT, "viewer", "flaky")
    db = keyed(store, cache_seconds=60)
    read = identities_of(store).key

    async def down(key_id: str) -> Any:
        raise ConnectionError("database unreachable")

    monkeypatch.setattr(identities_of(store), "key", down)
    results = await asyncio.gather(
        db.authenticate(issued.secret), db.authenticate(issued.secret), return_exceptions=True
    )
    assert all(isinstance(r, ConnectionError) for r in results)
    monkeypatch.setattr(identities_of(store), "key", read)
    assert await db.authenticate(issued.secret) is not None
