"""Immutable JSON values, so a caller cannot change a run through a value it holds."""

from __future__ import annotations

import json
from typing import Any, NoReturn


def _refuse(*_: object, **__: object) -> NoReturn:
    raise TypeError("JSON values held by an AgentRun are immutable")


class FrozenDict(dict[str, Any]):
    """A dict that refuses mutation; still a dict for json/orjson and for ==."""

    __slots__ = ()
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

    __slots__ = ()
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


def freeze(value: Any) -> Any:
    """Deep-freeze a JSON value (dict/list/str/number/bool/None)."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, dict):
        return FrozenDict({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList(freeze(v) for v in value)
    return value


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
