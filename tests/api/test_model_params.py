"""Model parameters over HTTP: a bad one is a 422 problem naming `model.<field>` and
creates nothing; `extra_body` is accepted and kept as given."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.test_runs_api import assert_problem


def create_body(model: dict[str, Any]) -> dict[str, Any]:
    return {"prompt": "hi", "model": {"name": "gpt-test", **model}}


@pytest.mark.parametrize(
    ("model", "field", "says"),
    [
        ({"provider": "openai", "temperature": "warm"}, "model.temperature", "valid number"),
        ({"provider": "openai", "temperature": 3}, "model.temperature", "less than or equal"),
        ({"provider": "openai", "temprature": 0.2}, "model.temprature", "extra_body"),
        ({"provider": "openai", "messages": []}, "model.messages", "set by the service"),
        ({"provider": "anthropic", "top_k": 3}, "model.top_k", "Anthropic Messages"),
        (
            {"provider": "openai_responses", "reasoning": {"effort": "extreme"}},
            "model.reasoning.effort",
            "'low'",
        ),
        (
            {"provider": "openai", "extra_body": {"stream": True}},
            "model.extra_body.stream",
            "set by the service",
        ),
        ({"provider": "scripted", "fail_times": "1"}, "model.fail_times", "valid integer"),
    ],
)
async def test_a_bad_model_parameter_is_a_422_naming_the_field(
    client: httpx.AsyncClient, model: dict[str, Any], field: str, says: str
) -> None:
    response = await client.post("/v1/runs", json=create_body(model))
    doc = assert_problem(response, 422, "validation-error")
    assert doc["detail"].startswith(f"{field}: ")
    assert says in doc["detail"]
    assert doc["errors"][0]["loc"] == ["body", *field.split(".")]
    assert (await client.get("/v1/runs")).json()["data"] == []


async def test_every_bad_parameter_is_listed(client: httpx.AsyncClient) -> None:
    model = {"provider": "openai", "temperature": -1, "top_p": "high", "n": 2}
    doc = assert_problem(
        await client.post("/v1/runs", json=create_body(model)), 422, "validation-error"
    )
    assert sorted(e["loc"][-1] for e in doc["errors"]) == ["n", "temperature", "top_p"]


async def test_documented_parameters_and_extra_body_are_kept_as_given(
    client: httpx.AsyncClient,
) -> None:
    model = {
        "provider": "openai",
        "temperature": 0.2,
        "response_format": {"type": "json_object"},
        "extra_body": {"top_k": 40, "chat_template_kwargs": {"enable_thinking": False}},
    }
    response = await client.post("/v1/runs", json=create_body(model))
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]
    events = (await client.get(f"/v1/runs/{run_id}/events")).json()["data"]
    created = next(e for e in events if e["type"] == "run.created")
    assert created["data"]["model"] == {"name": "gpt-test", **model}
