"""Strict readers for the fields of a stored run's JSON, used by `app.core.decode`.

Each reader returns the value when it has the expected JSON type and range, and otherwise
raises `Bad` with the field's path segment. The full path is assembled only when something
is wrong: every enclosing object or array adds its own segment while `Bad` unwinds (`try`
costs nothing when nothing is raised), so a good document pays no string building.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from app.core.errors import StateDecodeError
from app.core.jsonvalue import MAX_JSON_INT, InvalidJsonValue, freeze, freeze_object

T = TypeVar("T")
Doc = dict[str, Any]
MISSING: Any = object()


def json_kind(value: Any) -> str:
    """The JSON type of a decoded value, for error messages (never its repr: it may be huge
    or nested beyond repr's recursion limit)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class Bad(Exception):
    """A refusal on its way out; `segments` are innermost first (".key", "[3]")."""

    def __init__(self, problem: str, *segments: str) -> None:
        self.problem = problem
        self.segments = list(segments)

    def error(self, root: str = "") -> StateDecodeError:
        path = (root + "".join(reversed(self.segments))).lstrip(".")
        if not path:
            return StateDecodeError(f"the document {self.problem.removeprefix(': ')}")
        return StateDecodeError(f"field `{path}`{self.problem}")


def expected(expected: str, value: Any, *segments: str) -> Bad:
    return Bad(f" must be {expected}, not {json_kind(value)}", *segments)


def decoded(fn: Callable[[Any], T], d: Any, root: str) -> T:
    """Run a decoder, turning a refusal into the public StateDecodeError."""
    try:
        return fn(d)
    except Bad as bad:
        raise bad.error(root) from None


def within(segment: str, fn: Callable[[Any], T], value: Any) -> T:
    """Decode a nested value, adding its path segment to a refusal."""
    try:
        return fn(value)
    except Bad as bad:
        bad.segments.append(segment)
        raise


def obj(value: Any) -> Doc:
    if type(value) is not dict:
        raise expected("an object", value)
    return value


def field(d: Doc, key: str) -> Any:
    value = d.get(key, MISSING)
    if value is MISSING:
        raise Bad(" is missing", "." + key)
    return value


def text(d: Doc, key: str) -> str:
    value = d.get(key, MISSING)
    if type(value) is str:
        return value
    if value is MISSING:
        raise Bad(" is missing", "." + key)
    raise expected("a string", value, "." + key)


def non_empty_text(d: Doc, key: str) -> str:
    value = text(d, key)
    if not value:
        raise Bad(" cannot be the empty string", "." + key)
    return value


def optional_text(d: Doc, key: str) -> str | None:
    """An upstream `Option<String>`: absent or null is None."""
    value = d.get(key)
    if value is None or type(value) is str:
        return value
    raise expected("a string or null", value, "." + key)


def count(d: Doc, key: str, default: Any = MISSING) -> int:
    """An upstream `usize`/`u64`: an integer from 0 to 2**64 - 1 (no bool, no float)."""
    value = d.get(key, default)
    if type(value) is int and 0 <= value <= MAX_JSON_INT:
        return value
    if value is MISSING:
        raise Bad(" is missing", "." + key)
    if type(value) is int:
        raise Bad(f" must be between 0 and {MAX_JSON_INT}, not {value}", "." + key)
    raise expected("a non-negative integer", value, "." + key)


def flag(d: Doc, key: str, default: Any = MISSING) -> bool:
    value = d.get(key, default)
    if value is True or value is False:
        return bool(value)
    if value is MISSING:
        raise Bad(" is missing", "." + key)
    raise expected("a boolean", value, "." + key)


def array(d: Doc, key: str, default: Any = MISSING) -> list[Any]:
    value = d.get(key, default)
    if type(value) is list:
        return value
    if value is MISSING:
        raise Bad(" is missing", "." + key)
    raise expected("an array", value, "." + key)


def each_item(values: list[Any], fn: Callable[[Any], T]) -> list[T]:
    """`fn` applied to every item of an array."""
    out: list[T] = []
    index = 0
    try:
        for index, item in enumerate(values):  # noqa: B007 (index is read on a refusal)
            out.append(fn(item))
    except Bad as bad:
        bad.segments.append(f"[{index}]")
        raise
    return out


def each(d: Doc, key: str, fn: Callable[[Any], T], default: Any = MISSING) -> list[T]:
    """`fn` applied to every item of an array field."""
    values = array(d, key, default)
    try:
        return each_item(values, fn)
    except Bad as bad:
        bad.segments.append("." + key)
        raise


def json_value(d: Doc, key: str, default: Any = MISSING) -> Any:
    """Any JSON value within the core's rule (`app.core.jsonvalue`)."""
    value = d.get(key, default)
    if value is MISSING:
        raise Bad(" is missing", "." + key)
    try:
        return freeze(value)
    except InvalidJsonValue as exc:
        raise Bad(": " + exc.reason, exc.path, "." + key) from None


def params(d: Doc, key: str) -> Any:
    """Text/image `additional_params`: absent, null and `{}` are None; else an object."""
    value = d.get(key)
    if value is None:
        return None
    try:
        return freeze_object(value)
    except InvalidJsonValue as exc:
        raise Bad(": " + exc.reason, exc.path, "." + key) from None


def names(d: Doc, key: str) -> frozenset[str]:
    """A set of tool names, stored as an array of strings."""
    return frozenset(each(d, key, string))


def string(value: Any) -> str:
    if type(value) is not str:
        raise expected("a string", value)
    return value


def tag(d: Doc, known: frozenset[str], what: str) -> str:
    kind = text(d, "type")
    if kind not in known:
        raise Bad(f": unknown {what} type", ".type")
    return kind
