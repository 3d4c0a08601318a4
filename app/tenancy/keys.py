"""API keys: who a presented bearer key is (an `app.service.principals.Authenticator`),
and the actor tag the event log records for it. Shared by the API's bearer check and the
dashboard's login.

`EnvKeys` knows the keys of AGENTRUN_API_KEYS: each is an admin of the default tenant.
`DbKeys` knows those and the keys in the database (`KeyAdmin` makes them): a key is
`ark_<lookup id>_<secret>`, stored as its lookup id and the SHA-256 of the whole key (the
secret is 256 random bits: a slow hash would add nothing but cost). Each process caches
what it read of a key for at most `CACHE_SECONDS`, so a lookup costs a dictionary read and
one hash, and a revoked or expired key is refused by every process within that time.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from app.clock import Clock
from app.core.lifecycle import KeyState
from app.core.scope import Scope
from app.service.errors import InvalidRequest, ServiceError
from app.service.principals import DEFAULT_TENANT, OPEN_MODE, Principal
from app.tenancy.access import Role, principal_of
from app.tenancy.identities import Identities, KeyRecord
from app.tenancy.tenants import TenantNotFound, check_name


def key_matches(presented: str, keys: list[str]) -> bool:
    """Compare against every key, always, in constant time."""
    found = False
    for key in keys:
        found |= hmac.compare_digest(presented.encode(), key.encode())
    return found


def actor_of(key: str | None) -> str:
    """Who did it, for the event log: a short, non-reversible tag of the key."""
    if key is None:
        return "open-mode"
    return "key:" + hashlib.sha256(key.encode()).hexdigest()[:12]


class EnvKeys:
    """The keys of AGENTRUN_API_KEYS: admins of the default tenant."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys

    async def open_mode(self) -> bool:
        return not self.keys

    async def authenticate(self, presented: str) -> Principal | None:
        if not self.keys:
            return OPEN_MODE
        if not presented or not key_matches(presented, self.keys):
            return None
        return principal_of(DEFAULT_TENANT, Role.ADMIN, actor_of(presented))


# --- keys in the database ------------------------------------------------------------------

PREFIX = "ark_"
#: Lookup ids: 16 hex digits (public: listed, named in actor tags and URLs).
ID_LENGTH = 16
HEX = frozenset("0123456789abcdef")
#: How long a process trusts what it read of a key: a revocation, expiry or a disabled
#: tenant takes effect in every process within this (the issue's bound is 1 s).
CACHE_SECONDS = 0.5
#: Entries kept at most (unknown lookup ids are cached too); past it the cache restarts.
CACHE_ENTRIES = 10_000
#: The longest grace period of a rotated key, and of a key's lifetime.
MAX_GRACE = timedelta(days=30)
MAX_LIFETIME = timedelta(days=3650)


class KeyNotFound(ServiceError):
    code = "key-not-found"
    status = 404
    title = "API key not found"


def new_key_id() -> str:
    return secrets.token_hex(ID_LENGTH // 2)


def digest(presented: str) -> bytes:
    """What a key is stored as (`api_keys.secret_hash`: its hex)."""
    return hashlib.sha256(presented.encode()).digest()


def key_hash(presented: str) -> str:
    return digest(presented).hex()


def lookup_id(presented: str) -> str | None:
    """The lookup id of a key of the database's form, else None (no hash computed)."""
    if len(presented) < len(PREFIX) + ID_LENGTH + 2 or not presented.startswith(PREFIX):
        return None
    key_id = presented[len(PREFIX) : len(PREFIX) + ID_LENGTH]
    if presented[len(PREFIX) + ID_LENGTH] != "_" or not HEX.issuperset(key_id):
        return None
    return key_id


def key_actor(name: str, key_id: str) -> str:
    """The event log's actor for a database key: `key:<name>#<id>`, at most 100 chars."""
    suffix = f"#{key_id}"
    return "key:" + name[: 100 - len("key:") - len(suffix)] + suffix


@dataclass(frozen=True, slots=True)
class _Entry:
    fresh_until: float  # the clock's monotonic reading
    principal: Principal | None  # None: no such key, or revoked, or its tenant disabled
    digest: bytes = b""
    expires_at: float | None = None  # the clock's epoch seconds


class DbKeys:
    """The keys of AGENTRUN_API_KEYS (admins of the default tenant) and the database's.

    Open mode: no env key and no usable database key, and only where `open_allowed` (the
    server is bound to loopback: `agentrun serve` / `api` decide it at start). A server off
    loopback whose last key is revoked refuses everyone rather than opening up.
    """

    def __init__(
        self,
        identities: Identities,
        env_keys: list[str],
        *,
        open_allowed: bool = True,
        cache_seconds: float = CACHE_SECONDS,
        clock: Clock,
    ) -> None:
        self.identities = identities
        self.clock = clock
        self.env = EnvKeys(env_keys)
        self.open_allowed = open_allowed
        self.cache_seconds = cache_seconds
        self._cache: dict[str, _Entry] = {}
        self._loading: dict[str, asyncio.Future[_Entry]] = {}  # reads in flight
        self._open: tuple[float, bool] | None = None  # (fresh until, open)

    async def open_mode(self) -> bool:
        if self.env.keys or not self.open_allowed:
            return False
        now = self.clock.monotonic()
        if self._open is None or self._open[0] <= now:
            exists = await self.identities.usable_key_exists(self.clock.now())
            self._open = (now + self.cache_seconds, not exists)
        return self._open[1]

    async def authenticate(self, presented: str) -> Principal | None:
        if not presented:
            return None
        key_id = lookup_id(presented)
        if key_id is not None:
            found = await self._database_key(key_id, presented)
            if found is not None:
                return found
        if self.env.keys:
            return await self.env.authenticate(presented)
        return OPEN_MODE if await self.open_mode() else None

    async def _database_key(self, key_id: str, presented: str) -> Principal | None:
        entry = self._cache.get(key_id)
        if entry is None or entry.fresh_until <= self.clock.monotonic():
            entry = await self._load(key_id)
        if entry.principal is None:  # an unknown id never reaches the hash
            return None
        if not hmac.compare_digest(entry.digest, digest(presented)):
            return None
        if entry.expires_at is not None and entry.expires_at <= self.clock.epoch():
            return None
        return entry.principal

    async def _load(self, key_id: str) -> _Entry:
        """Read the key once however many requests ask for it at the same time. The read
        is a task of its own: a request cancelled while it waits (its client went away)
        neither cancels the read nor fails the others waiting on it."""
        task = self._loading.get(key_id)
        if task is None:
            task = asyncio.ensure_future(self._read(key_id))
            self._loading[key_id] = task
            task.add_done_callback(lambda done: self._settled(key_id, done))
        return await asyncio.shield(task)

    def _settled(self, key_id: str, task: asyncio.Future[_Entry]) -> None:
        if self._loading.get(key_id) is task:
            del self._loading[key_id]
        if not task.cancelled():
            task.exception()  # (retrieved: an outage is its waiters' to report)

    async def _read(self, key_id: str) -> _Entry:
        entry = self._entry(await self.identities.key(key_id))
        if len(self._cache) >= CACHE_ENTRIES:
            self._cache.clear()
        self._cache[key_id] = entry
        return entry

    def _entry(self, record: KeyRecord | None) -> _Entry:
        fresh_until = self.clock.monotonic() + self.cache_seconds
        if record is None or record.revoked_at is not None or record.tenant_disabled:
            return _Entry(fresh_until, None)
        try:
            role = Role(record.role)
        except ValueError:
            return _Entry(fresh_until, None)
        principal = principal_of(
            record.tenant_id, role, key_actor(record.name, record.id), key_id=record.id
        )
        expires = None if record.expires_at is None else record.expires_at.timestamp()
        return _Entry(fresh_until, principal, bytes.fromhex(record.secret_hash), expires)


# --- administration ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeyView:
    """A key as listed: never its secret nor its hash."""

    id: str
    tenant: str
    role: Role
    name: str
    created_at: datetime
    created_by: str | None
    expires_at: datetime | None
    revoked_at: datetime | None
    rotated_from: str | None
    read_at: datetime  # (the clock's time when it was read: its `state` by default)

    @classmethod
    def of(cls, record: KeyRecord, read_at: datetime) -> KeyView:
        return cls(
            id=record.id,
            tenant=record.tenant_id,
            role=Role(record.role),
            name=record.name,
            created_at=record.created_at,
            created_by=record.created_by,
            expires_at=record.expires_at,
            revoked_at=record.revoked_at,
            rotated_from=record.rotated_from,
            read_at=read_at,
        )

    def state(self, now: datetime | None = None) -> KeyState:
        """`active`, `expiring` (a rotated key in its grace period), `expired`, `revoked`,
        at `now` (default: when the key was read)."""
        now = now or self.read_at
        if self.revoked_at is not None:
            return KeyState.REVOKED
        if self.expires_at is not None and self.expires_at <= now:
            return KeyState.EXPIRED
        return KeyState.EXPIRING if self.expires_at is not None else KeyState.ACTIVE


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A key just made: `secret` is shown this once and stored nowhere."""

    key: KeyView
    secret: str


def _role(role: str | Role) -> Role:
    try:
        return Role(role)
    except ValueError:
        raise InvalidRequest(f"role {role!r}: one of {', '.join(r.value for r in Role)}") from None


def _window(value: timedelta | None, limit: timedelta, what: str) -> timedelta | None:
    if value is not None and not timedelta(0) <= value <= limit:
        raise InvalidRequest(f"{what}: between 0 and {limit.days} days")
    return value


class KeyAdmin:
    """Create, list, revoke and rotate database keys. `tenant` scopes an operation to one
    tenant's keys (an admin's own); None is the deployment's command line."""

    def __init__(self, identities: Identities, clock: Clock) -> None:
        self.identities = identities
        self.clock = clock

    async def create(
        self,
        tenant: str,
        role: str | Role,
        name: str,
        *,
        expires_in: timedelta | None = None,
        created_by: str | None = None,
    ) -> IssuedKey:
        now = self.clock.now()
        lifetime = _window(expires_in, MAX_LIFETIME, "expires_in")
        record, secret = self._new(tenant, _role(role), check_name(name, limit=80), now)
        record = KeyRecord(
            **{
                **record.columns(),
                "created_by": created_by,
                "expires_at": None if lifetime is None else now + lifetime,
            }
        )
        if not await self.identities.create_key(record):
            raise TenantNotFound(f"no tenant {tenant!r}")
        return IssuedKey(KeyView.of(record, now), secret)

    async def list(self, scope: Scope) -> list[KeyView]:
        now = self.clock.now()
        return [KeyView.of(r, now) for r in await self.identities.keys(scope)]

    async def get(self, key_id: str, scope: Scope) -> KeyView:
        record = await self.identities.key(key_id)
        if record is None or not scope.admits(record.tenant_id):
            raise KeyNotFound(f"no key {key_id!r}")
        return KeyView.of(record, self.clock.now())

    async def revoke(self, key_id: str, scope: Scope) -> KeyView:
        now = self.clock.now()
        record = await self.identities.revoke_key(key_id, now, scope)
        if record is None:
            raise KeyNotFound(f"no key {key_id!r}")
        return KeyView.of(record, now)

    async def rotate(
        self,
        key_id: str,
        grace: timedelta,
        scope: Scope,
        *,
        created_by: str | None = None,
    ) -> tuple[KeyView, IssuedKey]:
        """A new secret for the key (same tenant, role and name, a new lookup id, no
        expiry); the old one keeps working for `grace` (or until it expires, if earlier).
        (old, new); a revoked or expired key cannot be rotated."""
        _window(grace, MAX_GRACE, "grace")
        now = self.clock.now()
        current = await self.get(key_id, scope)
        if current.state(now) in (KeyState.REVOKED, KeyState.EXPIRED):
            raise KeyNotFound(f"key {key_id!r} is {current.state(now)}: it has no successor")
        new, secret = self._new(current.tenant, current.role, current.name, now)
        new = KeyRecord(**{**new.columns(), "created_by": created_by})
        rotated = await self.identities.rotate_key(key_id, new, now + grace, scope)
        if rotated is None:
            raise KeyNotFound(f"no key {key_id!r}")
        old, successor = rotated
        return KeyView.of(old, now), IssuedKey(KeyView.of(successor, now), secret)

    @staticmethod
    def _new(tenant: str, role: Role, name: str, now: datetime) -> tuple[KeyRecord, str]:
        key_id = new_key_id()
        secret = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        record = KeyRecord(
            id=key_id,
            tenant_id=tenant,
            role=role.value,
            name=name,
            secret_hash=key_hash(secret),
            created_at=now,
        )
        return record, secret
