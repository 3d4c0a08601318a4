"""A run's model parameters, checked at create against the provider's documented ones.

A typo, a parameter of another provider or a value of the wrong type would otherwise reach
the provider mid-run as a 400; here it is a 422 naming the field (`model.temperature`).
Each provider has a typed table (`openai`, `anthropic`, `scripted` in this package) that
mirrors the official SDK's request type; keys the adapter owns are refused with the
reason. Parameters newer than this service go in `extra_body`, merged into the request
body verbatim (as the SDKs' own `extra_body`); only owned keys are refused there.

Validation happens at create only: runs stored earlier with other parameters still run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, get_type_hints

from pydantic import TypeAdapter, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from app.providers.common import RESERVED_KEYS
from app.providers.params.anthropic import MessagesParams, check_thinking_budget
from app.providers.params.openai import CHAT_OWNED, RESPONSES_OWNED, ChatParams, ResponsesParams
from app.providers.params.scripted import ScriptedParams

EXTRA_BODY = "extra_body"

#: Why the keys every adapter owns cannot be run parameters.
_RESERVED_WHY = {
    "model": "it is the run's `model.name`",
    "messages": "the adapter builds it from the run's prompt and history",
    "input": "the adapter builds it from the run's prompt and history",
    "instructions": "it is the run's `preamble`",
    "system": "it is the run's `preamble`",
    "tools": "it is the run's `tools`",
    "tool_choice": "it is the run's `tool_choice`",
    "stream": "it is the run's `stream`",
    "stream_options": "the adapter sets it when the run streams",
    "store": "the adapter keeps no state at the provider",
}

#: (field location, message) for a rule between fields the types cannot express.
CrossCheck = Callable[[dict[str, Any]], list[tuple[tuple[str, ...], str]]]


class ParamTable:
    """One provider's parameters: a typed table and the keys its adapter owns."""

    def __init__(
        self,
        wire: str,
        table: type[Any],
        owned: Mapping[str, str] | None = None,
        *,
        extra_body: bool = True,
        checks: tuple[CrossCheck, ...] = (),
    ) -> None:
        self.wire = wire
        self.table = table
        self.adapter: TypeAdapter[Any] = TypeAdapter(table)
        self.owned = dict(owned or {})
        self.extra_body = extra_body
        self.checks = checks

    def owned_reason(self, key: str) -> str | None:
        if key in self.owned:
            return self.owned[key]
        if key in RESERVED_KEYS:
            return _RESERVED_WHY.get(key, "the adapter sets it")
        return None

    def names(self) -> frozenset[str]:
        """The documented parameter names a run may set directly."""
        return frozenset(get_type_hints(self.table))


def _thinking(params: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    problem = check_thinking_budget(params)
    return [(("thinking", "budget_tokens"), problem)] if problem else []


TABLES: dict[str, ParamTable] = {
    "openai": ParamTable("OpenAI Chat Completions", ChatParams, CHAT_OWNED),
    "openai_responses": ParamTable("OpenAI Responses", ResponsesParams, RESPONSES_OWNED),
    "anthropic": ParamTable("Anthropic Messages", MessagesParams, checks=(_thinking,)),
    "scripted": ParamTable("the scripted provider", ScriptedParams, extra_body=False),
}


def _error(loc: tuple[str | int, ...], value: Any, kind: str, message: str) -> InitErrorDetails:
    return {"type": PydanticCustomError(kind, message), "loc": loc, "input": value}


def _unknown(table: ParamTable) -> str:
    if table.extra_body:
        return (
            f"not a documented parameter of {table.wire}; a parameter newer than this "
            f"service goes in `{EXTRA_BODY}`, sent verbatim"
        )
    return f"not a parameter of {table.wire}"


def validate_params(provider: str, params: Mapping[str, Any]) -> None:
    """Raise `pydantic.ValidationError` (locations relative to the model spec) unless
    `params` are valid for `provider`."""
    table = TABLES[provider]
    errors: list[InitErrorDetails] = []
    typed: dict[str, Any] = {}
    for key, value in params.items():
        why = table.owned_reason(key)
        if why is not None:
            errors.append(_error((key,), value, "parameter_owned", f"set by the service: {why}"))
        elif not (table.extra_body and key == EXTRA_BODY):
            typed[key] = value
    try:
        table.adapter.validate_python(typed)
    except ValidationError as exc:
        errors.extend(_readable(table, typed, exc))
    else:
        for check in table.checks:
            for loc, message in check(typed):
                errors.append(_error(loc, None, "parameter_conflict", message))
    if table.extra_body and EXTRA_BODY in params:
        errors.extend(_check_extra_body(table, params[EXTRA_BODY], typed))
    if errors:
        raise ValidationError.from_exception_data("model", errors)


def _readable(
    table: ParamTable, typed: Mapping[str, Any], exc: ValidationError
) -> list[InitErrorDetails]:
    """The table's errors at the places of the input: without the union members' tags
    pydantic puts in locations, and without "wrong type" errors of the members a value
    did not mean when another member explains what is wrong with it."""
    found: list[tuple[tuple[str | int, ...], InitErrorDetails]] = []
    for err in exc.errors():
        loc = _input_path(typed, err["loc"], missing=err["type"] == "missing")
        if err["type"] == "extra_forbidden" and len(loc) == 1:
            found.append((loc, _error(loc, err["input"], "unknown_parameter", _unknown(table))))
            continue
        detail: InitErrorDetails = {"type": err["type"], "loc": loc, "input": err["input"]}
        if "ctx" in err:
            detail["ctx"] = err["ctx"]
        found.append((loc, detail))
    explained = {loc for loc, d in found if not str(d["type"]).endswith("_type")}
    return [d for loc, d in found if loc not in explained or not str(d["type"]).endswith("_type")]


def _input_path(value: Any, loc: tuple[str | int, ...], *, missing: bool) -> tuple[str | int, ...]:
    """`loc` without the segments that name no place in the input (union tags), except
    the last one of a "missing" error: the name of the missing field."""
    path: list[str | int] = []
    for i, part in enumerate(loc):
        in_dict = isinstance(value, dict) and part in value
        in_list = isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value)
        if in_dict or in_list:
            value = value[part]
        elif not (missing and i == len(loc) - 1):
            continue
        path.append(part)
    return tuple(path)


def _check_extra_body(
    table: ParamTable, extra: Any, typed: Mapping[str, Any]
) -> list[InitErrorDetails]:
    if not isinstance(extra, dict):
        return [_error((EXTRA_BODY,), extra, "dict_type", "must be a JSON object")]
    errors = []
    for key, value in extra.items():
        why = table.owned_reason(key)
        if why is not None:
            message = f"set by the service: {why}"
            errors.append(_error((EXTRA_BODY, key), value, "parameter_owned", message))
        elif key in typed:
            message = f"also given as `model.{key}`; give it once"
            errors.append(_error((EXTRA_BODY, key), value, "parameter_conflict", message))
    return errors


__all__ = ["EXTRA_BODY", "TABLES", "ParamTable", "validate_params"]
