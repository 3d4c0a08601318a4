"""`agentrun-client runs create|get|list|wait|events|submit|cancel|limits|approvals|approve|
reject`: the API from a shell,
for scripts and operators (also `agentrun runs …` where the service is installed).

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO, get_args

from pydantic import BaseModel

from agentrun_client import _base, _render
from agentrun_client._sync import Client
from agentrun_client.errors import AgentrunError, APIError, InvalidInput, WaitTimeout
from agentrun_client.models import Approval, ApprovalPage, Run, RunPage, RunStatus, SubmitOutcome

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_OTHER_STATUS, EXIT_TIMEOUT = 0, 1, 2, 3, 4
STATUSES = [s.value for s in RunStatus]
#: The service's words the flags take (tests/client/test_vocabulary.py checks them).
TOOL_CHOICES = ("auto", "none", "required")
INVALID_TOOL_CALL_ACTIONS = ("fail", "retry", "repair", "skip", "stop", "ask")
LIMITS = ("max_total_tokens", "max_cost_usd", "max_model_calls", "max_duration_seconds")


class UsageError(Exception):
    """A flag's value cannot be used (exit status 2)."""


# --- reading flag values ------------------------------------------------------------------


def read_json(text: str, what: str) -> Any:
    """JSON text, `@path` for a file's content, or `@-` for stdin."""
    source = text
    if text.startswith("@"):
        path = text[1:]
        try:
            source = sys.stdin.read() if path == "-" else Path(path).read_text()
        except OSError as exc:
            raise UsageError(f"{what}: cannot read {path}: {exc.strerror}") from None
    try:
        return json.loads(source)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what}: not JSON ({exc.msg} at {exc.pos}): {source[:80]!r}") from None


def pair(text: str, what: str, *, strict: bool) -> tuple[str, Any]:
    """`KEY=VALUE`. Strict: VALUE is JSON. Otherwise VALUE is JSON when it parses as JSON
    and the text itself when it does not (`temperature=0.2` a number, `effort=low` text)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"{what}: expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        if strict:
            hint = f"""(a string is quoted: {key}='"{value}"')"""
            raise UsageError(f"{what} {key}: not JSON: {value!r} {hint}") from None
        return key, value


def model_spec(text: str) -> dict[str, Any]:
    """`provider:name`, a JSON object, or `@file` holding one."""
    if text.startswith(("{", "@")):
        spec = read_json(text, "--model")
        if not isinstance(spec, dict):
            raise UsageError("--model: a JSON object is expected")
        return spec
    provider, sep, name = text.partition(":")
    if not sep or not provider or not name:
        raise UsageError(f"--model: expected PROVIDER:NAME or a JSON object, got {text!r}")
    return {"provider": provider, "name": name}


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
    needed = ("prompt",) if "previous_run_id" in body else ("prompt", "model")
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


# --- the commands -------------------------------------------------------------------------


class Output:
    """Where a command writes, as JSON or for a person."""

    def __init__(self, as_json: bool, prog: str, stdout: TextIO, stderr: TextIO) -> None:
        self.json, self.prog, self.stdout, self.stderr = as_json, prog, stdout, stderr

    def doc(self, value: Any) -> None:
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", by_alias=True)
        print(json.dumps(value, ensure_ascii=False), file=self.stdout, flush=True)

    def text(self, text: str) -> None:
        print(text, file=self.stdout, flush=True)

    def run(self, run: Run) -> None:
        self.doc(run) if self.json else self.text(_render.run_text(run, self.prog))

    def note(self, text: str) -> None:
        print(text, file=self.stderr, flush=True)


def cmd_create(client: Client, args: argparse.Namespace, out: Output) -> int:
    body = create_body(args)
    prompt, model, tools = body.pop("prompt"), body.pop("model", None), body.pop("tools", None)
    call = _base.create_call(prompt, model, tools, args.idempotency_key, body)
    run = Run.model_validate(client.request(call).json())
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
        page = RunPage(data=list(client.runs.list(status=args.status, page_size=100)))
    else:
        page = client.runs.list_page(status=args.status, limit=args.limit, cursor=args.cursor)
    if out.json:
        out.doc(page)
        return EXIT_OK
    out.text(_render.runs_table(page.data))
    if page.next_cursor:
        out.note(f"more: {out.prog} runs list --cursor {page.next_cursor} (or --all)")
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


def cmd_approvals(client: Client, args: argparse.Namespace, out: Output) -> int:
    if args.run_id is not None:
        page = ApprovalPage(data=client.approvals.get(args.run_id))
    elif args.all:
        page = ApprovalPage(data=list(client.approvals.list(page_size=100)))
    else:
        page = client.approvals.list_page(limit=args.limit, cursor=args.cursor)
    if out.json:
        out.doc(page)
        return EXIT_OK
    out.text(_render.approvals_table(page.data))
    if page.next_cursor:
        out.note(f"more: {out.prog} runs approvals --cursor {page.next_cursor} (or --all)")
    return EXIT_OK


def gated_call(client: Client, args: argparse.Namespace) -> Approval:
    """The approval the command decides, read now: its arguments hash is the one sent,
    unless `--arguments-hash` names the one the person saw (then a change is a 409). The
    pending call with that id (`--position` tells apart two of one round), else the latest
    decided one (deciding it again the same way is a no-op, another way a 409)."""
    named = [
        a
        for a in client.approvals.get(args.run_id)
        if a.tool_call_id == args.call_id and args.position in (None, a.position)
    ]
    pending = [a for a in named if a.is_pending]
    if len(pending) > 1:
        raise UsageError(
            f"run {args.run_id} has {len(pending)} gated calls {args.call_id!r} in one round: "
            f"name one with --position ({', '.join(str(a.position) for a in pending)})"
        )
    chosen = pending or sorted(named, key=lambda a: (a.round or 0, a.position or 0))[-1:]
    if not chosen:
        raise UsageError(
            f"run {args.run_id} has no gated tool call {args.call_id!r} "
            f"(`{args.prog} runs approvals {args.run_id}` lists them)"
        )
    approval = chosen[0]
    if args.arguments_hash:
        approval = approval.model_copy(update={"arguments_hash": args.arguments_hash})
    return approval


def cmd_approve(client: Client, args: argparse.Namespace, out: Output) -> int:
    edited = None
    if args.arguments is not None:
        edited = read_json(args.arguments, "--arguments")
        if not isinstance(edited, dict):
            raise UsageError("--arguments: a JSON object is expected")
    approval = gated_call(client, args)
    run = client.approvals.approve(
        args.run_id,
        approval.tool_call_id,
        approval.arguments_hash,
        arguments=edited,
        position=approval.position,
    )
    if out.json:
        out.doc(run)
    else:
        out.text(_render.decided_text("approved", approval, run, out.prog))
    return EXIT_OK


def cmd_reject(client: Client, args: argparse.Namespace, out: Output) -> int:
    approval = gated_call(client, args)
    run = client.approvals.reject(
        args.run_id,
        approval.tool_call_id,
        approval.arguments_hash,
        args.message,
        position=approval.position,
    )
    if out.json:
        out.doc(run)
    else:
        out.text(_render.decided_text("rejected", approval, run, out.prog))
    return EXIT_OK


Command = Callable[[Client, argparse.Namespace, Output], int]


# --- the command line ---------------------------------------------------------------------


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
    top = parser.add_subparsers(dest="group", required=True, metavar="runs")
    runs = top.add_parser("runs", parents=[common], help="create, inspect, wait on, answer runs")
    sub = runs.add_subparsers(dest="command", required=True)

    def command(name: str, fn: Command, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=fn, prog=prog)
        if name not in ("create", "list", "approvals"):
            p.add_argument("run_id", metavar="RUN_ID")
        return p

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

    a = command("approvals", cmd_approvals, "list the gated tool calls awaiting a decision")
    a.add_argument("run_id", metavar="RUN_ID", nargs="?",
                   help="only this run's (with the decided ones)")  # fmt: skip
    a.add_argument("--limit", type=int, default=20, help="per page (default 20)")
    a.add_argument("--cursor", help="the page after the one that gave this cursor")
    a.add_argument("--all", action="store_true", help="every page")

    hash_help = "the hash of the arguments you reviewed (default: as read now)"
    position_help = "the call's place in its round, when two calls of it share CALL_ID"
    ap = command("approve", cmd_approve, "approve a gated tool call (POST …/approvals)")
    ap.add_argument("call_id", metavar="CALL_ID")
    ap.add_argument("--arguments", metavar="JSON|@FILE",
                    help="run these arguments instead of the model's (a JSON object)")  # fmt: skip
    ap.add_argument("--arguments-hash", metavar="SHA256", help=hash_help)
    ap.add_argument("--position", type=int, help=position_help)
    rj = command("reject", cmd_reject, "reject a gated tool call; the model gets the message")
    rj.add_argument("call_id", metavar="CALL_ID")
    rj.add_argument("--message", required=True, help="the error result the model receives")
    rj.add_argument("--arguments-hash", metavar="SHA256", help=hash_help)
    rj.add_argument("--position", type=int, help=position_help)
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


if __name__ == "__main__":
    sys.exit(main())
