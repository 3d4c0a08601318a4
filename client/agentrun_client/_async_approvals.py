"""`AsyncApprovals`, the gated tool calls and their decisions; `_sync_approvals.py`
(`Approvals`) is generated from this file with `_sync.py` (`make sync-client`): edit this
one, then regenerate."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Protocol

import httpx

from agentrun_client import _approvals, _base
from agentrun_client._approvals import Approve, Reject
from agentrun_client._base import Call
from agentrun_client.models import Approval, ApprovalPage, Run


class AsyncRequester(Protocol):
    """The client, as far as its resources use it (its `request`)."""

    async def request(
        self, call: Call | Callable[[], Call], *, deadline: float | None = None
    ) -> httpx.Response: ...


class AsyncApprovals:
    """`/v1/approvals` and `/v1/runs/{id}/approvals`: list the gated tool calls waiting for
    a decision, and approve (maybe with edited arguments) or reject them. A decision names
    the arguments hash it saw (`Conflict` `approval-stale` when the call's arguments are
    not those); the same decision again is a no-op (so decisions are retried safely), a
    different one on a decided call is `Conflict` `approval-conflict`."""

    def __init__(self, client: AsyncRequester) -> None:
        self._client = client

    async def _json(self, call: Call) -> Any:
        response = await self._client.request(call)
        return response.json()

    async def list_page(self, *, limit: int = 20, cursor: str | None = None) -> ApprovalPage:
        """One page of the pending approvals across the tenant's runs, newest first."""
        call = Call("GET", "/v1/approvals", _base.page_params(limit, cursor), safe=True)
        return ApprovalPage.model_validate(await self._json(call))

    async def list(self, *, page_size: int = 100) -> AsyncIterator[Approval]:
        """Every pending approval, newest first, fetching pages as the iteration goes."""
        cursor: str | None = None
        while True:
            page = await self.list_page(limit=page_size, cursor=cursor)
            for approval in page.data:
                yield approval
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def get(self, run_id: str) -> builtins.list[Approval]:
        """The run's approvals, pending and decided."""
        call = Call("GET", _base.run_path(run_id, "/approvals"), safe=True)
        return ApprovalPage.model_validate(await self._json(call)).data

    async def decide(self, run_id: str, decisions: Iterable[Mapping[str, Any]]) -> Run:
        """Several decisions in one request (items as the API takes them: `tool_call_id`,
        `arguments_hash`, `action`, `message`, `arguments`)."""
        body = _approvals.decisions_body(decisions)
        call = Call("POST", _base.run_path(run_id, "/approvals"), json=body, safe=True)
        return Run.model_validate(await self._json(call))

    async def approve(
        self,
        run_id: str,
        call_id: str,
        arguments_hash: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        position: int | None = None,
    ) -> Run:
        """Approve a gated call: executors get it (with `arguments`, those instead of the
        model's). `position`: the call's place in its round, needed only when two calls of
        the round share `call_id`."""
        item = _approvals.decision(call_id, arguments_hash, Approve(arguments), position)
        return await self.decide(run_id, [item])

    async def reject(
        self,
        run_id: str,
        call_id: str,
        arguments_hash: str,
        message: str,
        *,
        position: int | None = None,
    ) -> Run:
        """Reject a gated call: the model receives `message` as its error result
        (`position` as for `approve`)."""
        item = _approvals.decision(call_id, arguments_hash, Reject(message), position)
        return await self.decide(run_id, [item])
