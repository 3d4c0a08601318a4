"""`agentrun-client schedules …` against the API on a loopback port with workers
in-process: bodies from flags, JSON and TOML, what a person sees, `--json`, the runs of a
trigger and a backfill, and the exit statuses of refusals and usage errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentrun_client import _render
from agentrun_client.models import ScheduleTick, TickOutcome
from tests.client.conftest import Live, scripted
from tests.client.test_agents import unique
from tests.client.test_cli import cli
from tests.client.test_schedules import OPEN_RUN, hour, key

TOML = """cron = "0 9 * * 1"
timezone = "America/New_York"
overlap = "allow_all"
paused = true
note = "from a TOML file"

[run]
prompt = "the weekly digest"
"""


def make_agent(live: Live) -> str:
    agent = unique("reporter")
    made = cli(live, "agents", "create", agent, "--description", "reports",
               "--model", json.dumps(scripted({"text": "report"})))  # fmt: skip
    assert made.code == 0, made.err
    return agent


def test_schedules_from_flags_and_files_then_changed_paused_listed_and_deleted(
    live: Live, tmp_path: Path
) -> None:
    agent, name, other = make_agent(live), key(), key()
    made = cli(
        live, "schedules", "create", name, "--cron", "0 6 * * 1-5", "--timezone", "Europe/Berlin",
        "--agent", agent, "--prompt", "the daily report", "--overlap", "buffer_one",
        "--start-at", "2030-01-01T00:00:00Z", "--paused", "--note", "not yet", "--json",
    )  # fmt: skip
    assert made.code == 0, made.err
    doc = made.json()
    assert (doc["key"], doc["cron"], doc["timezone"]) == (name, "0 6 * * 1-5", "Europe/Berlin")
    assert doc["run"] == {"agent": agent, "prompt": "the daily report"}
    assert (doc["overlap"], doc["paused"], doc["note"]) == ("buffer_one", True, "not yet")
    assert doc["next_fire_at"] is None  # (paused: resuming plans it)
    again = cli(live, "schedules", "create", name, "--cron", "@daily", "--agent", agent,
                "--prompt", "x")  # fmt: skip
    assert again.code == 1 and "schedule-exists" in again.err
    bad_cron = cli(live, "schedules", "create", other, "--cron", "61 * * * *", "--agent", agent,
                   "--prompt", "x", "--json")  # fmt: skip
    assert bad_cron.code == 1
    problem = json.loads(bad_cron.err)
    assert problem["type"] == "/problems/invalid-request" and "cron" in problem["detail"]

    toml = tmp_path / "schedule.toml"
    toml.write_text(TOML)
    from_file = cli(live, "schedules", "create", other, "--body", f"@{toml}",
                    "--agent", agent, "--json")  # fmt: skip
    assert from_file.code == 0, from_file.err
    filed = from_file.json()
    assert (filed["cron"], filed["timezone"], filed["overlap"]) == (
        "0 9 * * 1",
        "America/New_York",
        "allow_all",
    )
    assert filed["run"] == {"prompt": "the weekly digest", "agent": agent}
    assert filed["paused"] and filed["note"] == "from a TOML file"

    shown = cli(live, "schedules", "get", name)
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0] == f"{name}  0 6 * * 1-5  (Europe/Berlin)  paused (not yet)"
    assert "  next:     none" in lines
    assert f'"agent": "{agent}"' in shown.out
    assert "overlap:  buffer_one   catchup: latest (window 86400 s)" in shown.out
    assert "window:   2030-01-01T00:00:00Z .. -" in shown.out

    # `update`: the fields given; `--prompt` alone keeps the rest of the run.
    updated = cli(live, "schedules", "update", name, "--cron", "30 7 * * *", "--prompt",
                  "the new report", "--end-at", "2031-01-01T00:00:00+01:00", "--json")  # fmt: skip
    assert updated.code == 0, updated.err
    changed = updated.json()
    assert changed["run"] == {"agent": agent, "prompt": "the new report"}
    assert changed["cron"] == "30 7 * * *" and changed["overlap"] == "buffer_one"
    assert changed["end_at"] == "2030-12-31T23:00:00Z"
    cleared = cli(live, "schedules", "update", name, "--no-end-at", "--no-note", "--json").json()
    assert cleared["end_at"] is None and cleared["note"] is None and cleared["paused"]
    whole = json.dumps({"run": {"agent": agent, "prompt": "whole"}, "jitter_seconds": 7})
    replaced = cli(live, "schedules", "update", name, "--body", whole, "--json").json()
    assert replaced["run"] == {"agent": agent, "prompt": "whole"}
    assert replaced["jitter_seconds"] == 7

    resumed = cli(live, "schedules", "resume", name)
    assert resumed.code == 0 and resumed.out.splitlines()[0].endswith("  active")
    paused = cli(live, "schedules", "pause", name, "--note", "holidays")
    assert paused.out.splitlines()[0].endswith("  paused (holidays)")

    times = cli(live, "schedules", "fire-times", name, "--from", "2030-03-30T00:00:00Z",
                "--count", "2")  # fmt: skip
    assert times.code == 0, times.err
    assert times.out.splitlines() == [
        "UTC                   LOCAL (Europe/Berlin)",
        "2030-03-30T06:30:00Z  2030-03-30T07:30:00+01:00",
        "2030-03-31T05:30:00Z  2030-03-31T07:30:00+02:00",
    ]
    as_json = cli(live, "schedules", "fire-times", name, "--from", "now", "--count", "1",
                  "--json").json()  # fmt: skip
    assert as_json["timezone"] == "Europe/Berlin"
    assert [t["utc"] for t in as_json["data"]] == ["2030-01-01T06:30:00Z"]  # (its start_at)

    listed = cli(live, "schedules", "list", "--all")
    assert listed.out.splitlines()[0].split() == ["KEY", "CRON", "TIMEZONE", "STATE", "NEXT",
                                                  "(UTC)"]  # fmt: skip
    row = next(line for line in listed.out.splitlines() if line.startswith(name))
    assert row.split()[-2:] == ["paused", "-"]  # (resuming plans its next tick)
    one = cli(live, "schedules", "list", "--limit", "1", "--json").json()
    assert len(one["data"]) == 1 and one["next_cursor"]
    first_page = cli(live, "schedules", "list", "--limit", "1")
    assert f"more: agentrun-client schedules list --cursor {one['next_cursor']}" in first_page.err

    deleted = cli(live, "schedules", "delete", other)
    assert deleted.code == 0 and f"deleted {other}" in deleted.out
    missing = cli(live, "schedules", "get", other, "--json")
    assert missing.code == 1
    assert json.loads(missing.err)["type"] == "/problems/schedule-not-found"
    for command in ("delete", "pause", "resume", "trigger", "fire-times", "ticks"):
        unknown = cli(live, "schedules", command, other)
        assert unknown.code == 1 and "schedule-not-found" in unknown.err, command


def test_trigger_backfill_and_ticks_from_the_command_line(live: Live) -> None:
    agent, name = make_agent(live), key()
    made = cli(live, "schedules", "create", name, "--cron", "0 * * * *", "--agent", agent,
               "--prompt", "go", "--paused")  # fmt: skip
    assert made.code == 0, made.err

    triggered = cli(live, "schedules", "trigger", name)
    assert triggered.code == 0, triggered.err
    when, outcome, run_id = triggered.out.split()
    assert outcome == "started" and run_id.startswith("run_")
    done = cli(live, "runs", "wait", run_id, "--status", "completed", "--timeout", "30")
    assert done.code == 0, done.err
    assert f"schedule: {name} (its tick of {when})" in done.out
    assert "output:   report" in done.out
    shown = cli(live, "schedules", "get", name).out
    assert f"last run: {run_id} (agentrun-client runs get {run_id})" in shown

    # The hours before the trigger's (whose tick, at the hour, a backfill to now starts).
    top = hour(datetime.fromisoformat(when))
    start, end = (top - timedelta(hours=h) for h in (2, 1))
    filled = cli(live, "schedules", "backfill", name, "--from", start.isoformat(),
                 "--to", end.isoformat())  # fmt: skip
    assert filled.code == 0, filled.err
    lines = [line.split() for line in filled.out.splitlines()]
    assert [(line[0], line[1]) for line in lines] == [
        (start.strftime("%Y-%m-%dT%H:%M:%SZ"), "started"),
        (end.strftime("%Y-%m-%dT%H:%M:%SZ"), "started"),
    ]
    again = cli(live, "schedules", "backfill", name, "--from", start.isoformat(),
                "--to", when, "--json")  # fmt: skip
    assert again.code == 0, again.err
    assert [o["outcome"] for o in again.json()["data"]] == ["exists", "exists", "started"]
    empty = cli(live, "schedules", "backfill", name, "--from", "2020-01-01T00:30:00Z",
                "--to", "2020-01-01T00:40:00Z")  # fmt: skip
    assert empty.code == 0 and empty.out.strip() == "no tick in that window"
    future = cli(live, "schedules", "backfill", name, "--from", start.isoformat(),
                 "--to", (top + timedelta(days=1)).isoformat())  # fmt: skip
    assert future.code == 1 and "past window" in future.err

    ticks = cli(live, "schedules", "ticks", name)
    assert ticks.code == 0, ticks.err
    rows = [line.split() for line in ticks.out.splitlines()]
    assert rows[0] == ["SCHEDULED", "SOURCE", "OUTCOME", "RUN", "REASON"]
    assert rows[1][:4] == [when, "trigger", "started", run_id]
    assert [r[:3] for r in rows[2:]] == [
        [(top - timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M:%SZ"), "backfill", "started"]
        for h in (0, 1, 2)
    ]
    page = cli(live, "schedules", "ticks", name, "--limit", "1", "--json").json()
    assert len(page["data"]) == 1 and page["next_cursor"]
    first_page = cli(live, "schedules", "ticks", name, "--limit", "1")
    assert f"--before {page['next_cursor']}" in first_page.err
    older = cli(live, "schedules", "ticks", name, "--before", page["next_cursor"], "--json")
    assert [t["scheduled_time"] for t in older.json()["data"]] == [r[0] for r in rows[2:]]
    every = cli(live, "schedules", "ticks", name, "--all", "--json").json()
    assert len(every["data"]) == len(rows) - 1 and every["next_cursor"] is None


def test_overlap_from_the_command_line(live: Live) -> None:
    name = key()
    body = json.dumps(OPEN_RUN)
    made = cli(live, "schedules", "create", name, "--cron", "@yearly", "--run", body,
               "--paused", "--json")  # fmt: skip
    assert made.code == 0, made.err
    first = cli(live, "schedules", "trigger", name, "--json").json()
    assert first["outcome"] == "started"
    skipped = cli(live, "schedules", "trigger", name, "--overlap", "skip")
    assert skipped.code == 0, skipped.err
    assert skipped.out.split()[1:] == ["skipped", "(overlap)", "(the", "run", first["run_id"],
                                       "still", "going)"]  # fmt: skip
    assert cli(live, "runs", "cancel", first["run_id"]).code == 0


def test_usage_errors_of_the_schedules_commands(
    live: Live, capsys: pytest.CaptureFixture[str]
) -> None:
    name = key()
    no_run = cli(live, "schedules", "create", name, "--cron", "@daily")
    assert no_run.code == 2 and "needs run" in no_run.err
    no_cron = cli(live, "schedules", "create", name, "--agent", "a", "--prompt", "x")
    assert no_cron.code == 2 and "needs cron" in no_cron.err
    naive = cli(live, "schedules", "create", name, "--cron", "@daily", "--agent", "a",
                "--start-at", "2030-01-01T00:00:00")  # fmt: skip
    assert naive.code == 2 and "no offset" in naive.err
    not_a_time = cli(live, "schedules", "fire-times", name, "--from", "tomorrow")
    assert not_a_time.code == 2 and "not an RFC 3339 time" in not_a_time.err
    not_a_key = cli(live, "schedules", "get", "no/such")
    assert not_a_key.code == 2 and "not a schedule key" in not_a_key.err
    nothing = cli(live, "schedules", "update", name)
    assert nothing.code == 2 and "nothing to change" in nothing.err
    # (argparse's own refusals: on the process's stderr)
    assert cli(live, "schedules", "trigger", name, "--overlap", "never").code == 2
    assert "invalid choice: 'never'" in capsys.readouterr().err
    assert cli(live, "schedules", "backfill", name, "--from", "2020-01-01T00:00:00Z").code == 2
    assert "the following arguments are required: --to" in capsys.readouterr().err
    run_list = cli(live, "schedules", "create", name, "--cron", "@daily", "--run", "[1]")
    assert run_list.code == 2 and "--run: a JSON object" in run_list.err


def test_what_a_person_sees_of_missed_buffered_and_refused_ticks() -> None:
    """(The cron's own ticks, which a test cannot wait for: their rendering alone.)"""
    at = datetime(2030, 1, 1, 6, tzinfo=UTC)
    missed = ScheduleTick(scheduled_time=at, source="cron", outcome="missed", reason="catchup",
                          count=3, last_time=at + timedelta(hours=2), recorded_at=at)  # fmt: skip
    table = _render.ticks_table([missed]).splitlines()
    assert table[1].split() == ["2030-01-01T06:00:00Z", "cron", "missed", "-", "catchup:", "3",
                                "ticks", "to", "2030-01-01T08:00:00Z"]  # fmt: skip
    buffered = TickOutcome(scheduled_time=at, outcome="buffered", run_id="run_1")
    assert _render.outcome_line(buffered) == (
        "2030-01-01T06:00:00Z  buffered  (the run run_1 still going)"
    )
    failed = TickOutcome(scheduled_time=at, outcome="failed", reason="the run was refused: x")
    assert _render.outcome_line(failed) == "2030-01-01T06:00:00Z  failed (the run was refused: x)"


def test_agentrun_schedules_is_the_client_command_line(live: Live) -> None:
    from app.cli import main as agentrun

    listed = cli(live, "schedules", "list", "--json", entry=agentrun)
    # (the last line: the server in this process may log to the same stdout meanwhile)
    assert listed.code == 0 and "data" in json.loads(listed.out.splitlines()[-1])
