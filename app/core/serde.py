"""JSON form of a run: upstream rig's field names and tagging, plus `schema_version`.

A run's data is `app.core.state.RunState`; this module writes it and reads it back by
walking its fields (each declares its own codec), brings older documents up to date, and
re-exports the value encoders and strict decoders (`app.core.encode`, `app.core.decode`).

Version 0 is upstream's own format (no `schema_version` key); it is upgraded on load.
Every later change to the stored shape bumps `SCHEMA_VERSION` and registers one small
upgrader in `UPGRADERS`, so runs suspended by an older release still resume after a deploy.

Version 2 adds a tool result's `"is_error": true` (written only when set).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from app.core.decode import (
    assistant_content_from,
    completion_call_from,
    finish_reason_from,
    message_from,
    model_turn_from,
    tool_call_from,
    tool_choice_from,
    tool_result_from,
    usage_from,
    user_content_from,
)
from app.core.encode import (
    assistant_content_to_dict,
    completion_call_to_dict,
    message_to_dict,
    model_turn_to_dict,
    tool_call_to_dict,
    tool_result_to_dict,
    usage_to_dict,
    user_content_to_dict,
)
from app.core.errors import StateDecodeError
from app.core.fields import decoded, obj
from app.core.state import CODECS, RunState

__all__ = [
    "SCHEMA_VERSION",
    "UPGRADERS",
    "assistant_content_from",
    "assistant_content_to_dict",
    "completion_call_from",
    "completion_call_to_dict",
    "dumps",
    "finish_reason_from",
    "load_doc",
    "loads",
    "message_from",
    "message_to_dict",
    "model_turn_from",
    "model_turn_to_dict",
    "state_from_dict",
    "state_to_dict",
    "tool_call_from",
    "tool_call_to_dict",
    "tool_choice_from",
    "tool_result_from",
    "tool_result_to_dict",
    "upgrade",
    "usage_from",
    "usage_to_dict",
    "user_content_from",
    "user_content_to_dict",
]

SCHEMA_VERSION = 2

Doc = dict[str, Any]


def state_to_dict(state: RunState, *, log: bool = False) -> Doc:
    """The whole run; `log`: without its conversation lists (`chat_history`,
    `new_messages`, `completion_calls`), and a finished run's response counting the
    messages and calls it repeats from them (`app.core.stored` writes those once)."""
    lists = (state.new_messages, state.completion_calls) if log else None
    doc: Doc = {"schema_version": SCHEMA_VERSION}
    for name, key, codec in CODECS:
        if not (log and codec.logged):
            doc[key] = codec.write(getattr(state, name), lists)
    return doc


def _read_state(value: Any) -> RunState:
    d = obj(value)
    return RunState(**{name: codec.read(d, key) for name, key, codec in CODECS})


def state_from_dict(doc: Any) -> RunState:
    """A run's state from its (current-schema) document, field by field, as upstream's
    `AgentRun`; a refusal is a `StateDecodeError` naming the field."""
    return decoded(_read_state, doc, "")


def dumps(doc: Any) -> str:
    return orjson.dumps(doc).decode()


# --- upgraders ------------------------------------------------------------------------------


def _upgrade_assistant_item_v0(item: Any) -> Any:
    """Upstream once wrote assistant content untagged; infer the tag from the keys.

    A legacy `call_id` key on a tool call (the pre provider-split shape) is not lifted into
    `provider`: upstream at the pinned commit ignores it as an unknown key (its test
    `legacy_call_id_key_is_ignored_not_lifted`), so `id` stays rig's handle and the call
    has no provider id. Anything not shaped as expected is left to the strict decoder."""
    if not isinstance(item, dict) or "type" in item:
        return item
    if "function" in item:
        tag = "toolcall"
    elif "text" in item:
        tag = "text"
    elif "data" in item:
        tag = "image"
    else:
        tag = "reasoning"
    return {**item, "type": tag}


def _upgrade_items_v0(items: Any) -> Any:
    return [_upgrade_assistant_item_v0(c) for c in items] if isinstance(items, list) else items


def _upgrade_messages_v0(messages: Any) -> Any:
    if not isinstance(messages, list):
        return messages
    return [
        {**m, "content": _upgrade_items_v0(m.get("content"))}
        if isinstance(m, dict) and m.get("role") == "assistant" and "content" in m
        else m
        for m in messages
    ]


def _upgrade_v0_to_v1(doc: Doc) -> Doc:
    """Upstream rig's own format → ours: tag untagged assistant content."""
    doc = dict(doc)
    for key in ("chat_history", "new_messages"):
        if key in doc:
            doc[key] = _upgrade_messages_v0(doc[key])
    state = doc.get("state")
    if isinstance(state, dict) and len(state) == 1:
        ((tag, body),) = state.items()
        if isinstance(body, dict) and tag == "ResolvingToolCalls":
            body = {
                **body,
                "original_choice": _upgrade_items_v0(body.get("original_choice")),
                "items": _upgrade_items_v0(body.get("items")),
            }
        elif isinstance(body, dict) and tag == "AwaitingAdvance":
            body = {**body, "items": _upgrade_items_v0(body.get("items"))}
        elif isinstance(body, dict) and tag == "Done":
            body = {
                **body,
                "messages": _upgrade_messages_v0(body.get("messages")),
                "content": _upgrade_items_v0(body.get("content")),
            }
        doc["state"] = {tag: body}
    doc["schema_version"] = 1
    return doc


def _lift_error_v1(result: Any, *, feedback: bool = False) -> Any:
    """A v1 tool result → v2: the service stored a client's `is_error` as the text item's
    `{"is_error": true}` annotation (no wire sent it); it becomes the result's flag. The
    run's own feedback results (`feedback`: the skipped / preresolved ones) are errors."""
    if not isinstance(result, dict):
        return result
    flagged = feedback
    content = []
    for item in result.get("content") or ():
        params = item.get("additional_params") if isinstance(item, dict) else None
        if isinstance(params, dict) and params.get("is_error") is True:
            flagged = True
            rest = {k: v for k, v in params.items() if k != "is_error"}
            item = {k: v for k, v in item.items() if k != "additional_params"}
            if rest:
                item["additional_params"] = rest
        content.append(item)
    out = {**result, "content": content}
    if flagged:
        out["is_error"] = True
    return out


def _upgrade_messages_v1(messages: Any) -> Any:
    if not isinstance(messages, list):
        return messages
    out = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), list):
            content = [
                _lift_error_v1(c) if isinstance(c, dict) and c.get("type") == "toolresult" else c
                for c in m["content"]
            ]
            m = {**m, "content": content}
        out.append(m)
    return out


def _upgrade_v1_to_v2(doc: Doc) -> Doc:
    """Tool results gain `is_error` (see `_lift_error_v1`)."""
    doc = dict(doc)
    for key in ("chat_history", "new_messages"):
        doc[key] = _upgrade_messages_v1(doc.get(key))
    state = doc.get("state")
    if isinstance(state, dict) and len(state) == 1:
        ((tag, body),) = state.items()
        if tag in ("ResolvingToolCalls", "AwaitingAdvance") and isinstance(body, dict):
            skipped = body.get("skipped")
            if isinstance(skipped, dict):
                lifted = {k: _lift_error_v1(v, feedback=True) for k, v in skipped.items()}
                body = {**body, "skipped": lifted}
        elif tag == "ExecutingTools" and isinstance(body, list):
            body = [
                {**p, "preresolved_result": _lift_error_v1(p["preresolved_result"], feedback=True)}
                if isinstance(p, dict) and p.get("preresolved_result") is not None
                else p
                for p in body
            ]
        elif tag == "Done" and isinstance(body, dict):
            body = {**body, "messages": _upgrade_messages_v1(body.get("messages"))}
        doc["state"] = {tag: body}
    doc["schema_version"] = 2
    return doc


#: UPGRADERS[n] turns a version-n document into a version-(n+1) document.
UPGRADERS: dict[int, Callable[[Doc], Doc]] = {0: _upgrade_v0_to_v1, 1: _upgrade_v1_to_v2}


def upgrade(doc: Doc) -> Doc:
    version = doc.get("schema_version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise StateDecodeError("invalid schema_version: it must be a non-negative integer")
    if version > SCHEMA_VERSION:
        raise StateDecodeError(
            f"serialized run has schema_version {version}, newer than this release "
            f"supports ({SCHEMA_VERSION}); upgrade the service before resuming it"
        )
    while version < SCHEMA_VERSION:
        doc = UPGRADERS[version](doc)
        version += 1
    return doc


def loads(data: str | bytes) -> RunState:
    """A run's state from its JSON text; every failure is a `StateDecodeError`."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise StateDecodeError(f"serialized run is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise StateDecodeError("serialized run must be a JSON object")
    return load_doc(doc, upgraded=False)


def load_doc(doc: Doc, *, upgraded: bool = True) -> RunState:
    """A run's state from its document (`upgraded`: already at the current schema
    version)."""
    try:
        return state_from_dict(doc if upgraded else upgrade(doc))
    except StateDecodeError:
        raise
    except RecursionError:  # the decoder is bounded; this only keeps the promise absolute
        raise StateDecodeError("serialized run is nested too deeply") from None
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise StateDecodeError(f"serialized run has an invalid shape: {exc!r}") from None
