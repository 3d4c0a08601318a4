"""Context compaction for long runs: a run (or agent) whose configuration has a
`compaction` policy has its older turns replaced by a summary at a turn boundary where
the next request would pass the policy's token threshold (`plan`: what is kept and what
is summarised, without IO; `step`: the worker's hook, the summarising call and the
rewritten conversation; `policy`: the stored policy and the create's trim; `log` and
`routes`: the run's log read as messages, the originals among them). The kernel knows
none of it: `install` plugs it into the store's extension points (`app.store.hooks`).
docs/compaction.md says what a user sees.
"""

from __future__ import annotations

from app.compaction import policy, step
from app.store.runs import RunStore


def install(store: RunStore) -> None:
    """Plug compaction into `store`: a worker asks `step.compact` before each model
    call (`turn_boundaries`); a create drops the policy when it is unset; the policy's
    summarising model is one the run may call (`called_models`: a cost limit needs its
    price)."""
    store.hooks.add_turn_boundary(step.compact)
    store.hooks.on_create(policy.check_compaction, policy.without_unset_compaction)
    store.hooks.add_called_models(policy.called_models)
