"""An agent's A2A Agent Card: its name, description and version, one skill (the agent
itself), the JSON-RPC and HTTP+JSON interfaces at `/a2a/{agent}`, and the service's bearer
keys as its security."""

from __future__ import annotations

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol

from app.agents.rows import AgentRecord

#: What a message and an answer may hold: text, and JSON data (DataParts).
MODES = ["text/plain", "application/json"]
BEARER = "bearer"


def card_of(agent: AgentRecord, base_url: str) -> AgentCard:
    """`agent` (a version) served at `base_url` (the service's public URL)."""
    url = f"{base_url.rstrip('/')}/a2a/{agent.name}"
    return AgentCard(
        name=agent.name,
        description=agent.description,
        version=str(agent.version),
        supported_interfaces=[
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.JSONRPC,
                protocol_version=PROTOCOL_VERSION_1_0,
            ),
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.HTTP_JSON,
                protocol_version=PROTOCOL_VERSION_1_0,
            ),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            BEARER: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="an API key of the service (`agentrun keys create`)",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList()})],
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=[
            AgentSkill(
                id=agent.name,
                name=agent.name,
                description=agent.description,
                tags=["agentrun"],
                input_modes=MODES,
                output_modes=MODES,
            )
        ],
    )
