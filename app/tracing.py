"""OpenTelemetry tracing: one trace per run, across the API and worker processes.

Off unless configured (`configure`, called once per process by `app.cli`): then no SDK is
set up, `ENABLED` is false, and every helper here returns before it builds an attribute or
touches a context, so the hot paths pay one flag test.

When on, creating a run starts the trace (`agentrun.run.create`, itself a child of the
client's span when the request carries a W3C `traceparent`), and the create span's context
is stored with the run (`config["trace"]`, the W3C TraceContext headers). Every later span
of that run, in whichever process, is a child of that stored context: each claim
(`agentrun.run.drive`), each model call inside it (`chat {model}`, with the GenAI semantic
conventions' attributes), tool-result submissions, resolutions, cancels, and webhook
deliveries (`agentrun.webhook.deliver`, which also send a `traceparent` so receivers can
join). Suspensions, completions, failures and backoffs are events on the drive span.

Exceptions are not recorded with their stack traces; a span that fails carries
`error.type` and a status description scrubbed by the log redactor (`app.logs`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import structlog
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from app.clock import SYSTEM_CLOCK
from app.logs import Redactor, settings_secrets
from app.store.waiting import Backoff, ToolResults

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from app.providers.base import ModelRequest, ProviderTurn
    from app.store.run_records import RunRecord, WebhookRecord

log = structlog.get_logger("agentrun.tracing")

#: Whether spans are made at all. Read by the helpers below before anything else.
ENABLED = False
SCOPE = "agentrun"
#: Where a run keeps its trace context (W3C TraceContext headers) inside `runs.config`.
CONFIG_KEY = "trace"
DEFAULT_SERVICE_NAME = "agentrun-service"
#: The attribute that names the run, on every span of one.
RUN_ID = "agentrun.run.id"

Attributes = dict[str, Any]

_tracer: Tracer = trace.NoOpTracer()
_redactor = Redactor()
_propagator = TraceContextTextMapPropagator()
_OFF: AbstractContextManager[None] = contextlib.nullcontext()


class TracingConfigError(ValueError):
    """The tracing environment asks for something this service cannot do."""


# --- set-up ---------------------------------------------------------------------------------


def wanted(settings: Any, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this process should trace: `AGENTRUN_TRACING` when set, else whenever an
    OTLP endpoint is configured; never with `OTEL_SDK_DISABLED=true` or
    `OTEL_TRACES_EXPORTER=none`."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if _exporter_names(environ) == ["none"]:
        return False
    explicit = getattr(settings, "tracing", None)
    if explicit is not None:
        return bool(explicit)
    return any(
        environ.get(name, "").strip()
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def _exporter_names(environ: Mapping[str, str]) -> list[str]:
    raw = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() or "otlp"
    return [name.strip() for name in raw.split(",") if name.strip()]


def build_provider(role: str, environ: Mapping[str, str] = os.environ) -> TracerProvider:
    """An SDK tracer provider with the exporters `OTEL_TRACES_EXPORTER` names (`otlp`, the
    default, over HTTP/protobuf; `console`). Endpoint, headers, timeout, sampler, resource
    and batching come from the standard `OTEL_*` variables, read by the SDK itself."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    names = _exporter_names(environ)
    unknown = [n for n in names if n not in ("otlp", "console")]
    if unknown:
        raise TracingConfigError(
            f"OTEL_TRACES_EXPORTER={unknown[0]!r} is not supported here: use otlp, console or none"
        )
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = environ.get(variable, "").strip()
        if protocol:
            if protocol != "http/protobuf":
                raise TracingConfigError(
                    f"{variable}={protocol!r} is not supported: this service exports OTLP "
                    "over http/protobuf only"
                )
            break
    resource = Resource.create({"agentrun.process.role": role})
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    if "otlp" in names:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if "console" in names:
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    return provider


def configure(
    settings: Any, role: str, environ: Mapping[str, str] = os.environ
) -> TracerProvider | None:
    """Set tracing up for this process (once, at start-up): the provider spans go to, or
    None when tracing is off."""
    if not wanted(settings, environ):
        activate(None)
        return None
    provider = build_provider(role, environ)
    # Not installed as the global provider: libraries that trace through the global API
    # (FastAPI traces every request when one is set, callback tokens in `url.path`
    # included) stay silent, and the exported traces are the runs'.
    activate(provider, Redactor(settings_secrets(settings)))
    log.info("tracing on", exporters=_exporter_names(environ), role=role)
    return provider


def activate(provider: trace.TracerProvider | None, redactor: Redactor | None = None) -> None:
    """Trace through `provider` from now on (None: stop tracing). Tests install an SDK
    provider with an in-memory exporter here and remove it afterwards."""
    global ENABLED, _tracer, _redactor
    _tracer = provider.get_tracer(SCOPE) if provider is not None else trace.NoOpTracer()
    _redactor = redactor or Redactor()
    ENABLED = provider is not None


# --- contexts -------------------------------------------------------------------------------


def carrier() -> dict[str, str]:
    """The current span's context as W3C TraceContext headers (empty when off)."""
    headers: dict[str, str] = {}
    if ENABLED:
        _propagator.inject(headers)
    return headers


def _context(parent: Mapping[str, Any] | None) -> Context | None:
    """A remote parent from W3C headers (a new trace when they hold none); None keeps the
    current context."""
    if parent is None:
        return None
    return _propagator.extract({k: v for k, v in parent.items() if isinstance(v, str)})


def run_context(config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The stored trace context of a run, from its `config` (empty: a new trace)."""
    stored = (config or {}).get(CONFIG_KEY)
    return stored if isinstance(stored, Mapping) else {}


def error_type(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    return str(status) if isinstance(status, int) else type(exc).__name__


def _failed(span: Span, exc: BaseException) -> None:
    span.set_attribute("error.type", error_type(exc))
    span.set_status(Status(StatusCode.ERROR, _redactor.text(str(exc))[:500]))


@contextmanager
def _span(
    name: str, parent: Context | None, kind: SpanKind, attributes: Attributes
) -> Iterator[Span]:
    with _tracer.start_as_current_span(
        name,
        context=parent,
        kind=kind,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            _failed(span, exc)
            raise


def span(
    name: str,
    attributes: Callable[[], Attributes],
    *,
    parent: Mapping[str, Any] | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
) -> AbstractContextManager[Span | None]:
    """A span around a block, the current span inside it; `parent` (W3C headers) makes it
    a child of that remote context instead of the current one. Yields None when off
    (`attributes` is then never called)."""
    if not ENABLED:
        return _OFF
    return _span(name, _context(parent), kind, attributes())


def event(name: str, attributes: Callable[[], Attributes] | None = None) -> None:
    """An event on the current span (when on)."""
    if ENABLED:
        trace.get_current_span().add_event(name, attributes() if attributes else None)


def set_attributes(span: Span | None, attributes: Callable[[], Attributes]) -> None:
    if span is not None:
        span.set_attributes(attributes())


def start_time() -> int:
    """Now in epoch nanoseconds, for `record_span` (0 when off). The machine's clock, not
    the service's: OpenTelemetry times the span's end (and every other span) by it."""
    return round(SYSTEM_CLOCK.epoch() * 1e9) if ENABLED else 0


def record_span(
    name: str,
    config: Mapping[str, Any] | None,
    started: int,
    attributes: Callable[[], Attributes],
) -> None:
    """A span that began at `started` and ends now, in the trace stored in a run's
    `config`: for operations that learn which run (and so which trace) they belong to
    only from the write that ends them (a submission by callback token, a cancel)."""
    if not ENABLED:
        return
    span = _tracer.start_span(
        name,
        context=_context(run_context(config)),
        attributes=attributes(),
        start_time=started or None,
    )
    span.end()


def run_attributes(record: RunRecord, actor: str | None = None) -> Attributes:
    """Attributes of an operation on a run."""
    return {
        RUN_ID: record.id,
        "agentrun.run.status": record.status.value,
        "agentrun.actor": actor or "",
    }


def create_attributes(record: RunRecord, created: bool) -> Attributes:
    model = record.config.get("model") or {}
    return {
        RUN_ID: record.id,
        "agentrun.run.replayed": not created,
        "agentrun.provider": str(model.get("provider", "")),
        "gen_ai.request.model": str(model.get("name", "")),
    }


def claim_ended(record: RunRecord) -> None:
    """An event on the drive span for the write that ended a claim (`agentrun.run.<status>`:
    suspended as `requires_action`, `completed`, `failed`, `queued` after a backoff); a
    failed run also fails the span."""
    if not ENABLED:
        return
    span = trace.get_current_span()
    status = record.status.value
    reason = record.waiting
    attributes: Attributes = {"agentrun.run.status": status}
    if reason is not None:
        attributes["agentrun.run.waiting_for"] = str(reason.doc()["type"])
    if isinstance(reason, ToolResults):
        attributes["agentrun.tool_calls.open"] = len(reason.call_ids)
    if isinstance(reason, Backoff):
        attributes["agentrun.backoff.seconds"] = round(reason.delay_seconds, 3)
    error = record.error
    if isinstance(error, Mapping) and error.get("type"):
        attributes["error.type"] = str(error["type"])
        span.set_attribute("error.type", str(error["type"]))
        span.set_status(Status(StatusCode.ERROR, _redactor.text(str(error.get("message")))[:500]))
    span.add_event(f"agentrun.run.{status}", attributes)
    span.set_attribute("agentrun.run.outcome", status)


# --- model calls (OpenTelemetry GenAI semantic conventions) ---------------------------------

#: The service's provider names → `gen_ai.provider.name` values.
GENAI_PROVIDERS = {
    "openai": "openai",
    "openai_chat": "openai",
    "openai-chat": "openai",
    "openai_responses": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
}
#: Model parameters → `gen_ai.request.*` attributes.
GENAI_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
}


def model_call(
    spec: Mapping[str, Any], request: ModelRequest, *, streamed: bool
) -> AbstractContextManager[Span | None]:
    """A `chat {model}` client span around one model call (a child of the drive span)."""
    if not ENABLED:
        return _OFF
    provider = str(spec.get("provider", ""))
    system = GENAI_PROVIDERS.get(provider, provider)
    attributes: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": system,
        "gen_ai.system": system,  # the name before semantic conventions 1.37
        "gen_ai.request.model": request.model,
        "agentrun.provider": provider,
        "agentrun.model.turn": request.turn,
        "agentrun.model.attempt": request.attempt,
        "agentrun.model.stream": streamed,
    }
    for key, name in GENAI_PARAMS.items():
        value = request.params.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[name] = value
    return _span(f"chat {request.model}", None, SpanKind.CLIENT, attributes)


def model_answered(span: Span | None, answer: ProviderTurn) -> None:
    """The response attributes of a model call's span."""
    if span is None:
        return
    usage = answer.usage
    attributes: Attributes = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    response_id = answer.response_id or answer.message_id
    if response_id:
        attributes["gen_ai.response.id"] = response_id
    if answer.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = (answer.finish_reason,)
    model = answer.raw.get("model") if isinstance(answer.raw, Mapping) else None
    if isinstance(model, str) and model:
        attributes["gen_ai.response.model"] = model
    if usage.cached_input_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_input_tokens
    if usage.reasoning_tokens:
        attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    span.set_attributes(attributes)


# --- webhook deliveries (HTTP client semantic conventions) ----------------------------------


def webhook_attributes(delivery: WebhookRecord) -> Attributes:
    """Where a delivery goes, without its path or query (a receiver's URL may hold a
    secret of its own)."""
    url = urlsplit(delivery.url)
    attributes: Attributes = {
        RUN_ID: delivery.run_id,
        "agentrun.webhook.id": delivery.webhook_id,
        "agentrun.webhook.event": delivery.event_type,
        "agentrun.webhook.attempt": delivery.attempts,
        "http.request.method": "POST",
        "url.scheme": url.scheme,
        "server.address": url.hostname or "",
    }
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        port = None
    if port is not None:
        attributes["server.port"] = port
    return attributes


def webhook_answered(span: Span | None, status_code: int | None, error: str | None) -> None:
    if span is None:
        return
    if status_code is not None:
        span.set_attribute("http.response.status_code", status_code)
    if error is not None:
        span.set_attribute(
            "error.type", str(status_code) if status_code is not None else error.split(":")[0]
        )
        span.set_status(Status(StatusCode.ERROR, _redactor.text(error)[:500]))
