"""Per-operation statistics and optional OpenTelemetry spans (issue 16, item 6).

Every ``write`` and ``retrieve`` result carries an :class:`~.types.OperationStats`: the
LLM calls it made, their tokens (the provider's ``usage`` when it reports one, else an
estimate, flagged by ``tokens_estimated``) and the wall-clock time of each step.

OpenTelemetry: when the ``opentelemetry-api`` package is importable (``pip install
'oramem[otel]'``), each operation is a span (``oramem.knowledge.write``,
``oramem.knowledge.retrieve``, ``oramem.knowledge.job``) with one child span per step,
created through the global tracer provider or the ``tracer_provider`` given to
``KnowledgeMemory``. oramem configures no SDK and no exporter: without an SDK set up by the
application the API's tracer is a no-op, and nothing ever leaves the process because of
oramem. Span attributes are counts, step names and ids; never message, fact or query text.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator, Optional

from .types import OperationStats, PipelineStep, StepTiming

__all__ = ["record_step", "stats_of", "operation_span", "otel_available"]

_otel_trace: Any
try:  # optional: the oramem[otel] extra
    from opentelemetry import trace as _otel_trace
except ImportError:  # pragma: no cover - exercised when the extra is missing
    _otel_trace = None


def otel_available() -> bool:
    return _otel_trace is not None


def record_step(run: Any, name: str, started: float, data: dict[str, Any]) -> None:
    """One finished step of ``run`` (a WriteRun or RetrieveState): its timing always, its data
    in the verbose trace, and a child span when a span of the operation is recording."""
    end = time.perf_counter()
    ms = (end - started) * 1000.0
    run.timings.append(StepTiming(name, ms))
    if run.trace is not None:
        run.trace.steps.append(PipelineStep(name, ms, data))
    tracer = getattr(run, "tracer", None)
    if tracer is not None:
        now_ns = time.time_ns()
        span = tracer.start_span(f"oramem.knowledge.{name}", start_time=now_ns - int((end - started) * 1e9),
                                 attributes=_attributes(data))
        span.end(end_time=now_ns)


def _attributes(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, bool) or isinstance(value, (int, float)):
            out[f"oramem.{key}"] = value
        elif isinstance(value, dict) and all(isinstance(v, int) for v in value.values()):
            for k, v in value.items():
                out[f"oramem.{key}.{k}"] = v
    return out


def stats_of(run: Any, total_ms: float) -> OperationStats:
    call = run.call
    return OperationStats(llm_calls=call.calls, tokens=call.usage, tokens_estimated=call.estimated,
                          steps=tuple(run.timings), total_ms=total_ms)


def tracer_for(provider: Any) -> Optional[Any]:
    """A tracer of ``provider`` (else the global provider) when the API is installed."""
    if _otel_trace is None:
        return None
    if provider is not None:
        return provider.get_tracer("oramem.knowledge")
    return _otel_trace.get_tracer("oramem.knowledge")


@contextlib.contextmanager
def operation_span(provider: Any, name: str, run: Any = None, **attributes: Any) -> Iterator[Optional[Any]]:
    """The span of one operation, current for its duration (step spans become its
    children); yields None without the API. ``provider``: the ``tracer_provider`` given to
    KnowledgeMemory, or None for the global one."""
    tracer = tracer_for(provider)
    if tracer is None:
        yield None
        return
    attrs = {f"oramem.{k}": v for k, v in attributes.items() if isinstance(v, (str, int, float, bool))}
    with tracer.start_as_current_span(f"oramem.knowledge.{name}", attributes=attrs) as span:
        if run is not None and span.is_recording():
            # step spans only under a recording span: with the API alone (no SDK) or an
            # unsampled operation they would be no-ops that still cost their calls
            run.tracer = tracer
        yield span


def finish_span(span: Any, stats: OperationStats, success: bool = True) -> None:
    if span is None:
        return
    span.set_attribute("oramem.llm_calls", stats.llm_calls)
    span.set_attribute("oramem.tokens.input", stats.tokens.input_tokens)
    span.set_attribute("oramem.tokens.output", stats.tokens.output_tokens)
    span.set_attribute("oramem.tokens.total", stats.tokens.total_tokens)
    span.set_attribute("oramem.tokens_estimated", stats.tokens_estimated)
    span.set_attribute("oramem.success", success)
