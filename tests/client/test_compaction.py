"""A run's and an agent's `compaction` policy from the client: passed through as given,
a bad one refused by the server with the field named."""

from __future__ import annotations

import uuid

import pytest

from agentrun_client import AsyncClient
from agentrun_client.errors import ValidationError
from tests.client.conftest import scripted

POLICY = {"threshold_tokens": 4000, "keep_recent_turns": 3}


async def test_a_run_and_an_agent_take_a_compaction_policy(asgi: AsyncClient) -> None:
    run = await asgi.runs.create(prompt="hi", model=scripted({"text": "hi"}), compaction=POLICY)
    assert run.id
    with pytest.raises(ValidationError) as refused:
        await asgi.runs.create(
            prompt="hi", model=scripted({"text": "hi"}), compaction={"threshold_tokens": 10}
        )
    assert "compaction.threshold_tokens" in str(refused.value)
    name = f"long-{uuid.uuid4().hex[:8]}"
    agent = await asgi.agents.create(name, "reads long logs", scripted(), compaction=POLICY)
    assert agent.spec["compaction"] == POLICY
