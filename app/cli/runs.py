"""`agentrun runs …`: the client's command line (`agentrun_client.cli`), a distribution of
its own that the service does not depend on; parsed there, before the server's settings
are read (it is a client of any server)."""

from __future__ import annotations

import argparse
import importlib
import sys

CLIENT_MISSING = """agentrun runs: the client is not installed in this environment.
Install it from this repository (`pip install ./client`, or `make install`), then run
`agentrun runs --help`; it also installs the same commands as `agentrun-client`."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`runs` in `agentrun --help` (its arguments are the client's: `client_commands`)."""
    sub.add_parser("runs", help="create, get, list, wait, events, submit, cancel over the HTTP API")


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
