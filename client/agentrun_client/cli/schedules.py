"""`schedules create|list|get|update|delete|pause|resume|trigger|backfill|fire-times|ticks`:
the tenant's schedules from a shell. `create` and `update` take a body (`--body`: JSON,
`@file.json`, `@file.toml`) with the flags over it; the run a tick starts is `--run` (a
run's create body) with `--prompt`, `--agent` and `--model` over it, and `update` starts
from the schedule's own run when only those are given. Times are RFC 3339 with an offset
(`2026-01-05T06:00:00+01:00`, `…Z`), or `now`."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from agentrun_client import _render
from agentrun_client._schedules import CATCHUPS, OVERLAPS
from agentrun_client._sync import Client
from agentrun_client.cli.flags import UsageError, model_spec, read_body, read_json
from agentrun_client.cli.output import EXIT_OK, AddCommand, Output
from agentrun_client.models import (
    Schedule,
    SchedulePage,
    ScheduleTickPage,
    TickOutcome,
    TickOutcomeList,
)


def instant(text: str, what: str) -> str:
    """An RFC 3339 time with an offset (or `now`), as the text the API takes."""
    if text == "now":
        return datetime.now(UTC).isoformat()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{what}: not an RFC 3339 time: {text!r}") from None
    if moment.tzinfo is None:
        raise UsageError(f"{what}: {text!r} has no offset (add Z or +HH:MM)")
    return moment.isoformat()


def run_of(args: argparse.Namespace, base: dict[str, Any] | None) -> dict[str, Any] | None:
    """The run a tick starts: `--run` (else `base`), then `--prompt`, `--agent`, `--model`
    over it (`base` as it is when none of them is given)."""
    if args.run is None and not run_flags(args):
        return base
    run = dict(base or {})
    if args.run is not None:
        run = read_json(args.run, "--run")
        if not isinstance(run, dict):
            raise UsageError("--run: a JSON object (a run's create body) is expected")
    if args.prompt is not None:
        run["prompt"] = args.prompt
    if args.agent is not None:
        run["agent"] = args.agent
        run.pop("model", None)  # (the agent's)
    if args.model is not None:
        run["model"] = model_spec(args.model)
        run.pop("agent", None)
    return run


def run_flags(args: argparse.Namespace) -> bool:
    return any(v is not None for v in (args.prompt, args.agent, args.model))


def fields(args: argparse.Namespace, body: dict[str, Any]) -> dict[str, Any]:
    """The schedule's fields: `body`, then every flag given over it."""
    for flag in ("cron", "timezone", "overlap", "catchup", "note"):
        value = getattr(args, flag)
        if value is not None:
            body[flag] = value
    if args.catchup_window is not None:
        body["catchup_window_seconds"] = args.catchup_window
    if args.jitter is not None:
        body["jitter_seconds"] = args.jitter
    for flag in ("start_at", "end_at"):
        value = getattr(args, flag)
        if value is not None:
            body[flag] = instant(value, f"--{flag.replace('_', '-')}")
    return body


def show(out: Output, schedule: Schedule) -> None:
    out.doc(schedule) if out.json else out.text(_render.schedule_text(schedule, out.prog))


def cmd_create(client: Client, args: argparse.Namespace, out: Output) -> int:
    body = fields(args, read_body(args.body, "--body") if args.body is not None else {})
    body.pop("key", None)  # (the command's KEY)
    run = run_of(args, body.pop("run", None))
    if run is not None:
        body["run"] = run
    if args.paused:
        body["paused"] = True
    missing = [f for f in ("cron", "run") if f not in body]
    if missing:
        raise UsageError(
            f"schedules create needs {' and '.join(missing)} (as flags or in --body; "
            "the run: --agent NAME --prompt TEXT, or --run JSON)"
        )
    cron, run = body.pop("cron"), body.pop("run")
    show(out, client.schedules.create(args.key, cron, run, **body))
    return EXIT_OK


def cmd_update(client: Client, args: argparse.Namespace, out: Output) -> int:
    body = fields(args, read_body(args.body, "--body") if args.body is not None else {})
    body.pop("key", None)
    base = body.pop("run", None)
    if base is None and args.run is None and run_flags(args):
        base = client.schedules.get(args.key).run  # (only some of the run's fields given)
    run = run_of(args, base)
    if run is not None:
        body["run"] = run
    for flag, name in (("no_start_at", "start_at"), ("no_end_at", "end_at"), ("no_note", "note")):
        if getattr(args, flag):
            body[name] = None
    if not body:
        raise UsageError("schedules update: nothing to change (see --help for the flags)")
    show(out, client.schedules.update(args.key, **body))
    return EXIT_OK


def cmd_get(client: Client, args: argparse.Namespace, out: Output) -> int:
    show(out, client.schedules.get(args.key))
    return EXIT_OK


def cmd_list(client: Client, args: argparse.Namespace, out: Output) -> int:
    if args.all:
        page = SchedulePage(data=list(client.schedules.list(page_size=100)))
    else:
        page = client.schedules.list_page(limit=args.limit, cursor=args.cursor)
    if out.json:
        out.doc(page)
        return EXIT_OK
    out.text(_render.schedules_table(page.data))
    if page.next_cursor:
        out.note(f"more: {out.prog} schedules list --cursor {page.next_cursor} (or --all)")
    return EXIT_OK


def cmd_delete(client: Client, args: argparse.Namespace, out: Output) -> int:
    client.schedules.delete(args.key)
    if out.json:
        out.doc({"key": args.key, "deleted": True})
    else:
        out.text(f"deleted {args.key}: no tick of it fires again (the runs it started stay)")
    return EXIT_OK


def cmd_pause(client: Client, args: argparse.Namespace, out: Output) -> int:
    show(out, client.schedules.pause(args.key, args.note))
    return EXIT_OK


def cmd_resume(client: Client, args: argparse.Namespace, out: Output) -> int:
    show(out, client.schedules.resume(args.key))
    return EXIT_OK


def outcomes(out: Output, done: list[TickOutcome]) -> None:
    if out.json:
        out.doc(TickOutcomeList(data=done))
    elif not done:
        out.text("no tick in that window")
    else:
        out.text("\n".join(_render.outcome_line(o) for o in done))


def cmd_trigger(client: Client, args: argparse.Namespace, out: Output) -> int:
    done = client.schedules.trigger(args.key, overlap=args.overlap)
    out.doc(done) if out.json else out.text(_render.outcome_line(done))
    return EXIT_OK


def cmd_backfill(client: Client, args: argparse.Namespace, out: Output) -> int:
    start, end = instant(args.start, "--from"), instant(args.end, "--to")
    outcomes(out, client.schedules.backfill(args.key, start, end, overlap=args.overlap))
    return EXIT_OK


def cmd_fire_times(client: Client, args: argparse.Namespace, out: Output) -> int:
    start = None if args.start is None else instant(args.start, "--from")
    times = client.schedules.fire_times(args.key, from_=start, count=args.count)
    out.doc(times) if out.json else out.text(_render.fire_times_text(times))
    return EXIT_OK


def cmd_ticks(client: Client, args: argparse.Namespace, out: Output) -> int:
    if args.all:
        page = ScheduleTickPage(data=list(client.schedules.ticks(args.key)))
    else:
        before = None if args.before is None else instant(args.before, "--before")
        page = client.schedules.ticks_page(args.key, limit=args.limit, before=before)
    if out.json:
        out.doc(page)
        return EXIT_OK
    out.text(_render.ticks_table(page.data))
    if page.next_cursor:
        more = f"{out.prog} schedules ticks {args.key} --before {page.next_cursor}"
        out.note(f"more: {more} (or --all)")
    return EXIT_OK


def _body_flags(p: argparse.ArgumentParser, *, create: bool) -> None:
    p.add_argument("--cron", metavar="EXPR", help="5 fields (minute hour day-of-month month "
                   "day-of-week), or @daily, @hourly, ...")  # fmt: skip
    p.add_argument("--timezone", metavar="ZONE",
                   help="the IANA zone the cron is read in (default UTC)")  # fmt: skip
    p.add_argument("--run", metavar="JSON|@FILE",
                   help="the run each tick starts: a run's create body")  # fmt: skip
    p.add_argument("--prompt", help="the run's prompt (over --run)")
    p.add_argument("--agent", metavar="NAME[@V]", help="the run starts from this agent")
    p.add_argument("--model", help="the run's model: PROVIDER:NAME, or JSON, or @file")
    p.add_argument("--overlap", choices=OVERLAPS,
                   help="a tick while the last run goes on (default skip)")  # fmt: skip
    p.add_argument("--catchup", choices=CATCHUPS,
                   help="the ticks missed while no worker ran (default latest)")  # fmt: skip
    p.add_argument("--catchup-window", type=int, metavar="SECONDS",
                   help="older missed ticks never fire (default 86400)")  # fmt: skip
    p.add_argument("--jitter", type=int, metavar="SECONDS",
                   help="each tick fires up to this late (default 0)")  # fmt: skip
    p.add_argument("--start-at", metavar="TIME", help="no tick before it")
    p.add_argument("--end-at", metavar="TIME", help="no tick after it")
    p.add_argument("--note", help="why it is paused")
    if create:
        p.add_argument("--paused", action="store_true", help="created paused")
    else:
        p.add_argument("--no-start-at", action="store_true", help="clear start_at")
        p.add_argument("--no-end-at", action="store_true", help="clear end_at")
        p.add_argument("--no-note", action="store_true", help="clear the note")
    p.add_argument("--body", metavar="JSON|@FILE",
                   help="the schedule's fields (a JSON object, or @FILE.toml); the flags "
                   "above override them")  # fmt: skip


def add_commands(command: AddCommand) -> None:
    """The schedules' commands, with their flags."""
    c = command("create", cmd_create, "create a schedule: runs started by the clock "
                "(POST /v1/schedules)")  # fmt: skip
    _body_flags(c, create=True)

    ls = command("list", cmd_list, "list the schedules, by key")
    ls.add_argument("--limit", type=int, default=20, help="schedules per page (default 20)")
    ls.add_argument("--cursor", help="the page after the one that gave this cursor")
    ls.add_argument("--all", action="store_true", help="every page")

    command("get", cmd_get, "show a schedule and its next tick")

    u = command("update", cmd_update, "change a schedule's fields: those given, the others "
                "kept (PATCH /v1/schedules/KEY)")  # fmt: skip
    _body_flags(u, create=False)

    command("delete", cmd_delete, "delete a schedule (the runs it started stay)")

    p = command("pause", cmd_pause, "pause a schedule: no tick fires until it is resumed")
    p.add_argument("--note", help="why")

    command("resume", cmd_resume, "resume a schedule: its next tick is the first after now")

    t = command("trigger", cmd_trigger, "start one run now, outside the cron (also paused)")
    t.add_argument("--overlap", choices=OVERLAPS,
                   help="while the last run goes on (default allow_all)")  # fmt: skip

    b = command("backfill", cmd_backfill, "start the cron's ticks of a past window")
    b.add_argument("--from", dest="start", required=True, metavar="TIME", help="the first")
    b.add_argument("--to", dest="end", required=True, metavar="TIME",
                   help="the last (not after now)")  # fmt: skip
    b.add_argument("--overlap", choices=OVERLAPS,
                   help="while the last run goes on (default allow_all)")  # fmt: skip

    f = command("fire-times", cmd_fire_times, "the next times a schedule would fire, in UTC "
                "and in its zone")  # fmt: skip
    f.add_argument("--from", dest="start", metavar="TIME", help="after this time (default now)")
    f.add_argument("--count", type=int, default=10, help="how many (default 10, at most 1000)")

    k = command("ticks", cmd_ticks, "what a schedule's ticks became, newest first")
    k.add_argument("--limit", type=int, default=50, help="ticks per page (default 50)")
    k.add_argument("--before", metavar="TIME", help="older than this (a page's cursor)")
    k.add_argument("--all", action="store_true", help="every page")
