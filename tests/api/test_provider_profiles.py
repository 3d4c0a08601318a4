"""Runs naming a provider profile over HTTP: an unknown profile is a 422 naming
`model.provider`, a model the profile does not allow one naming `model.name`, params are
checked against the profile's wire; an accepted run is called through its profile (an
Azure-shaped deployment of the mock provider server)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.core.lifecycle import RunStatus
from app.providers import profiles
from app.settings import Settings
from app.store.runs import RunStore
from app.tenancy.access import Role
from tests.api.conftest import KEY
from tests.api.test_runs_api import assert_problem
from tests.conftest import make_settings
from tests.helpers import api_client, drive_once
from tests.mocks.replies import Reply
from tests.mocks.server import MockProviderServer, mock, mock_server
from tests.providers.test_profile_wires import azure

__all__ = ["mock", "mock_server"]


def configured(mock: MockProviderServer) -> dict[str, Any]:
    return {
        "profiles": {
            "azure": azure(mock),
            "claude-proxy": {
                "wire": "anthropic",
                "base_url": mock.origin,
                "auth": "none",
            },
        }
    }


@pytest.fixture
def profile_settings(
    database_url: str, store: RunStore, mock: MockProviderServer, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    monkeypatch.setenv("AZURE_OPENAI_KEY", "azure-key")
    return make_settings(database_url, api_keys=KEY, providers=json.dumps(configured(mock)))


@pytest.fixture
async def client(profile_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    try:
        async with api_client(profile_settings, KEY) as c:
            yield c
    finally:
        profiles.install(None)  # (the next test's process has its own)


def body(**model: Any) -> dict[str, Any]:
    return {"prompt": "hi", "model": model}


@pytest.mark.parametrize(
    ("model", "field", "says"),
    [
        ({"provider": "local-vllm", "name": "m"}, "model.provider", "no provider profile"),
        ({"provider": "azure", "name": "gpt-4o"}, "model.name", "allows: gpt-4o-mini"),
        (
            {"provider": "azure", "name": "gpt-4o-mini", "stop_sequences": ["x"]},
            "model.stop_sequences",
            "OpenAI Chat Completions",
        ),
        (
            {"provider": "claude-proxy", "name": "c", "temperature": 0.5},
            "model.temperature",
            "Anthropic Messages",
        ),
    ],
)
async def test_a_run_the_profiles_refuse_is_a_422_naming_the_field(
    client: httpx.AsyncClient, model: dict[str, Any], field: str, says: str
) -> None:
    doc = assert_problem(await client.post("/v1/runs", json=body(**model)), 422, "validation-error")
    assert doc["detail"].startswith(f"{field}: "), doc["detail"]
    assert says in doc["detail"]
    assert doc["errors"][0]["loc"] == ["body", *field.split(".")]
    assert (await client.get("/v1/runs")).json()["data"] == []


async def test_an_unknown_profile_names_the_configured_ones(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/runs", json=body(provider="nope", name="m"))
    detail = assert_problem(response, 422, "validation-error")["detail"]
    assert "anthropic, azure, claude-proxy, openai, openai_responses, scripted" in detail


async def test_a_run_is_called_through_its_profile(
    client: httpx.AsyncClient, profile_settings: Settings, store: RunStore, mock: MockProviderServer
) -> None:
    """The anthropic wire's params are accepted on a profile of that wire; the run goes to
    the Azure-shaped deployment with its api-key and api-version."""
    accepted = await client.post(
        "/v1/runs", json=body(provider="claude-proxy", name="c", stop_sequences=["x"])
    )
    assert accepted.status_code == 201, accepted.text
    await client.post(f"/v1/runs/{accepted.json()['id']}/cancel")
    created = await client.post("/v1/runs", json=body(provider="azure", name="gpt-4o-mini"))
    assert created.status_code == 201, created.text
    mock.script(Reply(text="hello from azure"))
    await drive_once(store, profile_settings)
    run = (await client.get(f"/v1/runs/{created.json()['id']}")).json()
    assert run["status"] == RunStatus.COMPLETED.value, run
    (sent,) = mock.requests
    assert sent.path == "/openai/deployments/gpt-4o-mini/chat/completions"
    assert sent.query == "api-version=2024-10-21"
    assert sent.headers["api-key"] == "azure-key" and "authorization" not in sent.headers


async def test_the_openapi_document_names_the_configured_profiles(
    client: httpx.AsyncClient,
) -> None:
    schema = (await client.get("/openapi.json")).json()
    variants = schema["components"]["schemas"]["ModelSpec"]["oneOf"]
    providers = {v["title"]: v["properties"]["provider"] for v in variants}
    assert providers["OpenAI Chat Completions model"] == {"enum": ["azure", "openai"]}
    assert providers["Anthropic Messages model"] == {"enum": ["anthropic", "claude-proxy"]}
    assert providers["OpenAI Responses model"] == {"const": "openai_responses"}


async def test_a_budgeted_run_of_a_profile_is_capped_as_its_wire_is(
    client: httpx.AsyncClient, profile_settings: Settings, store: RunStore, mock: MockProviderServer
) -> None:
    """The output cap goes where the profile's wire takes it (`max_tokens` on Anthropic's,
    `max_completion_tokens` on Chat Completions), not by the profile's name."""
    for provider, name, cap in (
        ("claude-proxy", "c", "max_tokens"),
        ("azure", "gpt-4o-mini", "max_completion_tokens"),
    ):
        mock.reset()
        model = {"provider": provider, "name": name}
        created = await client.post(
            "/v1/runs", json={**body(**model), "limits": {"max_total_tokens": 500}}
        )
        assert created.status_code == 201, created.text
        mock.script(Reply(text="short"))
        await drive_once(store, profile_settings)
        (sent,) = mock.requests
        assert 0 < sent.body[cap] < 500, sent.body


async def test_the_providers_list_names_profiles_and_hides_urls_from_non_admins(
    client: httpx.AsyncClient,
) -> None:
    admin = (await client.get("/v1/providers")).json()["data"]
    by_name = {p["name"]: p for p in admin}
    assert sorted(by_name) == [
        "anthropic",
        "azure",
        "claude-proxy",
        "openai",
        "openai_responses",
        "scripted",
    ]
    azure = by_name["azure"]
    assert (azure["wire"], azure["models"]) == ("openai_chat", ["gpt-4o-mini"])
    assert azure["base_url"].endswith("/openai/deployments/{model}")
    assert "azure-key" not in str(admin) and "AZURE_OPENAI_KEY" not in str(admin)
    keys = client.app.state.keys  # type: ignore[attr-defined]
    member = await keys.create("default", Role.CREATOR, "creator-key")
    seen = await client.get("/v1/providers", headers={"Authorization": f"Bearer {member.secret}"})
    assert seen.status_code == 200, seen.text
    assert all(p["base_url"] is None for p in seen.json()["data"])


@pytest.mark.parametrize("name", [".", ".."])
async def test_a_model_name_that_would_leave_the_deployment_path_is_a_422(
    database_url: str, store: RunStore, mock: MockProviderServer, name: str
) -> None:
    """Azure's `{model}` is a path segment: ".." would send the run, with the profile's
    key, to `/openai/chat/completions` of the host (a profile without a `models` list)."""
    entry = {k: v for k, v in azure(mock).items() if k != "models"}
    doc = {"profiles": {"open-azure": {**entry, "auth": "none"}}}
    settings = make_settings(database_url, api_keys=KEY, providers=json.dumps(doc))
    try:
        async with api_client(settings, KEY) as c:
            response = await c.post("/v1/runs", json=body(provider="open-azure", name=name))
            problem = assert_problem(response, 422, "validation-error")
            assert problem["errors"][0]["loc"] == ["body", "model", "name"], problem
            dotted = await c.post("/v1/runs", json=body(provider="open-azure", name="a.b"))
            assert dotted.status_code == 201, dotted.text
    finally:
        profiles.install(None)


async def test_continuing_a_run_whose_profile_was_removed_is_a_422(
    client: httpx.AsyncClient, profile_settings: Settings, store: RunStore, mock: MockProviderServer
) -> None:
    """The continuation inherits `model`: a profile the deployment no longer has is refused
    at create (naming `model.provider`), not by the worker failing the new run later."""
    created = await client.post("/v1/runs", json=body(provider="azure", name="gpt-4o-mini"))
    assert created.status_code == 201, created.text
    mock.script(Reply(text="hello"))
    await drive_once(store, profile_settings)
    first = created.json()["id"]
    assert (await client.get(f"/v1/runs/{first}")).json()["status"] == RunStatus.COMPLETED.value
    profiles.install(profiles.load_profiles(make_settings(profile_settings.database_url)))
    response = await client.post("/v1/runs", json={"prompt": "again", "previous_run_id": first})
    doc = assert_problem(response, 422, "invalid-request")
    assert doc["detail"].startswith("model.provider: "), doc["detail"]
    given = {
        "prompt": "again",
        "previous_run_id": first,
        "model": {"provider": "scripted", "name": "s"},
    }
    assert (await client.post("/v1/runs", json=given)).status_code == 201


async def test_the_providers_list_never_shows_a_password_of_openai_base_url(
    database_url: str, store: RunStore
) -> None:
    """`OPENAI_BASE_URL` (a proxy's `https://user:secret@host/v1`, say) is not validated as
    a configured profile's base_url is: an admin sees its host and path, not its password."""
    settings = make_settings(
        database_url, api_keys=KEY, openai_base_url="https://team:s3cret-pw@proxy.internal/v1"
    )
    try:
        async with api_client(settings, KEY) as c:
            listed = (await c.get("/v1/providers")).json()["data"]
    finally:
        profiles.install(None)
    (openai,) = [p for p in listed if p["name"] == "openai"]
    assert "s3cret-pw" not in str(listed)
    assert openai["base_url"].endswith("@proxy.internal/v1"), openai


async def test_the_openapi_document_names_profiles_but_no_url_or_key(
    client: httpx.AsyncClient, mock: MockProviderServer
) -> None:
    text = (await client.get("/openapi.json")).text
    assert "azure" in text
    for secret in ("azure-key", "AZURE_OPENAI_KEY", mock.origin, "deployments/{model}"):
        assert secret not in text


async def test_a_run_whose_profile_was_removed_fails_naming_it_without_retries(
    client: httpx.AsyncClient, database_url: str, store: RunStore, mock: MockProviderServer
) -> None:
    created = await client.post("/v1/runs", json=body(provider="azure", name="gpt-4o-mini"))
    assert created.status_code == 201, created.text
    without = make_settings(database_url, api_keys=KEY)  # (a worker configured since)
    await drive_once(store, without)
    run = (await client.get(f"/v1/runs/{created.json()['id']}")).json()
    assert run["status"] == RunStatus.FAILED.value, run
    assert "no provider profile named 'azure'" in run["error"]["message"], run["error"]
    assert run["attempts"] <= 1 and mock.requests == []


async def test_interrupting_for_a_run_whose_profile_was_removed_cancels_nothing(
    client: httpx.AsyncClient, profile_settings: Settings
) -> None:
    """The inherited model is checked before `if_busy: interrupt` cancels the active run:
    a 422 leaves it as it was."""
    created = await client.post("/v1/runs", json=body(provider="azure", name="gpt-4o-mini"))
    assert created.status_code == 201, created.text
    first = created.json()["id"]
    profiles.install(profiles.load_profiles(make_settings(profile_settings.database_url)))
    again = {"prompt": "again", "previous_run_id": first, "if_busy": "interrupt"}
    doc = assert_problem(await client.post("/v1/runs", json=again), 422, "invalid-request")
    assert doc["detail"].startswith("model.provider: "), doc["detail"]
    assert (await client.get(f"/v1/runs/{first}")).json()["status"] == RunStatus.QUEUED.value
