"""The provider-profile document (`AGENTRUN_PROVIDERS_FILE`, TOML; `AGENTRUN_PROVIDERS`,
JSON), validated whole at start: every problem is reported with the entry it is in
(`profiles.local-vllm.limits.requests_per_minute: ...`), so a deployment with a bad
entry does not start rather than failing its runs later.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.providers.profile_shapes import DEFAULT_AUTH, Auth, Profile, ProfileError, RateLimits

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
#: Headers the adapter sets itself; a key never sits in the configuration (`api_key_env`).
OWNED_HEADERS = frozenset(
    {"authorization", "api-key", "x-api-key", "content-type", "accept", "content-length", "host"}
)
#: What the profile named `scripted` may set: it is the test provider, only limited.
SCRIPTED_FIELDS = frozenset({"wire", "limits", "model_limits", "models"})

Limit = Annotated[int, Field(ge=1, le=1_000_000_000, strict=True)]


def _looks_like_a_key(name: str) -> bool:
    """A valid variable name that is a key pasted in its place (an Azure key: 32 hex digits;
    a Google one: `AIza...`): long, digits in it, and no `_` between words. Refused, so that
    the start-up's "variable ... is not set" never prints it."""
    return len(name) >= 20 and "_" not in name and any(c.isdigit() for c in name)


class LimitsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    requests_per_minute: Limit | None = None
    tokens_per_minute: Limit | None = None
    max_concurrent: Limit | None = None

    def limits(self) -> RateLimits:
        return RateLimits(self.requests_per_minute, self.tokens_per_minute, self.max_concurrent)


class ProfileIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    wire: Literal["openai_chat", "openai_responses", "anthropic", "scripted"] | None = None
    base_url: str | None = Field(default=None, max_length=2000)
    api_key_env: str | None = None
    auth: Literal["bearer", "api-key", "x-api-key", "none"] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float | None = Field(default=None, gt=0, le=3600, strict=True)
    models: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None, min_length=1
    )
    limits: LimitsIn | None = None
    model_limits: dict[str, LimitsIn] = Field(default_factory=dict)

    @field_validator("base_url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        if re.sub(r"\{model\}", "", url).count("{") or re.sub(r"\{model\}", "", url).count("}"):
            raise ValueError("the only placeholder a base_url may hold is {model}")
        if "{model}" in urlsplit(url).netloc:  # (a run's model must not pick the host)
            raise ValueError("{model} may only stand in the path, not in the host or port")
        parts = urlsplit(url.replace("{model}", "m"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        if parts.query or parts.fragment:
            raise ValueError("query parameters go in `query`, not in the base_url")
        if parts.username is not None or parts.password is not None:
            raise ValueError("holds a credential: a key comes from `api_key_env`")
        try:  # (what the transport will send it with: refused now, not at every call)
            _ = parts.port
            httpx.URL(url.replace("{model}", "m"))
        except (ValueError, httpx.InvalidURL):
            raise ValueError("is not a URL the HTTP client can send to (host or port)") from None
        return url

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, name: str | None) -> str | None:
        if name is not None and (not ENV_NAME.match(name) or _looks_like_a_key(name)):
            raise ValueError(
                "must be the NAME of an environment variable holding the key "
                "(letters, digits, _), never a key itself"
            )
        return name

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if not HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid header name")
            if name.lower() in OWNED_HEADERS:
                raise ValueError(
                    f"{name!r} is set by the service (a key comes from `api_key_env`, "
                    "its header from `auth`)"
                )
            if not all(c == "\t" or " " <= c <= "~" for c in value):
                raise ValueError(
                    f"the value of {name!r} holds a line break, NUL or another character "
                    "HTTP cannot carry (visible ASCII, spaces and tabs only)"
                )
        return headers

    @field_validator("query")
    @classmethod
    def _query(cls, query: dict[str, str]) -> dict[str, str]:
        if any(not name for name in query):
            raise ValueError("a query parameter needs a name")
        return query


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    profiles: dict[Annotated[str, Field(pattern=NAME)], ProfileIn] = Field(default_factory=dict)


def _where(source: str, loc: tuple[int | str, ...]) -> str:
    path = ".".join(str(part) for part in loc if part != "[key]")
    return f"{source}: {path}" if path else source


def parse(source: str, text: str, toml: bool) -> dict[str, tuple[ProfileIn, set[str]]]:
    """One document's entries (with the fields each sets); `ProfileError` naming them."""
    try:
        data: Any = tomllib.loads(text) if toml else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ProfileError(f"{source}: not valid {'TOML' if toml else 'JSON'}: {exc}") from exc
    except RecursionError:
        raise ProfileError(f"{source}: nested too deeply to be a profile document") from None
    try:
        document = DocumentIn.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(
            "; ".join(f"{_where(source, e['loc'])}: {_message(e)}" for e in exc.errors())
        ) from exc
    return {name: (p, set(p.model_fields_set)) for name, p in document.profiles.items()}


def _message(error: Any) -> str:
    if error["type"] == "extra_forbidden":
        if error["loc"][-1] == "api_key":
            return "a key is never configured; name its environment variable in `api_key_env`"
        return "unknown key"
    return str(error["msg"]).removeprefix("Value error, ")


def parse_documents(
    documents: list[tuple[str, str, bool]],
    builtins: Mapping[str, Profile],
    environ: Mapping[str, str],
    *,
    require_keys: bool,
) -> dict[str, Profile]:
    """The configured profiles of `documents` (source, text, is TOML), later documents'
    entries replacing earlier ones of the same name."""
    entries: dict[str, tuple[ProfileIn, set[str]]] = {}
    for source, text, toml in documents:
        entries.update(parse(source, text, toml))
    return {
        name: build(name, entry, given, builtins.get(name), environ, require_keys=require_keys)
        for name, (entry, given) in entries.items()
    }


def build(
    name: str,
    entry: ProfileIn,
    given: set[str],
    builtin: Profile | None,
    environ: Mapping[str, str],
    *,
    require_keys: bool,
) -> Profile:
    """One profile: a configured entry over the built-in of its name, if any."""
    where = f"profiles.{name}"

    def refuse(field: str, message: str) -> ProfileError:
        return ProfileError(f"{where}.{field}: {message}")

    limits = entry.limits.limits() if entry.limits else RateLimits()
    model_limits = {model: limits_in.limits() for model, limits_in in entry.model_limits.items()}
    models = frozenset(entry.models) if entry.models is not None else None
    for model in model_limits:
        if models is not None and model not in models:
            raise refuse(f"model_limits.{model}", "not one of the profile's `models`")
    if name == "scripted" or entry.wire == "scripted":
        if name != "scripted":
            raise refuse("wire", 'only the built-in profile "scripted" has the scripted wire')
        extra = given - SCRIPTED_FIELDS
        if extra:
            raise refuse(sorted(extra)[0], 'the profile "scripted" may only carry limits')
    if builtin is not None and entry.wire is not None and entry.wire != builtin.wire:
        raise refuse("wire", f"the built-in profile {name!r} is {builtin.wire}")
    wire = entry.wire or (builtin.wire if builtin else None)
    if wire is None:
        raise refuse("wire", "required: openai_chat, openai_responses or anthropic")
    base_url = entry.base_url or (builtin.base_url if builtin else None)
    if base_url is None and wire != "scripted":
        raise refuse("base_url", "required")
    auth: Auth = entry.auth or (builtin.auth if builtin else DEFAULT_AUTH[wire])
    key_env = entry.api_key_env or (builtin.api_key_env if builtin else None)
    key = builtin.api_key if builtin and entry.api_key_env is None else None
    if auth != "none" and wire != "scripted":
        if key_env is None:
            raise refuse("api_key_env", f'required with auth "{auth}" (or set auth = "none")')
        if entry.api_key_env is not None:
            key = environ.get(key_env) or None
            if key is None and require_keys:
                raise refuse("api_key_env", f"the environment variable {key_env} is not set")
            if key is not None and require_keys and not all("!" <= c <= "~" for c in key):
                raise refuse(  # (a secret mounted with its line break, say; never shown)
                    "api_key_env",
                    f"the environment variable {key_env} holds a space, line break or "
                    "other character a header cannot carry",
                )
    return Profile(
        name,
        wire,
        base_url=base_url,
        api_key_env=key_env,
        auth=auth,
        headers=dict(entry.headers),
        query=dict(entry.query),
        timeout_seconds=entry.timeout_seconds,
        models=models,
        limits=limits,
        model_limits=model_limits,
        api_key=key,
    )
