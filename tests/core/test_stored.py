"""The stored layout (`app.core.stored`): legacy whole documents of every schema version
split into a control document and a first batch, and load as they did whole."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from app.core import AgentRun, stored
from app.core.errors import StateDecodeError

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*.json"))


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_split_legacy_document_loads_as_whole(path: Path) -> None:
    text = path.read_text()
    whole = AgentRun.from_json(text).to_json()
    control, batch = stored.split_document(text)
    assert "new_messages" not in orjson.loads(control)
    log = f"[{batch}]" if batch else "[]"
    loaded = stored.load(control, log)
    assert loaded.run.to_json() == whole
    # Loaded whole (not split), the first snapshot writes the whole log as batch 1.
    legacy = stored.load(text)
    snap = stored.snapshot(legacy)
    assert (
        stored.load(snap.control, f"[{snap.batch.body}]" if snap.batch else "[]").run.to_json()
        == whole
    )


def test_a_snapshot_without_new_items_appends_nothing() -> None:
    run = AgentRun("hi", max_turns=3)
    first = stored.initial(run)
    assert first.batch is not None and first.batch.seq == 1
    again = stored.load(first.control, f"[{first.batch.body}]")
    snap = stored.snapshot(again)
    assert snap.batch is None and snap.control == first.control


def test_a_log_that_does_not_match_its_control_document_is_refused() -> None:
    first = stored.initial(AgentRun("hi", max_turns=3))
    with pytest.raises(StateDecodeError, match="batches"):
        stored.load(first.control, "[]")
    with pytest.raises(StateDecodeError, match="not valid JSON"):
        stored.load(first.control, "[")
