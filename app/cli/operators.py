"""`agentrun operators …`: the dashboard's people, from the command line.

    agentrun operators create --tenant acme --username alice --role operator
    agentrun operators list [--tenant acme]
    agentrun operators disable alice | enable alice
    agentrun operators password alice
    agentrun operators set-role alice viewer
    agentrun operators sessions list alice
    agentrun operators sessions revoke alice [--session ID]

A password is read from a prompt (asked twice) when stdin is a terminal, else as the
first line of stdin (`… < file`, a pipe): never from the command line, where `ps` and the
shell's history would show it. The commands work on AGENTRUN_DATABASE_URL directly (the
composition root builds the service, `app.main.operator_accounts`).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from app.core.scope import Scope
from app.settings import Settings

if TYPE_CHECKING:
    from app.tenancy.operators import OperatorService

ROLES = ("admin", "operator", "viewer")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ops = sub.add_parser("operators", help="the dashboard's accounts: create, list, disable, …")
    verbs = ops.add_subparsers(dest="verb", required=True)
    create = verbs.add_parser("create", help="a new account (the password is prompted for)")
    create.add_argument("--username", required=True)
    create.add_argument("--role", required=True, choices=ROLES)
    create.add_argument("--tenant", default="default", help="its tenant (default: default)")
    listing = verbs.add_parser("list", help="the accounts, with their live sessions")
    listing.add_argument("--tenant", help="only this tenant's")
    for verb, text in (
        ("disable", "sign the account out everywhere and refuse its sign-ins"),
        ("enable", "allow a disabled account to sign in again"),
        ("password", "set a new password (prompted for); the account's sessions end"),
    ):
        verbs.add_parser(verb, help=text).add_argument("username")
    role = verbs.add_parser("set-role", help="change the account's role (on its next request)")
    role.add_argument("username")
    role.add_argument("role", choices=ROLES)
    sessions = verbs.add_parser("sessions", help="an account's sessions: list, revoke")
    which = sessions.add_subparsers(dest="sessions_verb", required=True)
    which.add_parser("list", help="the account's live sessions").add_argument("username")
    revoke = which.add_parser("revoke", help="end the account's sessions (or one of them)")
    revoke.add_argument("username")
    revoke.add_argument("--session", help="only this session (its id, or its first 8+ chars)")
    ops.set_defaults(handler=run)


def read_password(stdin: TextIO, prompt: Callable[[str], str] = getpass.getpass) -> str:
    """Twice from a prompt on a terminal; else the first line of stdin."""
    if stdin.isatty():
        first = prompt("Password: ")
        if prompt("Password again: ") != first:
            raise ValueError("the two passwords differ")
        return first
    line = stdin.readline()
    return line[:-1] if line.endswith("\n") else line


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows)
    return "\n".join(line.rstrip() for line in lines)


async def _run(service: OperatorService, args: argparse.Namespace, out: TextIO) -> None:
    from app.timestamps import iso

    if args.verb == "create":
        password = read_password(sys.stdin)
        account = await service.create(args.username, password, role=args.role, tenant=args.tenant)
        print(
            f"created {account.username} ({account.role.value} of tenant {account.tenant}); "
            f"its actions are recorded as {account.actor}",
            file=out,
        )
    elif args.verb == "list":
        listed = Scope.ALL if args.tenant is None else Scope.of(args.tenant)
        accounts = await service.list_accounts(listed)
        rows: list[tuple[str, ...]] = [
            ("USERNAME", "TENANT", "ROLE", "STATUS", "SESSIONS", "CREATED")
        ]
        rows += [
            (
                a.username,
                a.tenant,
                a.role.value,
                "disabled" if a.disabled_at else "active",
                str(a.active_sessions),
                iso(a.created_at),
            )
            for a in accounts
        ]
        print(_table(rows) if accounts else "no accounts", file=out)
    elif args.verb == "disable":
        ended = await service.disable(args.username)
        print(f"disabled {args.username}; {ended} session(s) ended", file=out)
    elif args.verb == "enable":
        await service.enable(args.username)
        print(f"enabled {args.username}", file=out)
    elif args.verb == "password":
        ended = await service.set_password(args.username, read_password(sys.stdin))
        print(f"password of {args.username} changed; {ended} session(s) ended", file=out)
    elif args.verb == "set-role":
        await service.set_role(args.username, args.role)
        print(f"{args.username} is now {args.role}", file=out)
    elif args.sessions_verb == "list":
        found = await service.sessions(args.username)
        rows = [("SESSION", "CREATED", "EXPIRES")]
        rows += [(s.id[:16], iso(s.created_at), iso(s.expires_at)) for s in found]
        print(_table(rows) if found else "no live sessions", file=out)
    else:
        ended = await service.revoke_sessions(args.username, args.session)
        print(f"{ended} session(s) of {args.username} revoked", file=out)


def run(args: argparse.Namespace, settings: Settings, out: TextIO = sys.stdout) -> int:
    """One `agentrun operators` command; 0, or 1 with the refusal on stderr."""
    from app.main import operator_accounts
    from app.service.errors import ServiceError

    async def main() -> None:
        async with operator_accounts(settings) as service:
            await _run(service, args, out)

    try:
        asyncio.run(main())
    except (ServiceError, ValueError) as exc:
        detail = exc.detail if isinstance(exc, ServiceError) else str(exc)
        print(f"agentrun operators: {detail}", file=sys.stderr)
        return 1
    return 0
