"""`POST /v1/runs/{run_id}/browser-tokens`: a backend mints a short-lived read-only token
for one run and hands it to its frontend (`app.tenancy.browser_tokens`; what a token may
read: `app.api.security.authorize(..., browser=True)`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Request, Response
from pydantic import BaseModel, BeforeValidator, Field

from app.api.problems import responses
from app.api.routes import AUTH, REFERENCE, RunId, Service, json_body
from app.api.security import ACCESS_TOKEN, authorize
from app.service.principals import Permission, Principal
from app.service.schemas import Body as StrictBody
from app.service.schemas import integral
from app.tenancy.browser_tokens import DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS, BrowserTokenSigner
from app.timestamps import Timestamp

router = APIRouter(prefix="/v1", tags=["runs"])

Minter = Annotated[Principal, Depends(authorize(Permission.BROWSER_TOKENS_CREATE))]


class BrowserTokenIn(StrictBody):
    ttl_seconds: Annotated[
        int,
        Field(
            ge=1,
            le=MAX_TTL_SECONDS,
            strict=True,
            description="how long the token is valid, in seconds",
        ),
        BeforeValidator(integral),  # JSON's 900.0 is the integer 900; 1.5 stays refused
    ] = DEFAULT_TTL_SECONDS


class BrowserTokenOut(BaseModel):
    token: str = Field(
        description="send as `Authorization: Bearer <token>`, or as "
        f"`?{ACCESS_TOKEN}=<token>` where no header can be sent (EventSource)"
    )
    run_id: str
    expires_at: Timestamp


DESCRIPTION = f"""A signed token that reads this one run and nothing else: its events
(`GET /v1/runs/{{run_id}}/events`, JSON and server-sent events), its wait and its messages.
Any other operation refuses it (403 `forbidden`), another run is a 404. It expires after
`ttl_seconds` (default {DEFAULT_TTL_SECONDS}, at most {MAX_TTL_SECONDS}); an expired or
altered token is a 401 `browser-token-invalid`. Tokens are not stored and cannot be
revoked: keep them short. A stream opened before the expiry runs on until the run ends.
`{REFERENCE}#browser-tokens`."""


@router.post(
    "/runs/{run_id}/browser-tokens",
    status_code=201,
    response_model=BrowserTokenOut,
    responses={**AUTH, **responses(400, 404, 413, 422)},
    summary="Mint a short-lived read-only token for one run, for a browser",
    description=DESCRIPTION,
)
async def create_browser_token(
    run_id: RunId,
    request: Request,
    service: Service,
    principal: Minter,
    body: Annotated[BrowserTokenIn | None, Body()] = None,
) -> Response:
    ttl = (body or BrowserTokenIn()).ttl_seconds
    await service.get_run(run_id, scope=principal.scope)  # 404: another tenant's run
    tokens: BrowserTokenSigner = request.app.state.run_tokens  # (app.main's)
    token, expires_at = (await tokens.signer()).mint(principal.tenant, run_id, ttl)
    out = BrowserTokenOut(token=token, run_id=run_id, expires_at=expires_at)
    return json_body(out, 201)
