"""`runs create|get|list|children|wait|events|submit|cancel|limits`: a run's life from a
shell."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import Any, get_args

from agentrun_client import _base, _render
from agentrun_client._sync import Client
from agentrun_client.cli.flags import UsageError, model_spec, pair, read_json
from agentrun_client.cli.output import EXIT_OK, EXIT_OTHER_STATUS, EXIT_TIMEOUT, AddCommand, Output
from agentrun_client.errors import WaitTimeout
from agentrun_client.models import Run, RunPage, RunStatus, SubmitOutcome

STATUSES = [s.value for s in RunStatus]
#: The service's words the flags take (tests/client/test_vocabulary.py checks them).
TOOL_CHOICES = ("auto", "none", "required")
INVALID_TOOL_CALL_ACTIONS = ("fail", "retry", "repair", "skip", "stop", "ask")
LIMITS = ("max_total_tokens", "max_cost_usd", "max_model_calls", "max_duration_seconds")


def create_body(args: argparse.Namespace) -> dict[str, Any]:
    """The request body of `runs create`: `--body`, then every flag given over it."""
    body: dict[str, Any] = {}
    if args.body is not None:
        body = read_json(args.body, "--body")
        if not isinstance(body, dict):
            raise UsageError("--body: a JSON object is expected")
    if args.prompt is not None:
        body["prompt"] = args.prompt
    if args.model is not None:
        body["model"] = model_spec(args.model)
    if args.param:
        if "model" not in body:
            raise UsageError("--param needs --model")
        params = dict(pair(p, "--param", strict=False) for p in args.param)
        body["model"] = {**body["model"], **params}
    for flag in ("tools", "history"):
        value = getattr(args, flag)
        if value is not None:
            body[flag] = read_json(value, f"--{flag}")
    if args.invalid_tool_call is not None:
        text = args.invalid_tool_call
        policy = read_json(text, "--invalid-tool-call") if text[:1] in "{@" else {"action": text}
        body["invalid_tool_call"] = policy
    if args.tool_choice is not None:
        choice = args.tool_choice
        body["tool_choice"] = choice if choice in TOOL_CHOICES else {"name": choice}
    if args.metadata:
        meta = dict(pair(m, "--metadata", strict=False) for m in args.metadata)
        body["metadata"] = {**body.get("metadata", {}), **meta}
    if args.webhook is not None:
        body["webhook"] = {"url": args.webhook}
    for flag in ("preamble", "max_turns", "tool_concurrency", "expires_in", "priority"):
        value = getattr(args, flag)
        if value is not None:
            body[flag] = value
    if args.stream:
        body["stream"] = True
    if args.previous_run_id is not None:
        body["previous_run_id"] = args.previous_run_id
    if args.if_busy is not None:
        body["if_busy"] = args.if_busy
    if args.agent is not None:
        body["agent"] = args.agent
    inherited = "previous_run_id" in body or "agent" in body  # (the model is theirs)
    needed = ("prompt",) if inherited else ("prompt", "model")
    missing = [f for f in needed if f not in body]
    if missing:
        raise UsageError(f"runs create needs {' and '.join(missing)} (as an argument or in --body)")
    return body


def results(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The results of `runs submit`, from `--file`, then `--result` and `--error` flags."""
    out: list[dict[str, Any]] = []
    if args.file is not None:
        doc = read_json(args.file if args.file.startswith("@") else f"@{args.file}", "--file")
        items = doc.get("results") if isinstance(doc, dict) else doc
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise UsageError('--file: expected {"results": [...]} or a list of results')
        out.extend(items)
    for flag, is_error in (("result", False), ("error", True)):
        for text in getattr(args, flag) or ():
            call_id, output = pair(text, f"--{flag}", strict=True)
            item = {"tool_call_id": call_id, "output": output}
            out.append({**item, "is_error": True} if is_error else item)
    if not out:
        raise UsageError("runs submit needs --result CALL_ID=JSON, --error CALL_ID=JSON or --file")
    return out


def cmd_create(client: Client, args: argparse.Namespace, out: Output) -> int:
    body = create_body(args)
    prompt, model, tools = body.pop("prompt"), body.pop("model", None), body.pop("tools", None)
    call = _base.create_call(prompt, model, tools, args.idempotency_key, body)
    return show_made(client, args, out, Run.model_validate(client.request(call).json()))


def show_made(client: Client, args: argparse.Namespace, out: Output, run: Run) -> int:
    """A run just made (a create, a fork): waited for with `--wait`, its id alone with
    `--quiet`, else the run."""
    if args.wait:
        run = client.runs.wait(run.id)
    if args.quiet:
        out.text(run.id)
    else:
        out.run(run)
    return EXIT_OK


def cmd_get(client: Client, args: argparse.Namespace, out: Output) -> int:
    out.run(client.runs.get(args.run_id))
    return EXIT_OK


def cmd_list(client: Client, args: argparse.Namespace, out: Output) -> int:
    if args.all:
        runs = client.runs.list(status=args.status, page_size=100, root_run_id=args.root)
        page = RunPage(data=list(runs))
    else:
        page = client.runs.list_page(
            status=args.status, limit=args.limit, cursor=args.cursor, root_run_id=args.root
        )
    return show_page(out, page, "list")


def cmd_children(client: Client, args: argparse.Namespace, out: Output) -> int:
    if args.all:
        page = RunPage(data=list(client.runs.children(args.run_id, page_size=100)))
    else:
        page = client.runs.children_page(args.run_id, limit=args.limit, cursor=args.cursor)
    return show_page(out, page, f"children {args.run_id}")


def show_page(
    out: Output,
    page: RunPage,
    command: str,
    table: Callable[[Iterable[Run]], str] = _render.runs_table,
) -> int:
    """A page of runs: the API's document with `--json`, else a table and the command that
    lists the next page."""
    if out.json:
        out.doc(page)
        return EXIT_OK
    out.text(table(page.data))
    if page.next_cursor:
        out.note(f"more: {out.prog} runs {command} --cursor {page.next_cursor} (or --all)")
    return EXIT_OK


def cmd_wait(client: Client, args: argparse.Namespace, out: Output) -> int:
    wanted = _base.statuses_of(args.status)
    try:
        run = client.runs.wait(args.run_id, wanted, timeout=args.timeout)
    except WaitTimeout as exc:
        if exc.run is not None:
            out.run(exc.run)
        out.note(f"timed out after {args.timeout:g} s: {exc}")
        return EXIT_TIMEOUT
    out.run(run)
    if run.status in wanted:
        return EXIT_OK
    out.note(f"{run.id} ended {run.status}, not {' or '.join(sorted(wanted))}")
    return EXIT_OTHER_STATUS


def cmd_events(client: Client, args: argparse.Namespace, out: Output) -> int:
    if args.follow:
        events = client.runs.events(args.run_id, after=args.after)
    else:
        events = iter(client.runs.list_events(args.run_id, after=args.after))
    for event in events:
        out.doc(event) if out.json else out.text(_render.event_line(event))
    return EXIT_OK


def cmd_submit(client: Client, args: argparse.Namespace, out: Output) -> int:
    outcome: SubmitOutcome = client.runs.submit_tool_outputs(args.run_id, results(args))
    out.doc(outcome) if out.json else out.text(_render.submitted_text(outcome))
    return EXIT_OK


def cmd_cancel(client: Client, args: argparse.Namespace, out: Output) -> int:
    out.run(client.runs.cancel(args.run_id))
    return EXIT_OK


def limit_value(text: str) -> float | None:
    """A limit on the command line: a number, or `none` to remove it."""
    if text.lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number or none, not {text!r}") from None
    return int(value) if value.is_integer() else value


def cmd_limits(client: Client, args: argparse.Namespace, out: Output) -> int:
    named = {k: getattr(args, k) for k in LIMITS if getattr(args, k) is not _UNSET}
    out.run(client.runs.raise_limits(args.run_id, named))
    return EXIT_OK


_UNSET = object()


def add_commands(command: AddCommand) -> None:
    """The commands on one run (and `create`, `list`), with their flags."""
    c = command("create", cmd_create, "create a run (POST /v1/runs)")
    c.add_argument("prompt", nargs="?", help="the user message")
    c.add_argument("--model", help="PROVIDER:NAME (a provider profile: openai, "
                   "openai_responses, anthropic, scripted or one the deployment configures), "
                   "or the whole `model` object as JSON or @file")  # fmt: skip
    c.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a model parameter (VALUE: JSON, else text); repeat")  # fmt: skip
    c.add_argument("--tools", metavar="JSON|@FILE", help="tool definitions: a JSON list")
    c.add_argument("--preamble", help="the system prompt")
    c.add_argument("--history", metavar="JSON|@FILE", help="earlier messages: a JSON list")
    c.add_argument("--tool-choice", metavar="|".join((*TOOL_CHOICES, "TOOL")))
    c.add_argument("--max-turns", type=int, metavar="N", help="model-call budget")
    c.add_argument("--tool-concurrency", type=int, metavar="N")
    *actions, last = INVALID_TOOL_CALL_ACTIONS
    c.add_argument("--invalid-tool-call", metavar="ACTION|JSON|@FILE",
                   help=f"{', '.join(actions)} or {last}; or the policy object")  # fmt: skip
    c.add_argument("--webhook", metavar="URL", help="receives the run's webhook events")
    c.add_argument("--expires-in", type=float, metavar="SECONDS", help="how long it may wait")
    c.add_argument("--metadata", action="append", metavar="KEY=VALUE",
                   help="VALUE: JSON, else text; repeat")  # fmt: skip
    c.add_argument("--stream", action="store_true", help="publish model text as it comes")
    c.add_argument(
        "--previous-run-id",
        metavar="RUN_ID",
        help="continue this run's conversation (then --model may be left out)",
    )
    c.add_argument(
        "--if-busy",
        choices=get_args(_base.IfBusy),
        help="when that conversation's latest run is active: refuse (default), "
        "wait for it, or cancel it",
    )
    c.add_argument("--priority", type=int, metavar="N",
                   help="-100..100 (default 0): a higher one is claimed first")  # fmt: skip
    c.add_argument("--agent", metavar="NAME[@VERSION]",
                   help="start it from a named agent (then no --model or --tools: the "
                   "agent's)")  # fmt: skip
    c.add_argument("--body", metavar="JSON|@FILE",
                   help="a whole request body; the flags above override its fields")  # fmt: skip
    c.add_argument("--idempotency-key", help="default: a fresh one (retries are safe)")
    c.add_argument("--wait", action="store_true", help="then wait until suspended or ended")
    c.add_argument("-q", "--quiet", action="store_true", help="print only the run id")

    command("get", cmd_get, "show a run")

    ls = command("list", cmd_list, "list runs, newest first")
    ls.add_argument("--status", choices=STATUSES)
    ls.add_argument("--limit", type=int, default=20, help="runs per page (default 20)")
    ls.add_argument("--cursor", help="the page after the one that gave this cursor")
    ls.add_argument("--all", action="store_true", help="every page")
    ls.add_argument("--root", metavar="RUN_ID",
                    help="only this run's tree: it and every run below it")  # fmt: skip

    ch = command("children", cmd_children, "list a run's child runs, oldest first")
    ch.add_argument("--limit", type=int, default=20, help="runs per page (default 20)")
    ch.add_argument("--cursor", help="the page after the one that gave this cursor")
    ch.add_argument("--all", action="store_true", help="every page")

    w = command("wait", cmd_wait, "wait until a run reaches a status (a long poll, no polling)")
    w.add_argument("--status", action="append", choices=STATUSES,
                   help="repeat for several (default: requires_action or ended)")  # fmt: skip
    w.add_argument("--timeout", type=float, metavar="SECONDS", help="default: no limit")

    e = command("events", cmd_events, "print a run's event log")
    e.add_argument("--after", type=int, default=0, metavar="SEQ", help="events after this seq")
    e.add_argument("-f", "--follow", action="store_true",
                   help="then follow it live until the run ends")  # fmt: skip

    s = command("submit", cmd_submit, "submit tool results (POST …/tool-results)")
    s.add_argument("--result", action="append", metavar="CALL_ID=JSON",
                   help="a result (a string is quoted: id='\"text\"'); repeat")  # fmt: skip
    s.add_argument("--error", action="append", metavar="CALL_ID=JSON",
                   help="a failed call's result (is_error: true); repeat")  # fmt: skip
    s.add_argument("--file", metavar="FILE|-",
                   help='results as JSON: {"results": [...]} or a list')  # fmt: skip

    command("cancel", cmd_cancel, "cancel a run that has not ended")

    lim = command("limits", cmd_limits, "change a run's limits; resumes a budget-suspended run")
    for name in LIMITS:
        lim.add_argument(f"--{name.replace('_', '-')}", dest=name, type=limit_value,
                         default=_UNSET, metavar="N|none")  # fmt: skip
