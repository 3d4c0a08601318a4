"""A submission of tool results, by run id or by callback token (`RunService`'s
`submit_tool_results`, `POST /v1/runs/{id}/tool_results` and the callback URL).

The rules of who wins live in `app.service.submissions` (pure, over the run as read);
here they are applied: read the suspended run and its pending calls, decide, write one
compare-and-set change on the version read, and again when a concurrent submission moved
it; the store's refusals become the API's errors, and the submission is one span.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from app import tracing
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service import convert
from app.service.errors import (
    CallbackTokenInvalid,
    RunNotFound,
    RunStateConflict,
    ToolCallNotPending,
    ToolResultConflict,
)
from app.service.schemas import ToolResultsIn
from app.service.submissions import (
    SUBMIT_ATTEMPTS,
    AnsweredByChild,
    ResultConflictError,
    StatusConflict,
    SubmitOutcome,
    SubmittedResult,
    UnknownCallError,
    accepted,
    decide,
)
from app.service.tokens import token_hash
from app.store.errors import NotFoundError
from app.store.runs import RunStore


class ToolResults:
    """Tool results submitted to runs of `store`, at `clock`'s time."""

    def __init__(self, store: RunStore, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.clock = clock

    async def submit(
        self,
        body: ToolResultsIn,
        *,
        run_id: str | None = None,
        token: str | None = None,
        actor: str | None = None,
        scope: Scope,
        child: str | None = None,
    ) -> SubmitOutcome:
        """Results for a run by id (in `scope`) or by its callback token (whoever holds
        it: the token names one run and one suspension; its scope is ALL). `child`: the
        child run whose outcome answers an agent tool's call (its only answerer)."""
        submitted = [
            SubmittedResult(
                r.tool_call_id,
                {"output": r.output, "is_error": r.is_error},
                convert.canonical_hash({"output": r.output, "is_error": r.is_error}),
                actor,
                child=child,
            )
            for r in body.results
        ]
        started = tracing.start_time()
        try:
            outcome = await self._submit(run_id, token, submitted, scope)
        except NotFoundError:
            if token is not None:
                raise CallbackTokenInvalid("this callback token is unknown or expired") from None
            raise RunNotFound(f"no run with id {run_id}") from None
        except StatusConflict as exc:
            if token is not None and exc.record.status != RunStatus.REQUIRES_ACTION:
                raise CallbackTokenInvalid("this callback token is unknown or expired") from None
            raise RunStateConflict(
                f"run {exc.record.id} is {exc.record.status.value}, not waiting for tool results",
                exc.record.status.value,
            ) from None
        except AnsweredByChild as exc:
            raise ToolCallNotPending(
                f"tool call {exc.call_id!r} is an agent tool's: its child run {exc.child} "
                "answers it",
                tool_call_id=exc.call_id,
            ) from None
        except UnknownCallError as exc:
            raise ToolCallNotPending(
                f"tool call {exc.call_id!r} is not pending on this run", tool_call_id=exc.call_id
            ) from None
        except ResultConflictError as exc:
            raise ToolResultConflict(
                f"tool call {exc.call_id!r} already has a different result",
                tool_call_id=exc.call_id,
            ) from None
        tracing.record_span(
            "agentrun.run.submit_tool_results",
            outcome.record.config,
            started,
            lambda: {
                **tracing.run_attributes(outcome.record, actor),
                "agentrun.tool_results.submitted": len(submitted),
                "agentrun.tool_results.accepted": len(outcome.accepted),
                "agentrun.run.resumed": outcome.resumed,
                "agentrun.callback": token is not None,
            },
        )
        return outcome

    async def _submit(
        self,
        run_id: str | None,
        token: str | None,
        submitted: list[SubmittedResult],
        scope: Scope,
    ) -> SubmitOutcome:
        """Read, decide (`app.service.submissions`), write with a compare-and-set on the
        version read; a concurrent submission moved it: read and decide again."""
        hashed = token_hash(token) if token is not None else None
        for _ in range(SUBMIT_ATTEMPTS):
            pending = await self.store.pending(run_id=run_id, token_hash=hashed, scope=scope)
            now = self.clock()
            change = decide(pending.record, pending.calls, submitted, now)
            if change is None:
                return SubmitOutcome(pending.record, [], False)
            updated, _ = await self.store.apply(
                pending.record.id, change, now, known=pending.record, scope=scope
            )
            if updated is not None:
                return SubmitOutcome(updated, accepted(change), change.status == RunStatus.QUEUED)
        raise StatusConflict(pending.record)
