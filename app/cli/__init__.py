"""`agentrun`: serve | api | worker | migrate | purge | keys | tenants | operators | runs |
agents | schedules. Parses the command line; the processes are built by the composition
root (app.main), imported only once a command needs it. `runs …`, `agents …` and
`schedules …` are the client's command line (`agentrun_client.cli`), a distribution of its
own that the service does not depend on."""

from __future__ import annotations

import argparse
import sys

from app.cli import runs
from app.logs import configure_logging
from app.settings import get_settings


def build_parser() -> argparse.ArgumentParser:
    """`agentrun`'s parser: each command group's module adds its commands (in this order
    in `--help`) and the function that runs them (`handler`)."""
    from app.cli import admin, operators, processes, retention

    parser = argparse.ArgumentParser(prog="agentrun", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (processes, retention, operators, admin, runs):
        group.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Before the server's settings: a client of any server.
    if argv[:1] in (["runs"], ["agents"], ["schedules"]):
        return runs.client_commands(argv)
    args = build_parser().parse_args(argv)
    settings = get_settings()
    configure_logging(settings)
    return int(args.handler(args, settings))
