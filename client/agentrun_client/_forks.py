"""What the client's forks share and that does no IO: the body of `POST /v1/runs/{id}/fork`
from the typed arguments (`Runs.fork`, the command line), made safe to retry by an
`Idempotency-Key` as a create is (docs/forks.md), and the reads of a run's checkpoints and
forks."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from agentrun_client._base import Call, page_params, results_body, run_path, tool_definitions
from agentrun_client.errors import InvalidInput
from agentrun_client.models import Message, ToolResult

#: `fork`: the checkpoint's conversation, then live; `replay`: answered from the recording
#: until the first difference (tests/client/test_vocabulary.py checks both words).
ForkMode = Literal["fork", "replay"]
#: A replay at its first difference: go on live, or fail.
OnDivergence = Literal["live", "fail"]

#: What `append=` takes: a message in the `history` shape, a `Message`, or text (a user's).
Appended = Mapping[str, Any] | Message | str


def appended(message: Appended) -> dict[str, Any]:
    """One appended message in the `history` shape (text is a user message)."""
    if isinstance(message, str):
        return {"role": "user", "content": message}
    if isinstance(message, Message):
        return message.as_history()
    return dict(message)


def fork_body(
    *,
    at: int | None,
    patch: Mapping[str, Any] | None,
    tool_results: Iterable[ToolResult | Mapping[str, Any]] | None,
    append: Iterable[Appended] | None,
    overrides: Mapping[str, Any] | None,
    mode: str,
    on_divergence: str,
) -> dict[str, Any]:
    """The request body: `patch` whole, or built from `tool_results` and `append` (not
    both); `overrides` with `tools` as definitions (a `ToolRegistry` too). Defaults are
    left out, so the body (and the idempotency key's request) says only what was asked."""
    if at is not None and (isinstance(at, bool) or not isinstance(at, int) or at < 1):
        raise InvalidInput(f"at: a checkpoint's seq (an integer from 1), not {at!r}")
    if patch is not None and (tool_results is not None or append is not None):
        raise InvalidInput("give patch, or tool_results and append: not both")
    body: dict[str, Any] = {}
    if at is not None:
        body["at"] = at
    if patch is not None:
        body["patch"] = dict(patch)
    else:
        built: dict[str, Any] = {}
        if tool_results is not None:
            built["tool_results"] = results_body(tool_results)["results"]
        if append is not None:
            built["append"] = [appended(m) for m in append]
        if built:
            body["patch"] = built
    if overrides is not None:
        fields = dict(overrides)
        if "tools" in fields and fields["tools"] is not None:
            fields["tools"] = tool_definitions(fields["tools"])
        if isinstance(fields.get("webhook"), str):
            fields["webhook"] = {"url": fields["webhook"]}
        body["overrides"] = fields
    if mode != "fork":
        body["mode"] = mode
    if on_divergence != "live":
        body["on_divergence"] = on_divergence
    return body


def fork_call(run_id: str, body: Mapping[str, Any], idempotency_key: str | None) -> Call:
    """`POST /v1/runs/{id}/fork` with an `Idempotency-Key` (a fresh one when none is given:
    a retry after a lost response gives the fork back instead of making a second)."""
    key = idempotency_key or f"agentrun-client-{uuid.uuid4()}"
    path = run_path(run_id, "/fork")
    return Call("POST", path, json=dict(body), headers={"Idempotency-Key": key}, safe=True)


def checkpoints_call(run_id: str) -> Call:
    return Call("GET", run_path(run_id, "/checkpoints"), safe=True)


def forks_call(run_id: str, limit: int, cursor: str | None) -> Call:
    """`GET /v1/runs/{id}/forks`: one page of the runs forked or replayed from the run."""
    return Call("GET", run_path(run_id, "/forks"), page_params(limit, cursor), safe=True)
