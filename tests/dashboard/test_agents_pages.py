"""Named agents and trees of runs on the dashboard, on both back ends: the Agents page and
an agent's versions, a run's agent, parent, root and tree on its page, the runs list's
agent column; another tenant's people see none of it."""

from __future__ import annotations

import html
import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.agents.service import AgentService
from app.agents.specs import AgentIn, AgentUpdate
from app.core.scope import Scope
from app.dashboard import agents as agent_pages
from app.dashboard import trees
from app.protocols.sessions import Sessions, Turn
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.tenancy.operators import OperatorService
from tests.dashboard.helpers import completed_run
from tests.dashboard.test_people import browser, signed_in
from tests.helpers import drive_due
from tests.people import TENANT, person


def script(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"provider": "scripted", "name": "echo", "script": list(entries)}


def calls(name: str, n: int) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": {"input": f"q{i}"}} for i in range(n)]}


async def make(agents: AgentService, tenant: str = "default", **body: Any) -> None:
    body.setdefault("description", f"the {body['name']} agent")
    await agents.create(AgentIn.model_validate(body), tenant=tenant, actor="key:test")


async def team(agents: AgentService) -> None:
    """`boss` asks `mid` (which asks `leaf`, which waits for a client tool) and
    `researcher` (which answers at once)."""
    await make(agents, name="leaf", model=script(calls("lookup", 1)), tools=[{"name": "lookup"}])
    await make(
        agents,
        name="mid",
        model=script(calls("down", 1)),
        tools=[{"name": "down", "agent": "leaf"}],
    )
    await make(agents, name="researcher", model=script({"text": "found it"}))
    await make(
        agents,
        name="boss",
        description="plans & delegates",
        model=script(
            {
                "tool_calls": [
                    {"name": "ask", "arguments": {"input": "a"}},
                    {"name": "delegate", "arguments": {"input": "b"}},
                ]
            }
        ),
        tools=[
            {"name": "ask", "agent": "researcher@1"},
            {"name": "delegate", "agent": "mid"},
            {"name": "search", "description": "a client tool"},
        ],
    )


async def tree_run(service: RunService) -> dict[str, str]:
    """A tree of four runs, driven as far as it goes: {agent name: run id}."""
    root, _ = await service.create_run(RunCreate.model_validate({"agent": "boss", "prompt": "go"}))
    await drive_due(service.store, service.settings)
    views, _ = await service.list_runs(
        status=None, limit=10, cursor=None, scope=Scope.ALL, root_run_id=root.record.id
    )
    return {v.record.config["agent"]["name"]: v.record.id for v in views}


def section(page: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"(.*?)</(?:section|dd|tr)>', page, re.S)
    assert match, f"no #{element_id}"
    return match.group(1)


def statuses(page: str) -> dict[str, str]:
    """Each tree node's status: {run id: status}."""
    found = re.findall(r'<li id="node-([^"]+)".*?node-status">([a-z_]+)<', page, re.S)
    return dict(found)


async def test_the_agents_page_and_an_agents_versions(
    admin: httpx.AsyncClient, agents: AgentService, monkeypatch: pytest.MonkeyPatch
) -> None:
    await team(agents)
    update = {"description": "plans, delegates, checks", "model": script({"text": "v2"})}
    await agents.update(
        "boss",
        AgentUpdate.model_validate({**update, "tools": [{"name": "ask", "agent": "mid"}]}),
        tenant="default",
        actor="user:alice",
    )
    page = await admin.get("/admin/agents")
    assert page.status_code == 200
    text = page.text
    assert 'id="nav-agents"' in text and 'aria-current="page" id="nav-agents"' in text
    assert [m for m in re.findall(r'<tr id="agent-([^"]+)"', text)] == [
        "boss",
        "leaf",
        "mid",
        "researcher",
    ]
    boss = section(text, "agent-boss")
    assert '<td class="num">2</td>' in boss and "plans, delegates, checks" in boss
    assert "scripted/echo" in boss and "user:alice" in boss
    assert 'href="/admin/agents/mid"' in boss and "agent mid" in boss  # an agent tool
    mid = section(text, "agent-mid")
    assert "agent-tool" in mid and 'href="/admin/agents/leaf"' in mid
    assert "agent-tool" not in section(text, "agent-leaf")  # `lookup`: a client tool

    page = await admin.get("/admin/agents/boss")
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert re.findall(r'<article class="version" id="v(\d+)"', text) == ["2", "1"]
    v1 = text.split('id="v1"')[1]
    assert "plans & delegates" in v1 and "key:test" in v1
    assert 'href="/admin/agents/researcher#v1"' in v1 and "agent researcher@1" in v1
    spec = re.search(r'<pre class="spec" id="spec-1">(.*?)</pre>', text, re.S)
    assert spec and '"name": "search"' in spec.group(1) and '"agent": "mid"' in spec.group(1)
    assert "version 2" in section(text, "latest-version")

    # Paged by name; unknown or malformed names and cursors are answered, not a 500.
    monkeypatch.setattr(agent_pages, "PAGE_SIZE", 3)
    first = (await admin.get("/admin/agents")).text
    assert 'href="/admin/agents?cursor=mid"' in first and "agent-researcher" not in first
    second = (await admin.get("/admin/agents", params={"cursor": "mid"})).text
    assert re.findall(r'<tr id="agent-([^"]+)"', second) == ["researcher"]
    bad = await admin.get("/admin/agents", params={"cursor": "no\x00pe"})
    assert bad.status_code == 200 and "first page is shown" in bad.text
    for name in ("nobody", "bad%00name", "x" * 65, "bad%0Aname", "leaf%0A"):
        missing = await admin.get(f"/admin/agents/{name}")
        assert missing.status_code == 404, name
    await agents.delete("leaf", tenant="default")
    assert (await admin.get("/admin/agents/leaf")).status_code == 404
    assert "agent-leaf" not in (await admin.get("/admin/agents")).text


async def test_a_run_page_shows_its_agent_parent_root_and_tree(
    admin: httpx.AsyncClient,
    agents: AgentService,
    service: RunService,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await team(agents)
    ids = await tree_run(service)
    assert sorted(ids) == ["boss", "leaf", "mid", "researcher"]
    want = {
        ids["boss"]: "requires_action",
        ids["mid"]: "requires_action",
        ids["leaf"]: "requires_action",
        ids["researcher"]: "completed",
    }

    for name, run_id in ids.items():  # each node's page shows the whole tree
        page = await admin.get(f"/admin/runs/{run_id}")
        assert page.status_code == 200, name
        assert statuses(page.text) == want, name
        agent = section(page.text, "run-agent")
        assert f'href="/admin/agents/{name}#v1"' in agent and f"{name}@1" in agent

    leaf = (await admin.get(f"/admin/runs/{ids['leaf']}")).text
    assert f'href="/admin/runs/{ids["mid"]}"' in section(leaf, "run-parent")
    root = section(leaf, "run-root")
    assert f'href="/admin/runs/{ids["boss"]}"' in root and "depth 2" in root
    tree = section(leaf, "run-tree")
    # Nested, each parent's children in the order of its calls (`ask`, then `delegate`):
    # the root's item holds researcher's, then mid's, which holds the leaf's.
    at = {n: tree.index(f'<li id="node-{ids[n]}"') for n in ("boss", "researcher", "mid", "leaf")}
    assert at["boss"] < at["researcher"] < at["mid"] < at["leaf"]
    for outer, inner in (("boss", "researcher"), ("mid", "leaf")):  # inside its parent's item
        between = tree[at[outer] : at[inner]]
        assert "<ul>" in between and "</li>" not in between, (outer, inner)
    between = tree[at["researcher"] : at["mid"]]  # siblings
    assert between.count("</li>") == 1 and "<ul>" not in between
    assert "depth 2" in tree[at["leaf"] :] and "depth 1" in tree[at["mid"] : at["leaf"]]
    assert "(this run)" in tree.split(f'id="node-{ids["leaf"]}"')[1]

    boss = (await admin.get(f"/admin/runs/{ids['boss']}")).text
    assert 'id="run-parent"' not in boss and 'id="run-root"' not in boss
    assert 'id="run-tree"' in boss and 'id="tree-more"' not in boss
    assert "total tokens" in section(boss, "tree-usage")  # (its own and its descendants')
    monkeypatch.setattr(trees, "SHOWN", 2)  # a tree past what a page lists: its newest
    monkeypatch.setattr(trees, "PAGE", 1)
    cut = (await admin.get(f"/admin/runs/{ids['boss']}")).text
    assert len(statuses(cut)) == 2 and ids["boss"] not in statuses(cut)
    assert "GET /v1/runs?root_run_id=" + ids["boss"] in section(cut, "tree-more")
    monkeypatch.undo()

    # A run of no tree has no tree section and no agent; the runs list names each agent.
    plain = (await completed_run(service)).record.id
    page = (await admin.get(f"/admin/runs/{plain}")).text
    assert 'id="run-tree"' not in page and 'id="run-agent"' not in page
    listed = (await admin.get("/admin?status=any")).text
    for name, run_id in ids.items():
        row = section(listed, f"row-{run_id}")
        assert f'<a href="/admin/agents/{name}#v1"><code>{name}@1</code></a>' in row
    assert (
        '<span class="muted">—</span>' in section(listed, f"row-{plain}").split('class="agent"')[1]
    )


async def test_another_tenants_people_see_no_agent_and_no_tree(
    app: FastAPI,
    admin: httpx.AsyncClient,
    agents: AgentService,
    people: OperatorService,
    service: RunService,
) -> None:
    await team(agents)
    ids = await tree_run(service)
    await make(agents, tenant=TENANT, name="boss", description="acme's own boss", model=script())
    await person(people, "wile", role="viewer", tenant=TENANT)
    await person(people, "vera", role="viewer")
    async with browser(app) as client:
        await signed_in(client, "wile")
        page = (await client.get("/admin/agents")).text
        assert re.findall(r'<tr id="agent-([^"]+)"', page) == ["boss"]
        assert "acme's own boss" in html.unescape(page)
        theirs = await client.get("/admin/agents/boss")
        assert theirs.status_code == 200 and "plans &amp; delegates" not in theirs.text
        for name in ("mid", "leaf", "researcher"):
            assert (await client.get(f"/admin/agents/{name}")).status_code == 404, name
        for run_id in ids.values():
            assert (await client.get(f"/admin/runs/{run_id}")).status_code == 404
        listed = (await client.get("/admin?status=any")).text
        assert not [i for i in ids.values() if i in listed]
    async with browser(app) as client:  # a viewer of the default tenant sees it all
        await signed_in(client, "vera")
        page = (await client.get("/admin/agents")).text
        assert len(re.findall(r'<tr id="agent-', page)) == 4 and "acme's own" not in page
        assert (await client.get(f"/admin/runs/{ids['leaf']}")).status_code == 200


async def test_a_run_page_names_the_protocol_it_was_started_over(
    admin: httpx.AsyncClient, app: FastAPI, agents: AgentService, service: RunService
) -> None:
    """A run an open protocol started (its `origin` mark) says so; the API shows the mark."""
    plain = (await completed_run(service)).record.id
    await make(agents, name="greeter", model=script({"text": "hi"}))
    sessions: Sessions = app.state.sessions
    turn = Turn(
        agent="greeter",
        prompt="hello",
        tenant="default",
        actor="key:test",
        origin={"protocol": "ag-ui", "thread_id": "thread-7", "run_id": "r1"},
    )
    started = (await sessions.start(turn)).record
    page = (await admin.get(f"/admin/runs/{started.id}")).text
    assert "started over AG-UI (thread-7)" in section(page, "run-origin")
    assert "greeter@1" in section(page, "run-agent")
    assert 'id="run-origin"' not in (await admin.get(f"/admin/runs/{plain}")).text
