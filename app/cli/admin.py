"""`agentrun keys …` and `agentrun tenants …`: API keys and tenants from the command line,
on the database of AGENTRUN_DATABASE_URL (no API process needed; every API process sees a
change within a second). A new key's secret is printed once, as the last line, and
stored nowhere.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import timedelta
from typing import Any

from app.core.scope import Scope
from app.service.errors import ServiceError
from app.service.principals import DEFAULT_TENANT
from app.settings import Settings
from app.tenancy.access import Role
from app.tenancy.keys import IssuedKey, KeyView
from app.tenancy.tenants import TenantView, parse_limits
from app.timestamps import iso

UNITS = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}


def parse_duration(text: str) -> timedelta:
    """`1h`, `30m`, `7d`, `90s` or `0` (a bare number is seconds)."""
    value, unit = (text[:-1], text[-1]) if text and text[-1] in UNITS else (text, "s")
    try:
        amount = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 1h, 30m, 0)") from None
    if not 0 <= amount < float("inf"):
        raise argparse.ArgumentTypeError(f"a duration is at least 0: {text!r}")
    return timedelta(**{UNITS[unit]: amount})


def _limit(kind: type) -> Any:
    def parse(text: str) -> Any:
        if text.lower() == "none":
            return None
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a {kind.__name__}: {text!r}") from None

    return parse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `keys` and `tenants` commands, on the CLI's subparsers."""
    keys = sub.add_parser("keys", help="create, list, revoke and rotate API keys")
    ks = keys.add_subparsers(dest="action", required=True)
    create = ks.add_parser("create", help="make a key; prints its secret once")
    create.add_argument("--tenant", default=DEFAULT_TENANT)
    create.add_argument("--role", required=True, choices=[r.value for r in Role])
    create.add_argument("--name", required=True, help="what holds it, e.g. gpu-box-1")
    create.add_argument("--expires-in", type=parse_duration, help="e.g. 90d (default: never)")
    listing = ks.add_parser("list", help="the keys (never their secrets)")
    listing.add_argument("--tenant", help="one tenant's keys (default: all)")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    revoke = ks.add_parser("revoke", help="refuse the key from now on")
    revoke.add_argument("id")
    rotate = ks.add_parser("rotate", help="a new secret; the old one works for --grace")
    rotate.add_argument("id")
    rotate.add_argument(
        "--grace", type=parse_duration, default=timedelta(hours=1), help="default 1h; 0: at once"
    )

    tenants = sub.add_parser("tenants", help="create, list and change tenants")
    ts = tenants.add_subparsers(dest="action", required=True)
    tcreate = ts.add_parser("create", help="a new tenant")
    tcreate.add_argument("id", help="lower-case letters, digits and -")
    tcreate.add_argument("--name", help="display name (default: the id)")
    tlist = ts.add_parser("list", help="every tenant with its limits")
    tlist.add_argument("--json", action="store_true", help="one JSON object per line")
    tset = ts.add_parser("set", help="change a tenant's name, limits or state")
    tset.add_argument("id")
    tset.add_argument("--name")
    state = tset.add_mutually_exclusive_group()
    state.add_argument("--disable", action="store_true", help="refuse its keys")
    state.add_argument("--enable", action="store_true")
    for parser in (tcreate, tset):  # (absent unless given; `none` clears a limit)
        limit: dict[str, Any] = {"default": argparse.SUPPRESS, "help": "none: unlimited"}
        parser.add_argument("--max-active-runs", type=_limit(int), **limit)
        parser.add_argument("--daily-tokens", type=_limit(int), **limit)
        parser.add_argument("--daily-cost-usd", type=_limit(float), **limit)
    keys.set_defaults(handler=run)
    tenants.set_defaults(handler=run)


LIMITS = ("max_active_runs", "daily_tokens", "daily_cost_usd")


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        return asyncio.run(_run(args, settings))
    except ServiceError as exc:
        print(f"agentrun {args.command} {args.action}: {exc.detail}", file=sys.stderr)
        return 1


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from app.main import administration

    async with administration(settings) as (keys, tenants):
        if args.command == "keys":
            if args.action == "create":
                issued = await keys.create(
                    args.tenant, args.role, args.name, expires_in=args.expires_in, created_by="cli"
                )
                _issued("created", issued)
            elif args.action == "list":
                listed = Scope.ALL if args.tenant is None else Scope.of(args.tenant)
                _keys(await keys.list(listed), as_json=args.json)
            elif args.action == "revoke":
                view = await keys.revoke(args.id, Scope.ALL)  # (a deployment's admin)
                print(f"revoked key {view.id} ({view.tenant}, {view.role.value}, {view.name})")
            else:
                old, issued = await keys.rotate(args.id, args.grace, Scope.ALL, created_by="cli")
                until = iso(old.expires_at) if old.expires_at else "-"
                print(f"key {old.id} keeps working until {until}")
                _issued("rotated into", issued)
            return 0
        given = {k: getattr(args, k) for k in LIMITS if hasattr(args, k)}
        if args.action == "create":
            limits = parse_limits({k: v for k, v in given.items() if v is not None})
            _tenants([await tenants.create(args.id, args.name, limits)], as_json=False)
        elif args.action == "list":
            _tenants(await tenants.list(), as_json=args.json)
        else:
            disabled = True if args.disable else False if args.enable else None
            changed = await tenants.update(
                args.id, name=args.name, limits=given or None, disabled=disabled
            )
            _tenants([changed], as_json=False)
    return 0


def _issued(verb: str, issued: IssuedKey) -> None:
    k = issued.key
    print(f"{verb} key {k.id} (tenant {k.tenant}, role {k.role.value}, name {k.name})")
    print("the secret, shown this once (it is stored only as a hash):", file=sys.stderr)
    print(issued.secret)


def _key_json(k: KeyView) -> dict[str, Any]:
    return {
        "id": k.id,
        "tenant": k.tenant,
        "role": k.role.value,
        "name": k.name,
        "state": k.state(),
        "created_at": iso(k.created_at),
        "created_by": k.created_by,
        "expires_at": iso(k.expires_at) if k.expires_at else None,
        "revoked_at": iso(k.revoked_at) if k.revoked_at else None,
        "rotated_from": k.rotated_from,
    }


def _keys(views: list[KeyView], *, as_json: bool) -> None:
    if as_json:
        for view in views:
            print(json.dumps(_key_json(view)))
        return
    print(f"{'ID':16}  {'TENANT':16}  {'ROLE':8}  {'STATE':8}  {'EXPIRES':20}  NAME")
    for view in views:
        row = _key_json(view)
        expires = row["expires_at"] or "-"
        print(
            f"{view.id:16}  {view.tenant:16}  {row['role']:8}  {row['state']:8}  "
            f"{expires:20}  {view.name}"
        )


def _tenants(views: list[TenantView], *, as_json: bool) -> None:
    for view in views:
        limits = view.limits.stored()
        row = {
            "id": view.id,
            "name": view.name,
            "limits": limits,
            "created_at": iso(view.created_at),
            "disabled_at": iso(view.disabled_at) if view.disabled_at else None,
        }
        if as_json:
            print(json.dumps(row))
        else:
            state = "disabled" if view.disabled_at else "active"
            shown = ", ".join(f"{k}={v}" for k, v in limits.items()) or "no limits"
            print(f"{view.id}  ({view.name}; {state}; {shown})")
