"""Approval policies: which tool calls wait for a person's decision before any executor
sees them.

A tool's `approval` (a run's, for the tools that name none) is `"never"` (the default),
`"always"`, or `{"when": <JSON Schema>}`: a call is gated when its parsed arguments
validate against the schema (Draft 2020-12, the `jsonschema` library); arguments that did
not parse as JSON (a string where an object should be) are gated too. Schemas are checked
when the run is created (`check_policy`: 422 otherwise) and compiled only when a run with
a `when` policy suspends: a run that gates nothing pays one attribute read per suspension
(`RunConfig.gates`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.service import convert, jsonschemas
from app.service.errors import InvalidRequest

NEVER, ALWAYS = "never", "always"
#: A run's `approval_on_timeout`: the decision a call that waited past its run's
#: `approval_timeout` gets.
ON_TIMEOUT = ("reject", "approve")
#: Who decides a call that waited too long (the events' actor, `decided_by`).
TIMEOUT_ACTOR = "system:approval-timeout"


def check_policy(policy: Any, where: str) -> None:
    """Refuse a `when` schema this service would not evaluate (422): invalid, a reference
    that does not resolve within it, a pattern that is not RE2 (`app.service.jsonschemas`)."""
    if not isinstance(policy, Mapping):
        return
    try:
        jsonschemas.check(policy["when"])
    except jsonschemas.BadSchema as exc:
        raise InvalidRequest(f"{where}.when is refused: {exc}") from None


def check_parameters(parameters: Any, where: str) -> None:
    """Refuse a gated tool's `parameters` that edited arguments could not be validated
    against (422), as `check_policy`."""
    try:
        jsonschemas.check(parameters)
    except jsonschemas.BadSchema as exc:
        raise InvalidRequest(f"{where}.parameters is refused: {exc}") from None


def arguments_hash(arguments: Any) -> str:
    """What a decision names the arguments it saw by: the SHA-256 (hex) of the call's
    arguments as stored, serialized as compact JSON with sorted keys (UTF-8); arguments
    that did not parse are a JSON string."""
    return convert.canonical_hash(arguments)  # (the results' hash, the same bytes)


def approval_doc(call_id: str, name: str, arguments: Any, position: int) -> dict[str, Any]:
    """A gated call as `approve_tool_calls` and `run.approval_required` list it
    (`position`: its place in the round, what tells apart two calls sharing an id)."""
    return {
        "id": call_id,
        "name": name,
        "arguments": arguments,
        "arguments_hash": arguments_hash(arguments),
        "position": position,
    }


def gated(policy: Any, arguments: Any) -> bool:
    """Whether a call with `arguments` under `policy` waits for a decision."""
    if policy == NEVER or policy is None:
        return False
    if policy == ALWAYS:
        return True
    if isinstance(arguments, str):  # (arguments that did not parse as JSON)
        return True
    return bool(jsonschemas.validator(policy["when"]).is_valid(_plain(arguments)))


def check_arguments(parameters: Any, arguments: Any, tool_name: str) -> None:
    """Edited arguments must validate against the tool's `parameters` schema (its own
    draft if it names one, else 2020-12, with its format checker): 422 otherwise, and 422
    when the schema itself is refused (a run created before schemas were checked)."""
    try:
        validator = jsonschemas.validator(_plain(parameters))
    except jsonschemas.BadSchema as exc:
        raise InvalidRequest(f"the parameters of `{tool_name}` are refused: {exc}") from None
    try:
        error = next(iter(validator.iter_errors(_plain(arguments))), None)
    except RecursionError:  # (arguments nested deeper than the interpreter recurses)
        raise InvalidRequest(f"arguments for `{tool_name}` are nested too deeply") from None
    if error is not None:
        path = "".join(f"/{p}" for p in error.absolute_path)
        raise InvalidRequest(
            f"arguments for `{tool_name}` do not match its parameters at '{path or '/'}': "
            f"{error.message}"
        )


def _plain(value: Any) -> Any:
    """A (possibly frozen) JSON value as plain dicts and lists (what jsonschema walks)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


#: The approval options of a run and of a tool, left out of its configuration when unset.
APPROVAL_KEYS = ("approval", "approval_timeout", "approval_on_timeout")


def without_unset_approvals(request: dict[str, Any]) -> dict[str, Any]:
    """A create request without the approval options it does not use (as queues: runs
    that gate nothing are configured and hashed as before approvals)."""
    for key in APPROVAL_KEYS:
        if request.get(key) is None:
            request.pop(key, None)
    for tool in request.get("tools") or ():
        if tool.get("approval") is None:
            tool.pop("approval", None)
    return request


def check_approvals(agent: Mapping[str, Any]) -> None:
    """Every `when` schema of the run and its tools is one this service evaluates, and so
    are the `parameters` of every tool whose calls may be gated (edits are validated
    against them), else 422. A run that gates nothing checks nothing."""
    default = agent.get("approval")
    if default is not None:
        check_policy(default, "approval")
    for i, tool in enumerate(agent.get("tools") or ()):
        policy = tool.get("approval")
        if policy is not None:
            check_policy(policy, f"tools[{i}].approval")
        if (policy if policy is not None else default) not in (None, NEVER):
            check_parameters(tool.get("parameters", {"type": "object"}), f"tools[{i}]")
