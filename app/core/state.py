"""A run's data as one value: `RunState`, which `AgentRun` holds (as h11's `Connection`
holds its `ConnectionState`) and `app.core.serde` writes and reads.

Each field is declared once, here, with its `Codec`: how it is written into upstream's
JSON and how it is read back strictly. The JSON key is the field's name (upstream's),
except the phase, stored as `"state"`; keys are written and read in the order below,
which is upstream's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from app.core.content import Message
from app.core.decode import read_completion_call, read_message, read_tool_choice, read_usage
from app.core.encode import (
    Lists,
    completion_call_to_dict,
    message_to_dict,
    tool_choice_to_json,
    usage_to_dict,
)
from app.core.fields import Doc, count, each, field, flag, json_value, optional_text, within
from app.core.phases import PREPARING_REQUEST, Phase, copy_phase, phase_to_json, read_phase
from app.core.types import CompletionCall, ToolChoice, Usage

T = TypeVar("T")
#: Writes a field's value; the `Lists` are the run's own messages and calls when the
#: stored layout writes the log form (only the phase uses them).
Write = Callable[[Any, Lists | None], Any]
#: Reads a field from the run's document by its key (raises `fields.Bad`).
Read = Callable[[Doc, str], Any]


@dataclass(frozen=True, slots=True)
class Codec:
    """How one field of `RunState` is stored."""

    write: Write
    read: Read
    #: A list the stored layout keeps in the run's log, not in its control document.
    logged: bool = False
    #: The JSON key when it is not the field's name.
    key: str | None = None


def _stored(write: Write, read: Read, *, logged: bool = False, key: str | None = None) -> Any:
    return {"codec": Codec(write, read, logged, key)}


def _as_is(value: Any, log: Lists | None) -> Any:
    return value


def _by(fn: Callable[[Any], Any]) -> Write:
    return lambda value, log: fn(value)


def _each(fn: Callable[[Any], Any]) -> Write:
    return lambda values, log: [fn(v) for v in values]


def _required(reader: Callable[[Any], T]) -> Read:
    return lambda d, key: within("." + key, reader, field(d, key))


def _nullable(reader: Callable[[Any], T]) -> Read:
    return lambda d, key: within("." + key, reader, d.get(key))


def _defaulted(reader: Callable[[Doc, str, Any], T], default: Any) -> Read:
    """A `#[serde(default)]` field: absent reads as `default`."""
    return lambda d, key: reader(d, key, default)


def _messages(d: Doc, key: str) -> list[Message]:
    return each(d, key, read_message)


def _history(d: Doc, key: str) -> tuple[Message, ...] | None:
    return None if d.get(key) is None else tuple(_messages(d, key))


def _write_history(history: tuple[Message, ...] | None, log: Lists | None) -> Any:
    return None if history is None else [message_to_dict(m) for m in history]


def _calls(d: Doc, key: str) -> list[CompletionCall]:
    return each(d, key, read_completion_call)


COUNT = _stored(_as_is, count)
COUNT_OR_ZERO = _stored(_as_is, _defaulted(count, 0))
FLAG_OR_FALSE = _stored(_as_is, _defaulted(flag, False))


@dataclass(slots=True, kw_only=True)
class RunState:
    """Upstream's `AgentRun` fields: the budgets, the conversation, the counters and the
    phase. Defaults are a fresh run's; `AgentRun` owns the value and changes it in place."""

    max_turns: int = dataclasses.field(metadata=COUNT)
    max_invalid_tool_call_retries: int = dataclasses.field(default=0, metadata=COUNT)
    tool_choice: ToolChoice | None = dataclasses.field(
        default=None, metadata=_stored(_by(tool_choice_to_json), _nullable(read_tool_choice))
    )
    output_tool_name: str | None = dataclasses.field(
        default=None, metadata=_stored(_as_is, optional_text)
    )
    output_schema: Any = dataclasses.field(
        default=None, metadata=_stored(_as_is, _defaulted(json_value, None))
    )
    max_output_retries: int = dataclasses.field(default=0, metadata=COUNT_OR_ZERO)
    output_retries: int = dataclasses.field(default=0, metadata=COUNT_OR_ZERO)
    #: The given history (None: none given, which rig keeps apart from an empty one).
    chat_history: tuple[Message, ...] | None = dataclasses.field(
        default=None, metadata=_stored(_write_history, _history, logged=True)
    )
    new_messages: list[Message] = dataclasses.field(
        metadata=_stored(_each(message_to_dict), _messages, logged=True)
    )
    current_turn: int = dataclasses.field(default=0, metadata=COUNT)
    usage: Usage = dataclasses.field(
        default=Usage(), metadata=_stored(_by(usage_to_dict), _required(read_usage))
    )
    completion_calls: list[CompletionCall] = dataclasses.field(
        default_factory=list,
        metadata=_stored(_each(completion_call_to_dict), _calls, logged=True),
    )
    completion_call_index: int = dataclasses.field(default=0, metadata=COUNT)
    invalid_tool_call_retries: int = dataclasses.field(default=0, metadata=COUNT)
    rollback_pending: bool = dataclasses.field(default=False, metadata=FLAG_OR_FALSE)
    streamed_completion_call_recorded: bool = dataclasses.field(
        default=False, metadata=FLAG_OR_FALSE
    )
    phase: Phase = dataclasses.field(
        default=PREPARING_REQUEST,
        metadata=_stored(phase_to_json, _required(read_phase), key="state"),
    )

    def copy(self) -> RunState:
        """A state sharing no mutable container with this one (its values are immutable)."""
        return dataclasses.replace(
            self,
            new_messages=list(self.new_messages),
            completion_calls=list(self.completion_calls),
            phase=copy_phase(self.phase),
        )


#: (field name, JSON key, codec) of every field of `RunState`, in order.
CODECS: tuple[tuple[str, str, Codec], ...] = tuple(
    (f.name, f.metadata["codec"].key or f.name, f.metadata["codec"])
    for f in dataclasses.fields(RunState)
)
