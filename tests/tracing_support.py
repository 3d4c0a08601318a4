"""Tracing in tests: an SDK tracer provider with an in-memory exporter, installed in
`app.tracing` for one test and removed after it (the global OpenTelemetry provider is
never touched, so nothing leaks into other tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app import tracing


@dataclass
class Recorded:
    provider: TracerProvider
    exporter: InMemorySpanExporter

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]


@contextmanager
def recording() -> Iterator[Recorded]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.activate(provider)
    try:
        yield Recorded(provider, exporter)
    finally:
        tracing.activate(None)
        provider.shutdown()
