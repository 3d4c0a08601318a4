"""The dashboard's people: accounts made from the command line, passwords hashed with
argon2id, and sessions that expire and can be revoked.

A person signs in with a username and a password; the session's secret goes to the
browser (in the dashboard's signed cookie) and only its SHA-256 is stored, as the session
row's id. Every request looks the session up again, so a revoked session, a disabled
account or a disabled tenant is signed out on its next request. The event log names the
person: `user:<username>`.

Hashing costs about 0.1 s of CPU by design; it runs in a thread so the event loop keeps
serving. An unknown username is answered after the same work as a wrong password.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from app.clock import Clock
from app.core.scope import Scope
from app.service.errors import ServiceError
from app.service.principals import DEFAULT_TENANT, Principal
from app.store.runs import RunStore
from app.tenancy.access import Role, principal_of
from app.tenancy.operator_rows import (
    OperatorAccounts,
    OperatorRecord,
    OperatorSessionRecord,
    UnknownTenant,
    UsernameTaken,
)

#: How long a dashboard session lasts from its sign-in.
SESSION_TTL = timedelta(hours=12)
#: A username: lower-case letters, digits, `.`, `_`, `-`; starts with a letter or digit.
USERNAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}", re.ASCII)
#: The roles a person may have on the dashboard (executors and creators are programs).
ACCOUNT_ROLES = (Role.ADMIN, Role.OPERATOR, Role.VIEWER)
MIN_PASSWORD = 10
MAX_PASSWORD = 1024  # argon2 takes any length; this bounds the work a login can ask for
#: Hashes computed at once per process (each holds 64 MiB while it runs): sign-ins from
#: many addresses queue here instead of taking the memory and every core.
HASHING_AT_ONCE = 2


class AccountInvalid(ServiceError):
    code = "account-invalid"
    status = 422
    title = "Invalid account"


class AccountNotFound(ServiceError):
    code = "account-not-found"
    status = 404
    title = "No such account"


class AccountExists(ServiceError):
    code = "account-exists"
    status = 409
    title = "The username is taken"


@dataclass(frozen=True, slots=True)
class Account:
    """An account as shown (never its hash)."""

    username: str
    tenant: str
    role: Role
    created_at: datetime
    disabled_at: datetime | None
    active_sessions: int

    @property
    def actor(self) -> str:
        return actor_of_person(self.username)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str  # the stored hash of the session's secret
    username: str
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A new session: `secret` goes to the browser once and is never stored."""

    secret: str
    principal: Principal
    expires_at: datetime


def actor_of_person(username: str) -> str:
    """What the event log records of a person's actions."""
    return f"user:{username}"


def session_id(secret: str) -> str:
    """The stored id of a session: the SHA-256 of its 256-bit random secret."""
    return hashlib.sha256(secret.encode()).hexdigest()


def check_username(username: str) -> str:
    name = username.strip().lower()
    if not USERNAME.fullmatch(name):
        raise AccountInvalid(
            "a username is 1 to 63 lower-case letters, digits, `.`, `_` or `-`, "
            "starting with a letter or digit"
        )
    return name


def check_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise AccountInvalid(f"the password must have at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        raise AccountInvalid(f"the password must have at most {MAX_PASSWORD} characters")
    return password


def check_role(role: str) -> Role:
    try:
        value = Role(role)
    except ValueError:
        value = None
    if value not in ACCOUNT_ROLES:
        names = ", ".join(r.value for r in ACCOUNT_ROLES)
        raise AccountInvalid(f"a person's role is one of: {names} (not {role!r})")
    assert value is not None
    return value


def _account(record: OperatorRecord) -> Account:
    return Account(
        record.username,
        record.tenant_id,
        Role(record.role),
        record.created_at,
        record.disabled_at,
        record.active_sessions,
    )


def _principal(tenant: str, role: str, username: str) -> Principal:
    return principal_of(tenant, Role(role), actor_of_person(username))


def hasher_for(memory_kib: int, time_cost: int) -> PasswordHasher:
    """argon2id with these costs (AGENTRUN_PASSWORD_HASH_MEMORY_KIB / …_TIME_COST)."""
    return PasswordHasher(memory_cost=memory_kib, time_cost=time_cost)


class OperatorService:
    """Accounts and sessions of the dashboard's people."""

    def __init__(
        self,
        store: RunStore,
        *,
        hasher: PasswordHasher | None = None,
        session_ttl: timedelta = SESSION_TTL,
        clock: Clock,
    ) -> None:
        self.accounts = OperatorAccounts(store.backend)
        self.clock = clock
        self.hasher = hasher or PasswordHasher()  # argon2id, RFC 9106's low-memory profile
        self.session_ttl = session_ttl
        self._dummy: str | None = None  # verified against when the username is unknown
        self._hashing = asyncio.Semaphore(HASHING_AT_ONCE)

    # --- accounts (the command line) ---------------------------------------------------

    async def create(
        self, username: str, password: str, *, role: str, tenant: str = DEFAULT_TENANT
    ) -> Account:
        name = check_username(username)
        value = check_role(role)
        hashed = await self._hash(check_password(password))
        try:
            record = await self.accounts.create(
                id="op_" + secrets.token_hex(12),
                tenant_id=tenant,
                username=name,
                role=value.value,
                password_hash=hashed,
                now=self.clock.now(),
            )
        except UnknownTenant:
            raise AccountInvalid(f"there is no tenant {tenant!r}") from None
        except UsernameTaken:
            raise AccountExists(f"an account named {name!r} exists already") from None
        return _account(record)

    async def list_accounts(self, scope: Scope) -> list[Account]:
        return [_account(r) for r in await self.accounts.list_accounts(scope, self.clock.now())]

    async def get(self, username: str) -> Account:
        """One account (its `active_sessions` not counted: `sessions` lists them)."""
        return _account(await self._record(username))

    async def disable(self, username: str) -> int:
        """Disable the account and end its sessions; how many sessions were live."""
        name = await self._existing(username)
        now = self.clock.now()
        await self.accounts.update(name, disabled_at=now)
        return await self.accounts.revoke(now, username=name)

    async def enable(self, username: str) -> None:
        await self.accounts.update(await self._existing(username), disabled_at=None)

    async def set_password(self, username: str, password: str) -> int:
        """A new password; the account's sessions end (how many were live)."""
        name = await self._existing(username)
        hashed = await self._hash(check_password(password))
        await self.accounts.update(name, password_hash=hashed)
        return await self.accounts.revoke(self.clock.now(), username=name)

    async def set_role(self, username: str, role: str) -> None:
        """Takes effect on the account's next request (sessions read the role live)."""
        value = check_role(role)
        await self.accounts.update(await self._existing(username), role=value.value)

    async def sessions(self, username: str) -> list[SessionInfo]:
        name = await self._existing(username)
        return [
            SessionInfo(s.id, s.username, s.created_at, s.expires_at)
            for s in await self.accounts.sessions(name, self.clock.now())
        ]

    async def revoke_sessions(self, username: str, session: str | None = None) -> int:
        """End the account's live sessions, or only `session` (its id or a prefix of at
        least 8 characters); how many ended."""
        name = await self._existing(username)
        if session is not None and len(session.strip()) < 8:
            raise AccountInvalid("name a session by its id (at least its first 8 characters)")
        return await self.accounts.revoke(
            self.clock.now(), username=name, session_id=session.strip() if session else None
        )

    # --- signing in and out (the dashboard) --------------------------------------------

    async def sign_in(self, username: str, password: str) -> SignedIn | None:
        """A new session for the right password of an enabled account, else None."""
        name = username.strip().lower()
        record = await self.accounts.by_username(name) if USERNAME.fullmatch(name) else None
        if len(password) > MAX_PASSWORD:
            return None
        if record is None or record.disabled_at is not None:
            await self._verify(await self._dummy_hash(), password)
            return None
        if not await self._verify(record.password_hash, password):
            return None
        if not await self.accounts.tenant_enabled(record.tenant_id):
            return None
        if self.hasher.check_needs_rehash(record.password_hash):
            await self.accounts.update(record.username, password_hash=await self._hash(password))
        secret = secrets.token_urlsafe(32)
        now = self.clock.now()
        expires = now + self.session_ttl
        await self.accounts.start_session(
            id=session_id(secret), operator_id=record.id, now=now, expires_at=expires
        )
        principal = _principal(record.tenant_id, record.role, record.username)
        return SignedIn(secret, principal, expires)

    async def principal(self, secret: str) -> Principal | None:
        """Who the session of `secret` is, while it stands."""
        found: OperatorSessionRecord | None = await self.accounts.live_session(
            session_id(secret), self.clock.now()
        )
        if found is None:
            return None
        return _principal(found.tenant_id, found.role, found.username)

    async def sign_out(self, secret: str) -> None:
        await self.accounts.revoke(self.clock.now(), session_id=session_id(secret))

    # --- helpers -----------------------------------------------------------------------

    async def _hash(self, password: str) -> str:
        async with self._hashing:
            return await asyncio.to_thread(self.hasher.hash, password)

    async def _verify(self, hashed: str, password: str) -> bool:
        async with self._hashing:
            return await asyncio.to_thread(self._verified, hashed, password)

    def _verified(self, hashed: str, password: str) -> bool:
        try:
            return bool(self.hasher.verify(hashed, password))
        except (VerificationError, InvalidHashError):
            return False

    async def _dummy_hash(self) -> str:
        if self._dummy is None:
            self._dummy = await self._hash(secrets.token_urlsafe(16))
        return self._dummy

    async def _record(self, username: str) -> OperatorRecord:
        record = await self.accounts.by_username(username.strip().lower())
        if record is None:
            raise AccountNotFound(f"there is no account {username!r}")
        return record

    async def _existing(self, username: str) -> str:
        return (await self._record(username)).username
