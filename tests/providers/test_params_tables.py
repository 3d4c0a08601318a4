"""The parameter tables of `app.providers.params` against the official SDKs' request types.

Every key of the SDK's create-params TypedDict is either in the table or owned by the
adapter (with a reason), and every table entry has the SDK's type, down to the nested
objects' keys, which of them are required, and every literal value. A new SDK release
that adds, removes or retypes a parameter fails this test until the table follows.
(Ranges are not in the SDK types; they are checked in test_params.py.)
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any

import pytest
import typing_extensions as te
from anthropic.types import message_create_params
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params

from app.providers.common import RESERVED_KEYS
from app.providers.params import TABLES, ParamTable

SDK = {
    "openai": completion_create_params.CompletionCreateParamsBase,
    "openai_responses": response_create_params.ResponseCreateParamsBase,
    "anthropic": message_create_params.MessageCreateParamsBase,
}

_REQUIRED = {te.Required, typing.Required}
_NOT_REQUIRED = {te.NotRequired, typing.NotRequired}
_LISTS = {list, collections.abc.Iterable, collections.abc.Sequence}
_DICTS = {dict, collections.abc.Mapping}


def _required(td: Any, annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in _REQUIRED:
        return True
    if origin in _NOT_REQUIRED:
        return False
    return bool(getattr(td, "__total__", True))


def _union(members: list[Any]) -> Any:
    """A union as a set; string literals inside a union that takes any `str` vanish."""
    flat: set[Any] = set()
    for m in members:
        flat |= m[1] if isinstance(m, tuple) and m[0] == "union" else {m}
    literals = [m for m in flat if isinstance(m, tuple) and m[0] == "literal"]
    values = frozenset(v for m in literals for v in m[1])
    flat -= set(literals)
    if "str" in flat:
        values = frozenset(v for v in values if not isinstance(v, str))
    if values:
        flat.add(("literal", values))
    return next(iter(flat)) if len(flat) == 1 else ("union", frozenset(flat))


def shape(t: Any, seen: tuple[Any, ...] = ()) -> Any:
    """A comparable description of a type, the same for the SDK's and the table's."""
    if t is type(None):
        return "null"
    if t is Any or t is object:
        return "any"
    if t in (bool, int, float, str):
        return t.__name__
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin in _REQUIRED | _NOT_REQUIRED | {te.Annotated, typing.Annotated}:
        return shape(args[0], seen)
    if origin in (typing.Literal, te.Literal):
        return ("literal", frozenset(args))
    if origin in (typing.Union, types.UnionType):
        return _union([shape(a, seen) for a in args])
    if origin in _LISTS or getattr(origin, "__name__", "") == "SequenceNotStr":
        return ("list", shape(args[0], seen))
    if origin in _DICTS:
        return ("dict", shape(args[1], seen))
    if te.is_typeddict(t):
        if t in seen:
            return ("recursive", t.__name__)
        hints = typing.get_type_hints(t, include_extras=True)
        return (
            "object",
            frozenset((k, _required(t, v), shape(v, (*seen, t))) for k, v in hints.items()),
        )
    value = getattr(t, "__value__", None)  # a `type X = ...` alias
    if value is not None:
        return shape(value, seen)
    raise AssertionError(f"no shape for {t!r}")


def sdk_fields(provider: str) -> dict[str, Any]:
    return typing.get_type_hints(SDK[provider], include_extras=True)


def owned(table: ParamTable, sdk_keys: set[str]) -> set[str]:
    return {k for k in sdk_keys if table.owned_reason(k) is not None}


@pytest.mark.parametrize("provider", sorted(SDK))
def test_every_sdk_parameter_is_in_the_table_or_owned_by_the_adapter(provider: str) -> None:
    table = TABLES[provider]
    sdk_keys = set(sdk_fields(provider))
    mine = set(table.names())
    assert not mine & owned(table, sdk_keys), "a key is both a parameter and owned"
    assert set(table.owned) <= sdk_keys, "an owned key the SDK does not know"
    assert mine - sdk_keys == set(), "parameters the SDK does not have"
    assert sdk_keys - mine - owned(table, sdk_keys) == set(), "SDK parameters missing"
    assert owned(table, sdk_keys) >= RESERVED_KEYS & sdk_keys


@pytest.mark.parametrize("provider", sorted(SDK))
def test_every_parameter_has_the_sdk_s_type(provider: str) -> None:
    theirs = sdk_fields(provider)
    ours = typing.get_type_hints(TABLES[provider].table, include_extras=True)
    for name, annotation in ours.items():
        assert shape(annotation) == shape(theirs[name]), f"{provider}: {name}"
        assert _required(TABLES[provider].table, annotation) is False, name


def test_the_shape_comparison_sees_a_difference() -> None:
    """The comparison above is not vacuous: it tells apart what it must."""

    class A(te.TypedDict, total=False):
        mode: te.Required[typing.Literal["a", "b"]]

    class B(te.TypedDict, total=False):
        mode: typing.Literal["a", "b"]

    class C(te.TypedDict, total=False):
        mode: te.Required[typing.Literal["a"]]

    assert shape(A) != shape(B) != shape(C) != shape(A)
    assert shape(int | None) != shape(float | None)
    assert shape(typing.Optional[str]) == shape(str | None)  # noqa: UP045 (the SDK's spelling)
    assert shape(list[str]) != shape(str)
