"""The runs list's filter form read into a `RunFilter`: status, provider, metadata
`key=value`, a run id's first characters, the agent the runs started from, and (for a
deployment's admins) whose runs (`app.dashboard.web.Viewing`). A value the form cannot use
is left out of the filter and said on the page (an error line), never a 4xx or a 500."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlencode

from app.core.lifecycle import RunStatus
from app.dashboard.web import Viewing
from app.providers import profiles
from app.service.new_runs import RUN_ID_LENGTH
from app.service.schemas import AGENT_REF
from app.service.types import RunFilter

META_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
#: What every run id starts with (app.service.new_runs.run_id), then letters and digits.
RUN_ID_START = "run_"
#: An id search gives at least this many of an id's characters after `run_`: its walk of
#: the primary key's range then reads about 1/3,844 of the runs at most.
PREFIX_MIN = 2
ID_REST = re.compile(rf"[A-Za-z0-9]{{{PREFIX_MIN},{RUN_ID_LENGTH}}}")
AGENT = re.compile(AGENT_REF)


@dataclass(slots=True)
class Listing:
    """One runs page's filter, as the form gave it (kept in its links) and as read."""

    filter: RunFilter
    status_param: str
    meta: str
    cursor: str | None
    viewing: Viewing
    run_id: str = ""  # the id field as read (a prefix, or a whole id; `run_` and all)
    agent: str = ""  # the agent field as given: `name` or `name@version`
    errors: list[str] = field(default_factory=list)

    def query(self, **changes: str | None) -> str:
        params: dict[str, str | None] = {
            "status": self.status_param,
            "provider": self.filter.provider,
            "meta": self.meta or None,
            "id": self.run_id or None,
            "agent": self.agent or None,
            **self.viewing.param,
            "cursor": self.cursor,
        }
        params.update(changes)
        return urlencode({k: v for k, v in params.items() if v})

    def status_link(self, status: str) -> str:
        """The query of the list of one status (of the tenants viewed, no other filter)."""
        return urlencode({"status": status, **self.viewing.param})

    @property
    def whole_id(self) -> str | None:
        """The run id given whole (the page links straight to it), if it was."""
        prefix = self.filter.id_prefix
        return prefix if prefix and len(prefix) == len(RUN_ID_START) + RUN_ID_LENGTH else None


def _status(status: str | None, errors: list[str]) -> tuple[RunStatus | None, str]:
    param = RunStatus.REQUIRES_ACTION.value if status is None else status
    if param == "any":
        return None, param
    try:
        return RunStatus(param), param
    except ValueError:
        errors.append(f"unknown status {param[:64]!r}")
        return RunStatus.REQUIRES_ACTION, RunStatus.REQUIRES_ACTION.value


def _meta(meta: str, errors: list[str]) -> tuple[str, str | None, str | None]:
    """(the field as kept, key, value): `key` lists the runs that have it, `key=value`
    those whose value's text is `value`."""
    if not meta:
        return "", None, None
    key, sep, value = meta.partition("=")
    key = key.strip()
    if "\x00" in value:  # no run's metadata holds one; PostgreSQL's text cannot
        errors.append("metadata filter: the value cannot hold a NUL character")
        return "", None, None
    if not META_KEY.match(key):
        errors.append("metadata filter: use key=value (key: letters, digits, _ . -)")
        return "", None, None
    return meta, key, (value.strip() if sep else None)


def id_prefix(given: str, errors: list[str]) -> str | None:
    """The run id prefix the id field gives (`run_` added when left out), or None."""
    if not given:
        return None
    rest = given.removeprefix(RUN_ID_START)
    if ID_REST.fullmatch(rest):
        return RUN_ID_START + rest
    errors.append(
        f"run id: give {RUN_ID_START}, then {PREFIX_MIN} to {RUN_ID_LENGTH} of the letters"
        " and digits of a run's id (its first ones)"
    )
    return None


def agent_ref(given: str, errors: list[str]) -> tuple[str | None, int | None]:
    """(name, version) of the agent field's `name` or `name@version`."""
    if not given:
        return None, None
    if not AGENT.fullmatch(given):
        errors.append("agent: give an agent's name, or name@version (e.g. researcher@2)")
        return None, None
    name, _, version = given.partition("@")
    return name, (int(version) if version else None)


def listing(
    viewing: Viewing,
    status: str | None,
    provider: str | None,
    meta: str | None,
    cursor: str | None,
    run_id: str | None = None,
    agent: str | None = None,
) -> Listing:
    errors = [viewing.error] if viewing.error else []
    status_value, status_param = _status(status, errors)
    provider = provider or None
    if provider is not None and provider not in profiles.active().names():
        errors.append(f"unknown provider {provider[:64]!r}")
        provider = None
    kept_meta, meta_key, meta_value = _meta((meta or "").strip(), errors)
    given_id = (run_id or "").strip()
    prefix = id_prefix(given_id, errors)
    given_agent = (agent or "").strip()
    agent_name, agent_version = agent_ref(given_agent, errors)
    return Listing(
        RunFilter(
            status_value,
            provider,
            meta_key,
            meta_value,
            scope=viewing.scope,
            agent=agent_name,
            agent_version=agent_version,
            id_prefix=prefix,
        ),
        status_param,
        kept_meta,
        cursor or None,
        viewing,
        prefix or "",
        given_agent if agent_name else "",
        errors,
    )
