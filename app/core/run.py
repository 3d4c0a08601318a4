"""`AgentRun`: the sans-IO agent loop (a port of rig's `crates/rig-agent/src/agent/run`).

The run owns every decision: the exact turn budget, tool-call validation, invalid-call
recovery, history, usage and the final response. It performs no IO; a driver asks
`next_step()` what to do, does it, and feeds the answer back.

Methods that can fail swap `Failed` in before they work (the "take the state" pattern,
behaviour spec §3.2): a wrong-state call puts the old state back and raises a
`ProtocolViolation`, a fatal error leaves `Failed` behind.

Arguments of the wrong type (rig's types make them impossible) raise `TypeError` before
anything is touched, so a misused method leaves the run exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.core.checks import check_count, check_instance, check_optional_str, items_of
from app.core.content import (
    MESSAGE_TYPES,
    AssistantContent,
    AssistantMessage,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
    UserContent,
    UserMessage,
)
from app.core.errors import (
    CompletionError,
    MaxTurnsError,
    PromptCancelled,
    ProtocolViolation,
    UnknownToolCall,
    debug_list,
)
from app.core.jsonvalue import compact_json, freeze
from app.core.types import (
    TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER,
    AgentRunStep,
    CallModel,
    CallTools,
    CompletionCall,
    CompletionIdentity,
    Continue,
    Done,
    Fail,
    Feedback,
    FinishReason,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelTurn,
    ModelTurnOutcome,
    NeedsResolution,
    PartialStreamedTurn,
    PendingToolCall,
    PromptResponse,
    Repair,
    Repaired,
    Repeat,
    Retry,
    RetryRequest,
    Skip,
    Stop,
    StreamedInvalidToolCall,
    StreamedResolution,
    StreamedTurn,
    ToolChoice,
    TurnAbandoned,
    TurnRetried,
    Usage,
)

NO_IDENTITY = CompletionIdentity()

PREPARING_REQUEST = "PreparingRequest"
AWAITING_MODEL = "AwaitingModel"
FAILED = "Failed"

NO_RESULTS = "tool execution produced no tool results"
LOST_PROMPT = "prompt loop lost its pending prompt"
TOOL_TURN_RETRY = (
    "model-turn retry does not support tool-bearing model turns; use tool-call hooks instead"
)
RETRY_NO_MESSAGES = "invalid tool call retry produced no retry messages"

ACTION_TYPES = (Fail, Retry, Repair, Skip, Stop)
RETRY_REQUEST_TYPES = (Repeat, Feedback)

PV_NEXT_STEP_AWAITING_MODEL = (
    "next_step called while a model response is pending; feed it via model_response first"
)
PV_NEXT_STEP_RESOLVING = (
    "next_step called while an invalid tool-call resolution is pending; answer it via "
    "resolve_invalid_tool_call first"
)
PV_NEXT_STEP_FAILED = "next_step called after the run already failed or was misdriven"
PV_MODEL_RESPONSE = "model_response called without a pending CallModel step"
PV_MODEL_RESPONSE_STREAMED = (
    "model_response called after record_streamed_completion_call for the same turn; feed "
    "streamed turns via streamed_turn"
)
PV_RETRY_MODEL_TURN = "retry_model_turn called without an accepted turn awaiting advancement"
PV_RESOLVE = "resolve_invalid_tool_call called without a pending invalid tool call"
PV_TOOL_RESULTS = "tool_results called without a pending CallTools step"
PV_NOT_A_TOOL_RESULT = "tool_results received content that is not a tool result"
PV_RECORD_NO_CALL = (
    "record_streamed_completion_call called without a pending or rolled-back CallModel step"
)
PV_RECORD_TWICE = "record_streamed_completion_call called twice for the same model turn"
PV_RESOLVE_STREAMED = "resolve_streamed_invalid_tool_call called without a pending CallModel step"
PV_STREAMED_TURN = "streamed_turn called without a pending CallModel step"


# --- the states that carry data -------------------------------------------------------------


@dataclass(slots=True)
class Resolving:
    """`ResolvingToolCalls`: scanning a turn's tool calls, parked on an invalid one."""

    message_id: str | None
    original_choice: tuple[AssistantContent, ...]
    items: list[AssistantContent]
    next_index: int
    executable_tool_names: frozenset[str]
    allowed_tool_names: frozenset[str]
    skipped: dict[int, ToolResult]
    recovered: bool
    any_skipped: bool
    has_tool_calls: bool


@dataclass(slots=True)
class Advancing:
    """`AwaitingAdvance`: an accepted turn, not yet in history."""

    message_id: str | None
    items: tuple[AssistantContent, ...]
    has_tool_calls: bool
    skipped: dict[int, ToolResult]
    internal_call_ids: tuple[tuple[str, str], ...]


@dataclass(slots=True)
class Executing:
    """`ExecutingTools`: waiting for one `tool_results` call answering every call."""

    calls: tuple[PendingToolCall, ...]


@dataclass(slots=True)
class Finished:
    """`Done`."""

    response: PromptResponse


State = str | Resolving | Advancing | Executing | Finished


def state_name(state: State) -> str:
    if isinstance(state, str):
        return state
    return {
        Resolving: "ResolvingToolCalls",
        Advancing: "AwaitingAdvance",
        Executing: "ExecutingTools",
        Finished: "Done",
    }[type(state)]


# --- helper predicates (behaviour spec §0.2) ------------------------------------------------


def is_empty_assistant_turn(items: Sequence[AssistantContent]) -> bool:
    if not items:
        return True
    if len(items) == 1:
        only = items[0]
        return isinstance(only, Text) and only.text == "" and only.additional_params is None
    return False


def turn_delivered_no_answer(items: Sequence[AssistantContent]) -> bool:
    return not any(
        (isinstance(i, Text) and i.text != "") or isinstance(i, ToolCall | Image) for i in items
    )


def assistant_text_from_choice(items: Sequence[AssistantContent]) -> str:
    return "".join(i.text for i in items if isinstance(i, Text))


def has_tool_call(items: Iterable[AssistantContent]) -> bool:
    return any(isinstance(i, ToolCall) for i in items)


def retry_result_message(
    items: Sequence[AssistantContent], invalid_id: str, feedback: str
) -> UserMessage | None:
    """One user message answering every tool call of `items`: the invalid id gets the
    feedback, every other call TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER. None without calls."""
    results = [
        ToolResult.text(
            i,
            feedback if i.id == invalid_id else TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER,
            is_error=True,
        )
        for i in items
        if isinstance(i, ToolCall)
    ]
    return UserMessage(results) if results else None


def missing_required_fields(schema: Any, arguments: Any) -> list[str]:
    """The schema's top-level `required` strings absent from the arguments (all of them
    when the arguments are not an object)."""
    if not isinstance(schema, Mapping):
        return []
    required = schema.get("required")
    if not isinstance(required, list):
        return []
    names = [r for r in required if isinstance(r, str)]
    if not isinstance(arguments, Mapping):
        return names
    return [n for n in names if n not in arguments]


def _reject_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (upstream's parser refuses them too)."""
    raise ValueError(f"{name} is not valid JSON")


def _truncation_message(finish_reason: str) -> str:
    if finish_reason == "length":
        shown = "Length"
        remedy = (
            "the turn ran out of output budget before producing one — raise max_tokens for "
            "this request"
        )
    else:
        shown = "ContentFilter"
        remedy = (
            "the provider filtered the response — the content, not the budget, is what it "
            "objected to"
        )
    return f"the model produced no answer and stopped with finish_reason={shown}; {remedy}"


class AgentRun:
    """The agent loop as a state machine. See the module docstring."""

    def __init__(
        self,
        prompt: str | Message,
        *,
        max_turns: int = 1,
        history: Iterable[Message] | None = None,
        tool_choice: ToolChoice | None = None,
        max_invalid_tool_call_retries: int = 0,
        output_tool_name: str | None = None,
        output_schema: Any = None,
        max_output_retries: int = 0,
    ) -> None:
        check_instance("AgentRun", "prompt", prompt, (str, *MESSAGE_TYPES))
        first = UserMessage(prompt) if isinstance(prompt, str) else prompt
        check_count("AgentRun", "max_turns", max_turns)
        check_count("AgentRun", "max_invalid_tool_call_retries", max_invalid_tool_call_retries)
        check_count("AgentRun", "max_output_retries", max_output_retries)
        if tool_choice is not None:
            check_instance("AgentRun", "tool_choice", tool_choice, ToolChoice)
        check_optional_str("AgentRun", "output_tool_name", output_tool_name)
        schema = freeze(output_schema, "AgentRun.output_schema")
        history_items = (
            None if history is None else items_of("AgentRun", "history", history, MESSAGE_TYPES)
        )
        self._max_turns = max_turns
        self._max_invalid_tool_call_retries = max_invalid_tool_call_retries
        self._tool_choice = tool_choice
        self._output_tool_name = output_tool_name
        self._output_schema = schema
        self._max_output_retries = max_output_retries
        self._output_retries = 0
        self._chat_history: tuple[Message, ...] | None = history_items
        self._new_messages: list[Message] = [first]
        self._current_turn = 0
        self._usage = Usage()
        self._completion_calls: list[CompletionCall] = []
        self._completion_call_index = 0
        self._invalid_tool_call_retries = 0
        self._rollback_pending = False
        self._streamed_completion_call_recorded = False
        self._state: State = PREPARING_REQUEST

    # --- serialization ---------------------------------------------------------------------

    def to_json(self) -> str:
        """The whole run, upstream's JSON shape plus `schema_version`."""
        from app.core.serde import dumps, run_to_dict

        return dumps(run_to_dict(self))

    @classmethod
    def from_json(cls, data: str | bytes) -> AgentRun:
        """Load a run of this or any older schema version (raises `StateDecodeError`)."""
        from app.core.serde import loads

        return loads(data)

    # --- pure queries ---------------------------------------------------------------------

    @property
    def status(self) -> str:
        """The state's upstream name, e.g. `ExecutingTools`."""
        return state_name(self._state)

    @property
    def max_turns(self) -> int:
        return self._max_turns

    def usage(self) -> Usage:
        return self._usage

    def turn(self) -> int:
        return self._current_turn

    def completion_calls(self) -> tuple[CompletionCall, ...]:
        return tuple(self._completion_calls)

    def messages(self) -> tuple[Message, ...]:
        return tuple(self._new_messages)

    def full_history(self) -> tuple[Message, ...]:
        return (self._chat_history or ()) + tuple(self._new_messages)

    def is_done(self) -> bool:
        return isinstance(self._state, Finished)

    def response(self) -> PromptResponse | None:
        return self._state.response if isinstance(self._state, Finished) else None

    def pending_tool_calls(self) -> tuple[PendingToolCall, ...]:
        """The calls awaiting `tool_results` (empty unless `ExecutingTools`)."""
        return self._state.calls if isinstance(self._state, Executing) else ()

    def cancel_error(self, reason: str) -> PromptCancelled:
        return PromptCancelled(reason, self.full_history())

    def pending_invalid_tool_call(self) -> InvalidToolCallContext | None:
        state = self._state
        if not isinstance(state, Resolving) or not self._parked_on_invalid(state):
            return None
        return self._context(state)

    # --- blocking path --------------------------------------------------------------------

    def next_step(self) -> AgentRunStep:
        old, self._state = self._state, FAILED
        if old == PREPARING_REQUEST:
            return self._emit_call_model()
        if isinstance(old, Advancing):
            return self._advance(old)
        if isinstance(old, Executing):
            self._state = old
            return CallTools(old.calls)
        if isinstance(old, Finished):
            self._state = old
            return Done(old.response)
        self._state = old
        if old == AWAITING_MODEL:
            raise self._violation(PV_NEXT_STEP_AWAITING_MODEL)
        if isinstance(old, Resolving):
            raise self._violation(PV_NEXT_STEP_RESOLVING)
        raise self._violation(PV_NEXT_STEP_FAILED)

    def model_response(self, turn: ModelTurn) -> ModelTurnOutcome:
        check_instance("model_response", "turn", turn, ModelTurn)
        if self._state != AWAITING_MODEL:
            raise self._violation(PV_MODEL_RESPONSE)
        if self._streamed_completion_call_recorded:
            raise self._violation(PV_MODEL_RESPONSE_STREAMED)
        self._record(
            turn.usage,
            CompletionIdentity(turn.message_id, turn.response_id, turn.provider_request_id),
            turn.finish_reason,
            turn.raw,
        )
        resolving = Resolving(
            message_id=turn.message_id,
            original_choice=turn.choice,
            items=list(turn.choice),
            next_index=0,
            executable_tool_names=turn.executable_tool_names,
            allowed_tool_names=turn.allowed_tool_names,
            skipped={},
            recovered=False,
            any_skipped=False,
            has_tool_calls=has_tool_call(turn.choice),
        )
        return self._scan(resolving)

    def resolve_invalid_tool_call(self, action: InvalidToolCallAction) -> ModelTurnOutcome:
        check_instance("resolve_invalid_tool_call", "action", action, ACTION_TYPES)
        old, self._state = self._state, FAILED
        if not isinstance(old, Resolving) or not self._parked_on_invalid(old):
            self._state = old
            raise self._violation(PV_RESOLVE)
        index = old.next_index
        call = old.items[index]
        assert isinstance(call, ToolCall)
        history = self._diagnostic_history(old.message_id, old.original_choice)
        self._validate_action(
            action, call.name, old.executable_tool_names, old.allowed_tool_names, history
        )
        if isinstance(action, Retry):
            self._invalid_tool_call_retries += 1
            self._new_messages.append(AssistantMessage(old.original_choice, old.message_id))
            message = retry_result_message(old.original_choice, call.id, action.feedback)
            if message is None:
                raise PromptCancelled(RETRY_NO_MESSAGES, self.full_history())
            self._new_messages.append(message)
            self._state = PREPARING_REQUEST
            return TurnRetried()
        if isinstance(action, Repair):
            old.items[index] = call.renamed(action.tool_name)
            old.recovered = True
            return self._scan(old)
        if not isinstance(action, Skip):  # Fail and Stop raised in _validate_action
            raise AssertionError(f"unreachable: {action!r}")
        old.skipped[index] = ToolResult.text(call, action.reason, is_error=True)
        old.recovered = True
        old.any_skipped = True
        old.next_index = index + 1
        return self._scan(old)

    def tool_results(self, results: Iterable[UserContent]) -> None:
        """Answer every pending call at once. `results` may be any iterable: it is read
        once, before anything is checked or committed."""
        state = self._state
        if not isinstance(state, Executing):
            raise self._violation(PV_TOOL_RESULTS)
        if isinstance(results, str) or not isinstance(results, Iterable):
            raise TypeError(f"tool_results takes an iterable, not {type(results).__name__}")
        results = tuple(results)
        if not results:
            self._state = FAILED
            raise PromptCancelled(NO_RESULTS, self.full_history())
        remaining = [c.tool_call.id for c in state.calls]
        for result in results:
            if not isinstance(result, ToolResult):
                raise self._violation(PV_NOT_A_TOOL_RESULT)
            try:
                position = remaining.index(result.call_id)
            except ValueError:
                raise self._violation(
                    "tool_results received a result for unknown or already-answered tool "
                    f"call id `{result.call_id}`"
                ) from None
            remaining[position] = remaining[-1]  # swap-remove, as upstream
            remaining.pop()
        if remaining:
            raise self._violation(
                f"tool_results left pending tool call id(s) unanswered: {debug_list(remaining)}"
            )
        self._new_messages.append(UserMessage(results))
        self._state = PREPARING_REQUEST

    def retry_model_turn(self, request: RetryRequest) -> None:
        check_instance("retry_model_turn", "request", request, RETRY_REQUEST_TYPES)
        old, self._state = self._state, FAILED
        if not isinstance(old, Advancing):
            self._state = old
            raise self._violation(PV_RETRY_MODEL_TURN)
        if old.has_tool_calls:
            raise PromptCancelled(TOOL_TURN_RETRY, self.full_history())
        if isinstance(request, Feedback):
            if not is_empty_assistant_turn(old.items):
                self._new_messages.append(AssistantMessage(old.items, old.message_id))
            self._new_messages.append(UserMessage(request.text))
        # Repeat writes nothing.
        self._state = PREPARING_REQUEST

    # --- streamed path --------------------------------------------------------------------

    def record_streamed_completion_call(
        self,
        usage: Usage,
        identity: CompletionIdentity = NO_IDENTITY,
        finish_reason: FinishReason = None,
        raw: Any = None,
    ) -> CompletionCall:
        check_instance("record_streamed_completion_call", "usage", usage, Usage)
        check_instance("record_streamed_completion_call", "identity", identity, CompletionIdentity)
        call = self._completion_call(usage, identity, finish_reason, raw)
        legal = self._state == AWAITING_MODEL or (
            self._state == PREPARING_REQUEST and self._rollback_pending
        )
        if not legal:
            raise self._violation(PV_RECORD_NO_CALL)
        if self._streamed_completion_call_recorded:
            raise self._violation(PV_RECORD_TWICE)
        self._streamed_completion_call_recorded = True
        return self._commit(call)

    def streamed_invalid_tool_call_context(
        self, partial: PartialStreamedTurn, invalid: StreamedInvalidToolCall
    ) -> InvalidToolCallContext:
        self._check_streamed(partial, invalid)
        call = invalid.tool_call
        return InvalidToolCallContext(
            tool_name=call.name,
            tool_call_id=call.id,
            internal_call_id=invalid.internal_call_id,
            args=invalid.args if invalid.args is not None else compact_json(call.arguments),
            available_tools=tuple(sorted(invalid.executable_tool_names)),
            allowed_tools=tuple(sorted(invalid.allowed_tool_names)),
            tool_choice=self._tool_choice,
            chat_history=self.full_history() + (self._partial_message(partial, invalid),),
            is_streaming=True,
        )

    def resolve_streamed_invalid_tool_call(
        self,
        partial: PartialStreamedTurn,
        invalid: StreamedInvalidToolCall,
        action: InvalidToolCallAction,
    ) -> StreamedResolution:
        self._check_streamed(partial, invalid)
        check_instance("resolve_streamed_invalid_tool_call", "action", action, ACTION_TYPES)
        if self._state != AWAITING_MODEL:
            raise self._violation(PV_RESOLVE_STREAMED)
        call = invalid.tool_call
        partial_message = self._partial_message(partial, invalid)
        try:
            self._validate_action(
                action,
                call.name,
                invalid.executable_tool_names,
                invalid.allowed_tool_names,
                self.full_history() + (partial_message,),
            )
        except Exception:
            self._state = FAILED
            raise
        if isinstance(action, Repair):
            return Repaired(action.tool_name)
        if isinstance(action, Retry):
            self._invalid_tool_call_retries += 1
            self._rollback(partial, partial_message, call, action.feedback)
            return TurnAbandoned(None)
        if not isinstance(action, Skip):  # Fail and Stop raised in _validate_action
            raise AssertionError(f"unreachable: {action!r}")
        self._rollback(partial, partial_message, call, action.reason)
        return TurnAbandoned(ToolResult.text(call, action.reason, is_error=True))

    def streamed_turn(self, turn: StreamedTurn) -> None:
        check_instance("streamed_turn", "turn", turn, StreamedTurn)
        if self._state != AWAITING_MODEL:
            raise self._violation(PV_STREAMED_TURN)
        if not self._streamed_completion_call_recorded:
            self._streamed_completion_call_recorded = True
            self._record(Usage(), CompletionIdentity(turn.message_id), turn.finish_reason, None)
        for item in turn.choice:
            if isinstance(item, ToolCall) and item.name not in turn.allowed_tool_names:
                self._state = FAILED
                history = self.full_history()
                if not is_empty_assistant_turn(turn.choice):
                    history += (AssistantMessage(turn.choice, turn.message_id),)
                raise UnknownToolCall(
                    item.name,
                    sorted(turn.executable_tool_names),
                    sorted(turn.allowed_tool_names),
                    history,
                )
        self._state = Advancing(
            message_id=turn.message_id,
            items=turn.choice,
            has_tool_calls=has_tool_call(turn.choice),
            skipped={},
            internal_call_ids=turn.internal_call_ids,
        )

    # --- internals ------------------------------------------------------------------------

    def _violation(self, detail: str) -> ProtocolViolation:
        return ProtocolViolation(detail, self.full_history())

    def _check_streamed(self, partial: object, invalid: object) -> None:
        check_instance("streamed invalid tool call", "partial", partial, PartialStreamedTurn)
        check_instance("streamed invalid tool call", "invalid", invalid, StreamedInvalidToolCall)

    def _completion_call(
        self,
        usage: Usage,
        identity: CompletionIdentity,
        finish_reason: FinishReason,
        raw: Any,
    ) -> CompletionCall:
        """The next completion call, built (and so checked) before anything changes."""
        return CompletionCall(
            call_index=self._completion_call_index,
            usage=usage,
            message_id=identity.message_id,
            response_id=identity.response_id,
            provider_request_id=identity.provider_request_id,
            finish_reason=finish_reason,
            raw=raw,
        )

    def _commit(self, call: CompletionCall) -> CompletionCall:
        usage = self._usage + call.usage  # may refuse a sum beyond u64: before any change
        self._completion_call_index += 1
        self._completion_calls.append(call)
        self._usage = usage
        return call

    def _record(
        self,
        usage: Usage,
        identity: CompletionIdentity,
        finish_reason: FinishReason,
        raw: Any,
    ) -> CompletionCall:
        return self._commit(self._completion_call(usage, identity, finish_reason, raw))

    def _emit_call_model(self) -> CallModel:
        # The state is already FAILED (taken by next_step); errors leave it so.
        if not self._new_messages:
            raise PromptCancelled(LOST_PROMPT, self.full_history())
        prompt = self._new_messages[-1]
        if self._current_turn >= self._max_turns:
            raise MaxTurnsError(self._max_turns, self.full_history(), prompt)
        self._current_turn += 1
        self._rollback_pending = False
        self._streamed_completion_call_recorded = False
        self._state = AWAITING_MODEL
        history = (self._chat_history or ()) + tuple(self._new_messages[:-1])
        return CallModel(prompt=prompt, history=history, turn=self._current_turn)

    def _parked_on_invalid(self, state: Resolving) -> bool:
        if state.next_index >= len(state.items):
            return False
        item = state.items[state.next_index]
        return isinstance(item, ToolCall) and item.name not in state.allowed_tool_names

    def _diagnostic_history(
        self, message_id: str | None, choice: tuple[AssistantContent, ...]
    ) -> tuple[Message, ...]:
        return self.full_history() + (AssistantMessage(choice, message_id),)

    def _context(self, state: Resolving) -> InvalidToolCallContext:
        call = state.items[state.next_index]
        assert isinstance(call, ToolCall)
        return InvalidToolCallContext(
            tool_name=call.name,
            tool_call_id=call.id,
            internal_call_id=None,
            args=compact_json(call.arguments),
            available_tools=tuple(sorted(state.executable_tool_names)),
            allowed_tools=tuple(sorted(state.allowed_tool_names)),
            tool_choice=self._tool_choice,
            chat_history=self._diagnostic_history(state.message_id, state.original_choice),
            is_streaming=False,
        )

    def _scan(self, state: Resolving) -> ModelTurnOutcome:
        """Walk from `next_index` to the next disallowed call, or accept the turn."""
        items = state.items
        allowed = state.allowed_tool_names
        index = state.next_index
        while index < len(items):
            item = items[index]
            if isinstance(item, ToolCall) and item.name not in allowed:
                state.next_index = index
                self._state = state
                return NeedsResolution(self._context(state))
            index += 1
        state.next_index = index
        if state.any_skipped:
            for position, item in enumerate(items):
                if isinstance(item, ToolCall) and position not in state.skipped:
                    state.skipped[position] = ToolResult.text(
                        item, TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER, is_error=True
                    )
        self._state = Advancing(
            message_id=state.message_id,
            items=tuple(items),
            has_tool_calls=state.has_tool_calls,
            skipped=state.skipped,
            internal_call_ids=(),
        )
        return Continue(state.recovered)

    def _validate_action(
        self,
        action: InvalidToolCallAction,
        current_name: str,
        executable: frozenset[str],
        allowed: frozenset[str],
        history: tuple[Message, ...],
    ) -> None:
        """Raise the fatal error an action leads to (the caller leaves the run Failed)."""

        def unknown(name: str) -> UnknownToolCall:
            return UnknownToolCall(name, sorted(executable), sorted(allowed), history)

        if isinstance(action, Fail):
            raise unknown(current_name)
        if isinstance(action, Stop):
            raise PromptCancelled(action.reason, history)
        if isinstance(action, Retry):
            if self._invalid_tool_call_retries >= self._max_invalid_tool_call_retries:
                raise unknown(current_name)
        elif isinstance(action, Repair):
            if action.tool_name not in allowed:
                raise unknown(action.tool_name)
        elif self._tool_choice is not None and self._tool_choice.kind == "none":  # Skip
            raise unknown(current_name)

    def _partial_message(
        self, partial: PartialStreamedTurn, invalid: StreamedInvalidToolCall
    ) -> AssistantMessage:
        content: list[AssistantContent] = list(partial.reasoning)
        if partial.text:
            content.append(Text(partial.text))
        content.extend(partial.pending_tool_calls)
        content.append(invalid.tool_call)
        return AssistantMessage(content, partial.message_id)

    def _rollback(
        self,
        partial: PartialStreamedTurn,
        partial_message: AssistantMessage,
        invalid_call: ToolCall,
        feedback: str,
    ) -> None:
        """Abandon a streamed turn: record it and answer every call it holds."""
        self._new_messages.append(partial_message)
        results = [
            ToolResult.text(c, TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER, is_error=True)
            for c in partial.pending_tool_calls
        ]
        results.append(ToolResult.text(invalid_call, feedback, is_error=True))
        self._new_messages.append(UserMessage(results))
        self._rollback_pending = True
        self._state = PREPARING_REQUEST

    def _can_reprompt(self) -> bool:
        return (
            self._output_retries < self._max_output_retries and self._current_turn < self._max_turns
        )

    def _advance(self, turn: Advancing) -> AgentRunStep:
        """`next_step` from `AwaitingAdvance` (behaviour spec §8), state taken (Failed)."""
        items = turn.items
        name = self._output_tool_name
        if name is not None and turn.has_tool_calls:
            output_calls = [i for i in items if isinstance(i, ToolCall) and i.name == name]
            if output_calls:
                return self._finish_with_output_tool(turn, output_calls[0], len(output_calls))

        if not is_empty_assistant_turn(items):
            self._new_messages.append(AssistantMessage(items, turn.message_id))
        if turn_delivered_no_answer(items) and self._completion_calls:
            last_reason = self._completion_calls[-1].finish_reason
            if last_reason in ("length", "content_filter"):
                assert last_reason is not None
                raise CompletionError(_truncation_message(last_reason))

        if turn.has_tool_calls:
            self._output_retries = 0
            return self._call_tools(turn)

        if (
            name is not None
            and not is_empty_assistant_turn(items)
            and self._can_reprompt()
            and not self._meets_output_schema(assistant_text_from_choice(items).strip())
        ):
            self._new_messages.append(
                UserMessage(
                    f"Provide your final answer by calling the `{name}` tool with the "
                    "structured result as its arguments, not as plain text."
                )
            )
            self._output_retries += 1
            self._state = PREPARING_REQUEST
            return self.next_step()

        return self._finish(assistant_text_from_choice(items), items, 0)

    def _finish_with_output_tool(self, turn: Advancing, call: ToolCall, count: int) -> AgentRunStep:
        output = compact_json(call.arguments)
        missing = missing_required_fields(self._output_schema, call.arguments)
        if missing and self._can_reprompt():
            self._new_messages.append(AssistantMessage(turn.items, turn.message_id))
            feedback = (
                f"The `{call.name}` arguments were missing required field(s): "
                f"{', '.join(missing)}. Call `{call.name}` again with every required field."
            )
            message = retry_result_message(turn.items, call.id, feedback)
            assert message is not None  # the turn holds at least this call
            self._new_messages.append(message)
            self._output_retries += 1
            self._state = PREPARING_REQUEST
            return self.next_step()
        content = tuple(i for i in turn.items if not isinstance(i, ToolCall)) + (Text(output),)
        self._new_messages.append(AssistantMessage(content, turn.message_id))
        return self._finish(output, content, count)

    def _call_tools(self, turn: Advancing) -> CallTools:
        unused = list(turn.internal_call_ids)
        calls: list[PendingToolCall] = []
        for position, item in enumerate(turn.items):
            if not isinstance(item, ToolCall):
                continue
            internal: str | None = None
            for k, (call_id, internal_id) in enumerate(unused):
                if call_id == item.id:
                    internal = internal_id
                    del unused[k]
                    break
            calls.append(PendingToolCall(item, turn.skipped.get(position), internal))
        executing = Executing(tuple(calls))
        self._state = executing
        return CallTools(executing.calls)

    def _meets_output_schema(self, text: str) -> bool:
        try:
            value = json.loads(text, parse_constant=_reject_constant)
        except ValueError:
            return False
        return not missing_required_fields(self._output_schema, value)

    def _finish(
        self, output: str, content: tuple[AssistantContent, ...], output_tool_calls: int
    ) -> Done:
        response = PromptResponse(
            output=output,
            usage=self._usage,
            completion_calls=tuple(self._completion_calls),
            messages=tuple(self._new_messages),
            content=content,
            output_tool_calls=output_tool_calls,
        )
        self._state = Finished(response)
        return Done(response)
