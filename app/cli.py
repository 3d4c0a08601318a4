"""`agentrun`: serve | api | worker | migrate | purge | keys | tenants | operators | runs.
Parses the command line; the processes are built by the composition root (app.main),
imported only once a command needs it (`keys` and `tenants`: app.admin). `runs …` is the
client's command line (`agentrun_client.cli`), a distribution of its own that the service
does not depend on."""

from __future__ import annotations

import argparse
import importlib
import sys
from datetime import timedelta

from app import operators_cli
from app.logs import configure_logging
from app.settings import get_settings


def parse_age(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `3600s`, or a bare number of days."""
    units = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
    value, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "d")
    try:
        amount = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an age: {text!r} (e.g. 30d, 12h)") from None
    if not amount > 0 or amount == float("inf"):
        raise argparse.ArgumentTypeError(f"the age must be positive: {text!r}")
    return timedelta(**{units[unit]: amount})


CLIENT_MISSING = """agentrun runs: the client is not installed in this environment.
Install it from this repository (`pip install ./client`, or `make install`), then run
`agentrun runs --help`; it also installs the same commands as `agentrun-client`."""


def client_commands(argv: list[str]) -> int:
    """`agentrun runs …`, delegated to the client's command line when it is installed."""
    try:
        cli = importlib.import_module("agentrun_client.cli")
    except ModuleNotFoundError as exc:
        if exc.name not in ("agentrun_client", "agentrun_client.cli"):
            raise
        print(CLIENT_MISSING, file=sys.stderr)
        return 2
    return int(cli.main(argv, prog="agentrun"))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["runs"]:  # before the server's settings: this is a client of any server
        return client_commands(argv)
    parser = argparse.ArgumentParser(prog="agentrun", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
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
    sub.add_parser("migrate", help="alembic upgrade head on AGENTRUN_DATABASE_URL")
    purge = sub.add_parser(
        "purge", help="delete finished runs older than an age (their usage is kept per day)"
    )
    purge.add_argument(
        "--older-than",
        required=True,
        type=parse_age,
        help="age of the runs to delete: 30d, 12h, 90m, 3600s (a bare number is days)",
    )
    purge.add_argument("--batch", type=int, default=500, help="runs per transaction")
    operators_cli.add_parser(sub)
    from app import admin

    admin.add_commands(sub)  # keys, tenants
    sub.add_parser(  # (parsed by the client: `client_commands`)
        "runs", help="create, get, list, wait, events, submit, cancel over the HTTP API"
    )
    args = parser.parse_args(argv)
    settings = get_settings()
    configure_logging(settings)
    if args.command in ("serve", "api", "worker"):
        from app.tracing import TracingConfigError, configure

        try:
            configure(settings, role=args.command)
        except TracingConfigError as exc:
            print(f"refusing to start: {exc}", file=sys.stderr)
            return 2
        from app.providers.profiles import ProfileError, install, load_profiles

        try:  # (`api` calls no provider: it checks the profiles, not that their keys are set)
            install(load_profiles(settings, require_keys=args.command != "api"))
        except ProfileError as exc:
            print(f"refusing to start: provider profiles: {exc}", file=sys.stderr)
            return 2

    if args.command == "operators":
        return operators_cli.run(settings, args)
    if args.command in ("keys", "tenants"):
        return admin.run(args, settings)
    if args.command == "migrate":
        from app.main import migrate

        migrate(settings.direct_database_url)
        print("database is at the latest revision")
        return 0
    if args.command == "purge":
        import asyncio

        from app.main import purge as purge_finished

        deleted = asyncio.run(
            purge_finished(
                settings.database_url,
                args.older_than,
                args.batch,
                pgbouncer=settings.database_pgbouncer,
            )
        )
        print(f"deleted {deleted} finished runs")
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
    if args.command in ("serve", "api"):
        from app.main import migrate, serve_http

        if args.command == "serve":
            migrate(settings.direct_database_url)
        return serve_http(
            settings,
            host=args.host,
            port=args.port,
            workers=args.workers if args.command == "serve" else 0,
        )
    return 2


if __name__ == "__main__":
    sys.exit(main())
