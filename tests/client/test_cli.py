"""`agentrun-client runs …` (and `agentrun runs …`) against the API on a loopback port with
workers in-process: what a person sees, what `--json` prints, and the exit statuses."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentrun_client.cli import main
from app.cli import main as agentrun
from tests.client.conftest import KEY, Live, scripted

ADD = {"name": "add", "parameters": {"type": "object"}}
TWO_ADDS = scripted(
    {
        "tool_calls": [
            {"name": "add", "arguments": {"a": 1, "b": 2}},
            {"name": "add", "arguments": {"a": 3, "b": 4}},
        ]
    },
    {"text": "done"},
)


@dataclass
class Done:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def lines(self) -> list[Any]:
        return [json.loads(line) for line in self.out.splitlines()]


def cli(live: Live, *argv: str, entry: Any = main) -> Done:
    out, err = io.StringIO(), io.StringIO()
    connection = ["--base-url", live.base_url, "--api-key", KEY]
    if entry is main:
        code = main([*argv, *connection], stdout=out, stderr=err)
    else:  # `agentrun runs …` writes to the process's own streams
        old = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            code = entry([*argv, *connection])
        finally:
            sys.stdout, sys.stderr = old
    return Done(code, out.getvalue(), err.getvalue())


def create(live: Live, tmp_path: Path, *extra: str) -> str:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([ADD]))
    done = cli(
        live, "runs", "create", "What are 1+2 and 3+4?",
        "--model", json.dumps(TWO_ADDS), "--tools", f"@{tools}", "-q", *extra,
    )  # fmt: skip
    assert done.code == 0, done.err
    run_id = done.out.strip()
    assert run_id.startswith("run_") and "\n" not in run_id
    return run_id


def test_a_session_as_a_person_sees_it(live: Live, tmp_path: Path) -> None:
    run_id = create(live, tmp_path, "--metadata", "ticket=T-1", "--max-turns", "4")
    waited = cli(live, "runs", "wait", run_id, "--timeout", "30")
    assert waited.code == 0, waited.err
    assert f"{run_id}  requires_action  (turn 1 of 4)" in waited.out
    assert "tool results of round 1: call_1_0, call_1_1" in waited.out
    assert 'call_1_0  add {"a": 1, "b": 2}' in waited.out
    assert f"runs submit {run_id} --result CALL_ID=JSON" in waited.out
    assert "/v1/callbacks/" in waited.out and '"ticket": "T-1"' in waited.out

    first = cli(live, "runs", "submit", run_id, "--result", "call_1_0=3")
    assert first.code == 0, first.err
    assert first.out.splitlines() == ["accepted: call_1_0", f"{run_id} still waiting for: call_1_1"]
    again = cli(live, "runs", "submit", run_id, "--result", "call_1_0=3")  # a no-op
    assert again.out.startswith("accepted: none")
    last = cli(live, "runs", "submit", run_id, "--error", 'call_1_1="no network"')
    assert last.out.splitlines() == ["accepted: call_1_1", f"{run_id} resumed: queued"]

    ended = cli(live, "runs", "wait", run_id, "--status", "completed", "--timeout", "30")
    assert ended.code == 0, ended.err
    assert f"{run_id}  completed" in ended.out and "output:   done" in ended.out
    events = cli(live, "runs", "events", run_id)
    types = [line.split()[2] for line in events.out.splitlines()]
    assert types[0] == "run.created" and types[-1] == "run.completed"
    assert types.count("tool_result.received") == 2
    listed = cli(live, "runs", "list", "--status", "completed")
    assert listed.out.splitlines()[0].split() == ["ID", "STATUS", "TURN", "CREATED", "WAITING"]
    assert any(line.startswith(run_id) for line in listed.out.splitlines())


def test_json_output_is_the_api_documents(live: Live, tmp_path: Path) -> None:
    created = cli(
        live, "runs", "create", "x", "--model", "scripted:demo", "--tools", json.dumps([ADD]),
        "--wait", "--json",
    )  # fmt: skip
    assert created.code == 0, created.err
    run = created.json()
    assert run["status"] == "requires_action" and run["model"]["provider"] == "scripted"
    api = httpx.get(
        f"{live.base_url}/v1/runs/{run['id']}", headers={"authorization": f"Bearer {KEY}"}
    ).json()
    got = cli(live, "runs", "get", run["id"], "--json").json()
    assert {k: v for k, v in got.items() if k != "updated_at"} == {
        k: v for k, v in api.items() if k != "updated_at"
    }
    call_id = run["required_action"]["tool_calls"][0]["id"]
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"results": [{"tool_call_id": call_id, "output": {"n": 5}}]}))
    submitted = cli(live, "runs", "submit", run["id"], "--file", str(results), "--json").json()
    assert submitted["accepted"] == [call_id] and submitted["resumed"] is True
    done = cli(live, "runs", "wait", run["id"], "--status", "completed", "--json").json()
    assert done["output"].startswith("Tool results: add: ") and "5" in done["output"]
    events = cli(live, "runs", "events", run["id"], "--follow", "--json").lines()
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "run.completed"
    later = cli(live, "runs", "events", run["id"], "--after", str(len(events) - 1), "--json")
    assert [e["type"] for e in later.lines()] == ["run.completed"]
    page = cli(live, "runs", "list", "--limit", "1", "--json").json()
    assert len(page["data"]) == 1 and "next_cursor" in page


def test_exit_statuses_of_wait_cancel_and_refusals(live: Live, tmp_path: Path) -> None:
    run_id = create(live, tmp_path, "--wait")
    timed_out = cli(live, "runs", "wait", run_id, "--status", "completed", "--timeout", "0.2")
    assert timed_out.code == 4
    assert "requires_action" in timed_out.out and "timed out after 0.2 s" in timed_out.err
    cancelled = cli(live, "runs", "cancel", run_id)
    assert cancelled.code == 0 and f"{run_id}  cancelled" in cancelled.out
    other = cli(live, "runs", "wait", run_id, "--status", "completed")
    assert other.code == 3 and "ended cancelled, not completed" in other.err
    twice = cli(live, "runs", "cancel", run_id)
    assert twice.code == 1 and "run-state-conflict" in twice.err
    missing = cli(live, "runs", "get", "run_missing", "--json")
    assert missing.code == 1 and json.loads(missing.err)["type"] == "/problems/run-not-found"
    invalid = cli(live, "runs", "create", "x", "--model", "openai:m", "--param", "temperature=9")
    assert invalid.code == 1 and "model.temperature:" in invalid.err
    not_json = cli(live, "runs", "submit", run_id, "--result", "call_1_0=three")
    assert not_json.code == 2 and """call_1_0='"three"'""" in not_json.err
    nothing = cli(live, "runs", "submit", run_id)
    assert nothing.code == 2 and "--result CALL_ID=JSON" in nothing.err
    no_model = cli(live, "runs", "create", "x")
    assert no_model.code == 2 and "needs model" in no_model.err
    # What the client refuses before sending (InvalidInput) is a usage error too (was 1,
    # which the docs keep for the API's refusals and an unreachable API).
    not_an_id = cli(live, "runs", "get", "../../etc")
    assert not_an_id.code == 2 and "error: not a run id: '../../etc'" in not_an_id.err
    undecodable = cli(live, "runs", "create", "caf\udce9", "--model", "scripted:demo")
    assert undecodable.code == 2 and "lone surrogate" in undecodable.err


def test_create_from_a_body_with_flags_over_it(live: Live, monkeypatch: pytest.MonkeyPatch) -> None:
    body = {"prompt": "from the body", "model": scripted(), "metadata": {"a": 1}}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(body)))
    done = cli(
        live, "runs", "create", "--body", "@-", "--metadata", "b=two", "--param", "delay_ms=0",
        "--preamble", "Be brief.", "--tool-choice", "none", "--invalid-tool-call", "skip",
        "--expires-in", "60", "--stream", "--priority", "7", "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    run = done.json()
    assert run["metadata"] == {"a": 1, "b": "two"} and run["priority"] == 7
    assert run["model"] == {"provider": "scripted", "name": "demo", "delay_ms": 0}
    finished = cli(live, "runs", "wait", run["id"], "--json").json()
    assert finished["status"] == "completed" and finished["output"] == "You said: from the body"


def test_agentrun_runs_is_the_client_command_line(live: Live, tmp_path: Path) -> None:
    run_id = create(live, tmp_path)
    shown = cli(live, "runs", "get", run_id, "--json", entry=agentrun)
    assert shown.code == 0 and shown.json()["id"] == run_id
    usage = cli(live, "runs", "wait", run_id, "--status", "nonsense", entry=agentrun)
    assert usage.code == 2 and "invalid choice: 'nonsense'" in usage.err


def test_agentrun_runs_without_the_client_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "agentrun_client.cli", None)
    assert agentrun(["runs", "list"]) == 2
    assert "pip install ./client" in capsys.readouterr().err


def test_continue_a_busy_conversation(live: Live, tmp_path: Path) -> None:
    """`--previous-run-id` without `--model`; `--if-busy` says what a busy one does."""
    active = create(live, tmp_path)
    assert cli(live, "runs", "wait", active, "--json").json()["status"] == "requires_action"
    refused = cli(live, "runs", "create", "and then?", "--previous-run-id", active)
    assert refused.code == 1 and "busy" in refused.err
    done = cli(
        live, "runs", "create", "and then?", "--previous-run-id", active, "--if-busy", "enqueue",
        "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert done.json()["waiting_reason"] == {"type": "conversation", "run_id": active}
    bad = cli(live, "runs", "create", "x", "--previous-run-id", active, "--if-busy", "later")
    assert bad.code == 2  # (argparse's message goes to the process's stderr)


def test_a_queued_run_is_shown_with_its_priority_and_place() -> None:
    from agentrun_client._render import run_text
    from agentrun_client.models import Run

    run = Run.model_validate(
        {
            "id": "run_x",
            "status": "queued",
            "turn": 0,
            "max_turns": 8,
            "created_at": "2027-01-12T10:00:00Z",
            "updated_at": "2027-01-12T10:00:00Z",
            "priority": 5,
            "queue": {"position": 3, "reason": "fair_share"},
        }
    )
    text = run_text(run, "agentrun-client")
    assert "priority" in text and "position 3 (fair_share)" in text
