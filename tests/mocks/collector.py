"""A loopback OTLP/HTTP trace receiver (what an OpenTelemetry collector would be sent),
decoding every export request it gets."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.mocks.uvicorn_thread import serve_in_thread


@dataclass(frozen=True)
class ExportedSpan:
    """A received span, flattened: ids as integers, attributes as Python values."""

    name: str
    trace_id: int
    span_id: int
    parent_span_id: int | None
    kind: int
    attributes: dict[str, Any]
    resource: dict[str, Any]


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(x) for x in v.array_value.values)
    return getattr(v, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in items}


@dataclass
class Collector:
    endpoint: str = ""
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spans(self) -> list[ExportedSpan]:
        out = []
        with self.lock:
            requests = list(self.requests)
        for request in requests:
            for rs in request.resource_spans:
                resource = _attributes(rs.resource.attributes)
                for scope in rs.scope_spans:
                    for s in scope.spans:
                        out.append(
                            ExportedSpan(
                                s.name,
                                int.from_bytes(s.trace_id, "big"),
                                int.from_bytes(s.span_id, "big"),
                                int.from_bytes(s.parent_span_id, "big")
                                if s.parent_span_id
                                else None,
                                s.kind,
                                _attributes(s.attributes),
                                resource,
                            )
                        )
        return out


@contextmanager
def otlp_collector() -> Iterator[Collector]:
    collector = Collector()

    async def traces(request: Request) -> Response:
        if request.headers.get("content-type") != "application/x-protobuf":
            return Response(status_code=415)
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.body())
        with collector.lock:
            collector.requests.append(message)
        return Response(status_code=200)

    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    with serve_in_thread(app) as base:
        collector.endpoint = base
        yield collector
