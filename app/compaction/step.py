"""The worker's compaction step: a `turn_boundaries` hook (`app.store.hooks`).

Before each model call of a run with a policy, the request is measured
(`plan.estimate_tokens`); past `threshold_tokens`, the older turns (`plan.plan`) are
summarised by a model call of their own, made through the worker (`Boundary.calls`:
the model gates asked, billed to the run as a `model.called` with `"purpose":
"compaction"`), and the conversation the run goes on with is returned. The worker writes
it at once, with a `run.compacted` event, as one transition: a crash after it finds the
compacted run, and never summarises the same turns again.

No compaction when nothing would be summarised, when what it would summarise for the
first time (earlier summaries left out) is under `MIN_FRESH_SHARE` of the threshold (a
conversation whose kept messages and recent turns alone pass the threshold would
otherwise be compacted at every turn, each summary saving little), when the summarising
call gives no text (failed, or held back by a gate), or when the summary would not make
the request smaller.

A summarising call that fails retryably (429, 5xx, a timeout) backs the run off as its
turn's call would, within the same budget (`app.worker.boundaries`): the run is queued
again, due later, and its next claim comes back here to summarise. Past the budget, or
on an error not worth retrying (400, auth), the run goes on uncompacted (its
`model.failed` says so): a run never fails because its summary could not be made, and
its next boundary tries again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from app.compaction.params import summary_params
from app.compaction.plan import (
    DEFAULT_INSTRUCTIONS,
    estimate_tokens,
    fresh_tokens,
    plan,
    summary_message,
    transcript,
)
from app.compaction.policy import Policy, policy_of
from app.core import Message, Text, UserMessage
from app.core.events import EventType as E
from app.providers.base import ModelRequest
from app.service.schemas import OUTPUT_TOOL
from app.store.config import RunConfig
from app.store.hooks import Boundary, Rewrite
from app.store.run_records import NewEvent

log = structlog.get_logger("agentrun.compaction")

#: The `purpose` of a summarising call's `model.called` event.
PURPOSE = "compaction"
#: A compaction summarises at least this share of the threshold for the first time.
MIN_FRESH_SHARE = 0.25


def tools_of(config: RunConfig) -> list[dict[str, Any]]:
    """The tools a run's requests carry, as the estimate counts them."""
    tools = [
        {"name": t.name, "description": t.description, "parameters": t.parameters}
        for t in config.tools
    ]
    if config.output_schema is not None:
        tools.append({"name": OUTPUT_TOOL, "parameters": config.output_schema})
    return tools


def summary_request(spec: Mapping[str, Any], policy: Policy, text: str, turn: int) -> ModelRequest:
    """The summarising call: the policy's `model` with its own parameters, or the run's
    model with only those a plain text completion takes from it (`summary_params`)."""
    if policy.model is not None:
        params = {k: v for k, v in spec.items() if k not in ("provider", "name")}
    else:
        params = summary_params(spec)
    return ModelRequest(
        model=str(spec["name"]),
        prompt=UserMessage(text),
        preamble=policy.instructions or DEFAULT_INSTRUCTIONS,
        params=params,
        turn=turn,
    )


async def compact(boundary: Boundary) -> Rewrite | None:
    """The conversation after a compaction at this boundary, or None (none needed or
    made)."""
    record = boundary.record
    policy = policy_of(record.config)
    if policy is None:
        return None
    config = record.run_config
    step = boundary.step
    conversation: tuple[Message, ...] = (*step.history, step.prompt)
    tools = tools_of(config)
    before = estimate_tokens(config.preamble, tools, conversation)
    if before <= policy.threshold_tokens:
        return None
    history = boundary.run.state.chat_history
    given = None if history is None else len(history)
    planned = plan(conversation, policy.keep_recent_turns, prompt=given or 0)
    if planned is None:
        return None
    fresh = fresh_tokens(conversation, planned)
    if fresh < policy.threshold_tokens * MIN_FRESH_SHARE:  # (it would save too little)
        log.debug("compaction.skipped", run_id=record.id, turn=step.turn, fresh=fresh)
        return None
    spec = policy.model or config.model.doc
    request = summary_request(spec, policy, transcript(conversation, planned), step.turn)
    answer = await boundary.calls.call(spec, request, PURPOSE)
    if answer is None:
        return None
    text = "\n\n".join(i.text for i in answer.choice if isinstance(i, Text)).strip()
    new_history, messages = planned.rewrite(conversation, summary_message(text), given)
    compacted = (*(new_history or ()), *messages)
    after = estimate_tokens(config.preamble, tools, compacted)
    if not text or after >= before:
        log.info("compaction.dropped", run_id=record.id, turn=step.turn, before=before, after=after)
        return None
    usage = answer.usage
    event = NewEvent(
        E.RUN_COMPACTED,
        {
            "turn": step.turn,
            "messages_before": len(conversation),
            "messages_after": len(compacted),
            "summarised": len(planned.summarised),
            "tokens_before": before,
            "tokens_after": after,
            "threshold_tokens": policy.threshold_tokens,
            "summary_model": {"provider": spec["provider"], "name": spec["name"]},
            "usage": {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "total_tokens": usage.total_tokens,
            },
        },
    )
    return Rewrite(new_history, messages, (event,))
