"""What a profile lets through from a run or its configuration: a model name never takes a
`{model}` base URL to another path or host, and a base URL or header the transport could
not send (or a credential in the URL) is refused at start, not at each run's call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.clock import SYSTEM_CLOCK
from app.providers.profiles import ProfileError, load_profiles
from app.providers.registry import provider_for_profile
from app.settings import Settings
from tests.mocks.replies import Reply
from tests.mocks.server import MockProviderServer
from tests.providers.helpers import request

ENV = {"AZURE_KEY": "azure-key"}


def azure(base_url: str = "http://127.0.0.1:9/openai/deployments/{model}") -> dict[str, Any]:
    return {"wire": "openai_chat", "base_url": base_url, "api_key_env": "AZURE_KEY"}


def load(entry: dict[str, Any]) -> Any:
    doc = {"profiles": {"az": entry}}
    return load_profiles(Settings(providers=json.dumps(doc)), environ=ENV)


def refused(entry: dict[str, Any]) -> str:
    with pytest.raises(ProfileError) as caught:
        load(entry)
    return str(caught.value)


@pytest.mark.parametrize("model", [".", "..", "a/../..", "../x", "%2e%2e", "x?y", "x#y", "u@h"])
def test_a_model_name_stays_inside_the_deployment_path(model: str) -> None:
    profile = load(azure()).get("az")
    try:
        url = provider_for_profile(profile, model, clock=SYSTEM_CLOCK).url
    except ValueError:
        return  # refused: as good as staying inside
    parsed = httpx.URL(url)
    assert parsed.host == "127.0.0.1" and parsed.port == 9
    segments = parsed.raw_path.split(b"?")[0].split(b"/")
    assert segments[:3] == [b"", b"openai", b"deployments"], parsed.raw_path
    assert segments[4:] == [b"chat", b"completions"], parsed.raw_path
    assert segments[3] not in (b"", b".", b".."), parsed.raw_path
    assert parsed.query == b""


@pytest.mark.parametrize(
    "base_url",
    ["http://{model}/v1", "http://{model}.example.com/v1", "http://127.0.0.1:{model}/v1"],
)
def test_model_placeholder_only_in_the_path(base_url: str) -> None:
    assert "profiles.az.base_url" in refused(azure(base_url))


@pytest.mark.parametrize(
    "base_url",
    ["http://host:abc/v1", "http://host:99999/v1", "http://user:secret@host/v1", "http://[::1/v1"],
)
def test_a_base_url_the_transport_cannot_use_or_with_a_credential_is_refused(
    base_url: str,
) -> None:
    message = refused(azure(base_url))
    assert "profiles.az.base_url" in message and "secret" not in message


def test_a_header_value_http_cannot_carry_is_refused() -> None:
    message = refused({**azure(), "headers": {"X-Team": "équipe"}})
    assert "profiles.az.headers" in message


async def test_a_worker_fails_a_run_whose_model_its_profile_cannot_reach() -> None:
    """A run created before its profile took `{model}` into its path: its call fails the run
    (not retryable), rather than the factory raising out of the worker's drive."""
    from app.providers.base import ProviderError
    from app.worker.providers import make_provider

    adapter = make_provider(
        {"provider": "az", "name": ".."}, Settings(), load(azure()), clock=SYSTEM_CLOCK
    )
    with pytest.raises(ProviderError) as caught:
        await adapter.complete(request(model=".."))
    assert not caught.value.retryable and "path segment" in str(caught.value)


@pytest.mark.parametrize(("text", "toml"), [("[" * 100_000, False), ("a = " + "[" * 100_000, True)])
def test_a_document_nested_too_deeply_is_refused_with_its_source(text: str, toml: bool) -> None:
    with pytest.raises(ProfileError) as caught:
        if toml:
            from app.providers.profile_config import parse

            parse("/etc/agentrun/providers.toml", text, toml=True)
        else:
            load_profiles(Settings(providers=text), environ=ENV)
    assert "nested too deeply" in str(caught.value)


@pytest.mark.parametrize("key", ["c0ffee0123456789abcdef0123456789", "AIzaSyA1b2C3d4E5f6G7h8"])
def test_a_key_pasted_as_api_key_env_is_refused_without_echoing_it(key: str) -> None:
    """An Azure key (32 hex digits) is a valid variable name: accepted, the worker's
    start-up printed it ("the environment variable c0ffee… is not set")."""
    message = refused({**azure(), "api_key_env": key})
    assert "profiles.az.api_key_env" in message and key not in message


def test_long_variable_names_with_underscores_stay_valid() -> None:
    env = {"AZURE_OPENAI_API_KEY_EASTUS2_PROD": "k"}
    doc = {"profiles": {"az": {**azure(), "api_key_env": "AZURE_OPENAI_API_KEY_EASTUS2_PROD"}}}
    assert load_profiles(Settings(providers=json.dumps(doc)), environ=env).get("az")


@pytest.mark.parametrize("timeout", [True, "60"])
def test_a_timeout_must_be_a_number(timeout: object) -> None:
    """`timeout_seconds = true` was one second; `"60"` sixty: the limits are strict, so is
    the timeout (a TOML integer or float)."""
    assert "profiles.az.timeout_seconds" in refused({**azure(), "timeout_seconds": timeout})
    assert load({**azure(), "timeout_seconds": 60}).get("az").timeout_seconds == 60


@pytest.mark.parametrize("name", ["openai", "openai_responses", "anthropic"])
async def test_the_built_in_names_send_what_they_sent_before_profiles(
    mock: MockProviderServer, name: str
) -> None:
    """`OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` and their keys: the profile-built adapter
    sends the same URL and headers as `provider_from_settings`, the factory of before."""
    from app.providers.profiles import profiles_of
    from app.providers.registry import provider_from_settings
    from tests.providers.test_profile_wires import call

    deployment = {
        "openai_api_key": "sk-old-openai",
        "openai_base_url": mock.openai_base_url,
        "anthropic_api_key": "old-anthropic",
        "anthropic_base_url": mock.anthropic_base_url,
    }
    now = await call(mock, profiles_of(Settings(**deployment)), name, "m-1")
    mock.reset()
    mock.script(Reply(text="hi"))
    before = provider_from_settings(name, **deployment)
    try:
        await before.complete(request(model="m-1"))
    finally:
        await before.aclose()
    (sent,) = mock.requests
    assert (now["path"], now["query"]) == (sent.path, sent.query)
    assert now["headers"] == sent.headers


@pytest.mark.parametrize("model", ["a/../../x", "..\\x", "\uff0e\uff0e", "a\uff0fb", "x/y"])
def test_a_model_name_a_server_could_decode_into_another_path_is_refused(model: str) -> None:
    """Quoted, `a/../../x` is one segment (`a%2F..%2F..%2Fx`) for the client; a proxy that
    decodes `%2F` (or maps `\\`, or NFKC-normalises `．．` to `..`) before resolving dot
    segments would take it elsewhere on the host: a `{model}` name has none of these."""
    profile = load(azure()).get("az")
    assert not profile.in_path(model)
    with pytest.raises(ValueError):
        provider_for_profile(profile, model, clock=SYSTEM_CLOCK)
    assert load(azure("http://127.0.0.1:9/v1")).get("az").in_path(model)  # (no {model})


@pytest.mark.parametrize("value", ["azure-key\n", " azure-key", "az\u00e9-key"])
def test_a_key_variable_a_header_cannot_carry_refuses_a_worker(value: str) -> None:
    """Named, not shown: the variable is told, never its value."""
    doc = {"profiles": {"az": azure()}}
    with pytest.raises(ProfileError) as caught:
        load_profiles(Settings(providers=json.dumps(doc)), environ={"AZURE_KEY": value})
    message = str(caught.value)
    assert "profiles.az.api_key_env" in message and "AZURE_KEY" in message
    assert "azure-key" not in message and "az\u00e9" not in message
    api = load_profiles(
        Settings(providers=json.dumps(doc)), environ={"AZURE_KEY": value}, require_keys=False
    )
    assert api.get("az") is not None  # (an API process sends no key)


def test_a_file_that_is_not_utf8_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "providers.toml"
    path.write_bytes(b'[profiles.az]\nwire = "openai_chat\xff"\n')
    with pytest.raises(ProfileError) as caught:
        load_profiles(Settings(providers_file=str(path)), environ=ENV)
    assert str(path) in str(caught.value) and "UTF-8" in str(caught.value)
