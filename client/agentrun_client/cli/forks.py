"""`runs checkpoints|fork|forks`: where a run can be branched, a new run from one of those
places, and the runs made so (docs/forks.md)."""

from __future__ import annotations

import argparse
from typing import Any, get_args

from agentrun_client import _forks, _render
from agentrun_client._sync import Client
from agentrun_client.cli.flags import UsageError, pair, read_json
from agentrun_client.cli.output import EXIT_OK, AddCommand, Output
from agentrun_client.cli.runs import show_made, show_page
from agentrun_client.models import CheckpointList, Run, RunPage


def cmd_checkpoints(client: Client, args: argparse.Namespace, out: Output) -> int:
    listed = CheckpointList.model_validate(
        client.request(_forks.checkpoints_call(args.run_id)).json()
    )
    if out.json:
        out.doc(listed)
        return EXIT_OK
    out.text(_render.checkpoints_table(listed.data))
    out.note(
        f"{listed.messages} messages; fork from one: {out.prog} runs fork {listed.run_id} --at SEQ"
    )
    return EXIT_OK


def tool_results(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    """`--result CALL_ID=JSON` and `--error CALL_ID=JSON`, as `runs submit` takes them."""
    out: list[dict[str, Any]] = []
    for flag, is_error in (("result", False), ("error", True)):
        for text in getattr(args, flag) or ():
            call_id, output = pair(text, f"--{flag}", strict=True)
            out.append({"tool_call_id": call_id, "output": output, "is_error": is_error})
    return out or None


def overrides(args: argparse.Namespace) -> dict[str, Any] | None:
    """`--overrides` (JSON or @file), then `--model-json`, `--preamble`, `--max-turns` over
    it."""
    fields: dict[str, Any] = {}
    if args.overrides is not None:
        given = read_json(args.overrides, "--overrides")
        if not isinstance(given, dict):
            raise UsageError("--overrides: a JSON object is expected (fields of a create)")
        fields.update(given)
    if args.model_json is not None:
        model = read_json(args.model_json, "--model-json")
        if not isinstance(model, dict):
            raise UsageError('--model-json: a JSON object is expected ({"provider", "name"})')
        fields["model"] = model
    if args.preamble is not None:
        fields["preamble"] = args.preamble
    if args.max_turns is not None:
        fields["max_turns"] = args.max_turns
    return fields or None


def cmd_fork(client: Client, args: argparse.Namespace, out: Output) -> int:
    if args.on_divergence is not None and not args.replay:
        raise UsageError("--on-divergence is what a replay does: add --replay")
    body = _forks.fork_body(
        at=args.at,
        patch=None,
        tool_results=tool_results(args),
        append=args.append,
        overrides=overrides(args),
        mode="replay" if args.replay else "fork",
        on_divergence=args.on_divergence or "live",
    )
    call = _forks.fork_call(args.run_id, body, args.idempotency_key)
    return show_made(client, args, out, Run.model_validate(client.request(call).json()))


def cmd_forks(client: Client, args: argparse.Namespace, out: Output) -> int:
    if args.all:
        page = RunPage(data=list(client.runs.forks(args.run_id, page_size=100)))
    else:
        page = client.runs.forks_page(args.run_id, limit=args.limit, cursor=args.cursor)
    return show_page(out, page, f"forks {args.run_id}", _render.forks_table)


def add_commands(command: AddCommand) -> None:
    command("checkpoints", cmd_checkpoints, "list where a run can be forked, oldest first")

    f = command("fork", cmd_fork, "a new run from a checkpoint of a run (POST …/fork)")
    f.add_argument(
        "--at",
        type=int,
        metavar="SEQ",
        help="the checkpoint (`runs checkpoints`); default: the run's start",
    )
    f.add_argument(
        "--replay",
        action="store_true",
        help="answer model calls and tool rounds from the recording until the first difference",
    )
    f.add_argument(
        "--on-divergence",
        choices=get_args(_forks.OnDivergence),
        help="a replay at its first difference: go on live (default) or fail",
    )
    f.add_argument(
        "--result",
        action="append",
        metavar="CALL_ID=JSON",
        help="replace a recorded result, or answer a call the checkpoint waits "
        "for (a string is quoted: id='\"text\"'); repeat",
    )
    f.add_argument(
        "--error",
        action="append",
        metavar="CALL_ID=JSON",
        help="the same, as a failed call's result (is_error: true); repeat",
    )
    f.add_argument(
        "--append",
        action="append",
        metavar="TEXT",
        help="a user message after the checkpoint's; repeat",
    )
    f.add_argument("--model-json", metavar="JSON|@FILE", help="another `model` object for the fork")
    f.add_argument("--preamble", metavar="TEXT", help="another system prompt")
    f.add_argument("--max-turns", type=int, metavar="N", help="another model-call budget")
    f.add_argument(
        "--overrides",
        metavar="JSON|@FILE",
        help="any fields of a create to replace (the flags above go over it)",
    )
    f.add_argument("--idempotency-key", help="default: a fresh one (retries are safe)")
    f.add_argument("--wait", action="store_true", help="then wait until suspended or ended")
    f.add_argument("-q", "--quiet", action="store_true", help="print only the new run's id")

    fs = command("forks", cmd_forks, "list the forks and replays of a run, oldest first")
    fs.add_argument("--limit", type=int, default=20, help="runs per page (default 20)")
    fs.add_argument("--cursor", help="the page after the one that gave this cursor")
    fs.add_argument("--all", action="store_true", help="every page")
