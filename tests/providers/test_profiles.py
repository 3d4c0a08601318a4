"""Provider profiles from configuration (`load_profiles`): the documented shape is loaded
as written, the built-in names stay as defaults, and every bad entry is refused with the
entry named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.providers.profiles import ProfileError, RateLimits, load_profiles
from app.settings import Settings

DOCUMENTED = """
[profiles.local-vllm]
wire = "openai_chat"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "VLLM_API_KEY"
auth = "bearer"
headers = { "X-Team" = "search" }
query = { "api-version" = "2024-10-21" }
timeout_seconds = 60
models = ["qwen3-8b"]
limits = { requests_per_minute = 600, tokens_per_minute = 200000, max_concurrent = 16 }
[profiles.local-vllm.model_limits."qwen3-8b"]
requests_per_minute = 300
"""
ENV = {"VLLM_API_KEY": "vllm-key", "AZURE_KEY": "azure-key"}


def loaded(doc: dict[str, Any], **settings: Any) -> Any:
    return load_profiles(Settings(providers=json.dumps(doc), **settings), environ=ENV)


def refused(doc: dict[str, Any], *, require_keys: bool = True) -> str:
    with pytest.raises(ProfileError) as caught:
        load_profiles(Settings(providers=json.dumps(doc)), environ={}, require_keys=require_keys)
    return str(caught.value)


def test_the_documented_file_is_loaded_as_written(tmp_path: Path) -> None:
    path = tmp_path / "providers.toml"
    path.write_text(DOCUMENTED)
    profiles = load_profiles(Settings(providers_file=str(path)), environ=ENV)
    vllm = profiles.get("local-vllm")
    assert vllm is not None
    assert (vllm.wire, vllm.base_url, vllm.auth) == (
        "openai_chat",
        "http://127.0.0.1:8000/v1",
        "bearer",
    )
    assert vllm.api_key == "vllm-key" and "vllm-key" not in repr(vllm)
    assert dict(vllm.headers) == {"X-Team": "search"}
    assert dict(vllm.query) == {"api-version": "2024-10-21"}
    assert vllm.timeout_seconds == 60
    assert vllm.allows("qwen3-8b") and not vllm.allows("gpt-4o")
    assert vllm.limits == RateLimits(600, 200_000, 16)
    assert vllm.limits_of("qwen3-8b") == RateLimits(requests_per_minute=300)
    assert vllm.param_table == "openai"
    assert profiles.limited()
    assert profiles.names() == [
        "anthropic",
        "local-vllm",
        "openai",
        "openai_responses",
        "scripted",
    ]


def test_without_configuration_the_builtin_profiles_come_from_the_settings() -> None:
    profiles = load_profiles(
        Settings(openai_api_key="sk-1", openai_base_url="http://127.0.0.1:1/v1"), environ={}
    )
    assert profiles.names() == ["anthropic", "openai", "openai_responses", "scripted"]
    openai = profiles.get("openai")
    assert openai is not None and openai.wire == "openai_chat"
    assert (openai.base_url, openai.api_key) == ("http://127.0.0.1:1/v1", "sk-1")
    anthropic = profiles.get("anthropic")
    assert anthropic is not None and anthropic.base_url == "https://api.anthropic.com"
    assert not profiles.limited()  # (flow control costs nothing)


def test_a_builtin_name_takes_limits_and_keeps_its_endpoint_and_key() -> None:
    doc = {"profiles": {"openai": {"limits": {"requests_per_minute": 60}}}}
    profiles = loaded(doc, openai_api_key="sk-1", openai_base_url="http://127.0.0.1:1/v1")
    openai = profiles.get("openai")
    assert openai is not None
    assert (openai.wire, openai.base_url, openai.api_key) == (
        "openai_chat",
        "http://127.0.0.1:1/v1",
        "sk-1",
    )
    assert openai.limits == RateLimits(requests_per_minute=60)


def test_the_scripted_profile_takes_limits_only() -> None:
    doc = {"profiles": {"scripted": {"model_limits": {"m": {"max_concurrent": 2}}}}}
    scripted = loaded(doc).get("scripted")
    assert scripted is not None and scripted.wire == "scripted"
    assert scripted.limits_of("m") == RateLimits(max_concurrent=2)
    message = refused({"profiles": {"scripted": {"base_url": "http://127.0.0.1:1"}}})
    assert message.startswith("profiles.scripted.base_url: ")


def test_the_environment_replaces_an_entry_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "providers.toml"
    path.write_text(DOCUMENTED)
    replaced = {"wire": "anthropic", "base_url": "http://127.0.0.1:9", "api_key_env": "AK"}
    settings = Settings(
        providers_file=str(path), providers=json.dumps({"profiles": {"local-vllm": replaced}})
    )
    entry = load_profiles(settings, environ={"AK": "k"}).get("local-vllm")
    assert entry is not None and entry.wire == "anthropic" and entry.auth == "x-api-key"
    assert entry.limits.empty()


def _vllm(**fields: Any) -> dict[str, Any]:
    entry = {
        "wire": "openai_chat",
        "base_url": "http://127.0.0.1:8000/v1",
        "api_key_env": "VLLM_API_KEY",
        **fields,
    }
    return {"profiles": {"local-vllm": {k: v for k, v in entry.items() if v is not None}}}


@pytest.mark.parametrize(
    ("doc", "entry", "says"),
    [
        (
            _vllm(limits={"requests_per_minute": 0}),
            "profiles.local-vllm.limits.requests_per_minute",
            "greater than or equal to 1",
        ),
        (_vllm(limits={"rpm": 5}), "profiles.local-vllm.limits.rpm", "unknown key"),
        (_vllm(wire="grpc"), "profiles.local-vllm.wire", "openai_chat"),
        (_vllm(wire=None), "profiles.local-vllm.wire", "required"),
        (_vllm(base_url=None), "profiles.local-vllm.base_url", "required"),
        (_vllm(base_url="ftp://host/v1"), "profiles.local-vllm.base_url", "http"),
        (_vllm(base_url="http://h/{deployment}"), "profiles.local-vllm.base_url", "{model}"),
        (_vllm(base_url="http://h/v1?x=1"), "profiles.local-vllm.base_url", "`query`"),
        (_vllm(api_key="sk-123"), "profiles.local-vllm.api_key", "api_key_env"),
        (_vllm(api_key_env="sk-abc123"), "profiles.local-vllm.api_key_env", "NAME"),
        (_vllm(api_key_env=None), "profiles.local-vllm.api_key_env", 'auth = "none"'),
        (_vllm(headers={"bad header": "x"}), "profiles.local-vllm.headers", "header name"),
        (_vllm(headers={"Authorization": "x"}), "profiles.local-vllm.headers", "api_key_env"),
        (_vllm(headers={"X-A": "a\r\nb"}), "profiles.local-vllm.headers", "line break"),
        (_vllm(timeout_seconds=0), "profiles.local-vllm.timeout_seconds", "greater than 0"),
        (_vllm(models=[]), "profiles.local-vllm.models", "at least 1"),
        (
            _vllm(models=["a"], model_limits={"b": {"max_concurrent": 1}}),
            "profiles.local-vllm.model_limits.b",
            "`models`",
        ),
        (_vllm(wire="scripted"), "profiles.local-vllm.wire", "scripted"),
        ({"profiles": {"openai": {"wire": "anthropic"}}}, "profiles.openai.wire", "built-in"),
        ({"profiles": {"bad/name": {}}}, "profiles.bad/name", "pattern"),
        ({"profile": {}}, "profile", "unknown key"),
    ],
)
def test_a_bad_entry_is_refused_naming_it(doc: dict[str, Any], entry: str, says: str) -> None:
    message = refused(doc, require_keys=False)
    assert entry in message and says in message, message


def test_a_missing_key_variable_is_refused_where_providers_are_called() -> None:
    message = refused(_vllm())
    assert message == (
        "profiles.local-vllm.api_key_env: the environment variable VLLM_API_KEY is not set"
    )
    refused_no_more = load_profiles(
        Settings(providers=json.dumps(_vllm())), environ={}, require_keys=False
    )
    assert refused_no_more.get("local-vllm") is not None  # (an API process calls none)
    unauthenticated = _vllm(auth="none", api_key_env=None)
    assert loaded(unauthenticated).get("local-vllm") is not None


def test_an_unreadable_or_malformed_document_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="AGENTRUN_PROVIDERS_FILE: cannot read"):
        load_profiles(Settings(providers_file=str(tmp_path / "absent.toml")))
    path = tmp_path / "providers.toml"
    path.write_text("[profiles.x\n")
    with pytest.raises(ProfileError, match="not valid TOML"):
        load_profiles(Settings(providers_file=str(path)))
    with pytest.raises(ProfileError, match="AGENTRUN_PROVIDERS: not valid JSON"):
        load_profiles(Settings(providers="{"))
