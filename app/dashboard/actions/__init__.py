"""The operator's actions as typed values, each parsed once from its form.

A POST to /admin/runs/{id}/{name} names a kind (`KINDS`, keyed by each action's `name`);
its `parse` reads the form into the action or into `Invalid`, the errors shown beside
the fields (422, nothing changed). An action also says what its confirmation page shows
(`summary`) and carries on to the confirmed POST (`fields`), which is parsed again the
same way, and which permission it needs (`permission`: the signed-in role must hold
it). `app.dashboard.perform` dispatches the parsed action to the service.

Here is the registry of them all; each lives in the module named for what it acts on:
`runs` (cancel, retry, extend, limits), `calls` (tool results, resolution), `approvals`
(approve, reject) and `forks` (fork, replay); `forms` holds what their parsing shares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import get_args

from starlette.datastructures import FormData

from app.dashboard.actions.approvals import Approve, Reject
from app.dashboard.actions.calls import Resolve, SubmitToolResults
from app.dashboard.actions.forks import Fork
from app.dashboard.actions.forms import Invalid
from app.dashboard.actions.runs import Cancel, ExtendExpiry, RaiseLimits, Retry
from app.service.principals import Permission
from app.service.runs import RunView

Action = (
    Cancel
    | SubmitToolResults
    | Resolve
    | ExtendExpiry
    | Retry
    | Approve
    | Reject
    | RaiseLimits
    | Fork
)
Parse = Callable[[FormData, RunView], Action | Invalid]

#: Every action by the name in its URL.
KINDS: dict[str, Parse] = {kind.name: kind.parse for kind in get_args(Action)}
#: The permission each action needs (the signed-in role decides: a viewer has none).
PERMISSIONS: dict[str, Permission] = {kind.name: kind.permission for kind in get_args(Action)}
#: The message the run page shows after each action (`?done=<name>`).
DONE: dict[str, str] = {kind.name: kind.done for kind in get_args(Action)}
