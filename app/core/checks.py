"""Field checks for the core's value types, so only what `from_json` reads back gets in.

A wrong type raises `TypeError`; a right type with an impossible value raises `ValueError`.
Both happen at construction, before a run is touched.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.core.jsonvalue import MAX_JSON_INT


def plain_str(value: object) -> bool:
    """The fast path: an exact, ASCII-only str needs no further check."""
    return type(value) is str and value.isascii()


def check_str(owner: str, field: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{owner}.{field} must be a str, not {type(value).__name__}")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                f"{owner}.{field} is not valid Unicode (it holds a lone surrogate)"
            ) from None


def check_optional_str(owner: str, field: str, value: object) -> None:
    if value is not None:
        check_str(owner, field, value)


def check_count(owner: str, field: str, value: object) -> None:
    """A non-negative integer that fits upstream's unsigned 64-bit counters."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{owner}.{field} must be an int, not {type(value).__name__}")
    if not 0 <= value <= MAX_JSON_INT:
        raise ValueError(f"{owner}.{field} must be between 0 and {MAX_JSON_INT}, not {value}")


def check_instance(owner: str, field: str, value: object, kind: type | tuple[type, ...]) -> None:
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " | ".join(k.__name__ for k in kind)
        raise TypeError(f"{owner}.{field} must be {names}, not {type(value).__name__}")


def items_of(owner: str, field: str, values: Any, kind: type | tuple[type, ...]) -> tuple[Any, ...]:
    """`values` as a tuple whose every item is a `kind` (an iterable is read once)."""
    if type(values) is tuple:
        items: tuple[Any, ...] = values
    elif type(values) is list or (not isinstance(values, str) and isinstance(values, Iterable)):
        items = tuple(values)
    else:
        raise TypeError(f"{owner}.{field} must be an iterable, not {type(values).__name__}")
    for index, item in enumerate(items):
        if not isinstance(item, kind):
            check_instance(owner, f"{field}[{index}]", item, kind)
    return items


def names_of(owner: str, field: str, values: Any) -> frozenset[str]:
    """A set of tool names (strings)."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise TypeError(f"{owner}.{field} must be a set of str, not {type(values).__name__}")
    names = frozenset(values)
    for name in names:
        check_str(owner, f"{field} item", name)
    return names
