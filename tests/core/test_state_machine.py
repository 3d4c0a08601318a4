"""Property-based test: random legal and illegal driving of an AgentRun.

After every step: a refused (protocol-violating) call changes nothing; `turn() <= max_turns`;
at every CallModel each tool call in the history is answered exactly once; and a twin
restored from JSON (re-made at random checkpoints) behaves identically from then on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from app.core import (
    AgentRun,
    AgentRunError,
    AssistantMessage,
    CallModel,
    Done,
    Fail,
    Feedback,
    Message,
    ModelTurn,
    Reasoning,
    Repair,
    Repeat,
    Retry,
    Skip,
    Stop,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    Usage,
    UserMessage,
)

TOOL_NAMES = ["add", "mul", "bad", "final_result"]

items = st.one_of(
    st.builds(Text, st.sampled_from(["", "hi", '{"summary":"s"}'])),
    st.builds(
        ToolCall.from_wire,
        st.sampled_from(["c1", "c2", "c3", ""]),
        st.sampled_from(TOOL_NAMES),
        st.sampled_from([{"x": 1}, {"summary": "s"}, "scalar", None]),
    ),
    st.just(Reasoning.of_text("thinking", signature="sig")),
)
turns = st.builds(
    ModelTurn,
    choice=st.lists(items, max_size=4).map(tuple),
    usage=st.builds(Usage, st.integers(0, 50), st.integers(0, 50)),
    executable_tool_names=st.just(frozenset({"add", "mul"})),
    allowed_tool_names=st.sampled_from(
        [
            frozenset({"add", "mul"}),
            frozenset({"add"}),
            frozenset(),
            frozenset(TOOL_NAMES[:2] + ["final_result"]),
        ]
    ),
    message_id=st.sampled_from([None, "msg_1"]),
    finish_reason=st.sampled_from([None, "stop", "length", "content_filter", "tool_calls", "odd"]),
)
valid_turns = st.builds(
    ModelTurn,
    choice=st.lists(
        st.one_of(
            st.builds(Text, st.sampled_from(["", "done", '{"summary":"s"}'])),
            st.builds(
                ToolCall.from_wire,
                st.sampled_from(["c1", "c2", ""]),
                st.sampled_from(["add", "mul", "add", "bad", "final_result"]),
                st.just({"x": 1}),
            ),
        ),
        max_size=3,
    ).map(tuple),
    usage=st.builds(Usage, st.integers(0, 9), st.integers(0, 9)),
    executable_tool_names=st.just(frozenset({"add", "mul"})),
    allowed_tool_names=st.just(frozenset({"add", "mul", "final_result"})),
    finish_reason=st.sampled_from([None, "stop", "tool_calls"]),
)
actions = st.one_of(
    st.just(Fail()),
    st.builds(Retry, st.sampled_from(["use add", "again"])),
    st.builds(Repair, st.sampled_from(["add", "mul", "nope"])),
    st.builds(Skip, st.just("skipped")),
    st.builds(Stop, st.just("operator stop")),
)


def outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        result = fn(*args)
    except AgentRunError as err:
        return (type(err).__name__, str(err))
    if isinstance(result, Done):
        # Upstream never serialises this counter: a restored Done reports 0 (spec §9).
        result = Done(replace(result.response, output_tool_calls=0))
    return ("ok", result)


def assert_answered_once(messages: tuple[Message, ...]) -> None:
    calls: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    for m in messages:
        if isinstance(m, AssistantMessage):
            calls.update(c.id for c in m.content if isinstance(c, ToolCall))
        elif isinstance(m, UserMessage):
            answers.update(c.call_id for c in m.content if isinstance(c, ToolResult))
    assert calls == answers, (calls, answers)


class AgentRunMachine(RuleBasedStateMachine):
    @initialize(
        max_turns=st.sampled_from([0, 1, 2, 3, 4, 6, 8]),
        retries=st.integers(0, 2),
        tool_choice=st.sampled_from([None, ToolChoice.auto(), ToolChoice.none()]),
        output_tool=st.booleans(),
        output_retries=st.integers(0, 2),
    )
    def start(
        self,
        max_turns: int,
        retries: int,
        tool_choice: ToolChoice | None,
        output_tool: bool,
        output_retries: int,
    ) -> None:
        self.run = AgentRun(
            "question",
            max_turns=max_turns,
            history=[UserMessage("earlier")],
            tool_choice=tool_choice,
            max_invalid_tool_call_retries=retries,
            output_tool_name="final_result" if output_tool else None,
            output_schema={"type": "object", "required": ["summary"]} if output_tool else None,
            max_output_retries=output_retries,
        )
        self.twin = AgentRun.from_json(self.run.to_json())

    def _both(self, name: str, *args: Any) -> tuple[str, Any]:
        before = self.run.to_json()
        result = outcome(getattr(self.run, name), *args)
        twin_result = outcome(getattr(self.twin, name), *args)
        assert result == twin_result
        event(f"{name} -> {result[0] if result[0] != 'ok' else type(result[1]).__name__}")
        assert self.run.to_json() == self.twin.to_json()
        if result[0] == "ProtocolViolation":
            assert self.run.to_json() == before, "a refused call changed the run"
        if result[0] == "ok" and isinstance(result[1], CallModel):
            step = result[1]
            assert step.turn == self.run.turn()
            assert_answered_once((*step.history, step.prompt))
        return result

    @rule()
    def next_step(self) -> None:
        self._both("next_step")

    @rule(turn=turns)
    def model_response(self, turn: ModelTurn) -> None:
        self._both("model_response", turn)

    @precondition(lambda self: self.run.status == "AwaitingModel")
    @rule(turn=valid_turns)
    def legal_model_response(self, turn: ModelTurn) -> None:
        self._both("model_response", turn)

    @precondition(lambda self: self.run.status in ("PreparingRequest", "AwaitingAdvance"))
    @rule()
    def legal_next_step(self) -> None:
        self._both("next_step")

    @precondition(lambda self: self.run.status == "ResolvingToolCalls")
    @rule(action=st.sampled_from([Repair("add"), Skip("skipped"), Retry("use add")]))
    def legal_resolve(self, action: Any) -> None:
        self._both("resolve_invalid_tool_call", action)

    @rule(action=actions)
    def resolve(self, action: Any) -> None:
        self._both("resolve_invalid_tool_call", action)

    @rule(request=st.one_of(st.just(Repeat()), st.just(Feedback("try again"))))
    def retry_model_turn(self, request: Any) -> None:
        self._both("retry_model_turn", request)

    @rule(data=st.data())
    def tool_results(self, data: st.DataObject) -> None:
        pending = self.run.pending_tool_calls()
        answers = [p.preresolved_result or ToolResult.text(p.tool_call, "2") for p in pending]
        kind = data.draw(st.sampled_from(["all", "all", "all", "drop", "extra", "text", "empty"]))
        if kind == "drop" and answers:
            answers.pop(data.draw(st.integers(0, len(answers) - 1)))
        elif kind == "extra":
            answers.append(ToolResult("unknown_id", "add", (Text("x"),)))
        elif kind == "text":
            answers.append(Text("not a result"))  # type: ignore[arg-type]
        elif kind == "empty":
            answers = []
        answers = data.draw(st.permutations(answers))
        self._both("tool_results", answers)

    @precondition(lambda self: self.run.status == "ExecutingTools")
    @rule(data=st.data())
    def legal_tool_results(self, data: st.DataObject) -> None:
        answers = [
            p.preresolved_result or ToolResult.text(p.tool_call, "2")
            for p in self.run.pending_tool_calls()
        ]
        self._both("tool_results", data.draw(st.permutations(answers)))

    @rule()
    def checkpoint(self) -> None:
        """Suspend/resume: the twin restarts from the run's JSON."""
        self.twin = AgentRun.from_json(self.run.to_json())
        assert self.twin.to_json() == self.run.to_json()

    @invariant()
    def budget_respected(self) -> None:
        if hasattr(self, "run"):
            assert self.run.turn() <= self.run.max_turns
            assert len(self.run.completion_calls()) <= self.run.turn()


AgentRunMachine.TestCase.settings = settings(
    max_examples=500,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestAgentRunStateMachine = AgentRunMachine.TestCase
