"""The vocabulary of run events: every `type` a run's event log, SSE and webhooks carry.

One place, so a new kind of event is added here or nowhere. The groups say which events
the store also writes elsewhere: usage-ledger rows, webhook deliveries.
"""

from __future__ import annotations

from enum import StrEnum


class EventType(StrEnum):
    RUN_CREATED = "run.created"
    RUN_CLAIMED = "run.claimed"  # a worker took the run (its lease starts)
    MODEL_CALLED = "model.called"  # a model call answered (usage, cost, latency)
    MODEL_FAILED = "model.failed"  # a model call failed (error, attempt)
    MODEL_DELTA = "model.delta"  # streamed text of a model call in progress
    MODEL_ABORTED = "model.aborted"  # a call in flight abandoned: the run left the worker
    TOOL_CALL_INVALID = "tool_call.invalid"  # the run's policy handled an invalid call
    RUN_REQUIRES_ACTION = "run.requires_action"  # suspended: tool results or a resolution
    RUN_APPROVAL_REQUIRED = "run.approval_required"  # gated calls await a decision
    TOOL_CALL_APPROVED = "tool_call.approved"  # a gated call approved (maybe with edits)
    TOOL_CALL_REJECTED = "tool_call.rejected"  # a gated call rejected: its error result
    TOOL_CALL_LEASED = "tool_call.leased"  # a queue executor took a pending call
    TOOL_CALL_LEASE_EXPIRED = "tool_call.lease_expired"  # its lease lapsed; leased again
    TOOL_RESULT_RECEIVED = "tool_result.received"
    TOOL_RESULT_BY_OPERATOR = "tool_result.submitted_by_operator"
    RUN_RESOLVED = "run.resolved"  # an invalid tool call was resolved by someone
    RUN_RESUMED = "run.resumed"  # back in the queue with its answers
    RUN_COMPLETED = "run.completed"
    RUN_FAILED = "run.failed"
    RUN_CANCELLED = "run.cancelled"
    RUN_EXPIRED = "run.expired"
    RUN_LEASE_LOST = "run.lease_lost"  # its worker stopped heartbeating; re-queued
    RUN_RELEASED = "run.released"  # its worker gave it back (after a database outage)
    RUN_RETRIED = "run.retried"  # an operator put a failed or expired run back
    RUN_EXPIRY_EXTENDED = "run.expiry_extended"
    RUN_CONTINUED = "run.continued"  # a new run continues its conversation (or waits to)
    RUN_BUDGET_EXCEEDED = "run.budget_exceeded"  # suspended: its next call could pass a limit
    RUN_LIMITS_RAISED = "run.limits_raised"  # someone changed the run's limits
    RUN_CHILDREN_STARTED = "run.children_started"  # agent tools' calls became child runs
    MODEL_REPLAYED = "model.replayed"  # a model call answered from a recorded run: none made
    TOOLS_REPLAYED = "tools.replayed"  # a tool round answered from a recorded run
    REPLAY_DIVERGED = "replay.diverged"  # a replay's request left the recording: live after
    RUN_COMPACTED = "run.compacted"  # older turns replaced by a summary (the log keeps them)


E = EventType

#: Events also announced by outbound webhooks (written to the outbox with them).
WEBHOOK_EVENTS = frozenset(
    {
        E.RUN_REQUIRES_ACTION,
        E.RUN_APPROVAL_REQUIRED,
        E.RUN_COMPLETED,
        E.RUN_FAILED,
        E.RUN_CANCELLED,
        E.RUN_EXPIRED,
        E.RUN_BUDGET_EXCEEDED,
    }
)
#: Events that are also rows of the usage ledger.
LEDGER_EVENTS = frozenset({E.MODEL_CALLED, E.MODEL_FAILED, E.MODEL_ABORTED})
#: Events after which a run waits in the queue (for the queue-wait report).
QUEUEING_EVENTS = (
    E.RUN_CREATED,
    E.RUN_RESUMED,
    E.RUN_LEASE_LOST,
    E.RUN_RELEASED,
    E.RUN_RETRIED,
)
