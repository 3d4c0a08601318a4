"""The run-to-task mapping (`app.protocols.a2a.tasks`), without IO: every status has its
state, a run that waits only for others is WORKING, what the client answers is in the
input-required message, and a run's messages become A2A messages of ADK's types."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from a2a.types.a2a_pb2 import Role, TaskState
from google.protobuf.json_format import MessageToDict

from app.core.lifecycle import RunStatus
from app.protocols.a2a import tasks
from app.service.types import RunRecord

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def record(status: RunStatus, **fields: Any) -> RunRecord:
    base = {f.name: None for f in dataclasses.fields(RunRecord) if f.init}
    base.update(
        id="run_a",
        status=status,
        state="",
        schema_version=1,
        version=3,
        attempts=1,
        model_attempts=0,
        available_at=NOW,
        config={"agent": {"name": "finder", "version": 2}},
        metadata={},
        turn=1,
        max_turns=10,
        last_event_seq=4,
        created_at=NOW,
        updated_at=NOW,
        tenant_id="default",
        limits=None,
        awaited_by=None,
        priority=0,
        fair_key="",
        fair_rank=0,
        log=None,
        round_calls=None,
    )
    base.pop("_config", None)
    base.update(fields)
    return RunRecord(**base)


CALL = {"id": "call_1", "name": "lookup", "arguments": {"q": "x"}, "answered": False, "queue": None}


def test_every_status_is_a_state() -> None:
    assert set(tasks.STATES) == set(RunStatus)
    assert tasks.STATES[RunStatus.EXPIRED] == TaskState.TASK_STATE_FAILED
    assert {tasks.STATES[s] for s in tasks.FILTERS.values()} == set(tasks.FILTERS)


def test_a_suspended_run_shows_what_the_client_answers() -> None:
    action = {
        "type": "submit_tool_results",
        "tool_calls": [CALL, {**CALL, "id": "call_2", "answered": True}],
    }
    task = tasks.task_of(record(RunStatus.REQUIRES_ACTION), action)
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert task.context_id == "run_a" and task.status.message.role == Role.ROLE_AGENT
    (part,) = task.status.message.parts
    assert MessageToDict(part) == {
        "data": {"id": "call_1", "name": "lookup", "args": {"q": "x"}},
        "metadata": {"adk_type": "function_call"},
    }


def test_a_run_waiting_only_for_a_queues_executor_is_working() -> None:
    action = {"type": "submit_tool_results", "tool_calls": [{**CALL, "queue": "backend"}]}
    task = tasks.task_of(record(RunStatus.REQUIRES_ACTION), action)
    assert task.status.state == TaskState.TASK_STATE_WORKING
    assert not task.status.HasField("message")


def test_a_completed_runs_output_is_its_artifact() -> None:
    task = tasks.task_of(record(RunStatus.COMPLETED, output="42"), None)
    (artifact,) = task.artifacts
    assert artifact.name == "output" and [p.text for p in artifact.parts] == ["42"]
    structured = record(
        RunStatus.COMPLETED, output='{"n": 42}', config={"output_schema": {"type": "object"}}
    )
    (artifact,) = tasks.task_of(structured, None).artifacts
    assert tasks.part_data(artifact.parts[0]) == {"n": 42}


def test_a_failed_run_says_why() -> None:
    failed = record(RunStatus.FAILED, error={"type": "MaxTurnsError", "message": "out of turns"})
    task = tasks.task_of(failed, None)
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert [p.text for p in task.status.message.parts] == ["out of turns"]


def test_a_runs_messages_are_a2a_messages() -> None:
    messages = [
        (0, {"role": "system", "content": "be brief"}),
        (1, {"role": "user", "content": "look up x"}),
        (
            2,
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolcall",
                        "id": "c1",
                        "function": {"name": "lookup", "arguments": {"q": "x"}},
                    }
                ],
            },
        ),
        (
            3,
            {
                "role": "user",
                "content": [
                    {
                        "type": "toolresult",
                        "call": "c1",
                        "name": "lookup",
                        "content": [{"type": "text", "text": "y"}],
                    }
                ],
            },
        ),
    ]
    history = tasks.history_of(record(RunStatus.COMPLETED), messages)
    assert [m.message_id for m in history] == ["run_a:m1", "run_a:m2", "run_a:m3"]
    assert [m.role for m in history] == [Role.ROLE_USER, Role.ROLE_AGENT, Role.ROLE_USER]
    kinds = [tasks.part_kind(m.parts[0]) for m in history]
    assert kinds == [None, "function_call", "function_response"]
    assert tasks.part_data(history[2].parts[0]) == {"id": "c1", "name": "lookup", "response": "y"}
