"""`agentrun-client runs create|get|list|children|wait|events|submit|cancel|limits|approvals|
approve|reject|checkpoints|fork|forks`, `agentrun-client agents create|list|get|versions|update|
delete` and `agentrun-client schedules create|list|get|update|delete|pause|resume|trigger|
backfill|fire-times|ticks`: the API from a shell, for scripts and operators (also `agentrun runs …`
and `agentrun agents …` where the service is installed).

The server comes from `--base-url` / `--api-key`, else `AGENTRUN_BASE_URL` /
`AGENTRUN_API_KEY` (default http://127.0.0.1:8000, no key). Output is for people unless
`--json` is given: then one JSON document (an event per line for `events`) on stdout.

Exit status: 0 done; 1 the API refused (its problem on stderr) or could not be reached;
2 a usage error (a value the client will not send, too); 3 `wait` ended in a status not
waited for (the run ended otherwise); 4 `wait` timed out.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from agentrun_client._sync import Client
from agentrun_client.cli import agents, approvals, forks, runs, schedules
from agentrun_client.cli.flags import UsageError
from agentrun_client.cli.output import EXIT_ERROR, EXIT_USAGE, AddCommand, Command, Output
from agentrun_client.errors import AgentrunError, APIError, InvalidInput


def _common() -> argparse.ArgumentParser:
    """Options every command takes, before or after its name (SUPPRESS: an option given at
    one level is not reset by the default of another)."""
    p = argparse.ArgumentParser(add_help=False)
    s = argparse.SUPPRESS
    p.add_argument("--base-url", default=s, help="the API (default: $AGENTRUN_BASE_URL, "
                   "else http://127.0.0.1:8000)")  # fmt: skip
    p.add_argument("--api-key", default=s, help="bearer key (default: $AGENTRUN_API_KEY)")
    p.add_argument("--request-timeout", type=float, default=s, metavar="SECONDS",
                   help="per HTTP request (default 30)")  # fmt: skip
    p.add_argument("--json", action="store_true", default=s,
                   help="print JSON (one document; one event a line for `events`)")  # fmt: skip
    return p


def build_parser(prog: str) -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog=prog,
        parents=[common],
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top = parser.add_subparsers(dest="group", required=True, metavar="runs|agents|schedules")

    def group(name: str, help: str, subject: str, on_all: tuple[str, ...]) -> AddCommand:
        """The command group `name`; its commands take `subject` first, but `on_all`."""
        sub = top.add_parser(name, parents=[common], help=help).add_subparsers(
            dest="command", required=True
        )

        def command(name: str, fn: Command, help: str) -> argparse.ArgumentParser:
            p = sub.add_parser(name, parents=[common], help=help, description=help)
            p.set_defaults(handler=fn, prog=prog)
            if name not in on_all:
                p.add_argument(subject.lower(), metavar=subject)
            return p

        return command

    runs_command = group(
        "runs", "create, inspect, wait on, answer runs", "RUN_ID", ("create", "list", "approvals")
    )
    for commands in (runs, approvals, forks):  # (in this order in `--help`)
        commands.add_commands(runs_command)
    agents.add_commands(group("agents", "named agents that runs start from", "NAME", ("list",)))
    schedules.add_commands(group("schedules", "runs started by the clock", "KEY", ("list",)))
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    prog: str = "agentrun-client",
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        args = build_parser(prog).parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse has explained
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    out = Output(getattr(args, "json", False), prog, stdout, stderr)
    timeout = getattr(args, "request_timeout", 30.0)
    try:
        with Client(
            getattr(args, "base_url", None), getattr(args, "api_key", None), timeout=timeout
        ) as client:
            return int(args.handler(client, args, out))
    except (UsageError, InvalidInput) as exc:  # (a value the client will not send)
        out.note(f"{prog}: error: {exc}")
        return EXIT_USAGE
    except APIError as exc:
        if out.json:
            out.note(json.dumps(exc.problem, ensure_ascii=False))
            return EXIT_ERROR
        out.note(f"{prog}: {exc}")
        for error in exc.problem.get("errors") or []:
            if isinstance(error, dict):
                where = ".".join(str(p) for p in error.get("loc", [])[1:]) or "body"
                out.note(f"  {where}: {error.get('msg')}")
        return EXIT_ERROR
    except AgentrunError as exc:
        out.note(f"{prog}: {exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
