"""JSON values the core holds: one rule, checked where they enter, then deep-frozen.

The rule (what `freeze` accepts; everything else raises `InvalidJsonValue`):

* `None`, `bool`, `str` (valid Unicode: no lone surrogates), `int` within
  `MIN_JSON_INT..MAX_JSON_INT` (the signed and unsigned 64-bit range serde_json and orjson
  hold exactly), finite `float`;
* objects (`Mapping` with `str` keys) and arrays (`list` or `tuple`), nested at most
  `MAX_JSON_DEPTH` levels (`[]` and `{}` are one level, `[[1]]` two, a scalar none).

Every value the core keeps as JSON goes through here: tool-call arguments and
`additional_params`, `Json` tool output, text/image `additional_params` (which must be
objects), raw provider payloads and the output schema. So whatever a run holds, `to_json`
can write and `from_json` can read back. The HTTP layer can apply the same limit at its
edge through `MAX_JSON_DEPTH` (the request parser itself stops at about 254 levels).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, NoReturn

#: Deepest nesting of arrays/objects a JSON value held by a run may have. serde_json (and so
#: rig) refuses documents nested deeper than 128 by default; a stored run nests its values
#: about ten levels below the top, and orjson writes at most 254 levels.
MAX_JSON_DEPTH = 128
MIN_JSON_INT = -(2**63)
MAX_JSON_INT = 2**64 - 1


class InvalidJsonValue(ValueError):
    """A value outside the core's JSON rule (see the module docstring).

    `reason` says what is wrong, `path` where inside the value (`["a"][1]`, or "")."""

    def __init__(self, what: str, path: str, reason: str) -> None:
        self.what = what
        self.path = path
        self.reason = reason
        super().__init__(f"{what}{path}: {reason}")


def _refuse(*_: object, **__: object) -> NoReturn:
    raise TypeError("JSON values held by an AgentRun are immutable")


class FrozenDict(dict[str, Any]):
    """A dict that refuses mutation; still a dict for json/orjson and for ==.

    `_height` is its nesting depth, so re-freezing it (or nesting it in a new value) is
    checked against `MAX_JSON_DEPTH` without walking it again."""

    __slots__ = ("_height",)
    _height: int
    __setitem__ = _refuse
    __delitem__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse
    __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(compact_json(self))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self


class FrozenList(list[Any]):
    """A list that refuses mutation; still a list for json/orjson and for ==."""

    __slots__ = ("_height",)
    _height: int
    __setitem__ = _refuse
    __delitem__ = _refuse
    append = _refuse
    extend = _refuse
    insert = _refuse
    pop = _refuse
    remove = _refuse
    clear = _refuse
    sort = _refuse
    reverse = _refuse
    __iadd__ = _refuse
    __imul__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(compact_json(self))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self


class _Refused(Exception):
    """Internal: carries the reason and the path (innermost first) while unwinding."""

    def __init__(self, reason: str, with_path: bool = True) -> None:
        self.reason = reason
        self.path: list[str] | None = [] if with_path else None


def _too_deep() -> _Refused:
    return _Refused(f"nested deeper than {MAX_JSON_DEPTH} levels", with_path=False)


def _check_text(value: str, what: str) -> None:
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _Refused(f"{what} is not valid Unicode (it holds a lone surrogate)") from None


def _plain(item: Any) -> bool:
    """True for the scalars that need no further look (the fast path of `_freeze`)."""
    cls = type(item)
    return (
        (cls is str and item.isascii())
        or (cls is int and MIN_JSON_INT <= item <= MAX_JSON_INT)
        or item is None
        or cls is bool
        or (cls is float and math.isfinite(item))
    )


def _freeze(value: Any, level: int) -> tuple[Any, int]:
    """(frozen value, its height); `level` is the number of enclosing containers."""
    if value is None or value is True or value is False:
        return value, 0
    cls = type(value)
    if cls is str:
        _check_text(value, "a string")
        return value, 0
    if cls is int:
        if not MIN_JSON_INT <= value <= MAX_JSON_INT:
            raise _Refused(f"the integer {value} is outside the 64-bit range")
        return value, 0
    if cls is float:
        if not math.isfinite(value):
            raise _Refused(f"{value} is not a JSON number")
        return value, 0
    if cls is FrozenDict or cls is FrozenList:
        if level + value._height > MAX_JSON_DEPTH:
            raise _too_deep()
        return value, value._height
    if cls is dict or isinstance(value, Mapping):
        if level >= MAX_JSON_DEPTH:
            raise _too_deep()
        items: dict[str, Any] = {}
        height = 0
        for key, item in value.items():
            if type(key) is not str or not key.isascii():
                if not isinstance(key, str):
                    raise _Refused(f"object keys must be strings, not {type(key).__name__}")
                _check_text(key, "an object key")
                key = str.__str__(key)
            if (type(item) is str and item.isascii()) or _plain(item):
                items[key] = item
                continue
            try:
                items[key], h = _freeze(item, level + 1)
            except _Refused as refused:
                if refused.path is not None:
                    refused.path.append(f"[{json.dumps(key, ensure_ascii=False)}]")
                raise
            if h > height:
                height = h
        out_dict = FrozenDict(items)
        out_dict._height = height + 1
        return out_dict, height + 1
    if cls is list or cls is tuple or isinstance(value, list | tuple):
        if level >= MAX_JSON_DEPTH:
            raise _too_deep()
        elements: list[Any] = []
        height = 0
        for index, item in enumerate(value):
            if _plain(item):
                elements.append(item)
                continue
            try:
                frozen, h = _freeze(item, level + 1)
            except _Refused as refused:
                if refused.path is not None:
                    refused.path.append(f"[{index}]")
                raise
            elements.append(frozen)
            if h > height:
                height = h
        out_list = FrozenList(elements)
        out_list._height = height + 1
        return out_list, height + 1
    # Subclasses (an IntEnum, a str-based enum) are held as their plain JSON value.
    if isinstance(value, str):
        return _freeze(str.__str__(value), level)
    if isinstance(value, int):
        return _freeze(int.__index__(value), level)
    if isinstance(value, float):
        return _freeze(float.__float__(value), level)
    raise _Refused(f"a value of type {cls.__name__} is not JSON")


def freeze(value: Any, what: str = "value") -> Any:
    """Check `value` against the JSON rule and deep-freeze it; `what` names it in errors.

    Raises `InvalidJsonValue`. An already frozen value is accepted without a second walk."""
    cls = type(value)
    if cls is FrozenDict or cls is FrozenList or value is None:
        return value  # a frozen value's own height is within the limit
    try:
        return _freeze(value, 0)[0]
    except _Refused as refused:
        path = "".join(reversed(refused.path or ()))
        raise InvalidJsonValue(what, path, refused.reason) from None


def freeze_object(value: Any, what: str = "value") -> Any:
    """An `additional_params` object: `None` or `{}` is absent (None), like upstream's
    `AdditionalParams`; anything but an object raises `InvalidJsonValue`."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        reason = f"must be a JSON object or None, not {type(value).__name__}"
        raise InvalidJsonValue(what, "", reason)
    return freeze(value, what) if value else None


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a (possibly frozen) JSON value."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


def compact_json(value: Any) -> str:
    """Upstream's `serialize_json_value`: compact, key order kept, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
