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


def test_the_stored_form_leaves_out_zero_counters_and_null_call_fields() -> None:
    """Every byte of the control document is written with every change of the run: a
    usage object's zero counters and a call's null fields are left out, and come back on
    load exactly as they were."""
    from app.core import ModelTurn, ToolCall, Usage

    run = AgentRun("add", max_turns=3)
    first = stored.initial(run)
    loaded = stored.load(first.control, f"[{first.batch.body}]")
    loaded.run.next_step()
    call = ToolCall.from_wire("c1", "add", {"a": 1, "usage": {"x": 0}})
    turn = ModelTurn(
        choice=(call,),
        usage=Usage(input_tokens=7, output_tokens=2, total_tokens=9),
        executable_tool_names=frozenset({"add"}),
        allowed_tool_names=frozenset({"add"}),
    )
    loaded.run.model_response(turn)
    loaded.run.next_step()
    whole = loaded.run.to_json()
    snap = stored.snapshot(loaded)
    assert snap.batch is not None
    control = orjson.loads(snap.control)
    assert control["usage"] == {"input_tokens": 7, "output_tokens": 2, "total_tokens": 9}
    pending = control["state"]["ExecutingTools"][0]
    assert set(pending) == {"tool_call"}
    assert "signature" not in pending["tool_call"]
    # (A tool's own arguments are the caller's data: their zeros stay.)
    assert pending["tool_call"]["function"]["arguments"] == {"a": 1, "usage": {"x": 0}}
    batch = orjson.loads(snap.batch.body)
    assert batch["c"][0]["usage"] == {"input_tokens": 7, "output_tokens": 2, "total_tokens": 9}
    log = f"[{first.batch.body},{snap.batch.body}]"
    assert stored.load(snap.control, log).run.to_json() == whole


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_one_batch_decodes_alone_at_the_current_version(path: Path) -> None:
    """`batch_messages` reads a batch of any schema version without its run: the same
    messages as the whole run loaded (a reader of a run's first and latest batches)."""
    text = path.read_text()
    _, batch = stored.split_document(text)
    run = AgentRun.from_json(text)
    if batch is None:
        assert not run.full_history()
        return
    history, messages = stored.batch_messages(batch)
    assert [*history, *messages] == list(run.full_history())
    assert messages == list(run.messages())


def test_a_batch_that_does_not_decode_is_refused() -> None:
    for body, problem in [
        ("{", "not valid JSON"),
        ("[]", "must be an object"),
        ('{"m": {}, "v": 2}', "must be an array"),
        ('{"m": [{"role": "robot"}], "v": 2}', "role"),
    ]:
        with pytest.raises(StateDecodeError, match=problem):
            stored.batch_messages(body)
