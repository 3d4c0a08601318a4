"""What a profile's adapter sends, captured by the mock provider server for each wire:
its base URL (with `{model}`, as an Azure OpenAI deployment), auth scheme and key, extra
headers, query parameters and timeout; a run's model spec goes through the worker's
provider factory as the worker calls it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.clock import SYSTEM_CLOCK
from app.providers.base import ProviderError
from app.providers.profiles import Profiles, load_profiles
from app.settings import Settings
from app.worker.providers import Measured, make_provider
from tests.mocks.replies import CHAT_PATH, MESSAGES_PATH, RESPONSES_PATH, Reply
from tests.mocks.server import MockProviderServer
from tests.providers.helpers import request

ENV = {"TEAM_KEY": "team-key", "AZURE_OPENAI_KEY": "azure-key"}


def azure(mock: MockProviderServer) -> dict[str, Any]:
    """An Azure OpenAI deployment's profile, at the mock server."""
    return {
        "wire": "openai_chat",
        "base_url": mock.origin + "/openai/deployments/{model}",
        "api_key_env": "AZURE_OPENAI_KEY",
        "auth": "api-key",
        "query": {"api-version": "2024-10-21"},
        "models": ["gpt-4o-mini"],
    }


def profiles_for(mock: MockProviderServer, **entries: dict[str, Any]) -> Profiles:
    doc = {"profiles": entries}
    return load_profiles(Settings(providers=json.dumps(doc)), environ=ENV)


async def call(
    mock: MockProviderServer, profiles: Profiles, provider: str, model: str
) -> dict[str, Any]:
    """One model call of a run naming `provider`/`model`; what the server received."""
    mock.script(Reply(text="hi"))
    adapter = make_provider(
        {"provider": provider, "name": model}, Settings(), profiles, clock=SYSTEM_CLOCK
    )
    try:
        turn = await adapter.complete(request(model=model))
    finally:
        assert isinstance(adapter, Measured)
        await adapter.inner.aclose()  # type: ignore[attr-defined]
    assert turn.choice, turn
    (received,) = mock.requests
    return {"path": received.path, "query": received.query, "headers": received.headers}


@pytest.mark.parametrize(
    ("wire", "base", "path"),
    [
        ("openai_chat", "/v1", CHAT_PATH),
        ("openai_responses", "/v1", RESPONSES_PATH),
        ("anthropic", "", MESSAGES_PATH),
    ],
)
async def test_each_wire_sends_the_profiles_url_key_headers_and_query(
    mock: MockProviderServer, wire: str, base: str, path: str
) -> None:
    profiles = profiles_for(
        mock,
        team={
            "wire": wire,
            "base_url": mock.origin + base,
            "api_key_env": "TEAM_KEY",
            "headers": {"X-Team": "search"},
            "query": {"tier": "gold"},
        },
    )
    sent = await call(mock, profiles, "team", "m-1")
    assert (sent["path"], sent["query"]) == (path, "tier=gold")
    assert sent["headers"]["x-team"] == "search"
    if wire == "anthropic":  # (the wire's own scheme; its version header stays)
        assert sent["headers"]["x-api-key"] == "team-key"
        assert "authorization" not in sent["headers"]
        assert sent["headers"]["anthropic-version"]
    else:
        assert sent["headers"]["authorization"] == "Bearer team-key"


async def test_an_azure_deployment_gets_its_path_api_version_and_api_key(
    mock: MockProviderServer,
) -> None:
    profiles = profiles_for(mock, azure=azure(mock))
    sent = await call(mock, profiles, "azure", "gpt-4o-mini")
    assert sent["path"] == "/openai/deployments/gpt-4o-mini/chat/completions"
    assert sent["query"] == "api-version=2024-10-21"
    assert sent["headers"]["api-key"] == "azure-key"
    assert "authorization" not in sent["headers"]


async def test_a_model_name_is_quoted_in_the_url(mock: MockProviderServer) -> None:
    profiles = profiles_for(mock, azure={**azure(mock), "auth": "none", "models": None})
    adapter = make_provider(
        {"provider": "azure", "name": "a?b c"}, Settings(), profiles, clock=SYSTEM_CLOCK
    )
    assert isinstance(adapter, Measured)
    url: str = adapter.inner.url  # type: ignore[attr-defined]
    assert (
        url == mock.origin + "/openai/deployments/a%3Fb%20c/chat/completions?api-version=2024-10-21"
    )
    await adapter.inner.aclose()  # type: ignore[attr-defined]


async def test_auth_none_sends_no_key_and_bearer_on_anthropic_replaces_x_api_key(
    mock: MockProviderServer,
) -> None:
    profiles = profiles_for(
        mock,
        local={"wire": "openai_chat", "base_url": mock.origin + "/v1", "auth": "none"},
        proxy={
            "wire": "anthropic",
            "base_url": mock.origin,
            "auth": "bearer",
            "api_key_env": "TEAM_KEY",
        },
    )
    sent = await call(mock, profiles, "local", "qwen3-8b")
    assert not {"authorization", "api-key", "x-api-key"} & set(sent["headers"])
    mock.reset()
    sent = await call(mock, profiles, "proxy", "claude")
    assert sent["headers"]["authorization"] == "Bearer team-key"
    assert "x-api-key" not in sent["headers"]


def test_the_timeout_is_the_profiles_else_the_deployments() -> None:
    doc = {
        "slow": {"wire": "openai_chat", "base_url": "http://127.0.0.1:9/v1", "auth": "none"},
        "fast": {
            "wire": "openai_chat",
            "base_url": "http://127.0.0.1:9/v1",
            "auth": "none",
            "timeout_seconds": 5,
        },
    }
    settings = Settings(providers=json.dumps({"profiles": doc}), provider_timeout=77)
    profiles = load_profiles(settings)
    for name, timeout in (("slow", 77), ("fast", 5)):
        adapter = make_provider(
            {"provider": name, "name": "m"}, settings, profiles, clock=SYSTEM_CLOCK
        )
        assert isinstance(adapter, Measured)
        assert adapter.inner.timeout == timeout  # type: ignore[attr-defined]


async def test_a_run_of_a_profile_no_longer_configured_fails_without_retries() -> None:
    adapter = make_provider(
        {"provider": "gone", "name": "m"}, Settings(), Profiles({}), clock=SYSTEM_CLOCK
    )
    with pytest.raises(ProviderError) as caught:
        await adapter.complete(request())
    assert not caught.value.retryable and "'gone'" in caught.value.message
    with pytest.raises(ProviderError):
        async for _ in adapter.stream(request()):
            pass
