"""`agentrun-client runs checkpoints|fork|forks` (and `agentrun runs …`) against the API on
a loopback port with workers in-process: the checkpoints as a table and as the API's
document, forks with patched results and overrides, a replay waited on, a run's forks a
page at a time, refusals and usage errors with their exit statuses."""

from __future__ import annotations

import json

from agentrun_client import RunStatus
from app.cli import main as agentrun
from tests.client.conftest import Live, scripted
from tests.client.test_cli import cli
from tests.client.test_forks import PROMPT, SCRIPT, registry


def completed(live: Live) -> str:
    with live.client() as client:
        run = client.run(PROMPT, tools=registry(), model=scripted(*SCRIPT), timeout=30)
    assert run.status == RunStatus.COMPLETED
    return run.id


def test_checkpoints_as_a_table_and_as_json(live: Live) -> None:
    run_id = completed(live)
    shown = cli(live, "runs", "checkpoints", run_id)
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0].split() == ["SEQ", "KIND", "TURN", "TOKENS"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["1", "start", "0"],
        ["2", "tool_calls", "1"],
        ["3", "tool_results", "1"],
        ["4", "tool_calls", "2"],
        ["5", "tool_results", "2"],
        ["6", "answer", "3"],
    ]
    assert f"6 messages; fork from one: agentrun-client runs fork {run_id} --at SEQ" in shown.err
    doc = cli(live, "runs", "checkpoints", run_id, "--json").json()
    assert (doc["run_id"], doc["messages"], len(doc["data"])) == (run_id, 6, 6)
    assert doc["data"][2] == {**doc["data"][2], "seq": 3, "kind": "tool_results", "turn": 1}
    missing = cli(live, "runs", "checkpoints", "run_missing")
    assert missing.code == 1 and "404 run-not-found" in missing.err


def test_a_fork_with_a_patched_result_and_overrides(live: Live) -> None:
    run_id = completed(live)
    made = cli(
        live, "runs", "fork", run_id, "--at", "3", "--result", "call_1_0=42",
        "--preamble", "Be terse.", "--max-turns", "6", "--model-json",
        json.dumps(scripted(*SCRIPT)), "--json",
    )  # fmt: skip
    assert made.code == 0, made.err
    fork = made.json()
    assert fork["forked_from"] == {
        "run_id": run_id,
        "checkpoint": 3,
        "mode": "fork",
        "on_divergence": "live",
    }
    assert fork["max_turns"] == 6
    with live.client() as client:
        messages = [m.message for m in client.runs.messages(fork["id"])]
        assert messages[2].content[0]["content"] == [{"type": "json", "value": 42}]
    shown = cli(live, "runs", "get", fork["id"])
    assert f"forked:   from {run_id} at checkpoint 3" in shown.out

    quiet = cli(live, "runs", "fork", run_id, "--at", "6", "--append", "and 5+6?", "-q")
    assert quiet.code == 0 and quiet.out.strip().startswith("run_"), quiet.err
    # (`agentrun runs fork`: the same command where the service is installed)
    same = cli(live, "runs", "fork", run_id, "--idempotency-key", "k-1", "-q", entry=agentrun)
    again = cli(live, "runs", "fork", run_id, "--idempotency-key", "k-1", "-q")
    assert same.code == again.code == 0 and same.out == again.out


def test_a_replay_waited_on_reproduces_its_run(live: Live) -> None:
    run_id = completed(live)
    done = cli(live, "runs", "fork", run_id, "--replay", "--on-divergence", "fail", "--wait")
    assert done.code == 0, done.err
    assert "  completed  " in done.out.splitlines()[0]
    assert f"from {run_id} at checkpoint 1, a replay (on divergence: fail)" in done.out
    assert "output:   the sums are 3 and 7" in done.out


def test_a_runs_forks_as_a_table_a_page_at_a_time_and_as_json(live: Live) -> None:
    run_id = completed(live)
    empty = cli(live, "runs", "forks", run_id)
    assert empty.code == 0 and empty.out.split() == ["ID", "STATUS", "AT", "CREATED", "MODE"]
    made = [
        cli(live, "runs", "fork", run_id, *argv, "-q").out.strip()
        for argv in (["--at", "3"], ["--replay", "--on-divergence", "fail"], ["--at", "5"])
    ]
    assert all(m.startswith("run_") for m in made), made
    shown = cli(live, "runs", "forks", run_id, "--limit", "2")
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "AT", "CREATED", "MODE"]
    assert [line.split()[0] for line in lines[1:]] == made[:2]
    assert [line.split()[2] for line in lines[1:]] == ["3", "1"]
    assert lines[1].endswith("  fork") and lines[2].endswith("  replay (on divergence: fail)")
    more = f"more: agentrun-client runs forks {run_id} --cursor "
    assert more in shown.err
    cursor = shown.err.split(more)[1].split()[0]
    rest = cli(live, "runs", "forks", run_id, "--cursor", cursor, "--json").json()
    assert [r["id"] for r in rest["data"]] == [made[2]] and rest["next_cursor"] is None
    every = cli(live, "runs", "forks", run_id, "--all", "--limit", "1", "--json").json()
    assert [r["id"] for r in every["data"]] == made and every["next_cursor"] is None
    assert every["data"][1]["forked_from"] == {
        "run_id": run_id,
        "checkpoint": 1,
        "mode": "replay",
        "on_divergence": "fail",
    }
    # (`agentrun runs forks`: the same command where the service is installed)
    same = cli(live, "runs", "forks", made[0], "--json", entry=agentrun)
    assert same.code == 0 and json.loads(same.out.splitlines()[-1])["data"] == []
    missing = cli(live, "runs", "forks", "run_missing")
    assert missing.code == 1 and "404 run-not-found" in missing.err
    for argv in (["--limit", "0"], ["--cursor", "not a cursor"]):
        refused = cli(live, "runs", "forks", run_id, *argv)
        assert refused.code == 1 and "422" in refused.err, (argv, refused.err)
    assert cli(live, "runs", "forks", "not a run id").code == 2


def test_refusals_and_usage_errors(live: Live) -> None:
    run_id = completed(live)
    with live.client() as client:
        before = [r.id for r in client.runs.list()]
    split = cli(live, "runs", "fork", run_id, "--at", "2", "--append", "never mind")
    assert split.code == 1 and "409 fork-split" in split.err and "call_1_0" in split.err
    problem = cli(live, "runs", "fork", run_id, "--at", "2", "--append", "x", "--json")
    assert problem.code == 1 and json.loads(problem.err)["tool_call_id"] == "call_1_0"
    past = cli(live, "runs", "fork", run_id, "--at", "9")
    assert past.code == 1 and "422 invalid-request" in past.err
    for argv in (
        ["--on-divergence", "fail"],  # (a replay's: without --replay)
        ["--result", "call_1_0=not json"],
        ["--at", "0"],
        ["--model-json", "[1]"],
        ["--overrides", "{"],
        ["--at", "x"],
    ):
        refused = cli(live, "runs", "fork", run_id, *argv)
        assert refused.code == 2, (argv, refused.err)
    with live.client() as client:
        assert [r.id for r in client.runs.list()] == before  # nothing made
