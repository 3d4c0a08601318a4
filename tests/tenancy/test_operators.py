"""The dashboard's people through the service, on both back ends: accounts, argon2id
password hashes, and sessions that expire, end on revocation, on a disabled account or
tenant, and read the account's role live."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from app.clock import SYSTEM_CLOCK
from app.core.scope import Scope
from app.settings import Settings
from app.store.runs import RunStore
from app.tenancy.access import Role, principal_of
from app.tenancy.operators import (
    AccountExists,
    AccountInvalid,
    AccountNotFound,
    OperatorService,
    hasher_for,
    session_id,
)
from tests.people import PASSWORD, TENANT, person, reset_people, set_tenant_disabled, stored_rows


@pytest.fixture
async def people(store: RunStore) -> AsyncIterator[OperatorService]:
    await reset_people(store)
    yield OperatorService(
        store, hasher=hasher_for(8192, 1), clock=SYSTEM_CLOCK
    )  # (cheap: tests hash often)
    await reset_people(store)


async def test_an_account_signs_in_as_a_person_of_its_tenant(people: OperatorService) -> None:
    account = await people.create(" Alice ", PASSWORD, role="operator", tenant=TENANT)
    assert (account.username, account.tenant, account.role) == ("alice", TENANT, Role.OPERATOR)
    assert account.actor == "user:alice"
    signed = await people.sign_in("alice", PASSWORD)
    assert signed is not None
    expected = principal_of(TENANT, Role.OPERATOR, "user:alice")
    assert signed.principal == expected
    assert await people.principal(signed.secret) == expected
    assert await people.sign_in("ALICE", PASSWORD) is not None  # usernames are lower case


async def test_only_the_hashes_are_stored(people: OperatorService, store: RunStore) -> None:
    await person(people, "alice")
    signed = await people.sign_in("alice", PASSWORD)
    assert signed is not None
    rows = await stored_rows(store)
    assert PASSWORD not in rows and signed.secret not in rows
    assert "$argon2id$" in rows  # memory-hard
    assert session_id(signed.secret) in rows  # the session row's id is its secret's hash


async def test_wrong_unknown_and_oversized_sign_ins_are_refused(people: OperatorService) -> None:
    await person(people, "alice")
    assert await people.sign_in("alice", PASSWORD + "!") is None
    assert await people.sign_in("alice", "") is None
    assert await people.sign_in("bob", PASSWORD) is None
    assert await people.sign_in("not a name", PASSWORD) is None
    assert await people.sign_in("alice", "x" * 5000) is None
    assert await people.principal("not-a-session") is None


async def test_accounts_are_checked_when_made(people: OperatorService) -> None:
    await person(people, "alice")
    with pytest.raises(AccountExists):
        await person(people, "Alice", tenant=TENANT)  # unique across tenants
    with pytest.raises(AccountInvalid, match="tenant"):
        await person(people, "bob", tenant="no-such-tenant")
    with pytest.raises(AccountInvalid, match="at least 10"):
        await people.create("bob", "short", role="viewer")
    with pytest.raises(AccountInvalid, match="role"):
        await person(people, "bob", role="executor")
    for bad in ("", "-bob", "bob smith", "bob/../x", "b" * 64):
        with pytest.raises(AccountInvalid, match="username"):
            await person(people, bad)
    assert [a.username for a in await people.list_accounts(scope=Scope.ALL)] == ["alice"]


async def test_list_shows_accounts_and_live_sessions(people: OperatorService) -> None:
    await person(people, "alice", tenant=TENANT)
    await person(people, "bob", role="viewer")
    await people.sign_in("alice", PASSWORD)
    await people.sign_in("alice", PASSWORD)
    listed = {
        a.username: (a.tenant, a.role, a.active_sessions)
        for a in await people.list_accounts(scope=Scope.ALL)
    }
    assert listed == {"alice": (TENANT, Role.OPERATOR, 2), "bob": ("default", Role.VIEWER, 0)}
    assert [a.username for a in await people.list_accounts(Scope.of(TENANT))] == ["alice"]


async def test_a_session_expires(store: RunStore) -> None:
    await reset_people(store)
    people = OperatorService(
        store, session_ttl=timedelta(0), clock=SYSTEM_CLOCK
    )  # over as soon as it starts
    await person(people, "alice")
    signed = await people.sign_in("alice", PASSWORD)
    assert signed is not None
    assert await people.principal(signed.secret) is None
    assert await people.sessions("alice") == []


async def test_revoking_ends_one_session_or_all(people: OperatorService) -> None:
    await person(people, "alice")
    first, second, third = [await people.sign_in("alice", PASSWORD) for _ in range(3)]
    assert first and second and third
    listed = await people.sessions("alice")
    assert {s.id for s in listed} == {session_id(s.secret) for s in (first, second, third)}
    with pytest.raises(AccountInvalid):
        await people.revoke_sessions("alice", "abc")  # too short a prefix to name one
    assert await people.revoke_sessions("alice", session_id(first.secret)[:12]) == 1
    assert await people.principal(first.secret) is None
    assert await people.principal(second.secret) is not None
    await people.sign_out(second.secret)
    assert await people.principal(second.secret) is None
    assert await people.revoke_sessions("alice") == 1
    assert await people.principal(third.secret) is None
    with pytest.raises(AccountNotFound):
        await people.revoke_sessions("nobody")


async def test_disabling_signs_out_and_refuses_until_enabled(people: OperatorService) -> None:
    await person(people, "alice")
    signed = await people.sign_in("alice", PASSWORD)
    assert signed is not None
    assert await people.disable("alice") == 1
    assert await people.principal(signed.secret) is None
    assert await people.sign_in("alice", PASSWORD) is None
    assert (await people.get("alice")).disabled_at is not None
    await people.enable("alice")
    assert await people.sign_in("alice", PASSWORD) is not None


async def test_a_new_password_ends_the_sessions(people: OperatorService) -> None:
    await person(people, "alice")
    signed = await people.sign_in("alice", PASSWORD)
    assert signed is not None
    assert await people.set_password("alice", "another long password") == 1
    assert await people.principal(signed.secret) is None
    assert await people.sign_in("alice", PASSWORD) is None
    assert await people.sign_in("alice", "another long password") is not None


async def test_a_role_change_applies_to_live_sessions(people: OperatorService) -> None:
    await person(people, "alice", role="operator")
    signed = await people.sign_in("alice", PASSWORD)
    assert signed is not None
    await people.set_role("alice", "viewer")
    found = await people.principal(signed.secret)
    assert found is not None and found.role == Role.VIEWER


async def test_a_disabled_tenant_signs_its_people_out(
    people: OperatorService, store: RunStore
) -> None:
    await person(people, "alice", tenant=TENANT)
    signed = await people.sign_in("alice", PASSWORD)
    assert signed is not None
    await set_tenant_disabled(store, TENANT, True)
    assert await people.principal(signed.secret) is None
    assert await people.sign_in("alice", PASSWORD) is None  # nor can they sign in
    await set_tenant_disabled(store, TENANT, False)
    assert await people.principal(signed.secret) is not None


async def test_an_outdated_hash_is_upgraded_at_sign_in(store: RunStore) -> None:
    from argon2 import PasswordHasher

    await reset_people(store)
    weak = OperatorService(
        store, hasher=PasswordHasher(time_cost=1, memory_cost=8192), clock=SYSTEM_CLOCK
    )
    await person(weak, "alice")
    before = await stored_rows(store)
    assert "m=8192,t=1" in before
    people = OperatorService(store, clock=SYSTEM_CLOCK)
    assert await people.sign_in("alice", PASSWORD) is not None
    after = await stored_rows(store)
    assert "m=8192,t=1" not in after and "m=65536,t=3" in after
    assert await people.sign_in("alice", PASSWORD) is not None


def test_the_hash_costs_are_the_settings() -> None:
    from app.main import password_hasher
    from tests.conftest import make_settings

    tuned = make_settings("sqlite://", password_hash_memory_kib=9000, password_hash_time_cost=2)
    hashed = password_hasher(tuned).hash("a long enough password")
    assert "m=9000,t=2" in hashed
    default = Settings(database_url="sqlite://")
    assert (default.password_hash_memory_kib, default.password_hash_time_cost) == (65536, 3)
