"""Tracing set-up: when it is on, what it exports over OTLP/HTTP (to a loopback receiver),
what it refuses, and that the helpers cost nothing when it is off."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from app import tracing
from app.settings import Settings
from tests.mocks.collector import Collector, otlp_collector

ENDPOINT = "http://127.0.0.1:4318"


@pytest.fixture
def collector() -> Iterator[Collector]:
    with otlp_collector() as c:
        yield c


@pytest.mark.parametrize(
    ("switch", "environ", "on"),
    [
        (None, {}, False),  # off by default
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, True),
        (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ENDPOINT + "/v1/traces"}, True),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, False),
        (True, {}, True),  # AGENTRUN_TRACING=true: OTLP to the SDK's default endpoint
        (False, {"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, False),
        (True, {"OTEL_SDK_DISABLED": "true"}, False),
        (True, {"OTEL_TRACES_EXPORTER": "none"}, False),
        (True, {"OTEL_TRACES_EXPORTER": "console"}, True),
    ],
)
def test_when_tracing_is_on(switch: bool | None, environ: dict[str, str], on: bool) -> None:
    assert tracing.wanted(Settings(tracing=switch), environ) is on


def test_the_switch_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTRUN_TRACING", "false")
    assert Settings().tracing is False
    monkeypatch.setenv("AGENTRUN_TRACING", "true")
    assert Settings().tracing is True
    monkeypatch.setenv("AGENTRUN_TRACING", "maybe")
    with pytest.raises(ValueError, match="tracing"):
        Settings()


def test_configure_off_installs_nothing() -> None:
    before = trace.get_tracer_provider()
    assert tracing.configure(Settings(), "worker", environ={}) is None
    assert not tracing.ENABLED
    assert trace.get_tracer_provider() is before
    assert not isinstance(before, TracerProvider)


def test_configure_on_traces_without_taking_over_the_global_provider(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FastAPI (and any library) traces through the global provider when one is set,
    request paths with callback tokens included: only the run spans are exported."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    before = trace.get_tracer_provider()
    provider = tracing.configure(Settings(), "api")
    assert provider is not None
    try:
        assert tracing.ENABLED
        assert trace.get_tracer_provider() is before
        with tracing.span("agentrun.run.create", dict):
            pass
        assert provider.force_flush(10_000)
    finally:
        tracing.activate(None)
        provider.shutdown()
    assert [s.name for s in collector.spans()] == ["agentrun.run.create"]


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER='zipkin' is not supported"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http/protobuf only"),
        ({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, "http/protobuf only"),
    ],
)
def test_unsupported_exporters_are_refused_by_name(environ: dict[str, str], message: str) -> None:
    with pytest.raises(tracing.TracingConfigError, match=message):
        tracing.build_provider("api", environ)


def test_helpers_build_nothing_when_off() -> None:
    assert not tracing.ENABLED

    def never() -> dict[str, Any]:
        raise AssertionError("attributes were built while tracing is off")

    with tracing.span("x", never, parent={"traceparent": "garbage"}) as span:
        assert span is None
    tracing.event("x", never)
    tracing.record_span("x", {"trace": {"traceparent": "garbage"}}, 0, never)
    tracing.claim_ended(None)  # type: ignore[arg-type]  # (never read while off)
    assert tracing.carrier() == {}
    assert tracing.start_time() == 0


def test_spans_are_exported_over_otlp_http(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "agentrun-test")
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}
    assert tracing.wanted(Settings(), environ)
    provider = tracing.build_provider("worker", environ)
    tracing.activate(provider)
    try:
        with tracing.span("agentrun.run.drive", lambda: {"agentrun.run.id": "run_x"}):
            pass
        assert provider.force_flush(10_000)
    finally:
        tracing.activate(None)
        provider.shutdown()
    (span,) = collector.spans()
    assert span.name == "agentrun.run.drive"
    assert span.attributes == {"agentrun.run.id": "run_x"}
    assert span.resource["service.name"] == "agentrun-test"
    assert span.resource["agentrun.process.role"] == "worker"


def test_the_service_name_defaults_to_the_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    provider = tracing.build_provider("api", {"OTEL_TRACES_EXPORTER": "console"})
    try:
        assert provider.resource.attributes["service.name"] == "agentrun-service"
    finally:
        provider.shutdown()
