"""Trees of runs across real processes (`agentrun api` and `agentrun worker`s on a
PostgreSQL database of their own, every agent's model over the wire to the mock
provider): a child whose worker is killed mid-call still answers its parent, which resumes
once; a cancel of the root ends every node and tells the tree's one executor of each; a
grandchild's gated call is decided by the grandchild's id and the chain completes, while
another tenant sees none of it."""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from standardwebhooks import Webhook

from tests.e2e.processes import wait_until
from tests.e2e.trees import (
    deployment,
    events,
    make_agent,
    prompt_of,
    start_root,
    tree,
    tree_model,
    types,
    wait_for_tree,
)
from tests.mocks.receiver import SECRET, webhook_receiver
from tests.mocks.server import MockProviderServer

#: The client tool of the grandchildren: an executor answers it.
LOOKUP = {"name": "lookup", "parameters": {"type": "object"}}
#: A sentinel run the worker drives without the mock.
SCRIPTED = {"provider": "scripted", "name": "demo", "script": [{"text": "done"}]}


def _at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def three_levels(client: httpx.Client, leaf_tool: dict[str, Any]) -> None:
    """boss → (delegate) manager → (research) clerk, whose own tool is `leaf_tool`."""
    make_agent(client, "clerk", leaf_tool)
    make_agent(client, "manager", {"name": "research", "agent": "clerk"})
    make_agent(client, "boss", {"name": "delegate", "agent": "manager"})


def test_a_child_whose_worker_is_killed_mid_call_answers_its_parent_once(
    empty_postgres_url: str, tmp_path: Path, mock: MockProviderServer
) -> None:
    """alpha's model call is held at the mock (beta's is not) until alpha's worker is
    killed; the other worker reaps the lease, drives alpha again and the parent once."""
    mock.responder = tree_model
    mock.hold(only=lambda body: prompt_of(body) == "ask_alpha")
    with deployment(empty_postgres_url, tmp_path, workers=2, **mock.env()) as d:
        client = d.client
        make_agent(client, "alpha")
        make_agent(client, "beta")
        make_agent(
            client,
            "boss",
            {"name": "ask_alpha", "agent": "alpha"},
            {"name": "ask_beta", "agent": "beta"},
        )
        root = start_root(client, "boss")
        mock.wait_held(1, 30)
        held = wait_for_tree(
            client, root, {"boss": "requires_action", "alpha": "running", "beta": "completed"}
        )
        holder = held["alpha"]["waiting_reason"]["worker"]
        (victim,) = [w for w in d.workers if holder.endswith(f":{w.pid}")]
        d.kill(victim)
        mock.release()
        done = wait_for_tree(
            client, root, {"boss": "completed", "alpha": "completed", "beta": "completed"}
        )
        boss, alpha, beta = done["boss"], done["alpha"], done["beta"]
        assert boss["output"] == "done[answer to ask_alpha; answer to ask_beta]"
        log = events(client, root)
        counted = Counter(e["type"] for e in log)
        assert counted["run.children_started"] == 1 and counted["run.resumed"] == 1, counted
        assert counted["model.called"] == 2 and counted["run.completed"] == 1, counted
        answered = Counter(
            e["data"]["tool_call_id"] for e in log if e["type"] == "tool_result.received"
        )
        calls = {alpha["parent_tool_call_id"], beta["parent_tool_call_id"]}
        assert answered == dict.fromkeys(calls, 1), answered
        # alpha: claimed by the victim, re-queued by the reaper, driven by the survivor; its
        # lost call is on no log (the victim died with it), the survivor's once.
        alpha_log = events(client, alpha["id"])
        claimers = [e["data"]["worker"] for e in alpha_log if e["type"] == "run.claimed"]
        assert len(claimers) == 2 and claimers[0] == holder != claimers[1], claimers
        counted = Counter(e["type"] for e in alpha_log)
        assert counted["run.lease_lost"] == 1 and counted["model.called"] == 1, counted
        assert counted["run.completed"] == 1, counted
        assert types(client, beta["id"])["model.called"] == 1
        # The model was asked: boss twice, alpha twice (the victim's call and again), beta once.
        asked = Counter(prompt_of(r.body) for r in mock.requests)
        assert asked == {"go": 2, "ask_alpha": 2, "ask_beta": 1}, asked


def test_a_cancel_of_the_root_ends_every_node_and_tells_the_trees_executor(
    empty_postgres_url: str, tmp_path: Path, mock: MockProviderServer
) -> None:
    """The root's webhook is every node's (inherited): it is told of each cancel, signed."""
    mock.responder = tree_model
    webhooks = {"AGENTRUN_WEBHOOK_SECRET": SECRET, "AGENTRUN_WEBHOOK_ALLOW_PRIVATE": "true"}
    with (
        webhook_receiver() as receiver,
        deployment(empty_postgres_url, tmp_path, workers=1, **webhooks, **mock.env()) as d,
    ):
        client = d.client
        three_levels(client, LOOKUP)
        root = start_root(client, "boss", webhook={"url": receiver.url})
        waiting = dict.fromkeys(("boss", "manager", "clerk"), "requires_action")
        nodes = wait_for_tree(client, root, waiting)
        ids = {n["id"] for n in nodes.values()}
        clerk = nodes["clerk"]
        (call,) = clerk["required_action"]["tool_calls"]
        assert call["name"] == "lookup"
        # The executor is the root's: told what the grandchild waits for.
        wait_until(
            lambda: any(
                r.payload["data"]["run_id"] == clerk["id"]
                for r in receiver.of_type("run.requires_action")
            ),
            30,
            "the grandchild's run.requires_action at the root's webhook",
        )
        before = len(mock.requests)
        cancelled = client.post(f"/v1/runs/{root}/cancel")
        answered_at = time.time()
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        after = tree(client, root)
        assert {n: r["status"] for n, r in after.items()} == dict.fromkeys(waiting, "cancelled")

        def told() -> set[str]:
            return {r.payload["data"]["run_id"] for r in receiver.of_type("run.cancelled")}

        wait_until(lambda: told() == ids, 30, "run.cancelled of every node at the webhook")
        # A run created after the cancel is driven to its end: the worker has moved on.
        sentinel = client.post("/v1/runs", json={"prompt": "after", "model": SCRIPTED})
        assert sentinel.status_code == 201, sentinel.text
        ended = client.get(
            f"/v1/runs/{sentinel.json()['id']}/wait", params={"timeout": 30}, timeout=40
        )
        assert ended.json()["status"] == "completed", ended.text
        # No node's model was called after the cancel, nor asked: each called it once before.
        assert len(mock.requests) == before
        for name, node in after.items():
            log = events(client, node["id"])
            called = [_at(e["created_at"]) for e in log if e["type"] == "model.called"]
            assert len(called) == 1 and called[0] < answered_at, (name, called)
            (cancel,) = [e for e in log if e["type"] == "run.cancelled"]
            assert cancel["data"] == ({} if name == "boss" else {"with_run": root}), cancel
        # Each node's run.cancelled once, signed as Standard Webhooks says.
        deliveries = receiver.of_type("run.cancelled")
        assert sorted(r.payload["data"]["run_id"] for r in deliveries) == sorted(ids)
        for delivery in deliveries:
            assert Webhook(SECRET).verify(delivery.body, delivery.headers) == delivery.payload
        late = client.post(
            f"/v1/runs/{clerk['id']}/tool-results",
            json={"results": [{"tool_call_id": call["id"], "output": "too late"}]},
        )
        assert late.status_code == 409, late.text


def sees_nothing(outsider: httpx.Client, root: str, ids: set[str]) -> None:
    """Another tenant's key finds no node of the tree, by id, by root, as children."""
    for run_id in ids:
        for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/children"):
            got = outsider.get(path)
            assert got.status_code == 404, (path, got.status_code, got.text)
    listed = outsider.get("/v1/runs", params={"root_run_id": root})
    assert listed.status_code == 200, listed.text
    assert listed.json()["data"] == []


def test_a_grandchilds_gated_call_is_decided_by_its_id_and_the_chain_completes(
    empty_postgres_url: str, tmp_path: Path, mock: MockProviderServer
) -> None:
    mock.responder = tree_model
    gated = {"name": "pay", "parameters": {"type": "object"}, "approval": "always"}
    with deployment(empty_postgres_url, tmp_path, workers=1, **mock.env()) as d:
        client = d.client
        three_levels(client, gated)
        root = start_root(client, "boss")
        waiting = dict.fromkeys(("boss", "manager", "clerk"), "requires_action")
        nodes = wait_for_tree(client, root, waiting)
        ids = {n["id"] for n in nodes.values()}
        assert nodes["boss"]["required_action"] is None
        assert nodes["manager"]["required_action"] is None
        clerk = nodes["clerk"]
        action = clerk["required_action"]
        assert action["type"] == "approve_tool_calls" and action["tool_calls"] == [], action
        (approval,) = action["approvals"]
        assert approval["name"] == "pay"
        decision = {
            "tool_call_id": approval["id"],
            "arguments_hash": approval["arguments_hash"],
            "action": "approve",
        }
        # Another tenant and its admin's key, made by the deployment's admin: nothing of
        # the tree is there for it.
        made = client.post("/v1/tenants", json={"id": "outsiders", "name": "Outsiders"})
        assert made.status_code == 201, made.text
        key = client.post(
            "/v1/keys", params={"tenant": "outsiders"}, json={"name": "them", "role": "admin"}
        )
        assert key.status_code == 201, key.text
        secret = key.json()["secret"]
        with httpx.Client(
            base_url=client.base_url, headers={"Authorization": f"Bearer {secret}"}
        ) as outsider:
            sees_nothing(outsider, root, ids)
            foreign = outsider.post(
                f"/v1/runs/{clerk['id']}/approvals", json={"decisions": [decision]}
            )
            assert foreign.status_code == 404, foreign.text
            # The grandchild's own id decides its call; its executor answers it.
            decided = client.post(
                f"/v1/runs/{clerk['id']}/approvals", json={"decisions": [decision]}
            )
            assert decided.status_code == 200, decided.text
            released = decided.json()["required_action"]
            assert released["type"] == "submit_tool_results", released
            assert [c["id"] for c in released["tool_calls"]] == [approval["id"]]
            submitted = client.post(
                f"/v1/runs/{clerk['id']}/tool-results",
                json={"results": [{"tool_call_id": approval["id"], "output": "receipt-42"}]},
            )
            assert submitted.status_code == 200, submitted.text
            done = wait_for_tree(client, root, dict.fromkeys(waiting, "completed"))
            assert done["boss"]["output"] == "done[done[done[receipt-42]]]"
            clerk_events = types(client, clerk["id"])
            assert clerk_events["run.approval_required"] == 1, clerk_events
            assert clerk_events["tool_call.approved"] == 1, clerk_events
            for node in done.values():
                counted = types(client, node["id"])
                assert counted["run.resumed"] == 1 and counted["model.called"] == 2, counted
            sees_nothing(outsider, root, ids)
