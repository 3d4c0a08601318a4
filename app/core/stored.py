"""A run as the service stores it: a small control document and an append-only log.

The serialized run (`serde.state_to_dict`) holds three lists that grow: the given
`chat_history` (fixed at creation), `new_messages` and `completion_calls` (one per model
call, with the provider's raw answer). Rewriting them on every transition made a tool
round's cost grow with the conversation. Here they are written once: each transition
appends one *batch* holding only the items added since the run was loaded, and the
control document keeps their counts in their place. A finished run's response repeats
the run's messages and calls; it keeps counts too (the log has them).

A batch carries the `schema_version` it was written with, so an item is upgraded by the
same `serde.UPGRADERS` as a whole document. A control document without the `"log"`
marker is a whole legacy document (written before this layout): it loads as before, and
its first snapshot writes everything it holds as the log's first batch.

A batch marked `"r": 1` (`resets`) *replaces* the given history and the run's messages
so far with its own `h` and `m` instead of appending to them (its `c` still appends): a
conversation rewritten at a turn boundary (compaction, `rewrite`). The batches before it
stay as they were written, and its `a` holds the messages the run had added since the
batch before it (appended, then replaced: `appended`), so every original message
remains readable in the log.

Pure JSON manipulation: no IO, no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from app.core.content import Message
from app.core.errors import StateDecodeError
from app.core.run import AgentRun
from app.core.serde import (
    SCHEMA_VERSION,
    completion_call_to_dict,
    dumps,
    load_doc,
    message_from,
    message_to_dict,
    state_to_dict,
    upgrade,
)
from app.core.types import USAGE_FIELDS

Doc = dict[str, Any]

#: Marks a control document (its value is the log's extent).
LOG_KEY = "log"
#: Marks a batch whose `h` and `m` replace the lists so far (`resets`).
RESET_KEY = "r"
#: A reset batch's messages appended before it replaced the lists (`appended`).
APPENDED_KEY = "a"
#: Fields a control document leaves out when they hold these values (most runs never
#: change them), filled in again on load: every byte of it is written with every change.
DEFAULTS: dict[str, Any] = {
    "max_invalid_tool_call_retries": 0,
    "tool_choice": None,
    "output_tool_name": None,
    "output_schema": None,
    "max_output_retries": 0,
    "output_retries": 0,
    "invalid_tool_call_retries": 0,
    "rollback_pending": False,
    "streamed_completion_call_recorded": False,
}
_LISTS = (("chat_history", "h"), ("new_messages", "m"), ("completion_calls", "c"))
#: Keys of a tool call (in a message's content, or a pending call) and of a pending call
#: left out when null: the decoder reads an absent key as null, so this needs no undoing.
_NULLABLE_CALL = ("signature", "additional_params")
_NULLABLE_PENDING = ("preresolved_result", "internal_call_id")


# --- the lean stored form: zero counters and null call fields left out -------------------
#
# Every byte of the control document is written again with every change of the run, and
# most of a usage object is zeros (seven counters, two or three in use). The stored form
# leaves out a usage object's zero counters (filled in again on load, at the same places)
# and a tool call's null fields (absent reads as null). Documents written whole load as
# they are: filling in absent counters leaves a whole usage object unchanged.


def _lean_usage(holder: Any) -> None:
    usage = holder.get("usage") if type(holder) is dict else None
    if type(usage) is dict:
        holder["usage"] = {k: v for k, v in usage.items() if v != 0 or type(v) is not int}


def _full_usage(holder: Any) -> None:
    usage = holder.get("usage") if type(holder) is dict else None
    if type(usage) is dict:
        for key in USAGE_FIELDS:
            usage.setdefault(key, 0)


def _lean_call(call: Any) -> None:
    if type(call) is dict:
        for key in _NULLABLE_CALL:
            if key in call and call[key] is None:
                del call[key]


def _lean_messages(messages: Any) -> None:
    for m in messages if type(messages) is list else ():
        content = m.get("content") if type(m) is dict and m.get("role") == "assistant" else None
        for item in content if type(content) is list else ():
            if type(item) is dict and item.get("type") == "toolcall":
                _lean_call(item)


def _calls_usage(calls: Any, fix: Callable[[Any], None]) -> None:
    for call in calls if type(calls) is list else ():
        fix(call)


def _lean_control(doc: Doc) -> None:
    _lean_usage(doc)
    state = doc.get("state")
    if type(state) is not dict:
        return
    for pending in state.get("ExecutingTools") or ():
        if type(pending) is dict:
            _lean_call(pending.get("tool_call"))
            for key in _NULLABLE_PENDING:
                if key in pending and pending[key] is None:
                    del pending[key]
    done = state.get("Done")
    if type(done) is dict:
        _lean_usage(done)
        _calls_usage(done.get("completion_calls"), _lean_usage)


def _full_control(doc: Doc) -> None:
    _full_usage(doc)
    done = _done_body(doc)
    if done is not None:
        _full_usage(done)
        _calls_usage(done.get("completion_calls"), _full_usage)


def _lean_batch(batch: Doc) -> None:
    _lean_messages(batch.get("h"))
    _lean_messages(batch.get("m"))
    _lean_messages(batch.get(APPENDED_KEY))
    _calls_usage(batch.get("c"), _lean_usage)


@dataclass(frozen=True, slots=True)
class Extent:
    """How much of a run's log is stored: items per list (as the run holds them: after a
    reset batch, that batch's lists and what was appended since), and batches written."""

    history: int | None = None  # None: the run was given no history (as rig: not [])
    messages: int = 0
    calls: int = 0
    batches: int = 0

    def to_doc(self) -> Doc:
        return {"h": self.history, "m": self.messages, "c": self.calls, "b": self.batches}

    @classmethod
    def of(cls, doc: Any) -> Extent:
        if not isinstance(doc, dict):
            raise StateDecodeError("log: the stored run's log extent must be an object")
        try:
            history = doc["h"]
            values = [doc["m"], doc["c"], doc["b"]]
        except KeyError as exc:
            raise StateDecodeError(f"log: missing {exc.args[0]!r}") from None
        for v in [*values, *([history] if history is not None else [])]:
            if type(v) is not int or v < 0:
                raise StateDecodeError("log: counts must be non-negative integers")
        return cls(history, *values)


@dataclass(frozen=True, slots=True)
class Batch:
    """One append to a run's log: number `seq` (1, 2, …) and its JSON text."""

    seq: int
    body: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one transition writes of a run: the control document and, when the run
    gained messages or model calls, the batch that appends them."""

    control: str
    batch: Batch | None
    extent: Extent


@dataclass(slots=True)
class Loaded:
    """A run as loaded, with where its in-memory lists start in the stored log.

    `base` is (messages, calls) already stored that the run does not hold in memory: 0
    for a full load, the stored counts for a control-only load (which cannot be turned
    back into a whole document, only advanced and snapshotted)."""

    run: AgentRun
    extent: Extent
    stored: bool = True  # False: a legacy whole document, nothing in the log yet
    base: tuple[int, int] = (0, 0)
    reset: bool = False  # its conversation was replaced (`rewrite`): the next batch resets
    appended: tuple[Message, ...] = ()  # what it had added, unlogged, before the rewrite


def rewrite(loaded: Loaded, run: AgentRun) -> None:
    """`loaded` now holds `run`, whose given history and messages replace the run's (a
    conversation rewritten at a turn boundary: compaction) and whose completion calls
    continue its calls: its next snapshot writes both lists whole, in a batch that
    `resets` them, with the messages the run had added since its last batch (not in
    the log yet: the originals stay readable). Only a full load can be rewritten."""
    if loaded.base != (0, 0):
        raise StateDecodeError("a run loaded without its log cannot have its conversation replaced")
    if len(run.completion_calls()) < loaded.extent.calls:
        raise StateDecodeError("a rewritten run keeps the completion calls it had")
    if not loaded.reset:  # (rewritten twice before a snapshot: the first kept them)
        before = loaded.run
        if loaded.stored:
            loaded.appended = before.messages()[loaded.extent.messages :]
        else:  # (a whole legacy document: nothing of it is in the log yet)
            loaded.appended = before.full_history()
    loaded.run = run
    loaded.reset = True


def resets(body: str) -> bool:
    """Whether a log batch (its JSON text) replaces the given history and the run's
    messages so far with its own, rather than appending to them (a compaction's batch)."""
    try:
        batch = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise StateDecodeError(f"run log is not valid JSON: {exc}") from None
    return isinstance(batch, dict) and batch.get(RESET_KEY) == 1


def appended(body: str) -> list[Message]:
    """The messages a batch that `resets` holds as appended before it replaced the lists
    (the run's own, added since the batch before it); none for any other batch."""
    batch = _decoded_batch(body)
    items = batch.get(APPENDED_KEY, [])
    if not isinstance(items, list):
        raise StateDecodeError(f"run log: batch list {APPENDED_KEY!r} must be an array")
    return [message_from(m, f"log.{APPENDED_KEY}[{i}]") for i, m in enumerate(items)]


def load(control: str, log: str | None = None, *, control_only: bool = False) -> Loaded:
    """A run from its control document and its log (the batch bodies as one JSON array
    text, in order); `control_only` loads it without the log: its lists start empty at
    the stored counts (enough to answer its pending tool calls)."""
    try:
        doc = orjson.loads(control)
    except orjson.JSONDecodeError as exc:
        raise StateDecodeError(f"serialized run is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or LOG_KEY not in doc:  # a whole (legacy) document
        return Loaded(AgentRun.from_json(control), Extent(), stored=False)
    extent = Extent.of(doc.pop(LOG_KEY))
    for key, value in DEFAULTS.items():
        doc.setdefault(key, value)
    _full_control(doc)
    # The control part is upgraded alone (with empty lists); the log's items are
    # upgraded batch by batch to the current version (`_read_log`).
    doc["chat_history"] = None if extent.history is None else []
    doc["new_messages"] = []
    doc["completion_calls"] = []
    if control_only:
        if _done_body(doc) is not None:
            raise StateDecodeError("a finished run loads with its log")
        run = AgentRun.from_state(load_doc(doc, upgraded=False))
        return Loaded(run, extent, base=(extent.messages, extent.calls))
    try:
        doc = upgrade(doc)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise StateDecodeError(f"serialized run has an invalid shape: {exc!r}") from None
    lists = _read_log(log, extent)
    if extent.history is not None:
        doc["chat_history"] = lists["h"]
    doc["new_messages"] = lists["m"]
    doc["completion_calls"] = lists["c"]
    done = _done_body(doc)
    if done is not None:
        for key, short in (("messages", "m"), ("completion_calls", "c")):
            if type(done.get(key)) is int:
                done[key] = lists[short][: done[key]]
    return Loaded(AgentRun.from_state(load_doc(doc)), extent)


def split_document(text: str) -> tuple[str, str | None]:
    """A whole (legacy) document as (control document, first batch body or None),
    without decoding its items: the batch keeps the document's schema version, upgraded
    on load. For the data migration that moves stored runs to this layout."""
    doc = orjson.loads(text)
    if not isinstance(doc, dict) or LOG_KEY in doc:
        return text, None
    version = doc.get("schema_version", 0)
    history = doc.pop("chat_history", None)
    messages = doc.pop("new_messages", None) or []
    calls = doc.pop("completion_calls", None) or []
    new: Doc = {"v": version}
    if history is not None:
        new["h"] = history
    if messages:
        new["m"] = messages
    if calls:
        new["c"] = calls
    done = _done_body(doc)
    if done is not None:
        if done.get("messages") == messages:
            done["messages"] = len(messages)
        if calls and done.get("completion_calls", []) == calls:
            done["completion_calls"] = len(calls)
    batches = 1 if len(new) > 1 else 0
    extent = Extent(None if history is None else len(history), len(messages), len(calls), batches)
    doc[LOG_KEY] = extent.to_doc()
    return dumps(doc), (dumps(new) if batches else None)


def _done_body(doc: Doc) -> Doc | None:
    state = doc.get("state")
    if isinstance(state, dict) and isinstance(state.get("Done"), dict):
        return state["Done"]  # type: ignore[no-any-return]
    return None


def _read_log(log: str | None, extent: Extent) -> dict[str, list[Any]]:
    """The log's lists, each batch brought to the current schema version."""
    lists: dict[str, list[Any]] = {"h": [], "m": [], "c": []}
    try:
        batches = orjson.loads(log) if log else []
    except orjson.JSONDecodeError as exc:
        raise StateDecodeError(f"run log is not valid JSON: {exc}") from None
    if not isinstance(batches, list) or len(batches) != extent.batches:
        raise StateDecodeError(
            f"run log holds {len(batches) if isinstance(batches, list) else 'no'} batches, "
            f"its run expects {extent.batches}"
        )
    for batch in batches:
        if not isinstance(batch, dict):
            raise StateDecodeError("run log: a batch must be an object")
        # (Counters filled in before any upgrade: an upgrader sees whole usage objects.)
        _calls_usage(batch.get("c"), _full_usage)
        batch = _current(batch)
        for short in lists:
            items = batch.get(short, [])
            if not isinstance(items, list):
                raise StateDecodeError(f"run log: batch list {short!r} must be an array")
            if short != "c" and batch.get(RESET_KEY) == 1:
                lists[short] = list(items)  # (a reset batch: the conversation from here)
            else:
                lists[short].extend(items)
    want = {"h": extent.history or 0, "m": extent.messages, "c": extent.calls}
    for short, n in want.items():
        if len(lists[short]) != n:
            raise StateDecodeError(
                f"run log holds {len(lists[short])} items of {short!r}, its run expects {n}"
            )
    return lists


def _current(batch: Doc) -> Doc:
    """A batch's lists at the current schema version, upgraded as the lists of a whole
    document are."""
    version = batch.get("v", SCHEMA_VERSION)
    if version == SCHEMA_VERSION:
        return batch
    doc = upgrade(
        {
            "schema_version": version,
            "chat_history": batch.get("h", []),
            "new_messages": batch.get("m", []),
            "completion_calls": batch.get("c", []),
            "state": "PreparingRequest",
        }
    )
    out = {"h": doc["chat_history"], "m": doc["new_messages"], "c": doc["completion_calls"]}
    if batch.get(RESET_KEY) == 1:
        out[RESET_KEY] = 1
    if APPENDED_KEY in batch:  # (upgraded as the run's messages are)
        old = {
            "schema_version": version,
            "chat_history": [],
            "new_messages": batch[APPENDED_KEY],
            "completion_calls": [],
            "state": "PreparingRequest",
        }
        out[APPENDED_KEY] = upgrade(old)["new_messages"]
    return out


def _decoded_batch(body: str) -> Doc:
    """A batch's JSON text as a document at the current schema version."""
    try:
        batch = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise StateDecodeError(f"run log is not valid JSON: {exc}") from None
    if not isinstance(batch, dict):
        raise StateDecodeError("run log: a batch must be an object")
    try:
        return _current(batch)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise StateDecodeError(f"run log: a batch has an invalid shape: {exc!r}") from None


def batch_messages(body: str) -> tuple[list[Message], list[Message]]:
    """The messages one log batch appended (the given history's, the run's own; of a
    batch that `resets`, the lists it replaced them with), decoded at the current schema
    version, without loading the run: for a reader of a few batches (the approvals inbox
    reads a run's first and its latest). A batch that does not decode raises
    `StateDecodeError`."""
    batch = _decoded_batch(body)
    out: list[list[Message]] = []
    for short in ("h", "m"):
        items = batch.get(short, [])
        if not isinstance(items, list):
            raise StateDecodeError(f"run log: batch list {short!r} must be an array")
        out.append([message_from(m, f"log.{short}[{i}]") for i, m in enumerate(items)])
    return out[0], out[1]


def snapshot(loaded: Loaded) -> Snapshot:
    """The control document of the run as it is now, and the batch of what it added
    since it was loaded (or last snapshotted); `loaded` then counts those as stored.
    Only the new items are serialized: the cost does not grow with the conversation
    (but for a rewritten conversation, `rewrite`, written whole in a batch that resets)."""
    state = loaded.run.state
    doc = state_to_dict(state, log=True)
    extent = loaded.extent if loaded.stored else Extent()
    base_m, base_c = loaded.base
    messages = state.new_messages
    calls = state.completion_calls
    whole = loaded.reset or not loaded.stored  # (the conversation written whole)
    new: Doc = {RESET_KEY: 1} if loaded.reset else {}
    if loaded.appended:
        new[APPENDED_KEY] = [message_to_dict(m) for m in loaded.appended]
    if whole:
        given = state.chat_history  # None: none given (rig keeps None apart from [])
        history_count = None if given is None else len(given)
        if given is not None:
            new["h"] = [message_to_dict(m) for m in given]
    else:
        history_count = extent.history
    fresh_m = messages if loaded.reset else messages[extent.messages - base_m :]
    fresh_c = calls[extent.calls - base_c :]
    if fresh_m or loaded.reset:
        new["m"] = [message_to_dict(m) for m in fresh_m]
    if fresh_c:
        new["c"] = [completion_call_to_dict(c) for c in fresh_c]
    done = _done_body(doc)
    if done is not None and (base_m or base_c):
        raise StateDecodeError("a finished run is snapshotted from a full load")
    batch = None
    batches = extent.batches
    if new:
        batches += 1
        new["v"] = SCHEMA_VERSION
        _lean_batch(new)
        batch = Batch(batches, dumps(new))
    after = Extent(history_count, base_m + len(messages), base_c + len(calls), batches)
    for key, value in DEFAULTS.items():
        if key in doc and doc[key] == value and type(doc[key]) is type(value):
            del doc[key]
    _lean_control(doc)
    doc[LOG_KEY] = after.to_doc()
    loaded.extent = after
    loaded.stored = True
    loaded.reset = False
    loaded.appended = ()
    return Snapshot(dumps(doc), batch, after)


def initial(run: AgentRun) -> Snapshot:
    """The snapshot of a run just created (its whole log is new)."""
    return snapshot(Loaded(run, Extent(), stored=False))
