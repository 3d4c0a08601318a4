"""How the command line (`agentrun_client.cli`) shows runs, pages, events, submissions,
agents and schedules to a person; `--json` bypasses all of this."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from agentrun_client.models import (
    Agent,
    Approval,
    ApproveToolCalls,
    Checkpoint,
    Event,
    FireTimeList,
    RaiseLimits,
    ResolveInvalidToolCall,
    Run,
    RunStatus,
    Schedule,
    ScheduleTick,
    SubmitOutcome,
    SubmitToolResults,
    TickOutcome,
)


def compact(value: Any, limit: int = 0) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if not limit or len(text) <= limit else text[: limit - 1] + "…"


def when(value: datetime | str | None) -> str:
    """RFC 3339 in UTC, to the second (`2026-01-02T03:04:05Z`)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    else:
        moment = value
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def waiting(reason: Mapping[str, Any] | None) -> str:
    """A `waiting_reason` in a line (docs/reference.md lists them)."""
    if not reason:
        return "-"
    kind = str(reason.get("type", "?"))
    if kind == "tool_results":
        ids = ", ".join(str(i) for i in reason.get("call_ids") or [])
        return f"tool results of round {reason.get('round')}: {ids}"
    if kind == "model_call":
        lease = when(reason.get("lease_until"))
        return f"model call on {reason.get('worker')} (lease until {lease})"
    if kind == "backoff":
        return (
            f"backoff until {when(reason.get('until'))} after attempt {reason.get('attempt')}"
            f" of {reason.get('max_attempts')} ({reason.get('reason')}, status"
            f" {reason.get('status')})"
        )
    if kind == "approval":
        ids = ", ".join(str(i) for i in reason.get("approvals") or [])
        return f"approval of round {reason.get('round')}: {ids}"
    if kind == "resolution":
        return f"a resolution of an invalid call of {reason.get('tool_name')!r}"
    return kind


def _model(spec: Mapping[str, Any]) -> str:
    params = {k: v for k, v in spec.items() if k not in ("provider", "name", "script")}
    text = f"{spec.get('provider', '?')}:{spec.get('name', '?')}"
    return f"{text} {compact(params, 120)}" if params else text


def run_text(run: Run, prog: str) -> str:
    """A run as a short report, with what to do next when it waits for someone."""
    lines = [f"{run.id}  {run.status}  (turn {run.turn} of {run.max_turns})"]

    def row(name: str, value: str) -> None:
        lines.append(f"  {name + ':':<10}{value}")

    row("model", _model(run.model))
    if run.agent is not None:
        row("agent", f"{run.agent.name}@{run.agent.version}")
    if run.schedule is not None:
        row("schedule", f"{run.schedule.key} (its tick of {when(run.schedule.scheduled_time)})")
    if run.forked_from is not None:
        row("forked", forked_text(run))
    if run.parent_run_id is not None:
        row("parent", f"{run.parent_run_id} (its call {run.parent_tool_call_id}); depth "
            f"{run.depth} of the tree of {run.root_run_id}")  # fmt: skip
    row("created", f"{when(run.created_at)}   updated: {when(run.updated_at)}")
    if not run.is_terminal:
        row("waiting", waiting(run.waiting_reason))
    if run.expires_at is not None:
        row("expires", when(run.expires_at))
    action = run.required_action
    if isinstance(action, SubmitToolResults):
        lines.append(f"  tool calls (answer: {prog} runs submit {run.id} --result CALL_ID=JSON):")
        for call in action.tool_calls:
            done = "  [answered]" if call.answered else ""
            lines.append(f"    {call.id}  {call.name} {compact(call.arguments, 200)}{done}")
        if action.callback_url:
            row("callback", action.callback_url)
    elif isinstance(action, RaiseLimits):
        row(
            "budget",
            f"{action.scope} limit {action.limit}: {action.spent} spent of {action.allowed}"
            f" (raise: {prog} runs limits {run.id} --{action.limit.replace('_', '-')} N)",
        )
    elif isinstance(action, ApproveToolCalls):
        lines.append(f"  approvals (decide: {prog} runs approve|reject {run.id} CALL_ID):")
        for gated in action.approvals:
            lines.append(f"    {gated.id}  {gated.name} {compact(gated.arguments, 200)}")
        if action.tool_calls:
            hint = f"{prog} runs submit {run.id} --result CALL_ID=JSON"
            lines.append(f"  tool calls (answer: {hint}):")
        for call in action.tool_calls:
            done = "  [answered]" if call.answered else ""
            lines.append(f"    {call.id}  {call.name} {compact(call.arguments, 200)}{done}")
    elif isinstance(action, ResolveInvalidToolCall):
        row(
            "resolve",
            f"invalid call of {action.tool_name!r} with {action.arguments!r}"
            f" (POST /v1/runs/{run.id}/resolution)",
        )
    if run.status == RunStatus.REQUIRES_ACTION and action is None:
        row("children", f"waits on its child runs ({prog} runs children {run.id})")
    if run.output is not None:
        row("output", run.output)
    if run.error:
        row("error", compact(run.error, 500))
    if run.usage is not None:
        u = run.usage
        row("usage", f"{u.input_tokens} in, {u.output_tokens} out, {u.total_tokens} tokens")
    if run.tree_usage is not None:
        row("tree", f"{run.tree_usage.total_tokens} tokens with its child runs'")
    if run.metadata:
        row("metadata", compact(run.metadata, 500))
    if run.priority:
        row("priority", str(run.priority))
    if run.queue:
        q = run.queue
        row("queue", f"position {q.get('position')} ({q.get('reason')})")
    return "\n".join(lines)


def forked_text(run: Run) -> str:
    """`from RUN at checkpoint N` (and `, a replay (on divergence: live)`)."""
    mark = run.forked_from
    if mark is None:
        return "-"
    text = f"from {mark.run_id} at checkpoint {mark.checkpoint}"
    return f"{text}, a replay (on divergence: {mark.on_divergence})" if mark.is_replay else text


def checkpoints_table(checkpoints: Iterable[Checkpoint]) -> str:
    """A checkpoint a line: its seq (what `runs fork --at` takes), kind, turn, tokens."""
    rows = [("SEQ", "KIND", "TURN", "TOKENS")]
    for c in checkpoints:
        rows.append((str(c.seq), c.kind, str(c.turn), str(c.usage.total_tokens)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
        for row in rows
    )


def forks_table(runs: Iterable[Run]) -> str:
    """A fork a line: its id, status, the checkpoint it was made at, and whether it is a
    replay (with what it does at its first difference)."""
    rows = [("ID", "STATUS", "AT", "CREATED", "MODE")]
    for r in runs:
        mark = r.forked_from
        at, mode = ("-", "-") if mark is None else (str(mark.checkpoint), mark.mode)
        if mark is not None and mark.is_replay:
            mode = f"replay (on divergence: {mark.on_divergence})"
        rows.append((r.id, str(r.status), at, when(r.created_at), mode))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
        for row in rows
    )


def runs_table(runs: Iterable[Run]) -> str:
    rows = [("ID", "STATUS", "TURN", "CREATED", "WAITING")]
    for r in runs:
        reason = "-" if r.is_terminal else str((r.waiting_reason or {}).get("type", "-"))
        rows.append((r.id, str(r.status), f"{r.turn}/{r.max_turns}", when(r.created_at), reason))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
        for row in rows
    )


def event_line(event: Event) -> str:
    data = event.data
    if event.type == "model.delta":
        summary = repr(data.get("text", ""))
    else:
        summary = compact(data, 200) if data else ""
    actor = f"  by {event.actor}" if event.actor else ""
    return f"{event.seq:>5}  {when(event.created_at)}  {event.type:<24}{summary}{actor}".rstrip()


def submitted_text(outcome: SubmitOutcome) -> str:
    accepted = ", ".join(outcome.accepted) or "none (all were answered already)"
    run = outcome.run
    lines = [f"accepted: {accepted}"]
    if outcome.resumed:
        lines.append(f"{run.id} resumed: {run.status}")
    else:
        pending = ", ".join(c.id for c in run.pending_tool_calls)
        status = f"still waiting for: {pending}" if pending else f"is {run.status}"
        lines.append(f"{run.id} {status}")
    return "\n".join(lines)


def approvals_table(approvals: Iterable[Approval], *, now: datetime | None = None) -> str:
    """Approvals a line each: run, call, tool, status, age (since the call was gated),
    arguments."""
    now = now or datetime.now(UTC)
    rows = [("RUN", "CALL", "TOOL", "STATUS", "AGE", "ARGUMENTS")]
    for a in approvals:
        since = a.requested_at
        age = _age((now - since).total_seconds()) if since is not None else "-"
        args = compact(a.arguments, 80)
        rows.append((a.run_id, a.tool_call_id, a.name, str(a.status), age, args))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
        for row in rows
    )


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def decided_text(action: str, approval: Approval, run: Run, prog: str) -> str:
    """What `runs approve` / `runs reject` did, then the run."""
    head = f"{action} {approval.tool_call_id} ({approval.name} {compact(approval.arguments, 200)})"
    return f"{head}\n{run_text(run, prog)}"


def agent_text(agent: Agent) -> str:
    """One version of an agent: its header, then its fields as given."""
    lines = [f"{agent.name}@{agent.version}  {agent.description}"]
    lines.append(f"  {'created:':<10}{when(agent.created_at)} by {agent.created_by or '-'}")
    for key, value in agent.spec.items():
        shown = _model(value) if key == "model" and isinstance(value, Mapping) else None
        lines.append(f"  {key + ':':<10}{shown or compact(value, 500)}")
    return "\n".join(lines)


def agents_table(agents: Iterable[Agent]) -> str:
    rows = [("NAME", "VERSION", "CREATED", "DESCRIPTION")]
    for a in agents:
        rows.append((a.name, str(a.version), when(a.created_at), a.description.splitlines()[0]))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
        for row in rows
    )


def _table(rows: Sequence[tuple[str, ...]]) -> str:
    """Rows in columns (the header first); the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        (
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
        ).rstrip()
        for row in rows
    )


def local(value: datetime | None) -> str:
    """A time in the zone it carries (a schedule's), to the second, with its offset."""
    return "-" if value is None else value.replace(microsecond=0).isoformat()


def schedule_text(schedule: Schedule, prog: str) -> str:
    """A schedule as a short report: its timing, its run, its policies, its last run."""
    s = schedule
    state = f"paused ({s.note})" if s.paused and s.note else "paused" if s.paused else "active"
    lines = [f"{s.key}  {s.cron}  ({s.timezone})  {state}"]

    def row(name: str, value: str) -> None:
        lines.append(f"  {name + ':':<10}{value}")

    if s.next_fire_at is not None:
        row("next", f"{when(s.next_fire_at)}  ({local(s.next_fire_at_local)} local)")
    else:
        row("next", "none (its end_at has passed)" if s.end_at else "none")
    row("run", compact(s.run, 500))
    row("overlap", f"{s.overlap}   catchup: {s.catchup} (window {s.catchup_window_seconds} s)"
        + (f"   jitter: up to {s.jitter_seconds} s" if s.jitter_seconds else ""))  # fmt: skip
    if s.start_at is not None or s.end_at is not None:
        row("window", f"{when(s.start_at)} .. {when(s.end_at)}")
    if s.buffered_time is not None:
        row("buffered", f"the tick of {when(s.buffered_time)} starts when {s.last_run_id} ends")
    if s.last_run_id is not None:
        row("last run", f"{s.last_run_id} ({prog} runs get {s.last_run_id})")
    row("created", f"{when(s.created_at)} by {s.created_by or '-'}   updated: "
        f"{when(s.updated_at)}")  # fmt: skip
    return "\n".join(lines)


def schedules_table(schedules: Iterable[Schedule]) -> str:
    rows = [("KEY", "CRON", "TIMEZONE", "STATE", "NEXT (UTC)")]
    for s in schedules:
        state = "paused" if s.paused else "active"
        rows.append((s.key, s.cron, s.timezone, state, when(s.next_fire_at)))
    return _table(rows)


def outcome_line(o: TickOutcome) -> str:
    """What a trigger's or a backfill's tick became, in a line."""
    why = f" ({o.reason})" if o.reason else ""
    run = ""
    if o.run_id is not None:
        run = f"  {o.run_id}" if o.started else f"  (the run {o.run_id} still going)"
    return f"{when(o.scheduled_time)}  {o.outcome}{why}{run}"


def ticks_table(ticks: Iterable[ScheduleTick]) -> str:
    rows = [("SCHEDULED", "SOURCE", "OUTCOME", "RUN", "REASON")]
    for t in ticks:
        reason = t.reason or ""
        if t.outcome == "missed" and t.count > 1:
            reason = f"{reason}: {t.count} ticks to {when(t.last_time)}".lstrip(": ")
        rows.append((when(t.scheduled_time), t.source, t.outcome, t.run_id or "-", reason))
    return _table(rows)


def fire_times_text(times: FireTimeList) -> str:
    rows = [("UTC", f"LOCAL ({times.timezone})")]
    rows.extend((when(f.utc), local(f.local)) for f in times.data)
    return _table(rows)
