"""The actions on a run's tool calls: the results of calls still open, typed as JSON on
the run's page, and the resolution of an invalid tool call (retry, repair, skip, stop,
fail)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import ValidationError
from starlette.datastructures import FormData

from app.dashboard import present
from app.dashboard.actions.forms import Errors, Fields, Invalid, Pairs, json_int
from app.service.jsonrules import MAX_DEPTH
from app.service.principals import Permission
from app.service.runs import RunView
from app.service.schemas import ResolutionIn, ToolResultsIn

#: The most tool-call fields a results form may carry (as many as a submission takes).
MAX_RESULTS = 1000
COUNT = re.compile(r"\d{1,4}", re.ASCII)
RESOLUTION_FIELDS = ("action", "feedback", "tool_name", "reason")


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
        read = Fields(form)
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
                value = json.loads(text, parse_int=json_int)
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
        read = Fields(form)
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
