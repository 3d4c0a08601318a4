"""Schemathesis hooks for the suite's run (loaded through SCHEMATHESIS_HOOKS).

`positive_data_acceptance` is replaced by a stricter reading of our own contract: data the
schema allows must never be refused as a schema violation (`/problems/validation-error`).
It may be refused by a rule JSON Schema cannot state, each with a problem type of its own
that the OpenAPI descriptions name: a rule between fields (`invalid-request`), an
idempotency key used for another body, a tool call that is not pending.

`before_call` keeps the long poll (`GET /v1/runs/{run_id}/wait`) short: its default
timeout is 30 s and nothing drives the runs schemathesis creates, so every wait it sends
gets a timeout of at most `WAIT_SECONDS` (a timeout the schema refuses is left alone, so
the negative cases stay negative).
"""

from __future__ import annotations

import math
from typing import Any

import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance

WAIT_PATH = "/v1/runs/{run_id}/wait"
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
    if case.operation.path != WAIT_PATH:
        return
    query = dict(case.query or {})
    timeout = query.get("timeout")
    if timeout is None:
        query["timeout"] = WAIT_SECONDS
    elif isinstance(timeout, (int, float, str)) and not isinstance(timeout, bool):
        try:
            seconds = float(timeout)
        except ValueError:
            return
        if math.isfinite(seconds) and 0 <= seconds <= 60:
            query["timeout"] = min(seconds, WAIT_SECONDS)
    case.query = query
