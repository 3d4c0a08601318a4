"""The records the service hands to the API and the dashboard.

They are the store's own records, re-exported: plain frozen dataclasses that hold no
connection (the store lets no ORM object out), so converting each one into a look-alike
would cost CPU on the hottest reads (event streams, list pages) and buy no isolation.
What this module buys is the boundary: the API and the dashboard import these names from
here, never from `app.store` (an import-linter contract), so when the store's layout
changes the service can put views of its own here, in one place.
"""

from __future__ import annotations

from app.service.submissions import SubmitOutcome
from app.store.gauges import Gauges, QueueDepth
from app.store.reports import Activity
from app.store.run_pages import BadCursor, RunFilter
from app.store.run_records import (
    APPROVAL_APPROVED,
    APPROVAL_PENDING,
    APPROVAL_REJECTED,
    EventRecord,
    RunRecord,
    ToolCallRecord,
)
from app.store.waiting import Approval, Budget

__all__ = [
    "APPROVAL_APPROVED",
    "APPROVAL_PENDING",
    "APPROVAL_REJECTED",
    "Activity",
    "Approval",
    "BadCursor",
    "Budget",
    "EventRecord",
    "Gauges",
    "QueueDepth",
    "RunFilter",
    "RunRecord",
    "SubmitOutcome",
    "ToolCallRecord",
]
