"""`agentrun serve | api | worker | migrate`: the service's processes (the contract's
"Processes"), built by the composition root (app.main), imported once a command runs."""

from __future__ import annotations

import argparse
import sys

from app.settings import Settings

#: The commands that start a long-lived process (tracing and provider profiles first).
STARTS = ("serve", "api", "worker")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="migrate, then run the HTTP API with in-process workers")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1, help="in-process worker slots")
    api = sub.add_parser("api", help="run the HTTP API only")
    api.add_argument("--host", default="127.0.0.1")
    api.add_argument("--port", type=int, default=8000)
    worker = sub.add_parser("worker", help="run a worker process")
    worker.add_argument("--concurrency", type=int, default=4)
    worker.add_argument(
        "--metrics-port",
        type=int,
        help="serve this process's counters for Prometheus on this port (see docs/reference.md)",
    )
    worker.add_argument("--metrics-host", default="127.0.0.1")
    migrate = sub.add_parser("migrate", help="alembic upgrade head on AGENTRUN_DATABASE_URL")
    for parser in (serve, api, worker, migrate):
        parser.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.command in STARTS:
        refusal = _prepare(settings, args.command)
        if refusal is not None:
            print(f"refusing to start: {refusal}", file=sys.stderr)
            return 2
    if args.command == "migrate":
        from app.main import migrate

        migrate(settings.direct_database_url)
        print("database is at the latest revision")
        return 0
    if args.command == "worker":
        import uvloop

        from app.main import run_worker

        if args.metrics_port is not None:
            from app.metrics import serve as serve_metrics

            serve_metrics(args.metrics_port, args.metrics_host)
        # uvloop: the worker is CPU-bound on event-loop work between short statements.
        uvloop.run(run_worker(settings, args.concurrency))
        return 0
    from app.main import migrate, serve_http

    if args.command == "serve":
        migrate(settings.direct_database_url)
    return serve_http(
        settings,
        host=args.host,
        port=args.port,
        workers=args.workers if args.command == "serve" else 0,
    )


def _prepare(settings: Settings, role: str) -> str | None:
    """Tracing and the provider profiles of a starting process; why it must not start."""
    from app.tracing import TracingConfigError, configure

    try:
        configure(settings, role=role)
    except TracingConfigError as exc:
        return str(exc)
    from app.providers.profiles import ProfileError, install, load_profiles

    try:  # (`api` calls no provider: it checks the profiles, not that their keys are set)
        install(load_profiles(settings, require_keys=role != "api"))
    except ProfileError as exc:
        return f"provider profiles: {exc}"
    return None
