"""The approvals inbox with its runs' context, through the dashboard's HTTP interface on
both databases: each card shows its run's prompt, agent and the model's text of the turn
that asked (excerpts, the whole on expand), the round's other calls and its deadline,
read in a fixed number of statements whatever the number of cards; the filters; the poll
that adds new cards and deletes decided ones; and the tenants a page may show and act on."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from app.agents.service import AgentService
from app.agents.specs import AgentIn
from app.approvals import policies
from app.approvals.service import ApprovalService
from app.core.scope import Scope
from app.dashboard import inbox
from app.service.runs import RunService, RunView
from app.service.schemas import DecisionsIn, RunCreate
from app.store.runs import RunStore
from app.tenancy.operators import OperatorService
from tests.dashboard.test_approvals import gated_run
from tests.dashboard.test_people import browser, signed_in
from tests.helpers import drive_once, run_body, snapshot
from tests.people import TENANT, person

PROMPT = "Customer A-1042 says the kettle arrived broken and wants their 30 EUR back."
SAID = "The kettle is broken on arrival: I will refund the 30 EUR and look the order up."
REFUND = {
    "name": "refund",
    "description": "Refund an order",
    "parameters": {
        "type": "object",
        "properties": {"order": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["order", "amount"],
    },
    "approval": "always",
}
LOOKUP = {
    "name": "lookup",
    "description": "Look an order up",
    "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
}


def refund_model(said: str = SAID, *, lookup: bool = True) -> dict[str, Any]:
    """A model that says `said` and asks for a refund (gated) and a lookup (not)."""
    calls = [{"name": "refund", "arguments": {"order": "A-1042", "amount": 30}}]
    if lookup:
        calls.append({"name": "lookup", "arguments": {"order": "A-1042"}})
    turn = {"text": said, "tool_calls": calls}
    return {"provider": "scripted", "name": "demo", "script": [turn, {"text": "refunded"}]}


async def refund_run(
    service: RunService, *, tenant: str = "default", lookup: bool = True, **overrides: Any
) -> tuple[RunView, Any]:
    """A run suspended with `refund` awaiting approval and (`lookup`) `lookup` open."""
    tools = [REFUND, LOOKUP] if lookup else [REFUND]
    body = {"prompt": PROMPT, "model": refund_model(lookup=lookup), "tools": tools, **overrides}
    view, _ = await service.create_run(run_body(**body), tenant=tenant)
    await drive_once(service.store, service.settings)
    suspended = await service.get_run(view.record.id, scope=Scope.ALL)
    (gated,) = [c for c in suspended.pending if c.awaits_approval]
    return suspended, gated


async def agent_run(service: RunService, agents: AgentService, name: str) -> tuple[RunView, Any]:
    """A run of a new agent `name` (version 1) suspended as `refund_run`'s."""
    spec = {"model": refund_model(), "tools": [REFUND, LOOKUP], "description": "helps"}
    await agents.create(AgentIn.model_validate({"name": name, **spec}), tenant="default", actor="t")
    created, _ = await service.create_run(
        RunCreate.model_validate({"agent": name, "prompt": PROMPT})
    )
    await drive_once(service.store, service.settings)
    view = await service.get_run(created.record.id, scope=Scope.ALL)
    (gated,) = [c for c in view.pending if c.awaits_approval]
    return view, gated


def text(response: httpx.Response) -> str:
    return html.unescape(response.text)


def key(call: Any) -> str:
    """The element ids' suffix of a card (`approval-<run>-<call id>`)."""
    return f"{call.run_id}-{call.call_id}"


def shown(call: Any) -> str:
    """The key a page tells its poll it shows."""
    return f"{call.run_id}:{call.round}:{call.position}"


def inner(page: str, element_id: str) -> str:
    """The text of the element with this id (up to its first closing tag)."""
    match = re.search(rf'id="{re.escape(element_id)}"[^>]*>(.*?)</', page, re.S)
    assert match, f"no #{element_id} on the page"
    return html.unescape(match.group(1))


def cards(page: str) -> list[str]:
    return re.findall(r'<article class="approval card" id="approval-([^"]+)"', page)


@contextmanager
def statements(store: RunStore) -> Iterator[list[str]]:
    """The SQL statements run through the engine meanwhile."""
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    engine = store.engine.sync_engine
    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)


async def test_a_card_shows_the_runs_prompt_agent_model_text_and_round(
    admin: httpx.AsyncClient, service: RunService, agents: AgentService
) -> None:
    _, gated = await agent_run(service, agents, "support-bot")
    page = text(await admin.get("/admin/approvals"))
    k = key(gated)
    assert cards(page) == [k]
    assert inner(page, f"prompt-{k}") == PROMPT
    assert inner(page, f"said-{k}") == SAID
    assert inner(page, f"agent-of-{k}") == "agent support-bot@1"
    assert 'href="/admin/agents/support-bot#v1"' in page
    others = re.search(rf'<ul class="calls others" id="others-{k}">(.*?)</ul>', page, re.S)
    assert others, "no other calls listed"  # the lookup, handed to its executor
    assert re.findall(r"<strong>(\w+)</strong>", others.group(1)) == ["lookup"]
    assert "open: its executor answers it" in others.group(1)
    assert f'id="deadline-{k}"' not in page  # (no approval_timeout: no deadline)
    assert f'name="shown" value="{shown(gated)}"' in page
    digest = policies.arguments_hash(gated.arguments)
    assert f'name="call" value="{shown(gated)}:{digest}" form="bulk"' in page


async def test_long_texts_are_excerpts_with_the_whole_on_expand_and_deadlines_show(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    prompt = "Please look at this order. " * 40  # (over 1000 characters)
    said = "x" * 299 + "y"  # exactly the excerpt's length: shown whole
    _, gated = await refund_run(
        service, prompt=prompt, model=refund_model(said), approval_timeout=3600
    )
    page = await admin.get("/admin/approvals")
    body = page.text
    k = key(gated)
    excerpt = inner(body, f"prompt-{k}")
    assert len(excerpt) == inbox.EXCERPT and excerpt.endswith("…")
    assert prompt.startswith(excerpt[:-1])
    assert f'id="prompt-{k}-more"' in body and html.escape(prompt.strip()) in body
    assert inner(body, f"said-{k}") == said and f'id="said-{k}-more"' not in body
    meter = re.search(rf'<meter[^>]*id="deadline-{k}"', body)
    assert meter and 'value="0.000"' in meter.group(0)
    assert "decided by the run's timeout in 59m" in text(page)


async def test_the_context_of_a_page_is_read_in_the_same_statements_for_any_number_of_cards(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    await refund_run(service)
    with statements(service.store) as one:
        assert len(cards((await admin.get("/admin/approvals")).text)) == 1
    for _ in range(4):
        await refund_run(service)
    with statements(service.store) as five:
        page = text(await admin.get("/admin/approvals"))
    assert len(cards(page)) == 5 and page.count(PROMPT) == 5 and page.count(SAID) == 5
    assert one and len(five) == len(one), (one, five)


async def test_filters_by_tool_and_agent_are_kept_in_the_pager_poll_and_bulk_form(
    admin: httpx.AsyncClient,
    service: RunService,
    agents: AgentService,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, add = await gated_run(service)
    _, refund = await refund_run(service)
    _, from_agent = await agent_run(service, agents, "kettles")

    everything = text(await admin.get("/admin/approvals"))
    assert set(cards(everything)) == {key(add), key(refund), key(from_agent)}
    refunds = text(await admin.get("/admin/approvals", params={"tool": "refund"}))
    assert set(cards(refunds)) == {key(refund), key(from_agent)}
    theirs = text(await admin.get("/admin/approvals", params={"agent": "kettles"}))
    assert cards(theirs) == [key(from_agent)]
    both = await admin.get("/admin/approvals", params={"agent": "kettles", "tool": "add"})
    assert cards(both.text) == [] and "among these filters" in both.text

    monkeypatch.setattr(inbox, "PAGE_SIZE", 1)
    first = text(await admin.get("/admin/approvals", params={"tool": "refund"}))
    older = re.search(r'href="/admin/approvals\?([^"]+)"[^>]*id="older"', first)
    assert older and "tool=refund" in older.group(1) and "cursor=" in older.group(1)
    assert 'hx-get="/admin/approvals/poll?tool=refund"' in first
    assert '<input type="hidden" name="tool" value="refund">' in first
    second = text(await admin.get("/admin/approvals?" + html.unescape(older.group(1))))
    assert cards(second) == [key(refund)]  # (the older of the two refunds)
    assert "cursor=" in re.search(r'hx-get="([^"]+)"', second).group(1)  # type: ignore[union-attr]

    for params, error in [
        ({"tool": "r" * 256}, "tool filter: a name has at most 255 characters"),
        ({"agent": "a\x00b"}, "agent filter: a name cannot hold a NUL character"),
    ]:
        page = await admin.get("/admin/approvals", params=params)
        assert page.status_code == 200 and error in text(page)
        assert len(cards(page.text)) == 1  # (the filter dropped; PAGE_SIZE 1)


async def rejected_elsewhere(approvals: ApprovalService, call: Any, message: str) -> None:
    """`call` rejected by someone else (another page, the API) meanwhile."""
    decision = {
        "tool_call_id": call.call_id,
        "arguments_hash": policies.arguments_hash(call.arguments),
        "action": "reject",
        "message": message,
    }
    body = DecisionsIn.model_validate({"decisions": [decision]})
    await approvals.decide(call.run_id, body, actor="key:elsewhere", scope=Scope.ALL)


async def test_the_poll_adds_new_cards_and_deletes_those_no_longer_waiting(
    admin: httpx.AsyncClient, service: RunService, approvals: ApprovalService
) -> None:
    _, first = await refund_run(service)
    page = (await admin.get("/admin/approvals")).text
    assert 'hx-get="/admin/approvals/poll?"' in page and 'hx-include=".shown-key"' in page
    assert 'hx-trigger="every 3s"' in page and 'hx-swap="afterbegin"' in page
    quiet = await admin.get("/admin/approvals/poll", params={"shown": [shown(first)]})
    assert quiet.status_code == 200 and cards(quiet.text) == []
    assert 'hx-swap-oob="delete"' not in quiet.text
    assert re.search(r'id="no-approvals" hx-swap-oob="true" hidden', quiet.text)

    _, second = await refund_run(service)
    news = await admin.get("/admin/approvals/poll", params={"shown": [shown(first)]})
    assert cards(news.text) == [key(second)]
    assert inner(news.text, f"prompt-{key(second)}") == PROMPT
    assert f'id="card-{second.run_id}-{second.round}-{second.position}"' in news.text
    # Filtered by another tool, or on an older page: nothing new is added.
    other = await admin.get("/admin/approvals/poll", params={"shown": [], "tool": "add"})
    assert cards(other.text) == []
    paged = await admin.get(
        "/admin/approvals/poll", params={"shown": [shown(first)], "cursor": "AAAA"}
    )
    assert cards(paged.text) == []
    # A card older than the oldest shown is left to a reload (it is on a later page); one
    # between the cards shown is added (its worker stamped it before a newer one shown).
    behind = await admin.get("/admin/approvals/poll", params={"shown": [shown(second)]})
    assert cards(behind.text) == []
    _, third = await refund_run(service)
    between = await admin.get(
        "/admin/approvals/poll", params={"shown": [shown(first), shown(third)]}
    )
    assert cards(between.text) == [key(second)]
    await rejected_elsewhere(approvals, third, "no")

    await rejected_elsewhere(approvals, first, "no")
    both = [shown(first), shown(second)]
    gone = await admin.get("/admin/approvals/poll", params={"shown": both})
    slot = f"card-{first.run_id}-{first.round}-{first.position}"
    assert f'<div id="{slot}" hx-swap-oob="delete"></div>' in gone.text
    assert cards(gone.text) == [] and 'hx-swap-oob="delete"' in gone.text
    assert re.search(r'id="no-approvals" hx-swap-oob="true" hidden', gone.text)
    # Shown only the decided one, the page gets the newer waiting one.
    alone = await admin.get("/admin/approvals/poll", params={"shown": [shown(first)]})
    assert cards(alone.text) == [key(second)] and f'id="{slot}" hx-swap-oob="delete"' in alone.text
    await rejected_elsewhere(approvals, second, "no again")
    last = await admin.get("/admin/approvals/poll", params={"shown": both})
    assert re.search(r'id="no-approvals" hx-swap-oob="true">', last.text)  # (none left)
    assert last.text.count('hx-swap-oob="delete"') == 2

    for bad in (["nope"], ["run:1"], ["a:b:c"]):
        refused = await admin.get("/admin/approvals/poll", params={"shown": bad})
        assert refused.status_code == 400, bad
    # A page left open until it shows too many cards is told to reload itself.
    many = [shown(second)] * (inbox.MAX_SHOWN + 1)
    reload = await admin.get("/admin/approvals/poll", params={"shown": many})
    assert reload.status_code == 200 and reload.headers["HX-Refresh"] == "true"


async def test_an_admin_views_other_tenants_read_only_and_decides_only_their_own(
    app: FastAPI,
    admin: httpx.AsyncClient,
    service: RunService,
    people: OperatorService,
) -> None:
    _, mine = await refund_run(service)
    theirs_view, theirs = await refund_run(service, tenant=TENANT)
    own = text(await admin.get("/admin/approvals"))
    assert cards(own) == [key(mine)] and 'id="f-tenant"' in own

    page = text(await admin.get("/admin/approvals", params={"tenant": TENANT}))
    assert cards(page) == [key(theirs)] and 'id="read-only"' in page
    assert inner(page, f"tenant-of-{key(theirs)}") == f"tenant {TENANT}"
    assert inner(page, f"prompt-{key(theirs)}") == PROMPT
    assert 'name="call"' not in page and f"/admin/runs/{theirs.run_id}/approve" not in page
    assert 'hx-get="/admin/approvals/poll?tenant=acme"' in page

    every = text(await admin.get("/admin/approvals", params={"tenant": "*"}))
    assert set(cards(every)) == {key(mine), key(theirs)}
    assert f'id="select-{key(mine)}"' in every and f'id="select-{key(theirs)}"' not in every
    poll = await admin.get("/admin/approvals/poll", params={"tenant": "*", "shown": []})
    assert set(cards(poll.text)) == {key(mine), key(theirs)}
    assert 'name="call"' in poll.text and f'id="select-{key(theirs)}"' not in poll.text
    bad = text(await admin.get("/admin/approvals", params={"tenant": "Not A Tenant"}))
    assert "no tenant can be named" in bad and cards(bad) == [key(mine)]

    # Their calls are decided by nobody here: neither one by one nor in bulk.
    before = await snapshot(service.store, theirs.run_id)
    digest = policies.arguments_hash(theirs.arguments)
    single = await admin.post(
        f"/admin/runs/{theirs.run_id}/approve",
        data={
            "csrf_token": admin.csrf,  # type: ignore[attr-defined]
            "confirmed": "yes",
            "call_id": theirs.call_id,
            "arguments_hash": digest,
            "return_to": "inbox",
        },
    )
    assert single.status_code == 404
    bulk = await admin.post(
        "/admin/approvals/bulk",
        data={
            "csrf_token": admin.csrf,  # type: ignore[attr-defined]
            "confirmed": "yes",
            "action": "approve",
            "call": f"{shown(theirs)}:{digest}",
        },
    )
    assert bulk.status_code == 200
    assert "0 of 1 tool call approved" in text(bulk)
    assert "not found among your tenant" in text(bulk)
    assert await snapshot(service.store, theirs.run_id) == before
    assert theirs_view.record.tenant_id == TENANT

    # A person of the default tenant (no tenants:manage) sees their own tenant's only.
    await person(people, "olga", role="operator")
    async with browser(app) as client:
        await signed_in(client, "olga")
        narrow = text(await client.get("/admin/approvals", params={"tenant": TENANT}))
        assert "Only a deployment's admins see other tenants' runs" in narrow
        assert cards(narrow) == [key(mine)] and 'id="f-tenant"' not in narrow
        poll = await client.get("/admin/approvals/poll", params={"tenant": "*", "shown": []})
        assert cards(poll.text) == [key(mine)]  # (the refused filter dropped, as on the page)
