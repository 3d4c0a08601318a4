"""What every action's form parsing shares: the refusal (`Invalid`, its `Errors` by field),
the pairs a confirmation page shows and carries on (`Pairs`), a reader of text fields that
notes a file where text belongs (`Fields`), and how a number and a JSON integer are read
(`NUMBER`, `json_int`), so that each action's module reads its form the same way."""

from __future__ import annotations

import re
from dataclasses import dataclass

from starlette.datastructures import FormData

Pairs = list[tuple[str, str]]
Errors = dict[str, str]

#: A number as an HTML number input sends it (ASCII digits; no `inf`, `nan` or `1_0`).
NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)


@dataclass(frozen=True, slots=True)
class Invalid:
    """A form that does not parse: the message for each field (`form`: the whole form)."""

    errors: Errors


class Fields:
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


def json_int(digits: str) -> int:
    """A JSON integer. One too long for Python to convert (over 4300 digits: `int` raises
    ValueError) is outside the 64-bit range a result may hold anyway, so the first integer
    past that range stands in for it, to be refused with its place like any other."""
    try:
        return int(digits)
    except ValueError:
        return -(2**64) if digits.startswith("-") else 2**64
