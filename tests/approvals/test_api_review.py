"""Approvals after review, on both back ends: rules and parameters this service cannot
evaluate are refused at create (and never crash a worker), patterns match in linear time,
decisions are idempotent across rounds and address one call, an edit reaches the model."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from app.approvals import policies
from app.core.content import Text
from app.service import convert
from app.store.runs import RunStore
from tests.api.test_runs_api import assert_problem, body
from tests.approvals.test_api import (
    LOOKUP,
    PAY,
    Recorder,
    decide,
    decision,
    drive,
    events,
    gated_body,
    recorder,
    results_of,
    script,
    suspended,
)

__all__ = ["recorder"]  # (the fixture, imported)


def unchecked(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """Creates check no approval policy (as before policies were checked at create)."""
    hooks = client.app.state.service.store.hooks  # type: ignore[attr-defined]
    monkeypatch.setattr(hooks, "create_checks", ())


def ruled(when: Any) -> dict[str, Any]:
    return gated_body(tools=[{**PAY, "approval": {"when": when}}, LOOKUP])


# --- 1. rules the service cannot evaluate --------------------------------------------------


@pytest.mark.parametrize(
    "when",
    [
        {"$ref": "#/$defs/nope"},
        {"$ref": "https://example.invalid/s.json"},
        {"properties": {"to": {"$ref": "other.json#/x"}}},
        {"properties": {"to": {"pattern": "(a)\\1"}}},
        {"patternProperties": {"^x": {}}, "unevaluatedProperties": False},
        {"$ref": "#"},
        {"properties": {"to": {"anyOf": [{"$ref": "#/properties/to"}]}}},
    ],
    ids=["local", "remote", "relative", "backreference", "unevaluated", "loop", "inner-loop"],
)
async def test_a_rule_that_cannot_be_evaluated_is_refused(
    client: httpx.AsyncClient, when: Any
) -> None:
    got = await client.post("/v1/runs", json=ruled(when))
    assert_problem(got, 422, "invalid-request")
    assert "tools[0].approval.when" in got.json()["detail"]


async def test_a_rule_with_local_references_gates(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    when = {
        "$defs": {
            "big": {"exclusiveMinimum": 100},
            "id": {"$id": "urn:x:to", "type": "string"},
            "tree": {"properties": {"next": {"$ref": "#/$defs/tree"}}},  # (recursive: fine)
        },
        "allOf": [{"$ref": "#/$defs/tree"}],
        "properties": {"amount": {"$ref": "#/$defs/big"}, "to": {"$ref": "urn:x:to"}},
    }
    run = await suspended(client, store, ruled(when), recorder)
    assert [a["arguments"]["amount"] for a in run["required_action"]["approvals"]] == [500]


async def test_a_pattern_matches_in_linear_time(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    evil = "a" * 5000 + "!"  # (Python's backtracking `re` takes seconds from ~25 characters)
    doc = body(
        model=script({"name": "pay", "arguments": {"amount": 1, "to": evil}}),
        tools=[{**PAY, "approval": {"when": {"properties": {"to": {"pattern": "^(a+)+$"}}}}}],
    )
    started = time.monotonic()
    created = await client.post("/v1/runs", json=doc)
    assert created.status_code == 201, created.text
    await drive(store, recorder.settings, recorder)
    # (Backtracking would take longer than any test runs: the margin is for a loaded
    # machine, not a speed target; the engine is linear in the input.)
    assert time.monotonic() - started < 30
    run = (await client.get(f"/v1/runs/{created.json()['id']}")).json()
    assert run["required_action"]["type"] == "submit_tool_results"  # (no match: not gated)
    started = time.monotonic()
    assert policies.gated({"when": {"patternProperties": {"^(a+)+$": False}}}, {evil: 1})
    only = {"additionalProperties": False, "patternProperties": {"^(a+)+$": {}}}
    assert not policies.gated({"when": only}, {evil: 1})
    assert time.monotonic() - started < 1


async def test_a_stored_rule_that_fails_gates_the_call_and_never_crashes(
    client: httpx.AsyncClient,
    store: RunStore,
    recorder: Recorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run stored before rules were checked: its call waits, the model is called once."""
    unchecked(client, monkeypatch)
    run = await suspended(client, store, ruled({"$ref": "#/$defs/nope"}), recorder)
    assert run["status"] == "requires_action"
    assert [a["arguments"]["amount"] for a in run["required_action"]["approvals"]] == [500, 20]
    assert len(recorder.requests) == 1
    later = datetime.now(UTC) + timedelta(seconds=31)
    await store.reap_expired_leases(later)
    assert await store.claim("w", later, later + timedelta(seconds=30)) is None


# --- 2. the parameters edits are validated against -------------------------------------------

BAD_REF = {"type": "object", "properties": {"amount": {"$ref": "#/$defs/missing"}}}
INVALID = {"type": "objekt", "properties": {"amount": {"type": "number"}}}


@pytest.mark.parametrize("parameters", [BAD_REF, INVALID], ids=["dangling-ref", "invalid"])
async def test_a_gated_tools_parameters_are_checked_at_create(
    client: httpx.AsyncClient, parameters: dict[str, Any]
) -> None:
    tool = {"name": "pay", "parameters": parameters, "approval": "always"}
    got = await client.post("/v1/runs", json=body(model=script(), tools=[tool]))
    assert_problem(got, 422, "invalid-request")
    assert "tools[0].parameters" in got.json()["detail"]
    gated_by_run = body(model=script(), tools=[{**tool, "approval": None}], approval="always")
    assert_problem(await client.post("/v1/runs", json=gated_by_run), 422, "invalid-request")
    ungated = {"name": "pay", "parameters": parameters}  # (a run that gates nothing: as before)
    assert (await client.post("/v1/runs", json=body(model=script(), tools=[ungated]))).is_success


@pytest.mark.parametrize("parameters", [BAD_REF, INVALID], ids=["dangling-ref", "invalid"])
async def test_an_edit_against_stored_bad_parameters_is_a_422(
    client: httpx.AsyncClient,
    store: RunStore,
    recorder: Recorder,
    monkeypatch: pytest.MonkeyPatch,
    parameters: dict[str, Any],
) -> None:
    """A run stored before parameters were checked: an edit is refused, never a 500 and
    never approved against nothing."""
    unchecked(client, monkeypatch)
    tool = {"name": "pay", "parameters": parameters, "approval": "always"}
    doc = body(model=script({"name": "pay", "arguments": {"amount": 500}}), tools=[tool])
    run = await suspended(client, store, doc, recorder)
    (a,) = run["required_action"]["approvals"]
    got = await decide(client, run["id"], decision(a, arguments={"amount": "x", "rm": "-rf"}))
    assert_problem(got, 422, "invalid-request")
    after = (await client.get(f"/v1/runs/{run['id']}/approvals")).json()["data"]
    assert [x["status"] for x in after] == ["pending"]


async def test_an_edit_is_checked_for_format(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    parameters = {"type": "object", "properties": {"to": {"type": "string", "format": "email"}}}
    tool = {"name": "pay", "parameters": parameters, "approval": "always"}
    doc = body(model=script({"name": "pay", "arguments": {"to": "a@b.example"}}), tools=[tool])
    run = await suspended(client, store, doc, recorder)
    (a,) = run["required_action"]["approvals"]
    got = await decide(client, run["id"], decision(a, arguments={"to": "not an address"}))
    assert_problem(got, 422, "invalid-request")


# --- 3, 4, 6. decisions: idempotent in any round, one call each ---------------------------


async def one_left(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> tuple[str, dict[str, Any]]:
    """A suspended `gated_body` run with its ungated calls answered: its id, its approval."""
    run = await suspended(client, store, gated_body(), recorder)
    (approval,) = run["required_action"]["approvals"]
    await client.post(f"/v1/runs/{run['id']}/tool-results", json=results_of(run))
    return run["id"], approval


async def test_a_repeated_decision_after_the_run_completed_is_a_200(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    rid, a = await one_left(client, store, recorder)
    d = decision(a, "reject", message="no")
    assert (await decide(client, rid, d)).status_code == 200
    await drive(store, recorder.settings, recorder)
    assert (await client.get(f"/v1/runs/{rid}")).json()["status"] == "completed"
    before = await events(client, rid)
    again = await decide(client, rid, d)
    assert again.status_code == 200, again.text
    assert await events(client, rid) == before  # (nothing written)
    other = await decide(client, rid, decision(a))
    assert_problem(other, 409, "approval-conflict")
    stale = await decide(client, rid, {**d, "arguments_hash": "0" * 64})
    assert_problem(stale, 409, "approval-stale")
    unknown = await decide(client, rid, {**d, "tool_call_id": "nope"})
    assert_problem(unknown, 409, "run-state-conflict")


async def test_a_repeated_decision_in_a_later_round_is_a_200(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    doc = body(
        model={
            "provider": "scripted",
            "name": "demo",
            "script": [
                {"tool_calls": [{"name": "pay", "arguments": {"amount": 500, "to": "bob"}}]},
                {"tool_calls": [{"name": "pay", "arguments": {"amount": 700, "to": "bob"}}]},
                {"text": "done"},
            ],
        },
        tools=[PAY, LOOKUP],
    )
    run = await suspended(client, store, doc, recorder)
    (a,) = run["required_action"]["approvals"]
    d = decision(a, "reject", message="no")
    assert (await decide(client, run["id"], d)).status_code == 200
    await drive(store, recorder.settings, recorder)
    now = (await client.get(f"/v1/runs/{run['id']}")).json()
    assert now["waiting_reason"]["type"] == "approval"
    again = await decide(client, run["id"], d)
    assert again.status_code == 200, again.text
    assert again.json()["required_action"]["approvals"] == now["required_action"]["approvals"]
    assert_problem(await decide(client, run["id"], decision(a)), 409, "approval-conflict")


def twins() -> dict[str, Any]:
    return body(
        model=script(
            {"id": "dup", "name": "pay", "arguments": {"amount": 500, "to": "bob"}},
            {"id": "dup", "name": "pay", "arguments": {"amount": 500, "to": "bob"}},
        ),
        tools=[PAY, LOOKUP],
    )


async def test_two_calls_sharing_an_id_are_decided_by_position(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    run = await suspended(client, store, twins(), recorder)
    first, second = run["required_action"]["approvals"]
    assert (first["position"], second["position"]) == (0, 1)
    ambiguous = await decide(client, run["id"], decision(first))
    assert_problem(ambiguous, 422, "invalid-request")
    one = await decide(client, run["id"], decision(first, position=0))
    assert one.status_code == 200, one.text
    retry = await decide(client, run["id"], decision(first, position=0))  # (a network retry)
    assert retry.status_code == 200, retry.text
    listed = (await client.get(f"/v1/runs/{run['id']}/approvals")).json()["data"]
    assert [(x["position"], x["status"]) for x in listed] == [(0, "approved"), (1, "pending")]
    other = await decide(client, run["id"], decision(first, "reject", position=0))
    assert_problem(other, 409, "approval-conflict")


async def test_two_different_decisions_for_one_call_in_one_request_are_a_422(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    run = await suspended(client, store, gated_body(), recorder)
    (a,) = run["required_action"]["approvals"]
    got = await decide(client, run["id"], decision(a), decision(a, "reject", message="no"))
    assert_problem(got, 422, "invalid-request")
    same = await decide(client, run["id"], decision(a), decision(a))
    assert same.status_code == 200, same.text


# --- 5. an edit reaches the model ----------------------------------------------------------


async def test_the_model_learns_the_arguments_an_edited_call_ran_with(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    rid, a = await one_left(client, store, recorder)
    edited = {"to": "carol", "amount": 90}
    assert (await decide(client, rid, decision(a, arguments=edited))).status_code == 200
    answer = {"results": [{"tool_call_id": a["id"], "output": "paid"}]}
    assert (await client.post(f"/v1/runs/{rid}/tool-results", json=answer)).is_success
    await drive(store, recorder.settings, recorder)
    results = {r.call_id: r for r in recorder.results()}
    note = convert.EDITED_NOTE + '{"amount":90,"to":"carol"}'
    assert results[a["id"]].content == (Text("paid"), Text(note))
    others = [r for k, r in results.items() if k != a["id"]]
    assert others and all(r.content == (Text("ok"),) for r in others)  # (unedited: as before)
    messages = (await client.get(f"/v1/runs/{rid}/messages")).json()
    assert "edited on approval; it ran with" in repr(messages) and "carol" in repr(messages)


# --- 8. a run that ended decides nothing more ----------------------------------------------


async def test_an_ended_runs_undecided_calls_are_closed(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    run = await suspended(client, store, gated_body(), recorder)
    (a,) = run["required_action"]["approvals"]
    assert (await client.post(f"/v1/runs/{run['id']}/cancel")).is_success
    listed = (await client.get(f"/v1/runs/{run['id']}/approvals")).json()["data"]
    assert [x["status"] for x in listed] == ["closed"]
    assert_problem(await decide(client, run["id"], decision(a)), 409, "run-state-conflict")
    inbox = (await client.get("/v1/approvals")).json()["data"]
    assert run["id"] not in [x["run_id"] for x in inbox]
