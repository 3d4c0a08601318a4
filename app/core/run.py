"""`AgentRun`: the sans-IO agent loop (a port of rig's `crates/rig-agent/src/agent/run`).

The run owns every decision: the exact turn budget, tool-call validation, invalid-call
recovery, history, usage and the final response. It performs no IO; a driver asks
`next_step()` what to do, does it, and feeds the answer back.

The run's data is one value, `app.core.state.RunState` (`self._state`; a copy is
`run.state`, and `AgentRun.from_state` continues one). Its `phase` is upstream's state.

Methods that can fail swap `Failed` in before they work (the "take the state" pattern,
behaviour spec §3.2): a wrong-state call puts the old phase back and raises a
`ProtocolViolation`, a fatal error leaves `Failed` behind.

Arguments of the wrong type (rig's types make them impossible) raise `TypeError` before
anything is touched, so a misused method leaves the run exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from app.core.checks import check_count, check_instance, check_optional_str, items_of
from app.core.content import (
    MESSAGE_TYPES,
    AssistantContent,
    AssistantMessage,
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
from app.core.midstream import (
    PartialStreamedTurn,
    Repaired,
    StreamedInvalidToolCall,
    StreamedResolution,
    TurnAbandoned,
)
from app.core.phases import (
    AWAITING_MODEL,
    FAILED,
    PREPARING_REQUEST,
    Advancing,
    Executing,
    Finished,
    Resolving,
    phase_name,
)
from app.core.predicates import (
    assistant_text_from_choice,
    has_tool_call,
    is_empty_assistant_turn,
    missing_required_fields,
    reject_constant,
    retry_result_message,
    truncation_message,
    turn_delivered_no_answer,
)
from app.core.serde import dumps, loads, state_to_dict
from app.core.state import RunState
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
    PendingToolCall,
    PromptResponse,
    Repair,
    Repeat,
    Retry,
    RetryRequest,
    Skip,
    Stop,
    StreamedTurn,
    ToolChoice,
    TurnRetried,
    Usage,
)

NO_IDENTITY = CompletionIdentity()

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
PV_WITHDRAW = "withdraw_model_call called without a CallModel step just given"


class AgentRun:
    """The agent loop as a state machine. See the module docstring."""

    __slots__ = ("_before_call", "_state")

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
        self._state = RunState(
            max_turns=max_turns,
            max_invalid_tool_call_retries=max_invalid_tool_call_retries,
            tool_choice=tool_choice,
            output_tool_name=output_tool_name,
            output_schema=schema,
            max_output_retries=max_output_retries,
            chat_history=history_items,
            new_messages=[first],
        )

    # --- its data ---------------------------------------------------------------------------

    @classmethod
    def from_state(cls, state: RunState) -> AgentRun:
        """A run continuing from `state` (taken from `run.state` or decoded by
        `app.core.serde`), which it copies: changing `state` later leaves the run alone."""
        check_instance("AgentRun.from_state", "state", state, RunState)
        return cls._holding(state.copy())

    @classmethod
    def _holding(cls, state: RunState) -> AgentRun:
        """A run around `state`, which it now owns (the one path besides `__init__`)."""
        run = cls.__new__(cls)
        run._state = state
        return run

    @property
    def state(self) -> RunState:
        """A copy of the run's data: changing it leaves the run alone."""
        return self._state.copy()

    def to_json(self) -> str:
        """The whole run, upstream's JSON shape plus `schema_version`."""
        return dumps(state_to_dict(self._state))

    @classmethod
    def from_json(cls, data: str | bytes) -> AgentRun:
        """Load a run of this or any older schema version (raises `StateDecodeError`)."""
        return cls._holding(loads(data))

    # --- pure queries ---------------------------------------------------------------------

    @property
    def status(self) -> str:
        """The state's upstream name, e.g. `ExecutingTools`."""
        return phase_name(self._state.phase)

    @property
    def max_turns(self) -> int:
        return self._state.max_turns

    def usage(self) -> Usage:
        return self._state.usage

    def turn(self) -> int:
        return self._state.current_turn

    def completion_calls(self) -> tuple[CompletionCall, ...]:
        return tuple(self._state.completion_calls)

    def messages(self) -> tuple[Message, ...]:
        return tuple(self._state.new_messages)

    def full_history(self) -> tuple[Message, ...]:
        return (self._state.chat_history or ()) + tuple(self._state.new_messages)

    def is_done(self) -> bool:
        return isinstance(self._state.phase, Finished)

    def response(self) -> PromptResponse | None:
        return self._state.phase.response if isinstance(self._state.phase, Finished) else None

    def pending_tool_calls(self) -> tuple[PendingToolCall, ...]:
        """The calls awaiting `tool_results` (empty unless `ExecutingTools`)."""
        return self._state.phase.calls if isinstance(self._state.phase, Executing) else ()

    def cancel_error(self, reason: str) -> PromptCancelled:
        return PromptCancelled(reason, self.full_history())

    def pending_invalid_tool_call(self) -> InvalidToolCallContext | None:
        phase = self._state.phase
        if not isinstance(phase, Resolving) or not self._parked_on_invalid(phase):
            return None
        return self._context(phase)

    # --- blocking path --------------------------------------------------------------------

    def next_step(self) -> AgentRunStep:
        old, self._state.phase = self._state.phase, FAILED
        if old == PREPARING_REQUEST:
            return self._emit_call_model()
        if isinstance(old, Advancing):
            return self._advance(old)
        if isinstance(old, Executing):
            self._state.phase = old
            return CallTools(old.calls)
        if isinstance(old, Finished):
            self._state.phase = old
            return Done(old.response)
        self._state.phase = old
        if old == AWAITING_MODEL:
            raise self._violation(PV_NEXT_STEP_AWAITING_MODEL)
        if isinstance(old, Resolving):
            raise self._violation(PV_NEXT_STEP_RESOLVING)
        raise self._violation(PV_NEXT_STEP_FAILED)

    def withdraw_model_call(self) -> None:
        """Take back the `CallModel` step just given, before any answer: the run is as it
        was before `next_step` (the service's budget check declined the call; not in
        upstream rig)."""
        before = getattr(self, "_before_call", None)
        if self._state.phase != AWAITING_MODEL or before is None:
            raise self._violation(PV_WITHDRAW)
        self._state.rollback_pending, self._state.streamed_completion_call_recorded = before
        self._state.current_turn -= 1
        self._state.phase = PREPARING_REQUEST
        self._before_call: tuple[bool, bool] | None = None

    def model_response(self, turn: ModelTurn) -> ModelTurnOutcome:
        check_instance("model_response", "turn", turn, ModelTurn)
        if self._state.phase != AWAITING_MODEL:
            raise self._violation(PV_MODEL_RESPONSE)
        if self._state.streamed_completion_call_recorded:
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
        old, self._state.phase = self._state.phase, FAILED
        if not isinstance(old, Resolving) or not self._parked_on_invalid(old):
            self._state.phase = old
            raise self._violation(PV_RESOLVE)
        index = old.next_index
        call = old.items[index]
        assert isinstance(call, ToolCall)
        history = self._diagnostic_history(old.message_id, old.original_choice)
        self._validate_action(
            action, call.name, old.executable_tool_names, old.allowed_tool_names, history
        )
        if isinstance(action, Retry):
            self._state.invalid_tool_call_retries += 1
            self._state.new_messages.append(AssistantMessage(old.original_choice, old.message_id))
            message = retry_result_message(old.original_choice, call.id, action.feedback)
            if message is None:
                raise PromptCancelled(RETRY_NO_MESSAGES, self.full_history())
            self._state.new_messages.append(message)
            self._state.phase = PREPARING_REQUEST
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
        phase = self._state.phase
        if not isinstance(phase, Executing):
            raise self._violation(PV_TOOL_RESULTS)
        if isinstance(results, str) or not isinstance(results, Iterable):
            raise TypeError(f"tool_results takes an iterable, not {type(results).__name__}")
        results = tuple(results)
        if not results:
            self._state.phase = FAILED
            raise PromptCancelled(NO_RESULTS, self.full_history())
        remaining = [c.tool_call.id for c in phase.calls]
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
        self._state.new_messages.append(UserMessage(results))
        self._state.phase = PREPARING_REQUEST

    def retry_model_turn(self, request: RetryRequest) -> None:
        check_instance("retry_model_turn", "request", request, RETRY_REQUEST_TYPES)
        old, self._state.phase = self._state.phase, FAILED
        if not isinstance(old, Advancing):
            self._state.phase = old
            raise self._violation(PV_RETRY_MODEL_TURN)
        if old.has_tool_calls:
            raise PromptCancelled(TOOL_TURN_RETRY, self.full_history())
        if isinstance(request, Feedback):
            if not is_empty_assistant_turn(old.items):
                self._state.new_messages.append(AssistantMessage(old.items, old.message_id))
            self._state.new_messages.append(UserMessage(request.text))
        # Repeat writes nothing.
        self._state.phase = PREPARING_REQUEST

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
        legal = self._state.phase == AWAITING_MODEL or (
            self._state.phase == PREPARING_REQUEST and self._state.rollback_pending
        )
        if not legal:
            raise self._violation(PV_RECORD_NO_CALL)
        if self._state.streamed_completion_call_recorded:
            raise self._violation(PV_RECORD_TWICE)
        self._state.streamed_completion_call_recorded = True
        return self._commit(call)

    def _streamed_invalid_tool_call_context(
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
            tool_choice=self._state.tool_choice,
            chat_history=self.full_history() + (self._partial_message(partial, invalid),),
            is_streaming=True,
        )

    def _resolve_streamed_invalid_tool_call(
        self,
        partial: PartialStreamedTurn,
        invalid: StreamedInvalidToolCall,
        action: InvalidToolCallAction,
    ) -> StreamedResolution:
        self._check_streamed(partial, invalid)
        check_instance("resolve_streamed_invalid_tool_call", "action", action, ACTION_TYPES)
        if self._state.phase != AWAITING_MODEL:
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
            self._state.phase = FAILED
            raise
        if isinstance(action, Repair):
            return Repaired(action.tool_name)
        if isinstance(action, Retry):
            self._state.invalid_tool_call_retries += 1
            self._rollback(partial, partial_message, call, action.feedback)
            return TurnAbandoned(None)
        if not isinstance(action, Skip):  # Fail and Stop raised in _validate_action
            raise AssertionError(f"unreachable: {action!r}")
        self._rollback(partial, partial_message, call, action.reason)
        return TurnAbandoned(ToolResult.text(call, action.reason, is_error=True))

    def streamed_turn(self, turn: StreamedTurn) -> None:
        check_instance("streamed_turn", "turn", turn, StreamedTurn)
        if self._state.phase != AWAITING_MODEL:
            raise self._violation(PV_STREAMED_TURN)
        if not self._state.streamed_completion_call_recorded:
            self._state.streamed_completion_call_recorded = True
            self._record(Usage(), CompletionIdentity(turn.message_id), turn.finish_reason, None)
        for item in turn.choice:
            if isinstance(item, ToolCall) and item.name not in turn.allowed_tool_names:
                self._state.phase = FAILED
                history = self.full_history()
                if not is_empty_assistant_turn(turn.choice):
                    history += (AssistantMessage(turn.choice, turn.message_id),)
                raise UnknownToolCall(
                    item.name,
                    sorted(turn.executable_tool_names),
                    sorted(turn.allowed_tool_names),
                    history,
                )
        self._state.phase = Advancing(
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
            call_index=self._state.completion_call_index,
            usage=usage,
            message_id=identity.message_id,
            response_id=identity.response_id,
            provider_request_id=identity.provider_request_id,
            finish_reason=finish_reason,
            raw=raw,
        )

    def _commit(self, call: CompletionCall) -> CompletionCall:
        usage = self._state.usage + call.usage  # may refuse a sum beyond u64: before any change
        self._state.completion_call_index += 1
        self._state.completion_calls.append(call)
        self._state.usage = usage
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
        if not self._state.new_messages:
            raise PromptCancelled(LOST_PROMPT, self.full_history())
        prompt = self._state.new_messages[-1]
        if self._state.current_turn >= self._state.max_turns:
            raise MaxTurnsError(self._state.max_turns, self.full_history(), prompt)
        self._before_call = (
            self._state.rollback_pending,
            self._state.streamed_completion_call_recorded,
        )
        self._state.current_turn += 1
        self._state.rollback_pending = False
        self._state.streamed_completion_call_recorded = False
        self._state.phase = AWAITING_MODEL
        history = (self._state.chat_history or ()) + tuple(self._state.new_messages[:-1])
        return CallModel(prompt=prompt, history=history, turn=self._state.current_turn)

    def _parked_on_invalid(self, resolving: Resolving) -> bool:
        if resolving.next_index >= len(resolving.items):
            return False
        item = resolving.items[resolving.next_index]
        return isinstance(item, ToolCall) and item.name not in resolving.allowed_tool_names

    def _diagnostic_history(
        self, message_id: str | None, choice: tuple[AssistantContent, ...]
    ) -> tuple[Message, ...]:
        return self.full_history() + (AssistantMessage(choice, message_id),)

    def _context(self, resolving: Resolving) -> InvalidToolCallContext:
        call = resolving.items[resolving.next_index]
        assert isinstance(call, ToolCall)
        return InvalidToolCallContext(
            tool_name=call.name,
            tool_call_id=call.id,
            internal_call_id=None,
            args=compact_json(call.arguments),
            available_tools=tuple(sorted(resolving.executable_tool_names)),
            allowed_tools=tuple(sorted(resolving.allowed_tool_names)),
            tool_choice=self._state.tool_choice,
            chat_history=self._diagnostic_history(resolving.message_id, resolving.original_choice),
            is_streaming=False,
        )

    def _scan(self, resolving: Resolving) -> ModelTurnOutcome:
        """Walk from `next_index` to the next disallowed call, or accept the turn."""
        items = resolving.items
        allowed = resolving.allowed_tool_names
        index = resolving.next_index
        while index < len(items):
            item = items[index]
            if isinstance(item, ToolCall) and item.name not in allowed:
                resolving.next_index = index
                self._state.phase = resolving
                return NeedsResolution(self._context(resolving))
            index += 1
        resolving.next_index = index
        if resolving.any_skipped:
            for position, item in enumerate(items):
                if isinstance(item, ToolCall) and position not in resolving.skipped:
                    resolving.skipped[position] = ToolResult.text(
                        item, TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER, is_error=True
                    )
        self._state.phase = Advancing(
            message_id=resolving.message_id,
            items=tuple(items),
            has_tool_calls=resolving.has_tool_calls,
            skipped=resolving.skipped,
            internal_call_ids=(),
        )
        return Continue(resolving.recovered)

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
            if self._state.invalid_tool_call_retries >= self._state.max_invalid_tool_call_retries:
                raise unknown(current_name)
        elif isinstance(action, Repair):
            if action.tool_name not in allowed:
                raise unknown(action.tool_name)
        elif self._state.tool_choice is not None and self._state.tool_choice.kind == "none":  # Skip
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
        self._state.new_messages.append(partial_message)
        results = [
            ToolResult.text(c, TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER, is_error=True)
            for c in partial.pending_tool_calls
        ]
        results.append(ToolResult.text(invalid_call, feedback, is_error=True))
        self._state.new_messages.append(UserMessage(results))
        self._state.rollback_pending = True
        self._state.phase = PREPARING_REQUEST

    def _can_reprompt(self) -> bool:
        return (
            self._state.output_retries < self._state.max_output_retries
            and self._state.current_turn < self._state.max_turns
        )

    def _advance(self, turn: Advancing) -> AgentRunStep:
        """`next_step` from `AwaitingAdvance` (behaviour spec §8), state taken (Failed)."""
        items = turn.items
        name = self._state.output_tool_name
        if name is not None and turn.has_tool_calls:
            output_calls = [i for i in items if isinstance(i, ToolCall) and i.name == name]
            if output_calls:
                return self._finish_with_output_tool(turn, output_calls[0], len(output_calls))

        if not is_empty_assistant_turn(items):
            self._state.new_messages.append(AssistantMessage(items, turn.message_id))
        if turn_delivered_no_answer(items) and self._state.completion_calls:
            last_reason = self._state.completion_calls[-1].finish_reason
            if last_reason in ("length", "content_filter"):
                assert last_reason is not None
                raise CompletionError(truncation_message(last_reason))

        if turn.has_tool_calls:
            self._state.output_retries = 0
            return self._call_tools(turn)

        if (
            name is not None
            and not is_empty_assistant_turn(items)
            and self._can_reprompt()
            and not self._meets_output_schema(assistant_text_from_choice(items).strip())
        ):
            self._state.new_messages.append(
                UserMessage(
                    f"Provide your final answer by calling the `{name}` tool with the "
                    "structured result as its arguments, not as plain text."
                )
            )
            self._state.output_retries += 1
            self._state.phase = PREPARING_REQUEST
            return self.next_step()

        return self._finish(assistant_text_from_choice(items), items, 0)

    def _finish_with_output_tool(self, turn: Advancing, call: ToolCall, count: int) -> AgentRunStep:
        output = compact_json(call.arguments)
        missing = missing_required_fields(self._state.output_schema, call.arguments)
        if missing and self._can_reprompt():
            self._state.new_messages.append(AssistantMessage(turn.items, turn.message_id))
            feedback = (
                f"The `{call.name}` arguments were missing required field(s): "
                f"{', '.join(missing)}. Call `{call.name}` again with every required field."
            )
            message = retry_result_message(turn.items, call.id, feedback)
            assert message is not None  # the turn holds at least this call
            self._state.new_messages.append(message)
            self._state.output_retries += 1
            self._state.phase = PREPARING_REQUEST
            return self.next_step()
        content = tuple(i for i in turn.items if not isinstance(i, ToolCall)) + (Text(output),)
        self._state.new_messages.append(AssistantMessage(content, turn.message_id))
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
        self._state.phase = executing
        return CallTools(executing.calls)

    def _meets_output_schema(self, text: str) -> bool:
        try:
            value = json.loads(text, parse_constant=reject_constant)
        except ValueError:
            return False
        return not missing_required_fields(self._state.output_schema, value)

    def _finish(
        self, output: str, content: tuple[AssistantContent, ...], output_tool_calls: int
    ) -> Done:
        response = PromptResponse(
            output=output,
            usage=self._state.usage,
            completion_calls=tuple(self._state.completion_calls),
            messages=tuple(self._state.new_messages),
            content=content,
            output_tool_calls=output_tool_calls,
        )
        self._state.phase = Finished(response)
        return Done(response)
