"""Named agents and trees of runs through the client: `client.agents` in-process; and
`client.run` / `client.execute` against the API on a loopback port with workers
in-process (both databases), serving the local tools of runs deep in a tree, each call
answered to the run that made it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agentrun_client import (
    Agent,
    AgentRef,
    ApprovalCall,
    Approve,
    AsyncClient,
    Client,
    Conflict,
    InvalidInput,
    NotFound,
    Run,
    RunStatus,
    ToolCallContext,
    ToolRegistry,
    ValidationError,
)
from tests.client.conftest import Live, scripted

#: An agent tool that takes any object (the scripted model calls each tool with `{}`).
ANY = {"type": "object"}


def unique(name: str) -> str:
    """An agent name no other test uses (the tests of a process share a database)."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


def lookups(seen: list[str]) -> ToolRegistry:
    """`lookup`, which notes the run whose call it answers."""
    registry = ToolRegistry()

    @registry.tool
    def lookup(ctx: ToolCallContext) -> str:
        """Look something up."""
        seen.append(ctx.run_id)
        return "42"

    return registry


def make_chain(client: Client, registry: ToolRegistry, **leaf: Any) -> dict[str, str]:
    """`boss` asks `mid`, which asks `leaf`, whose `lookup` is the registry's: a root, a
    child and a grandchild that needs a local tool. Each answers with its tools' results
    (the scripted model without a script). Their names."""
    names = {n: unique(n) for n in ("leaf", "mid", "boss")}
    client.agents.create(names["leaf"], "looks things up", scripted(), tools=registry, **leaf)
    ask_leaf = {"name": "ask_leaf", "agent": names["leaf"], "parameters": ANY}
    client.agents.create(names["mid"], "asks the leaf", scripted(), tools=[ask_leaf])
    ask_mid = {"name": "ask_mid", "agent": f"{names['mid']}@1", "parameters": ANY}
    client.agents.create(names["boss"], "asks the middle", scripted(), tools=[ask_mid])
    return names


def tree_of(client: Client, root: Run) -> dict[int, Run]:
    """The runs of `root`'s tree by depth (a chain: one a level)."""
    runs = list(client.runs.list(root_run_id=root.id))
    by_depth = {r.depth: r for r in runs}
    assert len(by_depth) == len(runs), "a chain"
    return by_depth


async def test_agents_are_created_read_versioned_listed_and_deleted(asgi: AsyncClient) -> None:
    helper, other = unique("helper"), unique("other")
    made = await asgi.agents.create(
        helper,
        "answers questions",
        scripted({"text": "hi"}),
        preamble="Be brief.",
        webhook="http://127.0.0.1:9/hook",
        max_turns=3,
    )
    assert isinstance(made, Agent) and (made.name, made.version) == (helper, 1)
    assert made.ref == f"{helper}@1" and made.created_at.tzinfo
    assert made.description == "answers questions"
    assert made.spec["preamble"] == "Be brief." and made.spec["max_turns"] == 3
    assert made.spec["webhook"]["url"] == "http://127.0.0.1:9/hook"
    with pytest.raises(Conflict) as taken:
        await asgi.agents.create(helper, "again", scripted())
    assert taken.value.code == "agent-exists"

    second = await asgi.agents.update(helper, "answers questions, shorter", scripted())
    assert second.version == 2 and "preamble" not in second.spec  # (a version is whole)
    assert (await asgi.agents.get(helper)).version == 2
    first = await asgi.agents.get(helper, version=1)
    assert first.spec["preamble"] == "Be brief."
    assert [a.version for a in await asgi.agents.versions(helper)] == [1, 2]

    await asgi.agents.create(other, "another", scripted())
    listed = [(a.name, a.version) async for a in asgi.agents.list(page_size=1)]
    assert (helper, 2) in listed and (other, 1) in listed
    assert [name for name, _ in listed] == sorted(name for name, _ in listed)  # by name
    page = await asgi.agents.list_page(limit=1)
    assert len(page.data) == 1 and page.next_cursor is not None

    await asgi.agents.delete(other)
    with pytest.raises(NotFound) as gone:
        await asgi.agents.get(other)
    assert gone.value.code == "agent-not-found"
    with pytest.raises(InvalidInput, match="not an agent name"):
        await asgi.agents.get("../runs")


async def test_a_run_starts_from_an_agent_and_shows_where_it_is_in_its_tree(
    asgi: AsyncClient,
) -> None:
    helper = unique("helper")
    await asgi.agents.create(helper, "answers", scripted({"text": "hi"}))
    await asgi.agents.update(helper, "answers", scripted({"text": "hello"}))
    run = await asgi.runs.create(prompt="go", agent=f"{helper}@1", metadata={"k": "v"})
    assert run.agent == AgentRef(name=helper, version=1)
    assert (run.root_run_id, run.parent_run_id, run.depth) == (run.id, None, 0)
    assert run.metadata == {"k": "v"} and run.model["script"] == [{"text": "hi"}]
    done = await asgi.runs.wait(run.id, RunStatus.COMPLETED, timeout=30)
    assert done.output == "hi"
    assert [r.id async for r in asgi.runs.children(run.id)] == []
    assert [r.id async for r in asgi.runs.list(root_run_id=run.id)] == [run.id]
    with pytest.raises(ValidationError) as refused:  # (its model is the agent's)
        await asgi.runs.create(prompt="go", agent=helper, model=scripted())
    assert "model" in refused.value.detail


def test_client_run_serves_the_tool_of_a_grandchild(live: Live) -> None:
    seen: list[str] = []
    registry = lookups(seen)
    with live.client() as client:
        names = make_chain(client, registry)
        run = client.run("go", tools=registry, agent=names["boss"], timeout=60)
        assert run.status == RunStatus.COMPLETED, run
        assert run.output == (
            "Tool results: ask_mid: Tool results: ask_leaf: Tool results: lookup: 42"
        )
        tree = tree_of(client, run)
        assert sorted(tree) == [0, 1, 2]
        root, mid, leaf = tree[0], tree[1], tree[2]
        assert root.id == run.id and root.agent == AgentRef(name=names["boss"], version=1)
        assert seen == [leaf.id], "the grandchild's call, answered to the grandchild"
        assert (leaf.parent_run_id, leaf.root_run_id, leaf.agent) == (
            mid.id,
            run.id,
            AgentRef(name=names["leaf"], version=1),
        )
        assert [c.id for c in client.runs.children(run.id)] == [mid.id]
        assert [c.id for c in client.runs.children(mid.id)] == [leaf.id]
        assert leaf.parent_tool_call_id is not None
        read = client.runs.get(run.id)
        assert read.usage is not None and read.tree_usage is not None
        assert read.tree_usage.total_tokens == sum(
            r.usage.total_tokens for r in tree.values() if r.usage is not None
        )


async def test_async_execute_serves_grandchildren_in_parallel(live: Live) -> None:
    """Two children at once, each with a grandchild that needs the tool: both calls are
    executed here and answered each to its own run."""
    seen: list[str] = []
    registry = lookups(seen)
    with live.client() as sync:
        names = make_chain(sync, registry)
    two_asks = scripted(
        {"tool_calls": [{"name": "ask", "arguments": {"n": 1}}, {"name": "ask", "arguments": {}}]},
        {"text": "both answered"},
    )
    ask = {"name": "ask", "agent": names["mid"], "parameters": ANY}
    async with live.async_client() as client:
        root = await client.runs.create(prompt="go", model=two_asks, tools=[ask])
        done = await client.execute(root.id, registry, deadline=None)
        assert done.status == RunStatus.COMPLETED and done.output == "both answered"
        runs = [r async for r in client.runs.list(root_run_id=root.id)]
    leaves = {r.id for r in runs if r.depth == 2}
    assert len(runs) == 5 and len(leaves) == 2
    assert sorted(seen) == sorted(leaves)
    assert {r.status for r in runs} == {RunStatus.COMPLETED}


def test_a_grandchilds_gated_call_goes_to_on_approval_or_is_left_to_a_person(
    live: Live,
) -> None:
    seen: list[str] = []
    registry = lookups(seen)
    asked: list[ApprovalCall] = []

    def approve(call: ApprovalCall) -> Approve:
        asked.append(call)
        return Approve()

    with live.client() as client:
        names = make_chain(client, registry, approval="always")
        # Without `on_approval`: the root is handed back while its grandchild waits.
        waiting = client.run("go", tools=registry, agent=names["boss"], timeout=60)
        assert waiting.status == RunStatus.REQUIRES_ACTION
        assert waiting.required_action is None  # (it waits on its child)
        leaf = tree_of(client, waiting)[2]
        assert leaf.status == RunStatus.REQUIRES_ACTION and seen == []
        assert [a.name for a in leaf.pending_approvals] == ["lookup"]
        # Then served with it: the decision goes to the grandchild, and so does the result.
        done = client.execute(waiting.id, registry, on_approval=approve)
        assert done.status == RunStatus.COMPLETED, done
        assert [a.name for a in asked] == ["lookup"] and seen == [leaf.id]
