"""`POST /ag-ui/{agent}`: an agent over AG-UI 1.0. The body is a `RunAgentInput`; the
answer a server-sent stream of AG-UI events (`app.protocols.agui.stream`). Everything
that can be refused is refused before the stream starts, as the API's problems (401,
403, 404, 422, 409), and changes nothing; once it has started, a failure is RUN_ERROR.

Who may: any key that reads runs follows the run it asks about; starting a turn needs
`runs:create`, answering frontend calls `tool-results:submit`, deciding approvals
`runs:approve`, abandoning an operator's interrupt `runs:cancel`. A browser token (minted
for one run) may answer (its frontend calls, its approvals) and follow that run, the
thread's run, and nothing else: no turn, no cancel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from ag_ui.encoder import EventEncoder
from fastapi import APIRouter, Depends, Request
from sse_starlette import EventSourceResponse

from app.api.security import Forbidden, authenticate, forbidden
from app.protocols.agui.answers import Refused
from app.protocols.agui.inputs import AgUiInput, ask_of
from app.protocols.agui.stream import RunStream
from app.protocols.agui.threads import Threads
from app.service.errors import ServiceError
from app.service.principals import Permission, Principal

router = APIRouter(include_in_schema=False)  # (its bodies are AG-UI's: docs/ag-ui.md)

#: A comment line this often keeps proxies from closing a quiet stream.
PING_SECONDS = 15


class TokenConfined(Forbidden):
    """A browser token asked for more than answering and following its run (403)."""

    def __init__(self, permission: Permission, principal: Principal) -> None:
        ServiceError.__init__(
            self,
            "a browser token may answer and follow its own run over AG-UI; starting a "
            "turn or cancelling the run needs an API key",
            permission=permission.value,
            role=principal.role,
        )


async def caller(request: Request) -> Principal:
    """The caller (401 without a valid key or browser token), who must read runs."""
    principal = await authenticate(request)
    if principal.run_id is None and not principal.can(Permission.RUNS_READ):
        raise forbidden(request, Permission.RUNS_READ, principal)
    return principal


@router.post("/ag-ui/{agent}")
async def run_agent(
    agent: str,
    body: AgUiInput,
    request: Request,
    principal: Annotated[Principal, Depends(caller)],
) -> EventSourceResponse:
    ask = ask_of(body)
    state = request.app.state
    threads = Threads(state.sessions, state.approvals)
    try:
        start = await threads.begin(agent, body, ask, principal)
    except Refused as refused:
        if principal.run_id is not None:
            raise TokenConfined(refused.permission, principal) from None
        raise forbidden(request, refused.permission, principal) from None
    stream = RunStream(state.service, state.event_hub, start, principal.scope)
    encoder = EventEncoder()

    async def encoded() -> AsyncIterator[bytes]:
        async for event in stream.events():
            yield encoder.encode(event).encode()

    return EventSourceResponse(encoded(), ping=PING_SECONDS, sep="\n")
