"""Conversations on both back ends: a run continuing a completed one (what it inherits,
what it overrides, what it refuses), the `run.continued` note on the earlier run, and a
run's conversation page by page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.clock import SYSTEM_CLOCK
from app.core import AssistantMessage, Text, UserMessage
from app.core.events import EventType as E
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.providers.base import ModelRequest
from app.service import messages
from app.service.errors import InvalidRequest, RunNotFound, RunStateConflict
from app.service.runs import RunService, RunView
from app.service.schemas import RunCreate
from app.settings import Settings
from app.store.runs import RunStore
from tests.helpers import ADD_TOOL, drive_once, results_for, run_body, suspended_run

MUL_TOOL = {**ADD_TOOL, "name": "mul", "description": "Multiply two numbers"}
ECHO = {"provider": "scripted", "name": "echo"}  # no script: "You said: <prompt>"


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    # Webhooks to 127.0.0.1 (never sent here: no sender runs) are allowed.
    return RunService(store, settings.model_copy(update={"webhook_allow_private": True}))


async def completed_run(service: RunService, **overrides: Any) -> RunView:
    """The helpers' scripted run (two `add` calls, then a text) driven to completion."""
    view = await suspended_run(service, **overrides)
    await service.submit_tool_results(results_for(view), run_id=view.record.id, scope=Scope.ALL)
    await drive_once(service.store, service.settings)
    done = await service.get_run(view.record.id, scope=Scope.ALL)
    assert done.record.status == RunStatus.COMPLETED, done.record
    return done


def continuing(previous: str, **fields: Any) -> RunCreate:
    return RunCreate.model_validate({"prompt": "and now?", "previous_run_id": previous, **fields})


async def drive_capturing(service: RunService) -> list[ModelRequest]:
    """Drive the next due run once; the model requests its provider received."""
    from app.service.tokens import new_key
    from app.worker.driver import RunDriver
    from app.worker.providers import make_provider

    seen: list[ModelRequest] = []

    class Capturing:
        def __init__(self, spec: Any) -> None:
            self.inner = make_provider(spec, service.settings, clock=SYSTEM_CLOCK)
            self.name = self.inner.name

        async def complete(self, request: ModelRequest) -> Any:
            seen.append(request)
            return await self.inner.complete(request)

        def stream(self, request: ModelRequest) -> Any:
            seen.append(request)
            return self.inner.stream(request)

    store, settings = service.store, service.settings
    key = await store.secret("callback_key", new_key)
    driver = RunDriver(store, settings, "capture", Capturing, key, clock=SYSTEM_CLOCK)  # type: ignore[arg-type]
    now = datetime.now(UTC)
    record = await store.claim("capture", now, now + timedelta(seconds=settings.lease_seconds))
    assert record is not None
    await driver.drive(record)
    return seen


async def test_a_continuing_run_inherits_the_conversation_and_the_agent(
    service: RunService,
) -> None:
    first = await completed_run(
        service,
        preamble="Be brief.",
        tool_choice="required",
        invalid_tool_call={"action": "retry", "max_retries": 2},
        webhook={"url": "http://127.0.0.1:9/hook"},
        tool_concurrency=2,
    )
    earlier = await service.load_run(first.record.id, scope=Scope.ALL)
    view, created = await service.create_run(continuing(first.record.id, max_turns=3))
    assert created
    record = view.record
    for name in ("model", "preamble", "tools", "tool_choice", "invalid_tool_call", "webhook"):
        assert record.config[name] == first.record.config[name], name
    assert record.config["tool_concurrency"] == 2
    assert record.config["previous_run_id"] == first.record.id
    assert record.config["conversation_id"] == first.record.id
    assert record.max_turns == 3  # its own, not inherited
    run = await service.load_run(record.id, scope=Scope.ALL)
    assert run.full_history() == (*earlier.full_history(), UserMessage("and now?"))
    assert run.messages() == (UserMessage("and now?"),)
    created_event = (await service.events(record.id, scope=Scope.ALL))[0]
    assert created_event.data["previous_run_id"] == first.record.id
    noted = (await service.events(first.record.id, scope=Scope.ALL))[-1]
    assert noted.type == E.RUN_CONTINUED
    assert noted.data == {"run_id": record.id, "conversation_id": first.record.id}
    again = await service.get_run(first.record.id, scope=Scope.ALL)
    assert again.record.status == RunStatus.COMPLETED  # annotated, still completed


async def test_the_model_of_a_continuing_run_sees_the_whole_conversation(
    service: RunService,
) -> None:
    first = await completed_run(service, preamble="Be brief.")
    view, _ = await service.create_run(continuing(first.record.id, model=ECHO, tools=[]))
    (request,) = await drive_capturing(service)
    earlier = await service.load_run(first.record.id, scope=Scope.ALL)
    assert request.history == earlier.full_history()
    assert request.prompt == UserMessage("and now?")
    assert request.preamble == "Be brief." and request.tools == ()
    done = await service.get_run(view.record.id, scope=Scope.ALL)
    assert done.record.status == RunStatus.COMPLETED
    assert done.record.output == "You said: and now?"


async def test_a_chain_keeps_the_first_run_as_its_conversation(service: RunService) -> None:
    first = await completed_run(service)
    second, _ = await service.create_run(continuing(first.record.id, model=ECHO, tools=[]))
    await drive_once(service.store, service.settings)
    third, _ = await service.create_run(continuing(second.record.id, prompt="third"))
    assert third.record.config["conversation_id"] == first.record.id
    assert third.record.config["previous_run_id"] == second.record.id
    assert third.record.config["model"] == ECHO  # from the second run, which overrode it
    run = await service.load_run(third.record.id, scope=Scope.ALL)
    texts = [m.content[0].text for m in run.full_history() if isinstance(m, UserMessage)]
    assert texts[0] == "add 1+2 and 3+4" and texts[-2:] == ["and now?", "third"]


async def test_fields_the_body_sets_override_null_and_empty_included(
    service: RunService,
) -> None:
    first = await completed_run(
        service, preamble="Be brief.", webhook={"url": "http://127.0.0.1:9/hook"}
    )
    view, _ = await service.create_run(
        continuing(
            first.record.id,
            model=ECHO,
            preamble=None,
            tools=[MUL_TOOL],
            tool_choice={"name": "mul"},
            webhook=None,
            history=[{"role": "user", "content": "an aside"}],
        )
    )
    config = view.record.config
    assert config["model"] == ECHO and config["preamble"] is None and config["webhook"] is None
    assert [t["name"] for t in config["tools"]] == ["mul"]
    assert config["tool_choice"] == {"name": "mul"}
    run = await service.load_run(view.record.id, scope=Scope.ALL)
    assert run.full_history()[-2:] == (UserMessage("an aside"), UserMessage("and now?"))
    await service.cancel(
        view.record.id, scope=Scope.ALL
    )  # (while it is active, the conversation is busy)
    cleared, _ = await service.create_run(continuing(first.record.id, tools=[]))
    assert cleared.record.config["tools"] == []


async def test_an_inherited_rule_is_checked_against_the_overrides(service: RunService) -> None:
    first = await completed_run(service, tool_choice={"name": "add"})
    with pytest.raises(InvalidRequest, match="not defined: add"):
        await service.create_run(continuing(first.record.id, tools=[MUL_TOOL]))
    ok, _ = await service.create_run(
        continuing(first.record.id, tools=[MUL_TOOL], tool_choice=None)
    )
    assert ok.record.config["tool_choice"] is None


async def test_only_a_completed_run_can_be_continued(service: RunService) -> None:
    suspended = await suspended_run(service)
    with pytest.raises(RunStateConflict) as refused:
        await service.create_run(continuing(suspended.record.id))
    assert refused.value.current == RunStatus.REQUIRES_ACTION.value
    await service.cancel(suspended.record.id, scope=Scope.ALL)
    with pytest.raises(RunStateConflict) as refused:
        await service.create_run(continuing(suspended.record.id))
    assert refused.value.current == RunStatus.CANCELLED.value
    with pytest.raises(RunNotFound, match="previous_run_id"):
        await service.create_run(continuing("run_missing"))
    assert await service.store.count_by_status(scope=Scope.ALL) == {RunStatus.CANCELLED.value: 1}


async def test_model_is_required_unless_continuing(service: RunService) -> None:
    body = RunCreate.model_validate({"prompt": "hi"})
    with pytest.raises(InvalidRequest, match="model is required"):
        await service.create_run(body)
    with pytest.raises(ValueError, match="model must be an object"):
        RunCreate.model_validate({"prompt": "hi", "model": None})


async def test_a_replay_notes_the_continuation_once_even_after_a_crash(
    service: RunService, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await completed_run(service)
    real = service._note_continued

    async def crash(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("the process died here")

    monkeypatch.setattr(service, "_note_continued", crash)
    body = continuing(first.record.id)
    with pytest.raises(ConnectionError):
        await service.create_run(body, idempotency_key="k")
    monkeypatch.setattr(service, "_note_continued", real)
    view, created = await service.create_run(body, idempotency_key="k")
    again, created_again = await service.create_run(body, idempotency_key="k")
    assert not created and not created_again and again.record.id == view.record.id
    notes = [
        e
        for e in await service.events(first.record.id, scope=Scope.ALL)
        if e.type == E.RUN_CONTINUED
    ]
    assert [n.data["run_id"] for n in notes] == [view.record.id]


async def test_leaving_out_an_inherited_field_is_another_request(service: RunService) -> None:
    """With a key, `tools: []` (clears them) and no `tools` (inherits) are not the same."""
    first = await completed_run(service)
    await service.create_run(continuing(first.record.id), idempotency_key="k")
    with pytest.raises(Exception, match="different request body"):
        await service.create_run(continuing(first.record.id, tools=[]), idempotency_key="k")


# --- the conversation, page by page ---------------------------------------------------------


async def test_messages_page_through_the_conversation_oldest_first(service: RunService) -> None:
    first = await completed_run(service)
    view, _ = await service.create_run(
        continuing(
            first.record.id, model=ECHO, tools=[], history=[{"role": "system", "content": "s"}]
        )
    )
    await drive_once(service.store, service.settings)
    run = await service.load_run(view.record.id, scope=Scope.ALL)
    everything: list[messages.Entry] = []
    cursor = None
    pages = 0
    while True:
        entries, cursor = await service.messages(
            view.record.id, limit=2, cursor=cursor, scope=Scope.ALL
        )
        everything.extend(entries)
        pages += 1
        if cursor is None:
            break
    total = len(run.full_history())
    assert pages == (total + 1) // 2 and [e.index for e in everything] == list(range(total))
    own = len(run.messages())
    assert [e.from_history for e in everything] == [True] * (total - own) + [False] * own
    assert everything[-2].message == {
        "role": "user",
        "content": [{"type": "text", "text": "and now?"}],
    }
    assert everything[-1].message["role"] == "assistant"
    assert everything[-1].message["content"] == [{"type": "text", "text": "You said: and now?"}]
    assert everything[total - own - 1].message == {"role": "system", "content": "s"}


async def test_messages_resent_as_history_make_the_same_conversation(
    service: RunService,
) -> None:
    """Tool calls and results included: a client can send a page back as `history`."""
    first = await completed_run(service)
    entries, _ = await service.messages(first.record.id, limit=100, cursor=None, scope=Scope.ALL)
    copy, _ = await service.create_run(
        run_body(history=[e.message for e in entries], prompt="and now?")
    )
    continued, _ = await service.create_run(continuing(first.record.id))
    a = await service.load_run(copy.record.id, scope=Scope.ALL)
    b = await service.load_run(continued.record.id, scope=Scope.ALL)
    assert a.full_history() == b.full_history()
    assert any(isinstance(m, AssistantMessage) and m.id for m in a.full_history())
    assert AssistantMessage([Text("the sums are 3 and 7")], "msg_scripted_2") in a.full_history()


async def test_messages_refusals(service: RunService) -> None:
    with pytest.raises(RunNotFound):
        await service.messages("run_missing", limit=10, cursor=None, scope=Scope.ALL)
    view, _ = await service.create_run(run_body())
    for bad in ("x", "bXg", "AAAA", messages.encode_cursor(1)[:-1] + "!"):
        with pytest.raises(InvalidRequest, match="cursor"):
            await service.messages(view.record.id, limit=10, cursor=bad, scope=Scope.ALL)
    entries, cursor = await service.messages(view.record.id, limit=10, cursor=None, scope=Scope.ALL)
    assert [e.message for e in entries] == [
        {"role": "user", "content": [{"type": "text", "text": "add 1+2 and 3+4"}]}
    ]
    assert cursor is None
    past, cursor = await service.messages(
        view.record.id, limit=10, cursor=messages.encode_cursor(5), scope=Scope.ALL
    )
    assert past == [] and cursor is None
