"""Compaction's pure part: how big the next request is (`estimate_tokens`), which
messages a summary replaces (`plan`), and the conversation after it (`Plan.apply`).

A *turn* is an assistant message and what follows it up to the next one (its tool
results, a retry's feedback). The last `keep_recent_turns` turns stay as they are, and
so does the prompt the next call answers; of the older messages, system messages and
user messages that hold no tool result are kept verbatim, in order (a user message that
holds both tool results and the user's own text or images keeps those, as a user message
of their own), and the rest (the model's answers, tool calls and their results, an
earlier summary) is replaced by one summary, a user message placed after the kept
messages and before the recent turns (every wire takes it there: Anthropic merges it
with the kept user messages, and the recent turns start with an assistant message). The
boundary never falls between a tool call and its result: it moves back to the call's
turn.

A run given a history (or continuing another run) keeps the two parts apart
(`Plan.rewrite`): the given messages kept stay its history, its own messages still start
with its prompt (never summarised: kept whole, or the recent turns reach back to it), and
a summary of the given history alone (the recent turns reach into it) stays in the
history part.

No loop: a plan needs at least one model turn to summarise besides an earlier summary,
and the step compacts only when the messages it would summarise, earlier summaries left
out, are worth a share of the threshold (`fresh_tokens`), so a conversation that stays
past its threshold after a compaction (its kept messages and recent turns alone are that
large) is compacted again only once that much more has left the recent turns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.core import (
    AssistantMessage,
    Image,
    Json,
    Message,
    Reasoning,
    SystemMessage,
    Text,
    ToolCall,
    ToolResult,
    UserMessage,
)
from app.core.jsonvalue import compact_json
from app.core.serde import dumps, message_to_dict

#: Opens the text of every summary (how a later compaction knows one: summarised again).
SUMMARY_PREFIX = "Summary of the earlier conversation (older turns were compacted):\n\n"
#: The estimate's rate: characters of JSON text per token (a common rule of thumb for
#: English and code; a provider's own count differs by model and language).
CHARS_PER_TOKEN = 4


def estimate_tokens(
    preamble: str | None, tools: Sequence[Mapping[str, Any]], messages: Sequence[Message]
) -> int:
    """The tokens of a request, estimated without the provider: the length of the JSON
    text of its preamble, tools (`name`, `description`, `parameters`) and messages (as
    stored), divided by `CHARS_PER_TOKEN`, rounded up. The same on every wire, and a
    little above what the wires send (the stored form names every item's type)."""
    text = dumps([preamble, list(tools), [message_to_dict(m) for m in messages]])
    return -(-len(text) // CHARS_PER_TOKEN)


def is_summary(message: Message) -> bool:
    """Whether `message` is the summary of an earlier compaction."""
    return (
        isinstance(message, UserMessage)
        and len(message.content) == 1
        and isinstance(message.content[0], Text)
        and message.content[0].text.startswith(SUMMARY_PREFIX)
    )


def verbatim(message: Message) -> bool:
    """Whether a message older than the recent turns is kept as it is: a system message,
    or a user message that holds no tool result (and is no earlier summary)."""
    if isinstance(message, SystemMessage):
        return True
    return (
        isinstance(message, UserMessage)
        and not any(isinstance(i, ToolResult) for i in message.content)
        and not is_summary(message)
    )


def user_part(message: Message) -> UserMessage | None:
    """What a user message that holds tool results keeps of the user's own (its text and
    images, in order), None when it holds nothing else: its results are summarised, the
    user's words are not."""
    if not isinstance(message, UserMessage) or is_summary(message):
        return None
    own = [i for i in message.content if not isinstance(i, ToolResult)]
    if not own or len(own) == len(message.content):
        return None
    return UserMessage(own)


def results_part(message: Message) -> Message:
    """What of a message a summary replaces: a user message's tool results (the rest of
    it is kept, `user_part`), any other message whole."""
    if user_part(message) is None:
        return message
    assert isinstance(message, UserMessage)
    return UserMessage([i for i in message.content if isinstance(i, ToolResult)])


def summary_message(text: str) -> UserMessage:
    return UserMessage(SUMMARY_PREFIX + text)


@dataclass(frozen=True, slots=True)
class Plan:
    """Positions in the conversation: those kept before the summary, those it replaces,
    and where the recent turns (kept as they are) start. A user message that holds both
    tool results and the user's own content is in both: its own part kept (`user_part`),
    its results summarised."""

    kept: tuple[int, ...]
    summarised: tuple[int, ...]
    recent: int

    def kept_message(self, conversation: Sequence[Message], i: int) -> Message:
        return user_part(conversation[i]) or conversation[i]

    def apply(self, conversation: Sequence[Message], summary: Message) -> tuple[Message, ...]:
        """The conversation after the compaction: the kept messages, the summary, the
        recent turns."""
        kept = (self.kept_message(conversation, i) for i in self.kept)
        return (*kept, summary, *conversation[self.recent :])

    def rewrite(
        self, conversation: Sequence[Message], summary: Message, given: int | None
    ) -> tuple[tuple[Message, ...] | None, tuple[Message, ...]]:
        """`apply`'s conversation as (the run's given history, its own messages), for a
        run given the first `given` messages (None: no history, as the run had none).
        The given messages kept stay in the history; the run's own messages start with
        its prompt (kept, or among the recent turns: `plan`'s `prompt`). The summary is
        the run's own message, or the history's when the recent turns reach into the
        given history (it summarises given turns only)."""
        kept = [(i, self.kept_message(conversation, i)) for i in self.kept]
        if given is None:
            return None, (*(m for _, m in kept), summary, *conversation[self.recent :])
        if self.recent <= given:
            history = (*(m for _, m in kept), summary, *conversation[self.recent : given])
            return history, tuple(conversation[given:])
        history = tuple(m for i, m in kept if i < given)
        own = tuple(m for i, m in kept if i >= given)
        return history, (*own, summary, *conversation[self.recent :])


def call_result_pairs(conversation: Sequence[Message]) -> list[tuple[int, int]]:
    """(position of a tool call's message, position of its result's message) for every
    result whose call is in the conversation (matched by the call's id, else by the
    provider's; a reused id answers its latest call)."""
    calls: dict[tuple[str, str], int] = {}
    pairs: list[tuple[int, int]] = []
    for i, message in enumerate(conversation):
        if isinstance(message, AssistantMessage):
            for item in message.content:
                if isinstance(item, ToolCall):
                    calls[("id", item.id)] = i
                    if item.provider_call_id:
                        calls[("provider", item.provider_call_id)] = i
        elif isinstance(message, UserMessage):
            for result in message.content:
                if not isinstance(result, ToolResult):
                    continue
                at = calls.get(("id", result.call_id))
                if at is None and result.provider_call_id:
                    at = calls.get(("provider", result.provider_call_id))
                if at is not None:
                    pairs.append((at, i))
    return pairs


def plan(
    conversation: Sequence[Message], keep_recent_turns: int, prompt: int | None = None
) -> Plan | None:
    """What a compaction of `conversation` (the next call's history and its prompt, last)
    replaces; None when it would summarise no model turn (nothing, or only an earlier
    summary). `prompt`: the position of the run's own first message (after its given
    history), never summarised nor split: kept whole when it is a plain system or user
    message, else the recent turns reach back to it."""
    if keep_recent_turns < 1:
        raise ValueError("keep_recent_turns must be at least 1")
    turns = [i for i, m in enumerate(conversation) if isinstance(m, AssistantMessage)]
    if len(turns) <= keep_recent_turns:
        return None
    start = turns[-keep_recent_turns]
    if prompt is not None and prompt < start and not verbatim(conversation[prompt]):
        start = max((t for t in turns if t <= prompt), default=0)  # (it stays whole)
    pairs = call_result_pairs(conversation)
    while True:  # (back to the call of any result the recent turns hold)
        split = [call for call, result in pairs if call < start <= result]
        if not split:
            break
        start = min(split)
    older = range(start)
    kept = tuple(i for i in older if verbatim(conversation[i]) or user_part(conversation[i]))
    summarised = tuple(i for i in older if not verbatim(conversation[i]))
    if not any(isinstance(conversation[i], AssistantMessage) for i in summarised):
        return None
    return Plan(kept, summarised, start)


def fresh_tokens(conversation: Sequence[Message], plan: Plan) -> int:
    """The estimated tokens of what a compaction summarises for the first time: the
    messages it replaces, earlier summaries left out (of a user message it keeps a part
    of, its tool results)."""
    fresh = [results_part(conversation[i]) for i in plan.summarised]
    return estimate_tokens(None, [], [m for m in fresh if not is_summary(m)])


# --- the summarising model's input ----------------------------------------------------------

DEFAULT_INSTRUCTIONS = (
    "You compact the conversation of an agent that works with tools. Summarise the "
    "transcript you are given so that the agent can go on from your summary instead of "
    "the older turns: what it has done and found (the tool calls that mattered and the "
    "facts their results established), the decisions made, and what is still open. The "
    "system and user messages are kept verbatim beside your summary and are not in the "
    "transcript: summarise only what it holds. Answer with the summary only."
)


def transcript(conversation: Sequence[Message], plan: Plan) -> str:
    """The text the summarising model reads: the messages the summary replaces, one
    paragraph each (of a user message whose own part is kept, its tool results). The
    kept messages are left out: they stay in the conversation beside the summary, and
    sent again they would make every summary cost as much as a turn."""
    return "\n\n".join(_render(results_part(conversation[i])) for i in plan.summarised)


def _render(message: Message) -> str:
    if isinstance(message, SystemMessage):
        return f"system: {message.content}"
    if is_summary(message):
        text = message.content[0]
        assert isinstance(text, Text)
        return f"earlier summary: {text.text[len(SUMMARY_PREFIX) :]}"
    role = "assistant" if isinstance(message, AssistantMessage) else "user"
    parts = [_item(item) for item in message.content]
    return f"{role}: " + "\n".join(p for p in parts if p)


def _item(item: Any) -> str:
    if isinstance(item, Text):
        return item.text
    if isinstance(item, Image):
        return "[an image]"
    if isinstance(item, Reasoning):
        return ""
    if isinstance(item, ToolCall):
        return f"[called {item.name} with {compact_json(item.arguments)}]"
    if isinstance(item, ToolResult):
        body = "".join(_item(c) for c in item.content)
        error = " (an error)" if item.is_error else ""
        return f"[result of {item.name}{error}: {body}]"
    if isinstance(item, Json):
        return compact_json(item.value)
    return ""
