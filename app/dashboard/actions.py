"""The operator's actions as typed values, each parsed once from its form.

A POST to /admin/runs/{id}/{name} names a kind (`KINDS`, keyed by each action's `name`);
its `parse` reads the form into the action or into `Invalid`, the errors shown beside
the fields (422, nothing changed). An action also says what its confirmation page shows
(`summary`) and carries on to the confirmed POST (`fields`), which is parsed again the
same way, and which permission it needs (`permission`: the signed-in role must hold
it). `app.dashboard.perform` dispatches the parsed action to the service.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Self, get_args

from pydantic import ValidationError
from starlette.datastructures import FormData

from app.approvals import policies
from app.dashboard import present
from app.forks.specs import ForkIn
from app.service.jsonrules import MAX_DEPTH
from app.service.operator_actions import MAX_EXTENSION_SECONDS
from app.service.principals import Permission
from app.service.runs import RunView
from app.service.schemas import DecisionsIn, LimitsIn, ResolutionIn, ToolResultsIn
from app.service.types import ToolCallRecord

Pairs = list[tuple[str, str]]
Errors = dict[str, str]

#: The most tool-call fields a results form may carry (as many as a submission takes).
MAX_RESULTS = 1000
#: A number as an HTML number input sends it (ASCII digits; no `inf`, `nan` or `1_0`).
NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)
COUNT = re.compile(r"\d{1,4}", re.ASCII)
RESOLUTION_FIELDS = ("action", "feedback", "tool_name", "reason")


@dataclass(frozen=True, slots=True)
class Invalid:
    """A form that does not parse: the message for each field (`form`: the whole form)."""

    errors: Errors


class _Fields:
    """Reads text fields off a form, noting a field that holds something else (a file)."""

    def __init__(self, form: FormData) -> None:
        self.form = form
        self.errors: Errors = {}

    def text(self, name: str, shown_as: str = "form") -> str:
        value = self.form.get(name)
        if value is None:
            return ""
        if not isinstance(value, str):
            self.errors[shown_as] = f"{name}: expected text, not a file"
            return ""
        return value


# --- actions without fields ------------------------------------------------------------


class _Fieldless:
    """An action that asks for nothing but its confirmation."""

    __slots__ = ()

    @classmethod
    def parse(cls, form: FormData, view: RunView) -> Self | Invalid:
        return cls()

    def summary(self) -> Pairs:
        return []

    def fields(self) -> Pairs:
        return []


@dataclass(frozen=True, slots=True)
class Cancel(_Fieldless):
    name: ClassVar[str] = "cancel"
    permission: ClassVar[Permission] = Permission.RUNS_CANCEL
    done: ClassVar[str] = "The run was cancelled."


@dataclass(frozen=True, slots=True)
class Retry(_Fieldless):
    name: ClassVar[str] = "retry"
    permission: ClassVar[Permission] = Permission.RUNS_OPERATE
    done: ClassVar[str] = "The run was queued again."


# --- tool results ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResultEntry:
    """One answered box of the results form: its index on the form, the JSON as typed
    (carried through the confirmation page unchanged) and its value."""

    index: int
    call_id: str
    text: str
    output: Any
    is_error: bool


@dataclass(frozen=True, slots=True)
class SubmitToolResults:
    name: ClassVar[str] = "tool-results"
    permission: ClassVar[Permission] = Permission.TOOL_RESULTS_SUBMIT
    done: ClassVar[str] = "The tool results were submitted."

    entries: tuple[ResultEntry, ...]
    count: int
    body: ToolResultsIn

    @classmethod
    def parse(cls, form: FormData, view: RunView) -> SubmitToolResults | Invalid:
        """`count` boxes, `call_id_<i>`, `output_<i>` (JSON) and `is_error_<i>` (`on`);
        an empty box is a call answered later. Only calls still open may be answered."""
        read = _Fields(form)
        errors = read.errors
        raw_count = read.text("count").strip()
        if not COUNT.fullmatch(raw_count) or int(raw_count) > MAX_RESULTS:
            return Invalid({"form": f"count must be a whole number from 0 to {MAX_RESULTS}"})
        count = int(raw_count)
        open_ids = {c.call_id for c in view.pending if c.result_hash is None and not c.preresolved}
        entries = []
        for i in range(count):
            box = f"output_{i}"
            call_id = read.text(f"call_id_{i}", box)
            text = read.text(box, box)
            flag = read.text(f"is_error_{i}", box)
            if not text.strip() or box in errors:
                continue
            if flag not in ("", "on"):
                errors[box] = f"is_error_{i}: expected the checkbox's value `on`, not {flag!r}"
                continue
            if call_id not in open_ids:
                errors[box] = "this tool call is not pending any more"
                continue
            try:
                value = json.loads(text, parse_int=_json_int)
            except json.JSONDecodeError as exc:
                errors[box] = (
                    f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}); "
                    'wrap text in double quotes, e.g. "3"'
                )
                continue
            except RecursionError:
                errors[box] = f"nested deeper than {MAX_DEPTH} levels"
                continue
            entries.append(ResultEntry(i, call_id, text, value, flag == "on"))
        if errors:
            return Invalid(errors)
        if not entries:
            return Invalid({"form": "Enter a JSON result for at least one tool call."})
        results = [
            {"tool_call_id": e.call_id, "output": e.output, "is_error": e.is_error} for e in entries
        ]
        try:
            body = ToolResultsIn.model_validate({"results": results})
        except ValidationError as exc:
            return Invalid(_result_errors(exc, entries))
        return cls(tuple(entries), count, body)

    def summary(self) -> Pairs:
        return [
            (e.call_id, present.preview(e.output, 200) + (" (error)" if e.is_error else ""))
            for e in self.entries
        ]

    def fields(self) -> Pairs:
        pairs: Pairs = []
        for e in self.entries:
            pairs += [(f"call_id_{e.index}", e.call_id), (f"output_{e.index}", e.text)]
            if e.is_error:
                pairs.append((f"is_error_{e.index}", "on"))
        pairs.append(("count", str(self.count)))
        return pairs


def _json_int(digits: str) -> int:
    """A JSON integer. One too long for Python to convert (over 4300 digits: `int` raises
    ValueError) is outside the 64-bit range a result may hold anyway, so the first integer
    past that range stands in for it, to be refused with its place like any other."""
    try:
        return int(digits)
    except ValueError:
        return -(2**64) if digits.startswith("-") else 2**64


def _result_errors(exc: ValidationError, entries: list[ResultEntry]) -> Errors:
    """The submission's refusals beside the boxes they are about (`results.<n>.output...`
    names the n-th answered box), the rest above the form."""
    errors: Errors = {}
    for error in exc.errors():
        ctx = error.get("ctx") or {}
        loc = list(ctx.get("loc") or error["loc"])
        if len(loc) >= 2 and loc[0] == "results" and isinstance(loc[1], int):
            entry = entries[loc[1]]
            path = [str(p) for p in loc[3:]]  # inside the value (a deep one: its start)
            inside = ".".join(path[:6]) + (".…" if len(path) > 6 else "")
            problem = ctx.get("problem") or error["msg"]
            text = f"{inside} {problem}" if inside else f"the result {problem}"
            errors.setdefault(f"output_{entry.index}", text)
        else:
            errors["form"] = str(error["msg"])
    return errors


# --- resolution of an invalid tool call ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Resolve:
    name: ClassVar[str] = "resolve"
    permission: ClassVar[Permission] = Permission.RUNS_RESOLVE
    done: ClassVar[str] = "The invalid tool call was resolved."

    body: ResolutionIn

    @classmethod
    def parse(cls, form: FormData, view: RunView) -> Resolve | Invalid:
        """`action` (retry, repair, skip, stop, fail) and its `feedback`, `tool_name` or
        `reason`; blank fields are absent."""
        read = _Fields(form)
        data = {k: read.text(k, "action").strip() or None for k in RESOLUTION_FIELDS}
        if read.errors:
            return Invalid(read.errors)
        try:
            body = ResolutionIn.model_validate(data)
        except ValidationError as exc:
            return Invalid({"action": "; ".join(_located(e) for e in exc.errors())})
        if body.action == "repair" and not body.tool_name:
            return Invalid({"tool_name": "repair needs the name of the tool to call instead"})
        return cls(body)

    def summary(self) -> Pairs:
        return self.fields()

    def fields(self) -> Pairs:
        return [(k, v) for k in RESOLUTION_FIELDS if (v := getattr(self.body, k))]


def _located(error: Any) -> str:
    """A refusal, prefixed by its field unless it is about `action` (shown beside it)."""
    loc = [p for p in error["loc"] if p != "action"]
    return f"{loc[0]}: {error['msg']}" if loc else str(error["msg"])


# --- expiry ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExtendExpiry:
    name: ClassVar[str] = "extend"
    permission: ClassVar[Permission] = Permission.RUNS_OPERATE
    done: ClassVar[str] = "The expiry was extended."

    minutes: str  # as typed: what the confirmation page shows and carries on
    seconds: float

    @classmethod
    def parse(cls, form: FormData, view: RunView) -> ExtendExpiry | Invalid:
        """`minutes`: a number from 1 to a year's (what the page's field asks for)."""
        read = _Fields(form)
        raw = read.text("minutes", "minutes").strip()
        if read.errors:
            return Invalid(read.errors)
        if not NUMBER.fullmatch(raw):
            return Invalid({"minutes": "enter a number of minutes"})
        seconds = float(raw) * 60  # a huge number is `inf` here, and out of range below
        if not 60 <= seconds <= MAX_EXTENSION_SECONDS:
            limit = MAX_EXTENSION_SECONDS // 60
            return Invalid({"minutes": f"enter between 1 and {limit} minutes"})
        return cls(raw, seconds)

    def summary(self) -> Pairs:
        return [("extend by", f"{self.minutes} minutes")]

    def fields(self) -> Pairs:
        return [("minutes", self.minutes)]


# --- budgets ----------------------------------------------------------------------------

LIMIT_FIELDS = ("max_cost_usd", "max_total_tokens", "max_model_calls", "max_duration_seconds")


@dataclass(frozen=True, slots=True)
class RaiseLimits:
    """New limits for a run (`POST /v1/runs/{id}/limits`): a field left empty keeps its
    limit, `none` removes it; a run suspended on its budget goes on."""

    name: ClassVar[str] = "limits"
    permission: ClassVar[Permission] = Permission.RUNS_OPERATE
    done: ClassVar[str] = "The run's limits were changed."

    typed: tuple[tuple[str, str], ...]  # (field, as typed): shown and carried on
    body: LimitsIn

    @classmethod
    def parse(cls, form: FormData, view: RunView) -> RaiseLimits | Invalid:
        read = _Fields(form)
        typed = [(k, v) for k in LIMIT_FIELDS if (v := read.text(k, k).strip())]
        if read.errors:
            return Invalid(read.errors)
        if not typed:
            return Invalid({"form": "enter at least one limit (none removes one)"})
        values: dict[str, float | None] = {}
        for key, text in typed:
            if text.lower() != "none" and not NUMBER.fullmatch(text):
                return Invalid({key: "enter a number, or none to remove the limit"})
            values[key] = None if text.lower() == "none" else float(text)
            if values[key] in (math.inf, -math.inf):
                return Invalid({key: "enter a number that is not that large"})
        try:
            body = LimitsIn.model_validate(values)
        except ValidationError as exc:
            return Invalid(
                {str(e["loc"][0]) if e["loc"] else "form": e["msg"] for e in exc.errors()}
            )
        return cls(tuple(typed), body)

    def summary(self) -> Pairs:
        return [(k.replace("_", " "), v) for k, v in self.typed]

    def fields(self) -> Pairs:
        return list(self.typed)


# --- approvals ---------------------------------------------------------------------------

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
    def read(read: _Fields, view: RunView) -> _Gated | Errors:
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
        read = _Fields(form)
        text = read.text("arguments", "arguments")
        gated = _Gated.read(read, view)
        if isinstance(gated, dict):
            return Invalid(gated)
        item = gated.decision("approve")
        if text.strip():
            try:
                edited = json.loads(text, parse_int=_json_int)
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
        read = _Fields(form)
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


# --- forks ------------------------------------------------------------------------------

#: The idempotency key a fork's confirmation carries (made when the form is first posted:
#: the confirmed POST sent twice makes one fork).
FORK_KEY = re.compile(r"dashboard-[0-9a-f]{32}", re.ASCII)
SEQ = re.compile(r"\d{1,9}", re.ASCII)
MODES = ("fork", "replay")
ON_DIVERGENCE = ("live", "fail")


@dataclass(frozen=True, slots=True)
class Fork:
    """A new run from a checkpoint of the run (`POST /v1/runs/{id}/fork`): "Fork from here"
    on a checkpoint of the conversation (`at`, and a message to append), or "Replay" of the
    whole run (`mode` `replay`, `on_divergence`). The new run's page is shown after it."""

    name: ClassVar[str] = "fork"
    permission: ClassVar[Permission] = Permission.RUNS_CREATE
    done: ClassVar[str] = "This run was just made from the checkpoint named below."

    key: str
    body: ForkIn

    @classmethod
    def parse(cls, form: FormData, view: RunView) -> Fork | Invalid:
        """`at` (a checkpoint's seq; blank: the run's start), `message` (a user message
        after it; blank: none), `mode` (`fork`, `replay`), `on_divergence` (`live`,
        `fail`) and `key` (blank on the first post: one is made here)."""
        read = _Fields(form)
        at = read.text("at").strip()
        message = read.text("message").strip()
        mode = read.text("mode").strip() or "fork"
        diverge = read.text("on_divergence").strip() or "live"
        key = read.text("key").strip() or f"dashboard-{uuid.uuid4().hex}"
        if read.errors:
            return Invalid(read.errors)
        if at and not SEQ.fullmatch(at):
            return Invalid({"form": f"at: expected a checkpoint's number, not {at[:40]!r}"})
        if mode not in MODES or diverge not in ON_DIVERGENCE:
            return Invalid({"form": "mode: fork or replay; on_divergence: live or fail"})
        if not FORK_KEY.fullmatch(key):
            return Invalid({"form": "key: expected the key the confirmation page carries"})
        data: dict[str, Any] = {"mode": mode}
        if at:
            data["at"] = int(at)
        if message:
            data["patch"] = {"append": [{"role": "user", "content": message}]}
        if mode == "replay":
            data["on_divergence"] = diverge
        try:
            body = ForkIn.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "form"
            return Invalid({"form": f"{where}: {first['msg']}"})
        return cls(key, body)

    @property
    def replay(self) -> bool:
        return self.body.mode == "replay"

    @property
    def message(self) -> str:
        patch = self.body.patch
        if patch is None or not patch.append:
            return ""
        content = patch.append[0].content
        return content if isinstance(content, str) else ""

    def summary(self) -> Pairs:
        at = self.body.at
        pairs = [("checkpoint", str(at) if at is not None else "the run's start")]
        if self.replay:
            pairs.append(("at its first difference", self.body.on_divergence))
        if self.message:
            pairs.append(("then the user says", self.message))
        return pairs

    def fields(self) -> Pairs:
        pairs = [("mode", self.body.mode), ("key", self.key)]
        if self.body.at is not None:
            pairs.append(("at", str(self.body.at)))
        if self.replay:
            pairs.append(("on_divergence", self.body.on_divergence))
        if self.message:
            pairs.append(("message", self.message))
        return pairs


Action = (
    Cancel
    | SubmitToolResults
    | Resolve
    | ExtendExpiry
    | Retry
    | Approve
    | Reject
    | RaiseLimits
    | Fork
)
Parse = Callable[[FormData, RunView], Action | Invalid]

#: Every action by the name in its URL.
KINDS: dict[str, Parse] = {kind.name: kind.parse for kind in get_args(Action)}
#: The permission each action needs (the signed-in role decides: a viewer has none).
PERMISSIONS: dict[str, Permission] = {kind.name: kind.permission for kind in get_args(Action)}
#: The message the run page shows after each action (`?done=<name>`).
DONE: dict[str, str] = {kind.name: kind.done for kind in get_args(Action)}
