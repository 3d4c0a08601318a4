"""What text and JSON the service accepts, for every field of every request body.

One rule, applied once to the whole parsed body before the fields are validated, so a
value that the database, the JSON encoder or a run could not hold is refused with a 422
naming its field, and never stored changed:

* strings and object keys: valid Unicode without NUL (no lone surrogates; PostgreSQL
  cannot store U+0000 in text or JSONB);
* numbers: integers within the 64-bit range (signed or unsigned), floats finite (no
  `NaN`, `Infinity`, or `1e400`, which a JSON parser reads as infinity);
* nesting: at most `MAX_DEPTH` levels of arrays and objects, counted from the top of the
  body (the core's own limit for the values a run holds, `app.core.MAX_JSON_DEPTH`).

The walk is iterative (no recursion limit to hit) and allocates nothing on the common
path; a failure's location is reported as a `loc` list, as pydantic reports its own.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic_core import PydanticCustomError

from app.core import MAX_JSON_DEPTH, MAX_JSON_INT, MIN_JSON_INT

MAX_DEPTH = MAX_JSON_DEPTH

Loc = list[str | int]


def _text_problem(value: str) -> str | None:
    if value.isascii():
        return "contains a NUL character (U+0000)" if "\x00" in value else None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (it holds a lone surrogate)"
    return "contains a NUL character (U+0000)" if "\x00" in value else None


def _scalar_problem(value: Any) -> str | None:
    cls = type(value)
    if cls is str:
        return _text_problem(value)
    if cls is int:
        if not MIN_JSON_INT <= value <= MAX_JSON_INT:
            return "is an integer outside the 64-bit range"
    elif cls is float and not math.isfinite(value):
        return "is not a finite number (NaN, Infinity and overflowing numbers are refused)"
    return None


def find_problem(value: Any) -> tuple[Loc, str] | None:
    """(where, what) of the first value outside the rule, or None."""
    stack: list[tuple[Any, Loc, int]] = [(value, [], 0)]
    while stack:
        item, loc, depth = stack.pop()
        cls = type(item)
        if cls is dict:
            if depth >= MAX_DEPTH:
                return loc, f"is nested deeper than {MAX_DEPTH} levels"
            for key, child in item.items():
                problem = _text_problem(key)
                if problem is not None:
                    return [*loc, key], f"has a key that {problem}"
                if type(child) in (dict, list):
                    stack.append((child, [*loc, key], depth + 1))
                else:
                    problem = _scalar_problem(child)
                    if problem is not None:
                        return [*loc, key], problem
        elif cls is list:
            if depth >= MAX_DEPTH:
                return loc, f"is nested deeper than {MAX_DEPTH} levels"
            for i, child in enumerate(item):
                if type(child) in (dict, list):
                    stack.append((child, [*loc, i], depth + 1))
                else:
                    problem = _scalar_problem(child)
                    if problem is not None:
                        return [*loc, i], problem
        else:
            problem = _scalar_problem(item)
            if problem is not None:
                return loc, problem
    return None


def _printable(part: str | int) -> str | int:
    """A key with lone surrogates, as `\udfff` escapes (it is reported, not stored)."""
    if isinstance(part, str) and _text_problem(part) is not None:
        return part.encode("utf-8", "backslashreplace").decode("utf-8")
    return part


def check_body(value: Any) -> Any:
    """A pydantic "before" validator of a request body: refuses what the rule refuses."""
    found = find_problem(value)
    if found is not None:
        loc, problem = found
        loc = [_printable(p) for p in loc]  # the refusal itself must be writable
        where = ".".join(str(p) for p in loc) or "body"
        raise PydanticCustomError(
            "json_value", "{where} {problem}", {"where": where, "problem": problem, "loc": loc}
        )
    return value
