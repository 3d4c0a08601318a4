"""The composition root: the one place that builds the engine, the store, the service and
its reads, the live-event hub and the worker, and wires them into the processes the CLI
starts (`serve`, `api`, `worker`, `purge`, `migrate`) and its administration (`keys`,
`tenants`). It also picks the clock (`app.clock`): the system's, unless a test hands in
a `FakeClock`; everything built here reads time from that one clock.

Nothing below imports this module (an import-linter contract). The web stack (FastAPI,
the dashboard) is imported only by the functions that serve it, so a worker process
never loads it.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

import structlog
from argon2 import PasswordHasher

from app import features
from app.agents import agent_service
from app.approvals.service import ApprovalService
from app.clock import SYSTEM_CLOCK, Clock
from app.limits.run_limits import RunLimitsService
from app.providers import profiles
from app.schedules import schedule_service
from app.service.live import EventHub
from app.service.principals import Authenticator
from app.service.reads import RunReads
from app.service.runs import RunService
from app.settings import Settings
from app.store.backend.engines import create_engine, engine_for
from app.store.runs import RunStore
from app.tenancy import routers as tenancy_routers
from app.tenancy.access import GRANTS
from app.tenancy.browser_tokens import BrowserTokenSigner
from app.tenancy.identities import Identities
from app.tenancy.keys import DbKeys, EnvKeys, KeyAdmin
from app.tenancy.operators import OperatorService, hasher_for
from app.tenancy.tenants import Tenants
from app.toolqueue.service import QueueService
from app.webhooks.outbox import Outbox
from app.worker.worker import Worker

if TYPE_CHECKING:
    from fastapi import FastAPI

log = structlog.get_logger("agentrun")


@dataclass(frozen=True, slots=True)
class Components:
    store: RunStore
    service: RunService
    reads: RunReads
    hub: EventHub | None  # when the process serves live event streams
    queues: QueueService  # the tool-call queue's leases (woken by the hub's LISTEN)
    worker: Worker | None  # when the process drives runs
    worker_task: asyncio.Task[None] | None
    keys: KeyAdmin  # the database's API keys
    tenants: Tenants
    clock: Clock  # what everything above reads time from


@asynccontextmanager
async def running(
    settings: Settings,
    *,
    pool_size: int | None = None,
    worker_slots: int = 0,
    hub: bool = False,
    clock: Clock = SYSTEM_CLOCK,
) -> AsyncIterator[Components]:
    """Everything a process needs, started; stopped in reverse order on exit (the worker
    finishes or releases what it holds, the hub drops its watches, the store sends its
    pending wake-ups and closes its pool). The provider profiles are loaded first: a bad
    entry raises `ProfileError` before anything starts (a process without worker slots
    calls no provider and needs no keys)."""
    loaded = (  # (the worker's own: its providers and shared limits are built from them)
        profiles.profiles_of(settings)
        if worker_slots
        else profiles.load_profiles(settings, require_keys=False)
    )
    profiles.install(loaded)
    engine = engine_for(settings, pool_size=pool_size)
    store = features.install(RunStore(engine, webhook_url=settings.webhook_url), settings, clock)
    listen_url = settings.direct_database_url
    event_hub = EventHub(store, listen_url, settings.poll_interval, clock=clock) if hub else None
    worker = (
        Worker(store, settings, concurrency=worker_slots, profiles=loaded, clock=clock)
        if worker_slots
        else None
    )
    task = asyncio.create_task(worker.run()) if worker is not None else None
    service = RunService(store, settings, clock)
    queues = QueueService(service, event_hub)
    identities = Identities(store.backend)
    try:
        yield Components(
            store,
            service,
            RunReads(store, deliveries=Outbox(store.backend).webhook_deliveries),
            event_hub,
            queues,
            worker,
            task,
            KeyAdmin(identities, clock),
            Tenants(identities, clock),
            clock,
        )
    finally:
        try:
            if worker is not None and task is not None:
                worker.stop()
                await task
        finally:
            if event_hub is not None:
                await event_hub.close()
            await store.aclose()


def create_app(
    settings: Settings,
    *,
    worker_slots: int = 0,
    open_allowed: bool = True,
    authenticator: Authenticator | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> FastAPI:
    """The HTTP API with the dashboard; with `worker_slots`, workers in the same process
    (`agentrun serve`). Keys: AGENTRUN_API_KEYS and the database's (`DbKeys`; open mode
    only where `open_allowed`: bound to loopback), unless `authenticator` is given. Every
    part reads time from `clock`."""
    from app import dashboard
    from app.agents import routes as agent_routes
    from app.api.app import create_api
    from app.approvals import routes as approval_routes
    from app.compaction import routes as compaction_routes
    from app.forks import fork_service
    from app.forks import routes as fork_routes
    from app.limits import routes as limits_routes
    from app.protocols import a2a, agui
    from app.protocols.sessions import Sessions
    from app.schedules import routes as schedule_routes
    from app.toolqueue import routes as queue_routes

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with running(settings, worker_slots=worker_slots, hub=True, clock=clock) as c:
            app.state.service = c.service
            app.state.reads = c.reads
            app.state.event_hub = c.hub
            app.state.queues = c.queues
            app.state.approvals = ApprovalService(c.service)
            app.state.agents = agent_service(c.service)
            app.state.sessions = Sessions(c.service, app.state.agents)
            app.state.schedules = schedule_service(c.service)
            app.state.forks = fork_service(c.service)
            app.state.run_limits = RunLimitsService.of(c.store, settings, clock)
            app.state.operators = OperatorService(
                c.store, hasher=password_hasher(settings), clock=clock
            )
            app.state.keys = c.keys
            app.state.tenants = c.tenants
            app.state.run_tokens = BrowserTokenSigner(c.reads.shared_secret, clock)
            if authenticator is None:
                app.state.authenticator = DbKeys(
                    c.keys.identities,
                    settings.api_key_list,
                    open_allowed=open_allowed,
                    clock=clock,
                )
            yield

    app = create_api(
        settings,
        lifespan,
        too_large={"/admin": dashboard.too_large},
        authenticator=authenticator or EnvKeys(settings.api_key_list),
        clock=clock,
        grants=GRANTS,
        routers=[
            limits_routes.router,
            queue_routes.router,
            approval_routes.router,
            agent_routes.router,
            schedule_routes.router,
            fork_routes.router,
            compaction_routes.router,
            *tenancy_routers(),
        ],
    )
    dashboard.install(app)
    a2a.install(app)
    agui.install(app)
    return app


def serve_http(settings: Settings, *, host: str, port: int, workers: int) -> int:
    """`agentrun serve` (with `workers` in-process slots) and `agentrun api` (none)."""
    from app.api.security import is_loopback
    from app.api.server import run_server

    if not workers and (warning := settings.public_url_warning("api")):
        log.warning("public_url_unset", message=warning)
    return run_server(
        settings,
        lambda s: create_app(s, worker_slots=workers, open_allowed=is_loopback(host)),
        host=host,
        port=port,
        own_public_url=workers > 0,
        database_keys=lambda: asyncio.run(usable_database_keys(settings)),
    )


async def usable_database_keys(settings: Settings, clock: Clock = SYSTEM_CLOCK) -> bool:
    """Whether the database holds a key that works (the open-mode guard's question)."""
    async with administration(settings, clock) as (keys, _):
        return await keys.identities.usable_key_exists(clock.now())


@asynccontextmanager
async def administration(
    settings: Settings, clock: Clock = SYSTEM_CLOCK
) -> AsyncIterator[tuple[KeyAdmin, Tenants]]:
    """The keys and tenants of the database, for the command line."""
    engine = create_engine(
        settings.database_url, pool_size=1, pgbouncer=settings.database_pgbouncer
    )
    store = RunStore(engine)
    identities = Identities(store.backend)
    try:
        yield KeyAdmin(identities, clock), Tenants(identities, clock)
    finally:
        await store.aclose()


async def run_worker(settings: Settings, concurrency: int) -> None:
    """`agentrun worker`: until SIGTERM or SIGINT, then a clean stop."""
    if warning := settings.public_url_warning("worker"):
        log.warning("public_url_unset", message=warning)
    async with running(settings, worker_slots=concurrency) as c:
        assert c.worker is not None and c.worker_task is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, c.worker.stop)
        await c.worker_task


def password_hasher(settings: Settings) -> PasswordHasher:
    return hasher_for(settings.password_hash_memory_kib, settings.password_hash_time_cost)


@asynccontextmanager
async def operator_accounts(
    settings: Settings, clock: Clock = SYSTEM_CLOCK
) -> AsyncIterator[OperatorService]:
    """`agentrun operators …`: the dashboard's accounts over one connection."""
    pgbouncer = settings.database_pgbouncer
    engine = create_engine(settings.database_url, pool_size=1, pgbouncer=pgbouncer)
    store = RunStore(engine)
    try:
        yield OperatorService(store, hasher=password_hasher(settings), clock=clock)
    finally:
        await store.aclose()


def migrate(database_url: str) -> None:
    from app.store.migrate import upgrade_to_head

    upgrade_to_head(database_url)


async def purge(
    database_url: str,
    older_than: timedelta,
    batch: int,
    *,
    pgbouncer: bool = False,
    clock: Clock = SYSTEM_CLOCK,
) -> int:
    """`agentrun purge`: delete runs that finished more than `older_than` ago; how many."""
    cutoff = clock.now() - older_than
    from app.store.retention import purge as purge_finished

    engine = create_engine(database_url, pool_size=1, pgbouncer=pgbouncer)
    try:
        return await purge_finished(engine, cutoff, batch)
    finally:
        await engine.dispose()
