"""Which of the run's model parameters a summary takes when the policy names no `model`
of its own (the run's model then writes it).

A summary is a plain text completion, without tools, of a task other than the run's: the
parameters that shape the run's answers (sampling, output caps, stop sequences, response
formats, tool options, reasoning and thinking budgets, audio, predicted outputs, prompt
templates, `extra_body`) would truncate it, break it (a JSON-only format, tool options
without tools, a thinking budget above the default output cap) or change it for no
reason, and the provider's defaults suit it. It takes only what says whose call it is
and where it is served: the end user's and the account's identifiers, metadata, the
service tier, the region and the workspace, per parameter table (`app.providers.params`).
A policy that names its `model` sends that spec's parameters as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.providers import profiles

#: By parameter table (a profile's wire): the parameters a summary takes from the run's.
INHERITED: dict[str, frozenset[str]] = {
    "openai": frozenset({"metadata", "safety_identifier", "service_tier", "user"}),
    "openai_responses": frozenset({"metadata", "safety_identifier", "service_tier", "user"}),
    "anthropic": frozenset(
        {"inference_geo", "metadata", "service_tier", "user_profile_id", "workspace_id"}
    ),
    "scripted": frozenset(),
}


def summary_params(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of a summary the run's own model `spec` writes (`INHERITED`)."""
    table = profiles.active().param_table_of(str(spec["provider"]))
    keep = INHERITED.get(table, frozenset())
    return {k: v for k, v in spec.items() if k in keep}
