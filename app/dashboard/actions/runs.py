"""The actions on a run as a whole: cancel it, queue it again, extend its expiry, and
change its limits (a run suspended on its budget goes on)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Self

from pydantic import ValidationError
from starlette.datastructures import FormData

from app.dashboard.actions.forms import NUMBER, Fields, Invalid, Pairs
from app.service.operator_actions import MAX_EXTENSION_SECONDS
from app.service.principals import Permission
from app.service.runs import RunView
from app.service.schemas import LimitsIn

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
        read = Fields(form)
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
        read = Fields(form)
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
