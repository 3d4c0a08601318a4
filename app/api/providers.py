"""`GET /v1/providers`: the deployment's provider profiles a run may name, so a client can
offer them (names, wires, models, limits; base URLs to admins only; never a key or the
name of its variable)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from app.api.routes import AUTH
from app.api.security import authorize
from app.logs import REDACTED
from app.providers import profiles
from app.providers.profiles import Profile, RateLimits
from app.service.principals import ADMIN, Permission, Principal

router = APIRouter(prefix="/v1", tags=["providers"])

Creator = Annotated[Principal, Depends(authorize(Permission.RUNS_CREATE))]


class LimitsOut(BaseModel):
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_concurrent: int | None = None

    @classmethod
    def of(cls, limits: RateLimits) -> LimitsOut:
        return cls(
            requests_per_minute=limits.requests_per_minute,
            tokens_per_minute=limits.tokens_per_minute,
            max_concurrent=limits.max_concurrent,
        )


class ProviderOut(BaseModel):
    name: str = Field(description="what a run's `model.provider` names")
    wire: str = Field(description="openai_chat, openai_responses, anthropic or scripted")
    models: list[str] | None = Field(description="the models a run may ask for; null: any")
    limits: LimitsOut
    model_limits: dict[str, LimitsOut]
    base_url: str | None = Field(
        default=None, description="the endpoint (admins only; null for others)"
    )


class ProvidersOut(BaseModel):
    data: list[ProviderOut]


def _out(profile: Profile, admin: bool) -> ProviderOut:
    return ProviderOut(
        name=profile.name,
        wire=profile.wire,
        models=sorted(profile.models) if profile.models is not None else None,
        limits=LimitsOut.of(profile.limits),
        model_limits={m: LimitsOut.of(lim) for m, lim in sorted(profile.model_limits.items())},
        base_url=_shown(profile.base_url) if admin else None,
    )


def _shown(url: str | None) -> str | None:
    """`url` without the password of its userinfo (a built-in's `OPENAI_BASE_URL` may hold
    one; a configured base_url may not)."""
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    name = user.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{name}:{REDACTED}@{host}"))


@router.get("/providers", response_model=ProvidersOut, responses=AUTH)
async def list_providers(principal: Creator) -> ProvidersOut:
    """The provider profiles a run may name (docs/reference.md, "Provider profiles")."""
    admin = principal.role == ADMIN
    return ProvidersOut(
        data=[_out(p, admin) for p in sorted(profiles.active(), key=lambda p: p.name)]
    )
