"""The decisions on a gated tool call: approve it (its arguments as the model wrote them,
or edited) or reject it with a message to the model, from the run's page or the inbox
(`INBOX`: where the form came from, and where the person goes back to)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import ValidationError
from starlette.datastructures import FormData

from app.approvals import policies
from app.dashboard import present
from app.dashboard.actions.forms import Errors, Fields, Invalid, Pairs, json_int
from app.service.jsonrules import MAX_DEPTH
from app.service.principals import Permission
from app.service.runs import RunView
from app.service.schemas import DecisionsIn
from app.service.types import ToolCallRecord

#: Where an approval form was sent from (`return_to`): the run's page, or the inbox.
INBOX = "inbox"
HASH = re.compile(r"[0-9a-f]{64}", re.ASCII)


def awaiting(view: RunView) -> list[ToolCallRecord]:
    """The run's gated calls that wait for a decision."""
    return [c for c in view.pending if c.awaits_approval]


@dataclass(frozen=True, slots=True)
class _Gated:
    """The gated call a decision form names (`call_id`, and `position` in its round), with
    the arguments hash the person saw (`arguments_hash`: a stale one is the service's 409)
    and where the form came from (`return_to`). Whether the call still awaits a decision is
    the service's to say (the same decision again is a 200, another a 409): `call` is the
    run's gated call of that id in the waiting round, if any, for the confirmation page."""

    call_id: str
    position: int | None
    call: ToolCallRecord | None
    arguments_hash: str
    return_to: str

    @staticmethod
    def read(read: Fields, view: RunView) -> _Gated | Errors:
        call_id = read.text("call_id").strip()
        digest = read.text("arguments_hash").strip()
        back = read.text("return_to").strip()
        place = read.text("position").strip()
        if read.errors:
            return read.errors
        if back not in ("", INBOX):
            return {"form": f"return_to: expected {INBOX!r} or nothing, not {back[:40]!r}"}
        if not call_id:
            return {"form": "call_id: the tool call to decide is missing"}
        if place and not (place.isdigit() and len(place) < 10):
            return {"form": "position: expected the call's place in its round (a number)"}
        position = int(place) if place else None
        if not HASH.fullmatch(digest):
            return {"form": "arguments_hash: expected the 64 hex digits the page carries"}
        named = [
            c
            for c in view.pending
            if c.approval is not None and c.call_id == call_id and position in (None, c.position)
        ]
        return _Gated(call_id, position, named[0] if len(named) == 1 else None, digest, back)

    def decision(self, action: str) -> dict[str, Any]:
        """The decision's fields the form names."""
        item = {"tool_call_id": self.call_id, "arguments_hash": self.arguments_hash}
        item["action"] = action
        return item | ({"position": self.position} if self.position is not None else {})

    def summary(self) -> Pairs:
        if self.call is None:
            return [("tool call", f"{self.call_id} (not awaiting a decision on this page)")]
        return [
            ("tool", f"{self.call.name} ({self.call.call_id})"),
            ("arguments", present.preview(self.call.arguments, 400)),
        ]

    def fields(self) -> Pairs:
        pairs = [("call_id", self.call_id), ("arguments_hash", self.arguments_hash)]
        if self.position is not None:
            pairs.append(("position", str(self.position)))
        return pairs + ([("return_to", self.return_to)] if self.return_to else [])


@dataclass(frozen=True, slots=True)
class Approve:
    name: ClassVar[str] = "approve"
    permission: ClassVar[Permission] = Permission.RUNS_APPROVE
    done: ClassVar[str] = "The tool call was approved: its executor gets it now."

    gated: _Gated
    text: str  # the edited arguments as typed ("" for none)
    body: DecisionsIn

    @classmethod
    def parse(cls, form: FormData, view: RunView) -> Approve | Invalid:
        """`call_id`, `arguments_hash`, `position`, `return_to`, and `arguments`: blank, or
        the edited arguments (a JSON object, checked against the tool's schema by the
        service); the model's own arguments again (the same canonical JSON: the hash the
        form carries) are no edit."""
        read = Fields(form)
        text = read.text("arguments", "arguments")
        gated = _Gated.read(read, view)
        if isinstance(gated, dict):
            return Invalid(gated)
        item = gated.decision("approve")
        if text.strip():
            try:
                edited = json.loads(text, parse_int=json_int)
            except json.JSONDecodeError as exc:
                where = f"line {exc.lineno}, column {exc.colno}"
                return Invalid({"arguments": f"not valid JSON: {exc.msg} ({where})"})
            except RecursionError:
                return Invalid({"arguments": f"nested deeper than {MAX_DEPTH} levels"})
            if not isinstance(edited, dict):
                return Invalid({"arguments": "the arguments are a JSON object: {...}"})
            if policies.arguments_hash(edited) != gated.arguments_hash:  # (canonical JSON)
                item["arguments"] = edited
            else:
                text = ""
        try:
            body = DecisionsIn.model_validate({"decisions": [item]})
        except ValidationError as exc:
            return Invalid({"arguments": "; ".join(str(e["msg"]) for e in exc.errors())})
        return cls(gated, text, body)

    @property
    def edited(self) -> bool:
        return bool(self.text)

    def summary(self) -> Pairs:
        pairs = self.gated.summary()
        if self.edited:
            edited = self.body.decisions[0].arguments
            pairs.append(("executed instead", present.preview(edited, 400)))
        return pairs

    def fields(self) -> Pairs:
        return self.gated.fields() + ([("arguments", self.text)] if self.edited else [])


@dataclass(frozen=True, slots=True)
class Reject:
    name: ClassVar[str] = "reject"
    permission: ClassVar[Permission] = Permission.RUNS_APPROVE
    done: ClassVar[str] = "The tool call was rejected: the model gets the message."

    gated: _Gated
    body: DecisionsIn

    @classmethod
    def parse(cls, form: FormData, view: RunView) -> Reject | Invalid:
        """`call_id`, `arguments_hash`, `return_to`, and `message` (what the model is told:
        required)."""
        read = Fields(form)
        message = read.text("message", "message").strip()
        gated = _Gated.read(read, view)
        if isinstance(gated, dict):
            return Invalid(gated)
        if not message:
            return Invalid({"message": "say why: the model receives this message"})
        item = gated.decision("reject") | {"message": message}
        try:
            body = DecisionsIn.model_validate({"decisions": [item]})
        except ValidationError as exc:
            return Invalid({"message": "; ".join(str(e["msg"]) for e in exc.errors())})
        return cls(gated, body)

    @property
    def message(self) -> str:
        return self.body.decisions[0].message or ""

    def summary(self) -> Pairs:
        return [*self.gated.summary(), ("message to the model", self.message)]

    def fields(self) -> Pairs:
        return [*self.gated.fields(), ("message", self.message)]
