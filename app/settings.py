"""Configuration from the environment (12-factor), names per the service contract."""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Self

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: A queue's name, as a run gives it (`app.service.schemas.QUEUE_NAME`).
QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

#: What a price in `AGENTRUN_PRICES` may name (USD per 1M tokens).
PRICE_KEYS = frozenset({"input", "output", "cached_input"})


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENTRUN_", extra="ignore")

    database_url: str = "sqlite:///./agentrun.db"
    # PostgreSQL connection budget (README, "Connection budget"): each process keeps one
    # pool of this many connections (unset: app.store.backend.engines.DEFAULT_POOL_SIZE), plus one
    # LISTEN connection on `database_listen_url` (unset: `database_url`).
    database_pool_size: int | None = Field(default=None, ge=1)
    database_pool_timeout: float = Field(default=30.0, gt=0)  # wait for a pooled connection
    database_listen_url: str | None = None  # a direct (not transaction-pooled) server URL
    # `database_url` goes through PgBouncer in transaction mode: no named prepared
    # statements and no session settings (they would land on other clients' sessions).
    database_pgbouncer: bool = False
    api_keys: str = ""  # comma-separated bearer keys; empty = open mode (loopback only)
    webhook_secret: str | None = None
    # Comma-separated origins whose pages may call the API from a browser (CORS), e.g.
    # `https://app.example.com`; `*` for any; empty = no CORS headers (same origin only).
    cors_origins: str = ""
    # Base of callback URLs (`callback_url`), the same in every process; `agentrun serve`
    # makes it its own address when unset, `api` and `worker` warn at start.
    public_url: str = "http://127.0.0.1:8000"
    lease_seconds: float = Field(default=30.0, gt=0)
    webhook_allow_private: bool = False
    webhook_url: str | None = None  # a global endpoint that receives every run's events
    webhook_timeout: float = Field(default=10.0, gt=0)
    webhook_max_attempts: int = Field(default=12, ge=1)
    webhook_max_age_seconds: float = Field(default=24 * 3600, gt=0)
    # {"provider:model": {"input": usd, "output": usd, "cached_input": usd}} per 1M tokens
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)
    # {"<queue>": {"max_in_flight": N}}: at most N calls of each tenant's queue of that
    # name under a live lease at once, across every API process (app.toolqueue.sql).
    queue_limits: dict[str, dict[str, int]] = Field(default_factory=dict)
    # The deployment's daily budget (every tenant's model calls per UTC day; unset: none),
    # and the output cap a budgeted call gets when its request names none
    # (app.limits.rules).
    daily_tokens: int | None = Field(default=None, ge=1)
    daily_cost_usd: float | None = Field(default=None, gt=0)
    default_max_output_tokens: int = Field(default=4096, ge=16)
    default_max_turns: int = Field(default=8, ge=1)
    default_expires_in: float = Field(default=7 * 24 * 3600, gt=0)
    # Trees of runs (app.agents): how deep agent tools may nest (a root is depth 0), and
    # how many child runs one run, and one whole tree, may start.
    max_agent_depth: int = Field(default=3, ge=0, le=20)
    max_children_per_run: int = Field(default=16, ge=1, le=10_000)
    max_runs_per_tree: int = Field(default=100, ge=1, le=100_000)
    poll_interval: float = Field(default=0.2, gt=0)  # SQLite wake-up polling
    # SQLite: how often a worker with a model call in flight looks for its run's cancel.
    stop_poll_interval: float = Field(default=0.25, gt=0, le=5)
    reap_interval: float = Field(default=1.0, gt=0)
    max_body_bytes: int = Field(default=1_000_000, gt=0)
    # Finished runs older than this are deleted by the workers (0: kept forever).
    retention_days: float = Field(default=30.0, ge=0)
    retention_interval: float = Field(default=300.0, gt=0)  # seconds between sweeps
    retention_batch: int = Field(default=200, ge=1, le=10_000)  # runs per transaction
    # Failed authentications per client address and window before 429 (0: no throttling).
    auth_failure_limit: int = Field(default=10, ge=0)
    auth_failure_window: float = Field(default=60.0, gt=0)
    # The dashboard's password hash (argon2id): memory in KiB and passes. The defaults are
    # argon2-cffi's (RFC 9106's low-memory profile); a stored hash made with other costs is
    # rehashed at its next sign-in.
    password_hash_memory_kib: int = Field(default=65536, ge=8192, le=4194304)
    password_hash_time_cost: int = Field(default=3, ge=1, le=20)
    # OpenTelemetry tracing (app.tracing): true/false; unset means on exactly when an OTLP
    # endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT / _TRACES_ENDPOINT).
    tracing: bool | None = None
    provider_timeout: float = Field(default=120.0, gt=0)
    # Provider profiles (app.providers.profiles, docs/reference.md "Provider profiles"): a
    # TOML file and/or the same document as JSON; validated at start by `load_profiles`.
    providers_file: str | None = None
    providers: str | None = None
    # Whose turn a queued run takes within its priority (docs/reference.md, "Priority and
    # fair share"): `tenant`, `conversation` or `metadata:<key>` (the tenant and that).
    fair_share_key: str = Field(
        default="tenant", pattern=r"^(tenant|conversation|metadata:[A-Za-z0-9_.\-]{1,64})$"
    )
    # Model-call retries (app.providers.backoff): the defaults wait at least 61.5 s in
    # total before the last attempt, so they outlast a one-minute rate-limit window.
    provider_max_attempts: int = Field(default=8, ge=1)
    provider_max_backoff_seconds: float = Field(default=300.0, gt=0)
    provider_backoff_base_seconds: float = Field(default=1.0, gt=0)
    provider_backoff_cap_seconds: float = Field(default=60.0, gt=0)

    # Provider credentials: read without the AGENTRUN_ prefix.
    openai_api_key: str | None = Field(default=None, validation_alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(default=None, validation_alias="OPENAI_BASE_URL")
    anthropic_api_key: str | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(default=None, validation_alias="ANTHROPIC_BASE_URL")

    @field_validator("queue_limits")
    @classmethod
    def _queue_limits(cls, limits: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        """Refused at start, naming the entry: a queue name a run could not give, a key
        other than `max_in_flight`, or a limit below 1."""
        for queue, limit in limits.items():
            if not QUEUE_NAME.fullmatch(queue):
                raise ValueError(f"queue_limits: {queue!r} is not a queue name")
            if set(limit) != {"max_in_flight"}:
                unknown = sorted(set(limit) - {"max_in_flight"}) or ["(max_in_flight missing)"]
                raise ValueError(f"queue_limits[{queue!r}]: unknown {unknown}")
            value = limit["max_in_flight"]
            if isinstance(value, bool) or value < 1:
                raise ValueError(f"queue_limits[{queue!r}].max_in_flight: at least 1")
        return limits

    def max_in_flight(self, queue: str) -> int | None:
        """The configured in-flight limit of `queue` (None: unlimited)."""
        limit = self.queue_limits.get(queue)
        return None if limit is None else limit["max_in_flight"]

    @field_validator("prices")
    @classmethod
    def _prices(cls, prices: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        """A price table that could under-price a call is refused at start (a misspelt
        key would make that part free, a negative price would give budget back): keys
        `provider:model`, each with `input` and `output` (and optionally `cached_input`),
        finite and not negative, in USD per 1M tokens."""
        for model, price in prices.items():
            provider, _, name = model.partition(":")
            if not provider or not name:
                raise ValueError(f"prices: {model!r} is not `provider:model`")
            unknown = set(price) - PRICE_KEYS
            if unknown:
                raise ValueError(f"prices[{model!r}]: unknown {sorted(unknown)}")
            missing = {"input", "output"} - set(price)
            if missing:
                raise ValueError(f"prices[{model!r}]: {sorted(missing)} missing")
            for key, value in price.items():
                if not math.isfinite(value) or value < 0:
                    raise ValueError(f"prices[{model!r}][{key!r}] must be finite and >= 0")
        return prices

    @model_validator(mode="after")
    def _listen_beside_pgbouncer(self) -> Self:
        if self.database_pgbouncer and not self.database_listen_url:
            raise ValueError(
                "AGENTRUN_DATABASE_PGBOUNCER needs AGENTRUN_DATABASE_LISTEN_URL: LISTEN holds "
                "a server session, which transaction pooling does not give a client"
            )
        return self

    @property
    def direct_database_url(self) -> str:
        """The server itself, not a transaction pooler: for LISTEN and migrations."""
        return self.database_listen_url or self.database_url

    @property
    def api_key_list(self) -> list[str]:
        return [k.strip() for k in self.api_keys.split(",") if k.strip()]

    @property
    def cors_origin_list(self) -> list[str]:
        return [o.strip().rstrip("/") for o in self.cors_origins.split(",") if o.strip()]

    def callback_url(self, token: str) -> str:
        """Where an executor answers a suspension: the one place a callback URL is made, for
        the run as the API shows it, its `run.requires_action` event and webhook alike."""
        return f"{self.public_url.rstrip('/')}/v1/callbacks/{token}/tool-results"

    def public_url_warning(self, process: str) -> str | None:
        """What to tell at the start of an `api` or `worker` process that has no
        AGENTRUN_PUBLIC_URL: the callback URLs it makes point at the default address, which
        need not be where this deployment's API is (another port, another machine)."""
        if "public_url" in self.model_fields_set:
            return None
        return (
            f"AGENTRUN_PUBLIC_URL is not set: the callback URLs this {process} process "
            f"makes (in runs, run.requires_action events and webhooks) start with "
            f"{self.public_url}, which executors may not reach. Set AGENTRUN_PUBLIC_URL to "
            "the address executors reach the API at, the same in every api and worker process."
        )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
