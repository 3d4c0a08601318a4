"""`agents create|list|get|versions|update|delete`: the tenant's named agents from a shell.
`create` and `update` take a body (`--body`: JSON, `@file.json`, `@file.toml`) with the
flags over it, as `runs create` does; `update` starts from the latest version unless a
body is given."""

from __future__ import annotations

import argparse
from typing import Any

from agentrun_client import _render
from agentrun_client._sync import Client
from agentrun_client.cli.flags import UsageError, model_spec, pair, read_body, read_json
from agentrun_client.cli.output import EXIT_OK, AddCommand, Output
from agentrun_client.models import Agent, AgentPage


def agent_body(args: argparse.Namespace, base: dict[str, Any]) -> dict[str, Any]:
    """The agent's fields: `--body` (else `base`), then every flag given over it."""
    body = read_body(args.body, "--body") if args.body is not None else dict(base)
    body.pop("name", None)  # (the command's NAME)
    if args.description is not None:
        body["description"] = args.description
    if args.model is not None:
        body["model"] = model_spec(args.model)
    if args.param:
        if not isinstance(body.get("model"), dict):
            raise UsageError("--param needs --model")
        params = dict(pair(p, "--param", strict=False) for p in args.param)
        body["model"] = {**body["model"], **params}
    if args.tools is not None:
        body["tools"] = read_json(args.tools, "--tools")
    if args.preamble is not None:
        body["preamble"] = args.preamble
    if args.max_turns is not None:
        body["max_turns"] = args.max_turns
    if args.metadata:
        meta = dict(pair(m, "--metadata", strict=False) for m in args.metadata)
        body["metadata"] = {**body.get("metadata", {}), **meta}
    missing = [f for f in ("description", "model") if f not in body]
    if missing:
        raise UsageError(
            f"agents {args.command} needs {' and '.join(missing)} (as a flag or in --body)"
        )
    return body


def show(out: Output, agent: Agent) -> None:
    out.doc(agent) if out.json else out.text(_render.agent_text(agent))


def cmd_create(client: Client, args: argparse.Namespace, out: Output) -> int:
    body = agent_body(args, {})
    description, model = body.pop("description"), body.pop("model")
    show(out, client.agents.create(args.name, description, model, **body))
    return EXIT_OK


def cmd_update(client: Client, args: argparse.Namespace, out: Output) -> int:
    base: dict[str, Any] = {}
    if args.body is None:
        latest = client.agents.get(args.name)
        base = {**latest.spec, "description": latest.description}
    body = agent_body(args, base)
    description, model = body.pop("description"), body.pop("model")
    show(out, client.agents.update(args.name, description, model, **body))
    return EXIT_OK


def cmd_get(client: Client, args: argparse.Namespace, out: Output) -> int:
    show(out, client.agents.get(args.name, args.version))
    return EXIT_OK


def cmd_versions(client: Client, args: argparse.Namespace, out: Output) -> int:
    page = AgentPage(data=client.agents.versions(args.name))
    out.doc(page) if out.json else out.text(_render.agents_table(page.data))
    return EXIT_OK


def cmd_list(client: Client, args: argparse.Namespace, out: Output) -> int:
    if args.all:
        page = AgentPage(data=list(client.agents.list(page_size=100)))
    else:
        page = client.agents.list_page(limit=args.limit, cursor=args.cursor)
    if out.json:
        out.doc(page)
        return EXIT_OK
    out.text(_render.agents_table(page.data))
    if page.next_cursor:
        out.note(f"more: {out.prog} agents list --cursor {page.next_cursor} (or --all)")
    return EXIT_OK


def cmd_delete(client: Client, args: argparse.Namespace, out: Output) -> int:
    client.agents.delete(args.name)
    if out.json:
        out.doc({"name": args.name, "deleted": True})
    else:
        out.text(f"deleted {args.name}: no new run starts from it")
    return EXIT_OK


def _body_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--description", help="what it does (for people and agent tools)")
    p.add_argument("--model", help="PROVIDER:NAME, or the whole `model` object as JSON or @file")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a model parameter (VALUE: JSON, else text); repeat")  # fmt: skip
    p.add_argument("--tools", metavar="JSON|@FILE", help='tool definitions: a JSON list (an '
                   'agent tool: {"name": "ask", "agent": "researcher"})')  # fmt: skip
    p.add_argument("--preamble", help="the system prompt")
    p.add_argument("--max-turns", type=int, metavar="N", help="model-call budget of its runs")
    p.add_argument("--metadata", action="append", metavar="KEY=VALUE",
                   help="VALUE: JSON, else text; repeat")  # fmt: skip
    p.add_argument("--body", metavar="JSON|@FILE",
                   help="the agent's fields (a JSON object, or @FILE.toml); the flags above "
                   "override them")  # fmt: skip


def add_commands(command: AddCommand) -> None:
    """The agents' commands, with their flags."""
    c = command("create", cmd_create, "create a named agent: its version 1 (POST /v1/agents)")
    _body_flags(c)

    ls = command("list", cmd_list, "list the agents (each at its latest version), by name")
    ls.add_argument("--limit", type=int, default=20, help="agents per page (default 20)")
    ls.add_argument("--cursor", help="the page after the one that gave this cursor")
    ls.add_argument("--all", action="store_true", help="every page")

    g = command("get", cmd_get, "show an agent at its latest version (or --version)")
    g.add_argument("--version", type=int, metavar="N", help="this version instead")

    command("versions", cmd_versions, "list an agent's versions, oldest first")

    u = command("update", cmd_update, "make an agent's next version: the latest one with the "
                "flags over it, or --body whole (PUT /v1/agents/NAME)")  # fmt: skip
    _body_flags(u)

    command("delete", cmd_delete, "delete an agent: no new run starts from it")
