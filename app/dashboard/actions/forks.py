"""A new run from a checkpoint of the run: "Fork from here" (and a message to append), or
"Replay" of the whole run; the confirmation carries the idempotency key made when the form
was first posted."""

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
        read = Fields(form)
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
