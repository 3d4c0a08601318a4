"""`agentrun`: serve | api | worker | migrate."""

from __future__ import annotations

import argparse
import sys

from app.logs import configure_logging
from app.settings import get_settings


def _migrate(database_url: str) -> None:
    from app.store.migrate import upgrade_to_head

    upgrade_to_head(database_url)


def main(argv: list[str] | None = None) -> int:
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
    sub.add_parser("migrate", help="alembic upgrade head on AGENTRUN_DATABASE_URL")
    args = parser.parse_args(argv)
    settings = get_settings()
    configure_logging(settings)

    if args.command == "migrate":
        _migrate(settings.database_url)
        print("database is at the latest revision")
        return 0
    if args.command == "worker":
        import uvloop

        from app.worker.worker import run_worker

        # uvloop: the worker is CPU-bound on event-loop work between short statements.
        uvloop.run(run_worker(settings, args.concurrency))
        return 0
    if args.command in ("serve", "api"):
        try:
            from app.api.server import run_server
        except ImportError:
            print("the HTTP API is not built yet (see the issues)", file=sys.stderr)
            return 2
        if args.command == "serve":
            _migrate(settings.database_url)
        return run_server(
            settings,
            host=args.host,
            port=args.port,
            workers=args.workers if args.command == "serve" else 0,
        )
    return 2


if __name__ == "__main__":
    sys.exit(main())
