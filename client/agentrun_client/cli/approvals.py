"""`runs approvals|approve|reject`: the gated tool calls awaiting a person's decision."""

from __future__ import annotations

import argparse

from agentrun_client import _render
from agentrun_client._sync import Client
from agentrun_client.cli.flags import UsageError, read_json
from agentrun_client.cli.output import EXIT_OK, AddCommand, Output
from agentrun_client.models import Approval, ApprovalPage


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


def add_commands(command: AddCommand) -> None:
    """`approvals`, `approve` and `reject`, with their flags."""
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
