"""A new run from a checkpoint of the run: "Fork from here" (and a message to append), a
fork with a recorded tool result replaced, or "Replay" of the whole run; the confirmation
carries the idempotency key made when the form was first posted."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import ValidationError
from starlette.datastructures import FormData

from app.dashboard.actions.forms import Fields, Invalid, Pairs
from app.forks.specs import ForkIn
from app.service.principals import Permission
from app.service.runs import RunView

#: The idempotency key a fork's confirmation carries (made when the form is first posted:
#: the confirmed POST sent twice makes one fork).
FORK_KEY = re.compile(r"dashboard-[0-9a-f]{32}", re.ASCII)
SEQ = re.compile(r"\d{1,9}", re.ASCII)
#: The longest result the form takes (the API's own limit is the body's size).
MAX_OUTPUT = 100_000
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
        after it; blank: none), `tool_call_id` and `output` (a recorded result replaced:
        the fork's conversation has `output` in its place; blank: none), `mode` (`fork`,
        `replay`), `on_divergence` (`live`, `fail`) and `key` (blank on the first post:
        one is made here)."""
        read = Fields(form)
        at = read.text("at").strip()
        message = read.text("message").strip()
        call_id = read.text("tool_call_id").strip()
        output = read.text("output")
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
        if len(output) > MAX_OUTPUT:
            return Invalid({"form": f"output: at most {MAX_OUTPUT} characters"})
        data: dict[str, Any] = {"mode": mode}
        if at:
            data["at"] = int(at)
        patch: dict[str, Any] = {}
        if call_id:
            patch["tool_results"] = [{"tool_call_id": call_id, "output": output}]
        if message:
            patch["append"] = [{"role": "user", "content": message}]
        if patch:
            data["patch"] = patch
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

    @property
    def result(self) -> tuple[str, str] | None:
        """`(tool_call_id, output)` of the recorded result the fork replaces, if any."""
        patch = self.body.patch
        if patch is None or not patch.tool_results:
            return None
        given = patch.tool_results[0]  # (the form's: its text as it was typed)
        return given.tool_call_id, str(given.output)

    def summary(self) -> Pairs:
        at = self.body.at
        pairs = [("checkpoint", str(at) if at is not None else "the run's start")]
        if self.replay:
            pairs.append(("at its first difference", self.body.on_divergence))
        if self.result is not None:
            call_id, output = self.result
            pairs.append((f"the result of call {call_id} becomes", output))
        if self.message:
            pairs.append(("then the user says", self.message))
        return pairs

    def fields(self) -> Pairs:
        pairs = [("mode", self.body.mode), ("key", self.key)]
        if self.body.at is not None:
            pairs.append(("at", str(self.body.at)))
        if self.replay:
            pairs.append(("on_divergence", self.body.on_divergence))
        if self.result is not None:
            pairs += [("tool_call_id", self.result[0]), ("output", self.result[1])]
        if self.message:
            pairs.append(("message", self.message))
        return pairs
