"""Encrypted reasoning on the OpenAI Responses wire: when to ask for it, how OpenAI refuses
it, and the process's memory of refusals (see `openai_responses`' module notes; the
provider class does the retry)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from app.providers.base import ProviderError

ENCRYPTED_REASONING = "reasoning.encrypted_content"

#: OpenAI's reasoning families: o1, o3, o4-mini, ..., gpt-5, gpt-5.1, ..., codex-mini; a
#: `provider/` prefix (proxies) is ignored. The gpt-5 chat models do not reason.
_REASONING_MODEL = re.compile(r"(o[1-9]\d*|gpt-5(\.\d+)*|codex-mini)(?![a-z0-9.])")


def is_reasoning_model(model: str) -> bool:
    name = model.rsplit("/", 1)[-1].lower()
    return _REASONING_MODEL.match(name) is not None and "-chat" not in name


def wants_encrypted_reasoning(model: str, params: Mapping[str, Any]) -> bool:
    """Whether a call asks for encrypted reasoning: the run asked to reason (`reasoning`
    param) or the model is of a reasoning family."""
    return params.get("reasoning") is not None or is_reasoning_model(model)


#: (base URL, model) pairs whose provider refused encrypted reasoning, for this process:
#: the worker builds a provider per model call, so what one call learnt must outlive it.
REFUSED_ENCRYPTED_REASONING: set[tuple[str, str]] = set()


class EncryptedReasoningRefused(ProviderError):
    """A 400 refusing `include: ["reasoning.encrypted_content"]` for the model."""


def refuses_encrypted_reasoning(status: int, content: bytes) -> bool:
    """OpenAI's answer to encrypted reasoning for a model without it: 400, `param:
    include`, "Encrypted content is not supported with this model."."""
    if status != 400:
        return False
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return False
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return False
    message = str(err.get("message") or "").lower()
    return (
        err.get("param") == "include"
        or "encrypted content" in message
        or ENCRYPTED_REASONING in message
    )
