"""An agent's body (`POST /v1/agents`, `PUT /v1/agents/{name}`) and what a run that starts
from one becomes: the agent's fields, with only what a caller may add or narrow."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from app.service.errors import InvalidRequest
from app.service.schemas import AGENT_NAME, ModelSpec, RunCreate, RunFields, RunLimits

#: The fields a run started from an agent may set besides `prompt` and `agent`: its own
#: input (`history`), metadata merged over the agent's, limits at most the agent's, and
#: where and how it is delivered.
CALLER_FIELDS = frozenset(
    {
        "prompt",
        "agent",
        "history",
        "metadata",
        "limits",
        "webhook",
        "priority",
        "expires_in",
        "stream",
    }
)


class AgentUpdate(RunFields):
    """The next version of an agent: its description and the fields of its runs."""

    description: str = Field(
        min_length=1,
        max_length=4000,
        description="what it does: for people, agent cards and the agent tools that call it",
    )
    model: ModelSpec  # (an agent names its model)


class AgentIn(AgentUpdate):
    """A new agent of the caller's tenant."""

    name: str = Field(pattern=AGENT_NAME, description="unique in the tenant; part of URLs")


def stored_spec(body: AgentUpdate) -> dict[str, Any]:
    """The run fields an agent's version keeps: those its body sets, as given."""
    doc = body.model_dump(mode="json", exclude_unset=True)
    for key in ("name", "description"):
        doc.pop(key, None)
    return doc


def split_ref(ref: str) -> tuple[str, int | None]:
    """`name` or `name@version` (the pattern `AGENT_REF` checked it)."""
    name, _, version = ref.partition("@")
    return name, int(version) if version else None


def run_body(body: RunCreate, spec: dict[str, Any], label: str) -> RunCreate:
    """The create `body` that names an agent, as that agent's version (`spec`) makes it;
    a field the caller may not set, or a limit above the agent's, is a 422 naming it."""
    refused = sorted(body.model_fields_set - CALLER_FIELDS)
    if refused:
        raise InvalidRequest(
            f"{refused[0]}: a run started from an agent takes it from the agent ({label}); "
            f"such a run may set only {', '.join(sorted(CALLER_FIELDS - {'agent', 'prompt'}))}"
        )
    merged = dict(spec)
    merged["metadata"] = {**(spec.get("metadata") or {}), **body.metadata}
    if body.limits is not None:
        merged["limits"] = narrowed(spec.get("limits") or {}, body.limits, label)
    for key in ("webhook", "priority", "expires_in", "stream"):
        if key in body.model_fields_set:
            merged[key] = body.model_dump(mode="json")[key]
    merged["prompt"] = body.prompt
    merged["history"] = [m.model_dump(mode="json", exclude_unset=True) for m in body.history]
    try:
        return RunCreate.model_validate(merged)
    except ValidationError as exc:  # (a profile or model the deployment no longer allows)
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise InvalidRequest(f"{where}: {error['msg']} (from the agent {label})") from None


def narrowed(agent: dict[str, Any], asked: RunLimits, label: str) -> dict[str, Any]:
    """The agent's limits with the caller's: each at most the agent's."""
    out = dict(agent)
    for key, value in (asked.stored() or {}).items():
        if key in agent and value > agent[key]:
            raise InvalidRequest(
                f"limits.{key}: {value} is above the agent's {agent[key]} ({label}); a run "
                "may only narrow its agent's limits"
            )
        out[key] = value
    return out


def agent_tools(spec: dict[str, Any]) -> list[str]:
    """The agent references (`name` or `name@version`) of an agent's agent tools."""
    return [t["agent"] for t in spec.get("tools") or () if t.get("agent")]
