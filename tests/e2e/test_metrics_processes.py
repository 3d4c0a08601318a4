"""Metrics of real processes on one host: `agentrun api` and two `agentrun worker`s share
a PROMETHEUS_MULTIPROC_DIR, so the API's `/metrics` shows what the workers counted (model
calls, claims, completions) beside its own (creations); each worker also serves its own
counters on `--metrics-port`. What a worker counted stays in the API's sum after it
stops (counters never go back). The first model calls are held at the mock provider
until both workers (one slot each) are in one, so each has counted something."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.e2e.model_wire import MODEL, agent
from tests.e2e.processes import spawn, stop, wait_until
from tests.metrics_support import sample
from tests.mocks.server import MockProviderServer
from tests.ports import free_port

RUNS = 6


def ready(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def scrape(url: str) -> str:
    response = httpx.get(url, timeout=10)
    assert response.status_code == 200, response.text
    return response.text


def model_calls(text: str) -> float:
    return sample(text, "agentrun_model_calls_total", provider="openai", outcome="ok") or 0.0


def test_the_api_shows_what_every_worker_process_of_its_host_counted(
    clean_postgres: str, tmp_path: Path, mock: MockProviderServer
) -> None:
    mock.responder = agent(lambda _: [], lambda _: "done")
    mock.hold()
    shared = tmp_path / "prometheus"
    shared.mkdir()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(shared), **mock.env()}
    port, ports = free_port(), [free_port(), free_port()]
    base = f"http://127.0.0.1:{port}"
    api = spawn(["api", "--port", str(port)], clean_postgres, tmp_path / "api.log", **env)
    workers = [
        spawn(
            ["worker", "--concurrency", "1", "--metrics-port", str(p)],
            clean_postgres,
            tmp_path / f"worker{i}.log",
            **env,
        )
        for i, p in enumerate(ports)
    ]
    try:
        wait_until(lambda: ready(f"{base}/readyz"), 30, "the API to start")
        for i in range(len(workers)):
            log = tmp_path / f"worker{i}.log"
            wait_until(lambda log=log: "worker started" in log.read_text(), 30, log.name)
        body = {"prompt": "hello", "model": MODEL}
        ids = [httpx.post(f"{base}/v1/runs", json=body).json()["id"] for _ in range(RUNS)]
        mock.wait_held(len(workers), 30)  # each worker in a model call: both take part
        mock.release()
        for run_id in ids:
            done = httpx.get(
                f"{base}/v1/runs/{run_id}/wait",
                params={"status": "completed", "timeout": 30},
                timeout=40,
            ).json()
            assert done["status"] == "completed", done
        together = scrape(f"{base}/metrics")
        own = [scrape(f"http://127.0.0.1:{p}/") for p in ports]
    finally:
        codes = [stop(w) for w in workers]
    try:
        after = scrape(f"{base}/metrics")
    finally:
        codes.append(stop(api))
    assert codes == [0, 0, 0]
    # The workers called the models; the API process made none of these calls itself.
    assert model_calls(together) == sum(model_calls(t) for t in own) == RUNS
    assert sample(together, "agentrun_claim_latency_seconds_count") == RUNS
    assert sample(together, "agentrun_transitions_total", transition="create", status="queued") == (
        RUNS  # counted by the API process
    )
    done = sample(together, "agentrun_transitions_total", transition="complete", status="completed")
    assert done == RUNS
    assert sample(together, "agentrun_runs", status="completed") == RUNS  # (the database's)
    for text in own:  # a worker's port: its own counts, no database gauges
        assert "agentrun_model_calls_total" in text and "agentrun_runs{" not in text
    assert model_calls(after) == RUNS  # the stopped workers' counts stay in the sum
