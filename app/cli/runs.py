"""`agentrun runs …` and `agentrun agents …`: the client's command line
(`agentrun_client.cli`), a distribution of its own that the service does not depend on;
parsed there, before the server's settings are read (it is a client of any server)."""

from __future__ import annotations

import argparse
import importlib
import sys

CLIENT_MISSING = """agentrun {group}: the client is not installed in this environment.
Install it from this repository (`pip install ./client`, or `make install`), then run
`agentrun {group} --help`; it also installs the same commands as `agentrun-client`."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`runs` and `agents` in `agentrun --help` (their arguments are the client's:
    `client_commands`)."""
    sub.add_parser(
        "runs",
        help="create, get, list, children, wait, events, submit, cancel, checkpoints, fork "
        "over the HTTP API",
    )
    sub.add_parser("agents", help="create, list, get, versions, update, delete named agents")
    sub.add_parser(
        "schedules", help="create, list, pause, resume, trigger, backfill schedules; fire times"
    )


def client_commands(argv: list[str]) -> int:
    """`agentrun runs …` / `agentrun agents …`, delegated to the client's command line when
    it is installed."""
    try:
        cli = importlib.import_module("agentrun_client.cli")
    except ModuleNotFoundError as exc:
        if exc.name not in ("agentrun_client", "agentrun_client.cli"):
            raise
        print(CLIENT_MISSING.format(group=argv[0]), file=sys.stderr)
        return 2
    return int(cli.main(argv, prog="agentrun"))
