"""One trace per run across real processes: `agentrun api` and `agentrun worker` export over
OTLP/HTTP to a loopback collector; the client's span, the API's spans, the worker's spans
and the webhook receiver's `traceparent` all belong to one trace."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.e2e.processes import spawn, stop, wait_until
from tests.mocks.collector import ExportedSpan, otlp_collector
from tests.mocks.receiver import SECRET, webhook_receiver
from tests.ports import free_port

KEY = "e2e-trace-key"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"


def test_a_run_is_one_trace_across_api_and_worker_processes(
    clean_postgres: str, tmp_path: Path
) -> None:
    port = free_port()
    with otlp_collector() as collector, webhook_receiver() as receiver:
        env = {
            "AGENTRUN_API_KEYS": KEY,
            "AGENTRUN_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "AGENTRUN_WEBHOOK_SECRET": SECRET,
            "AGENTRUN_WEBHOOK_ALLOW_PRIVATE": "true",
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_SERVICE_NAME": "agentrun-e2e",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        api = spawn(["api", "--port", str(port)], clean_postgres, tmp_path / "api.log", **env)
        worker = spawn(["worker", "--concurrency", "2"], clean_postgres, tmp_path / "w.log", **env)
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {KEY}"}
        )

        def ready() -> bool:
            try:
                return client.get("/readyz").status_code == 200
            except httpx.TransportError:
                return False

        def status(run_id: str) -> str:
            return str(client.get(f"/v1/runs/{run_id}").json()["status"])

        try:
            wait_until(ready, 30, "the API to become ready")
            created = client.post(
                "/v1/runs",
                json={
                    "prompt": "add 1 and 2",
                    "model": {
                        "provider": "scripted",
                        "name": "demo",
                        "script": [
                            {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
                            {"text": "3"},
                        ],
                    },
                    "tools": [{"name": "add", "parameters": {"type": "object"}}],
                    "webhook": {"url": receiver.url},
                },
                headers={"traceparent": f"00-{TRACE_ID}-{CLIENT_SPAN}-01"},
            )
            assert created.status_code == 201, created.text
            run = created.json()
            wait_until(lambda: status(run["id"]) == "requires_action", 30, "the suspension")
            pending = client.get(f"/v1/runs/{run['id']}").json()["required_action"]
            calls = pending["tool_calls"]
            answered = client.post(
                f"/v1/runs/{run['id']}/tool-results",
                json={"results": [{"tool_call_id": c["id"], "output": "3"} for c in calls]},
            )
            assert answered.status_code == 200, answered.text
            wait_until(lambda: status(run["id"]) == "completed", 30, "the completion")
            wait_until(lambda: len(receiver.delivered) == 2, 30, "both webhooks")
        finally:
            # A clean stop flushes what the batch processors still hold.
            assert stop(api) == 0
            assert stop(worker) == 0

        spans = collector.spans()
        traceparents = [r.headers.get("traceparent", "") for r in receiver.delivered]
        for _ in range(50):  # the server thread may still be decoding the last export
            if {"api", "worker"} <= {s.resource["agentrun.process.role"] for s in spans}:
                break
            time.sleep(0.05)
            spans = collector.spans()

    assert {s.trace_id for s in spans} == {int(TRACE_ID, 16)}
    assert {s.resource["service.name"] for s in spans} == {"agentrun-e2e"}

    def named(name: str, role: str) -> list[ExportedSpan]:
        found = [s for s in spans if s.name == name]
        assert found and all(s.resource["agentrun.process.role"] == role for s in found), name
        return found

    (create,) = named("agentrun.run.create", "api")
    assert create.parent_span_id == int(CLIENT_SPAN, 16)
    assert create.attributes["agentrun.run.id"] == run["id"]
    (submit,) = named("agentrun.run.submit_tool_results", "api")
    drives = named("agentrun.run.drive", "worker")
    deliveries = named("agentrun.webhook.deliver", "worker")
    assert len(drives) == 2 and len(deliveries) == 2
    for span in [submit, *drives, *deliveries]:
        assert span.parent_span_id == create.span_id, span.name
    calls = named("chat demo", "worker")
    assert sorted(c.parent_span_id or 0 for c in calls) == sorted(d.span_id for d in drives)
    assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in calls) == 10
    sent = {f"00-{TRACE_ID}-{d.span_id:016x}" for d in deliveries}
    assert {tp[:-3] for tp in traceparents} == sent
