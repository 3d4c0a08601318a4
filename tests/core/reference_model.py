"""An independent reference model of `AgentRun`, written from the behaviour spec.

It shares no code with `app.core`: it reads the inputs' fields and keeps everything in the
normal forms of `normal_forms.py` (plain tuples), and each method returns the outcome the
run must show for the same call. Section numbers refer to
/work/shared/spec/agentrun-behaviour.md.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import astuple, dataclass, field
from typing import Any

from app.core import (
    Fail,
    Feedback,
    ModelTurn,
    Repair,
    Retry,
    Skip,
    Stop,
    StreamedTurn,
    ToolChoice,
    ToolResult,
    Usage,
)
from app.core.midstream import PartialStreamedTurn, StreamedInvalidToolCall
from tests.core.normal_forms import Item, Msg, compact, n_item

# Exact texts (spec Appendix A, §0.2, §8).
PV = "agent run driver protocol violation: "
TNE = "Tool not executed because another tool call in the same assistant turn was invalid."
NO_RESULTS = "tool execution produced no tool results"
TOOL_TURN_RETRY = (
    "model-turn retry does not support tool-bearing model turns; use tool-call hooks instead"
)
PV_TEXT = {
    "next_step:AwaitingModel": "next_step called while a model response is pending; feed it "
    "via model_response first",
    "next_step:ResolvingToolCalls": "next_step called while an invalid tool-call resolution is "
    "pending; answer it via resolve_invalid_tool_call first",
    "next_step:Failed": "next_step called after the run already failed or was misdriven",
    "model_response": "model_response called without a pending CallModel step",
    "model_response:mixed": "model_response called after record_streamed_completion_call for "
    "the same turn; feed streamed turns via streamed_turn",
    "retry_model_turn": "retry_model_turn called without an accepted turn awaiting advancement",
    "resolve": "resolve_invalid_tool_call called without a pending invalid tool call",
    "tool_results": "tool_results called without a pending CallTools step",
    "not_a_result": "tool_results received content that is not a tool result",
    "record": "record_streamed_completion_call called without a pending or rolled-back "
    "CallModel step",
    "record:twice": "record_streamed_completion_call called twice for the same model turn",
    "resolve_streamed": "resolve_streamed_invalid_tool_call called without a pending CallModel "
    "step",
    "streamed_turn": "streamed_turn called without a pending CallModel step",
}
TRUNCATED = {
    "length": "the model produced no answer and stopped with finish_reason=Length; the turn "
    "ran out of output budget before producing one — raise max_tokens for this request",
    "content_filter": "the model produced no answer and stopped with "
    "finish_reason=ContentFilter; the provider filtered the response — the content, not the "
    "budget, is what it objected to",
}


# --- spec predicates over normal forms ------------------------------------------------


def is_call(item: Item) -> bool:
    return item[0] == "call"


def is_empty_turn(items: tuple[Item, ...]) -> bool:
    """§0.2 is_empty_assistant_turn."""
    return not items or (len(items) == 1 and items[0][:3] == ("text", "", None))


def delivered_no_answer(items: tuple[Item, ...]) -> bool:
    """§0.2 turn_delivered_no_answer."""
    return not any((i[0] == "text" and i[1] != "") or i[0] in ("call", "image") for i in items)


def text_of(items: tuple[Item, ...]) -> str:
    return "".join(i[1] for i in items if i[0] == "text")


def result_for(call: Item, text: str) -> Item:
    """§0.2 synthetic tool result: the call's id, provider and name, one text."""
    return ("result", call[1], call[2], call[4], (text,))


def retry_message(items: tuple[Item, ...], invalid_id: str, feedback: str) -> Msg:
    """§0.2: one result per call in order; every call with the invalid id gets `feedback`."""
    return (
        "user",
        tuple(result_for(c, feedback if c[1] == invalid_id else TNE) for c in items if is_call(c)),
    )


def user_text(text: str) -> Msg:
    return ("user", (("text", text, None),))


def add_usage(a: Usage, b: Usage) -> Usage:
    return Usage(*(x + y for x, y in zip(astuple(a), astuple(b), strict=True)))


@dataclass
class Resolving:
    message_id: str | None
    original: tuple[Item, ...]
    items: list[Item]
    executable: tuple[str, ...]
    allowed: frozenset[str]
    index: int = 0
    skipped: dict[int, Item] = field(default_factory=dict)
    recovered: bool = False
    any_skipped: bool = False


@dataclass
class Parked:
    message_id: str | None
    items: tuple[Item, ...]
    skipped: dict[int, Item]
    internal_ids: tuple[tuple[str, str], ...]


class Reference:
    """The spec's state machine over normal forms. Each method returns the outcome the run
    must produce for the same call (as `observe` shows it) and updates the model."""

    def __init__(
        self,
        *,
        max_turns: int,
        history: tuple[Msg, ...],
        tool_choice: ToolChoice | None,
        retry_budget: int,
        output_tool: str | None,
        required: list[str] | None,
        max_output_retries: int,
    ) -> None:
        self.max_turns = max_turns
        self.input_history = history
        self.tool_choice = tool_choice
        self.retry_budget = retry_budget
        self.output_tool = output_tool
        self.required = required  # None: no schema
        self.max_output_retries = max_output_retries
        self.messages: list[Msg] = [user_text("question")]
        self.status = "PreparingRequest"
        self.turn = 0
        self.calls: list[tuple[Any, ...]] = []
        self.usage = Usage()
        self.retries_used = 0
        self.output_retries = 0
        self.rollback_pending = False
        self.recorded = False
        self.resolving: Resolving | None = None
        self.parked: Parked | None = None
        self.pending: tuple[tuple[Item, Item | None, str | None], ...] = ()
        self.done: tuple[Any, ...] | None = None

    # --- queries ------------------------------------------------------------------------

    def full(self) -> tuple[Msg, ...]:
        return self.input_history + tuple(self.messages)

    def pv(self, key: str) -> tuple[Any, ...]:
        return ("PV", PV + PV_TEXT[key], self.full())

    def fail(self, outcome: tuple[Any, ...]) -> tuple[Any, ...]:
        self.status = "Failed"
        return outcome

    def pending_context(self) -> tuple[Any, ...] | None:
        if self.status != "ResolvingToolCalls":
            return None
        r = self.resolving
        assert r is not None
        call = r.items[r.index]
        return (
            "ctx",
            call[2],
            call[1],
            None,
            call[3],
            r.executable,
            tuple(sorted(r.allowed)),
            self.tool_choice,
            self.full() + (("assistant", r.message_id, r.original),),
            False,
        )

    # --- §5.1 recording -----------------------------------------------------------------

    def record(self, usage: Usage, ids: tuple[Any, Any, Any], finish: Any, raw: Any) -> Item:
        call = (
            "CompletionCall",
            len(self.calls),
            usage,
            *ids,
            finish,
            None if raw is None else compact(raw),
        )
        self.calls.append(call)
        self.usage = add_usage(self.usage, usage)
        return call

    # --- blocking path ------------------------------------------------------------------

    def next_step(self) -> tuple[Any, ...]:
        if self.status == "PreparingRequest":  # §3.3, §4
            prompt = self.messages[-1]
            if self.turn >= self.max_turns:
                return self.fail(("MaxTurnsError", self.max_turns, self.full(), prompt))
            self.turn += 1
            self.rollback_pending = self.recorded = False
            self.status = "AwaitingModel"
            return ("CallModel", self.turn, prompt, self.full()[:-1])
        if self.status == "AwaitingAdvance":
            return self.advance()
        if self.status == "ExecutingTools":
            return ("CallTools", self.pending)
        if self.status == "Done":
            assert self.done is not None
            return self.done
        return self.pv(f"next_step:{self.status}")

    def model_response(self, turn: ModelTurn) -> tuple[Any, ...]:
        if self.status != "AwaitingModel":
            return self.pv("model_response")
        if self.recorded:
            return self.pv("model_response:mixed")
        self.record(
            turn.usage,
            (turn.message_id, turn.response_id, turn.provider_request_id),
            turn.finish_reason,
            turn.raw,
        )
        items = tuple(n_item(i) for i in turn.choice)
        self.resolving = Resolving(
            turn.message_id,
            items,
            list(items),
            tuple(sorted(turn.executable_tool_names)),
            turn.allowed_tool_names,
        )
        return self.scan()

    def scan(self) -> tuple[Any, ...]:
        """§5.3: park on the next disallowed call, or accept the turn."""
        r = self.resolving
        assert r is not None
        while r.index < len(r.items):
            item = r.items[r.index]
            if is_call(item) and item[2] not in r.allowed:
                self.status = "ResolvingToolCalls"
                return ("NeedsResolution", self.pending_context())
            r.index += 1
        if r.any_skipped:
            for position, item in enumerate(r.items):
                if is_call(item) and position not in r.skipped:
                    r.skipped[position] = result_for(item, TNE)
        self.parked = Parked(r.message_id, tuple(r.items), r.skipped, ())
        self.status = "AwaitingAdvance"
        return ("Continue", r.recovered)

    def refusal(
        self,
        action: Any,
        name: str,
        executable: tuple[str, ...],
        allowed: frozenset[str],
        history: tuple[Msg, ...],
    ) -> tuple[Any, ...] | None:
        """§6 common validation: the fatal outcome of `action`, or None."""

        def unknown(tool: str) -> tuple[Any, ...]:
            return ("UnknownToolCall", tool, executable, tuple(sorted(allowed)), history)

        if isinstance(action, Fail):
            return unknown(name)
        if isinstance(action, Stop):
            return ("PromptCancelled", action.reason, history)
        if isinstance(action, Retry) and self.retries_used >= self.retry_budget:
            return unknown(name)
        if isinstance(action, Repair) and action.tool_name not in allowed:
            return unknown(action.tool_name)
        none = self.tool_choice == ToolChoice.none()
        if isinstance(action, Skip) and none:
            return unknown(name)
        return None

    def resolve(self, action: Any) -> tuple[Any, ...]:
        if self.status != "ResolvingToolCalls":
            return self.pv("resolve")
        r = self.resolving
        assert r is not None
        call = r.items[r.index]
        history = self.full() + (("assistant", r.message_id, r.original),)
        refused = self.refusal(action, call[2], r.executable, r.allowed, history)
        if refused is not None:
            return self.fail(refused)
        if isinstance(action, Retry):  # §6.2
            self.retries_used += 1
            self.messages.append(("assistant", r.message_id, r.original))
            self.messages.append(retry_message(r.original, call[1], action.feedback))
            self.status = "PreparingRequest"
            return ("TurnRetried",)
        if isinstance(action, Repair):  # §6.3
            r.items[r.index] = ("call", call[1], action.tool_name, call[3], call[4])
        else:  # §6.4 Skip
            assert isinstance(action, Skip)
            r.skipped[r.index] = result_for(call, action.reason)
            r.any_skipped = True
            r.index += 1
        r.recovered = True
        return self.scan()

    def can_reprompt(self) -> bool:
        return self.output_retries < self.max_output_retries and self.turn < self.max_turns

    def missing(self, value: Any) -> list[str]:
        """§8.1 step 2: required names that are not keys (all of them for a non-object)."""
        names = self.required or []
        return [n for n in names if not (isinstance(value, dict) and n in value)]

    def advance(self) -> tuple[Any, ...]:
        """§8: next_step from AwaitingAdvance."""
        p = self.parked
        assert p is not None
        items = p.items
        has_calls = any(is_call(i) for i in items)
        outputs = [i for i in items if is_call(i) and i[2] == self.output_tool]
        if self.output_tool is not None and outputs:  # §8.1, the first output call wins
            first = outputs[0]
            missing = self.missing(json.loads(first[3]))
            if missing and self.can_reprompt():
                feedback = (
                    f"The `{first[2]}` arguments were missing required field(s): "
                    f"{', '.join(missing)}. Call `{first[2]}` again with every required field."
                )
                self.messages.append(("assistant", p.message_id, items))
                self.messages.append(retry_message(items, first[1], feedback))
                self.output_retries += 1
                self.status = "PreparingRequest"
                return self.next_step()
            content = tuple(i for i in items if not is_call(i)) + (("text", first[3], None),)
            self.messages.append(("assistant", p.message_id, content))
            return self.finish(first[3], content, len(outputs))
        if not is_empty_turn(items):  # §8.2 step 1
            self.messages.append(("assistant", p.message_id, items))
        last_reason = self.calls[-1][6]
        if delivered_no_answer(items) and last_reason in TRUNCATED:  # step 2
            return self.fail(("CompletionError", TRUNCATED[last_reason]))
        if has_calls:  # step 3
            self.output_retries = 0
            unused = list(p.internal_ids)
            pending = []
            for position, item in enumerate(items):
                if not is_call(item):
                    continue
                internal = next((pair for pair in unused if pair[0] == item[1]), None)
                if internal is not None:
                    unused.remove(internal)
                internal_id = None if internal is None else internal[1]
                pending.append((item, p.skipped.get(position), internal_id))
            self.pending = tuple(pending)
            self.status = "ExecutingTools"
            return ("CallTools", self.pending)
        text = text_of(items)
        if (
            self.output_tool is not None
            and not is_empty_turn(items)
            and self.can_reprompt()
            and not self.meets_schema(text.strip())
        ):  # step 4
            self.messages.append(
                user_text(
                    f"Provide your final answer by calling the `{self.output_tool}` tool with "
                    "the structured result as its arguments, not as plain text."
                )
            )
            self.output_retries += 1
            self.status = "PreparingRequest"
            return self.next_step()
        return self.finish(text, items, 0)

    def meets_schema(self, text: str) -> bool:
        try:
            value = json.loads(text)
        except ValueError:
            return False
        return not self.missing(value)

    def finish(self, output: str, content: tuple[Item, ...], count: int) -> tuple[Any, ...]:
        self.done = (
            "Done",
            output,
            self.usage,
            tuple(self.calls),
            tuple(self.messages),
            content,
            count,
        )
        self.status = "Done"
        return self.done

    def tool_results(self, results: list[Any]) -> tuple[Any, ...]:
        """§7: a multiset match on call ids; one user message in the given order."""
        if self.status != "ExecutingTools":
            return self.pv("tool_results")
        if not results:
            return self.fail(("PromptCancelled", NO_RESULTS, self.full()))
        remaining = Counter(call[1] for call, _, _ in self.pending)
        for result in results:
            if not isinstance(result, ToolResult):
                return self.pv("not_a_result")
            if remaining[result.call_id] == 0:
                reason = (
                    "tool_results received a result for unknown or already-answered tool call "
                    f"id `{result.call_id}`"
                )
                return ("PV", PV + reason, self.full())
            remaining[result.call_id] -= 1
        left = list(remaining.elements())
        if left:
            listed = "[" + ", ".join(json.dumps(i) for i in left) + "]"
            reason = f"tool_results left pending tool call id(s) unanswered: {listed}"
            return ("PV", PV + reason, self.full())
        self.messages.append(("user", tuple(n_item(r) for r in results)))
        self.status = "PreparingRequest"
        return ("None",)

    def retry_model_turn(self, request: Any) -> tuple[Any, ...]:
        if self.status != "AwaitingAdvance":
            return self.pv("retry_model_turn")
        p = self.parked
        assert p is not None
        if any(is_call(i) for i in p.items):
            return self.fail(("PromptCancelled", TOOL_TURN_RETRY, self.full()))
        if isinstance(request, Feedback):
            if not is_empty_turn(p.items):
                self.messages.append(("assistant", p.message_id, p.items))
            self.messages.append(user_text(request.text))
        self.status = "PreparingRequest"
        return ("None",)

    # --- streamed path (§3.4, §6.6) -------------------------------------------------------

    def record_streamed(self, usage: Usage, ids: Any, finish: Any, raw: Any) -> tuple[Any, ...]:
        legal = self.status == "AwaitingModel" or (
            self.status == "PreparingRequest" and self.rollback_pending
        )
        if not legal:
            return self.pv("record")
        if self.recorded:
            return self.pv("record:twice")
        self.recorded = True
        return self.record(usage, ids, finish, raw)

    def streamed_turn(self, turn: StreamedTurn) -> tuple[Any, ...]:
        if self.status != "AwaitingModel":
            return self.pv("streamed_turn")
        if not self.recorded:
            self.recorded = True
            self.record(Usage(), (turn.message_id, None, None), turn.finish_reason, None)
        items = tuple(n_item(i) for i in turn.choice)
        for item in items:
            if is_call(item) and item[2] not in turn.allowed_tool_names:
                history = self.full()
                if not is_empty_turn(items):
                    history += (("assistant", turn.message_id, items),)
                return self.fail(
                    (
                        "UnknownToolCall",
                        item[2],
                        tuple(sorted(turn.executable_tool_names)),
                        tuple(sorted(turn.allowed_tool_names)),
                        history,
                    )
                )
        self.parked = Parked(turn.message_id, items, {}, turn.internal_call_ids)
        self.status = "AwaitingAdvance"
        return ("None",)

    @staticmethod
    def partial_message(partial: PartialStreamedTurn, invalid: StreamedInvalidToolCall) -> Msg:
        """Canonical order: reasoning, non-empty text, validated calls, the invalid call."""
        content = [n_item(r) for r in partial.reasoning]
        if partial.text:
            content.append(("text", partial.text, None))
        content += [n_item(c) for c in partial.pending_tool_calls]
        content.append(n_item(invalid.tool_call))
        return ("assistant", partial.message_id, tuple(content))

    def streamed_context(
        self, partial: PartialStreamedTurn, invalid: StreamedInvalidToolCall
    ) -> tuple[Any, ...]:
        call = n_item(invalid.tool_call)
        return (
            "ctx",
            call[2],
            call[1],
            invalid.internal_call_id,
            call[3] if invalid.args is None else invalid.args,
            tuple(sorted(invalid.executable_tool_names)),
            tuple(sorted(invalid.allowed_tool_names)),
            self.tool_choice,
            self.full() + (self.partial_message(partial, invalid),),
            True,
        )

    def resolve_streamed(
        self, partial: PartialStreamedTurn, invalid: StreamedInvalidToolCall, action: Any
    ) -> tuple[Any, ...]:
        if self.status != "AwaitingModel":
            return self.pv("resolve_streamed")
        call = n_item(invalid.tool_call)
        message = self.partial_message(partial, invalid)
        refused = self.refusal(
            action,
            call[2],
            tuple(sorted(invalid.executable_tool_names)),
            invalid.allowed_tool_names,
            self.full() + (message,),
        )
        if refused is not None:
            return self.fail(refused)
        if isinstance(action, Repair):
            return ("Repaired", action.tool_name)
        text = action.feedback if isinstance(action, Retry) else action.reason
        if isinstance(action, Retry):
            self.retries_used += 1
        # Rollback: validated peers first, the invalid call last (§6.6).
        peers = tuple(result_for(n_item(c), TNE) for c in partial.pending_tool_calls)
        self.messages += [message, ("user", (*peers, result_for(call, text)))]
        self.rollback_pending = True
        self.status = "PreparingRequest"
        skipped = result_for(call, text) if isinstance(action, Skip) else None
        return ("TurnAbandoned", skipped)
