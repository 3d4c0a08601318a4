"""Schemathesis hooks for the suite's run (loaded through SCHEMATHESIS_HOOKS).

`positive_data_acceptance` is replaced by a stricter reading of our own contract: data the
schema allows must never be refused as a schema violation (`/problems/validation-error`).
It may be refused by a rule JSON Schema cannot state, each with a problem type of its own
that the OpenAPI descriptions name: a rule between fields (`invalid-request`), an
idempotency key used for another body, a tool call that is not pending.

`before_call` keeps the long polls (`GET /v1/runs/{run_id}/wait`, `POST
/v1/queues/{queue}/lease`) short: their default waits are 30 s and nothing drives the runs
schemathesis creates, so every wait it sends gets at most `WAIT_SECONDS` (a value the
schema refuses is left alone, so the negative cases stay negative).
"""

from __future__ import annotations

import math
from typing import Any

import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance

WAIT_PATH = "/v1/runs/{run_id}/wait"
LEASE_PATH = "/v1/queues/{queue}/lease"
WAIT_SECONDS = 0.05
NOT_SCHEMA_RULES = {
    "/problems/invalid-request",
    "/problems/idempotency-key-reused",
    "/problems/tool-call-not-pending",
}


@schemathesis.check
def positive_data_acceptance_or_documented_rule(ctx: Any, response: Any, case: Any) -> Any:
    if response.status_code == 422:
        try:
            kind = response.json().get("type")
        except ValueError:
            kind = None
        if kind in NOT_SCHEMA_RULES:
            return None
    return positive_data_acceptance(ctx, response, case)


@schemathesis.hook
def before_call(ctx: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if case.operation.path == LEASE_PATH and isinstance(case.body, dict):
        case.body = shortened(dict(case.body), "wait", (int, float))
    if case.operation.path == WAIT_PATH:
        case.query = shortened(dict(case.query or {}), "timeout", (int, float, str))


def shortened(values: dict[str, Any], name: str, kinds: tuple[type, ...]) -> dict[str, Any]:
    """`values` with the wait `name` at most `WAIT_SECONDS` (when the schema allows it:
    a query parameter is text, a body's number is a number)."""
    seconds = values.get(name)
    if seconds is None:
        values[name] = WAIT_SECONDS
    elif isinstance(seconds, kinds) and not isinstance(seconds, bool):
        try:
            value = float(seconds)
        except ValueError:
            return values
        if math.isfinite(value) and 0 <= value <= 60:
            values[name] = min(value, WAIT_SECONDS)
    return values
