"""Observability (issue 16 item 6): OpenTelemetry spans of write, retrieve and background jobs
through the API only (``oramem[otel]``); a recording tracer provider stands in for an SDK.
Skipped with the printed reason when opentelemetry-api is not installed."""

from __future__ import annotations

import contextlib

import pytest

from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.knowledge.observe import otel_available

from .helpers import extract

if not otel_available():
    REASON = "OpenTelemetry tests skipped: opentelemetry-api is not installed (pip install 'oramem[otel]')"
    print(REASON)
    pytest.skip(REASON, allow_module_level=True)

from opentelemetry import trace  # noqa: E402


class Span(trace.Span):
    def __init__(self, name, parent, attributes, start_time, log):
        self.name, self.parent, self.attributes = name, parent, dict(attributes or {})
        self.start_time, self.end_time = start_time, None
        self._ctx = trace.SpanContext(trace_id=1, span_id=len(log) + 1, is_remote=False)
        log.append(self)

    def end(self, end_time=None):
        self.end_time = end_time if end_time is not None else -1

    def get_span_context(self):
        return self._ctx

    def set_attributes(self, attributes):
        self.attributes.update(attributes)

    def set_attribute(self, key, value):
        self.attributes[key] = value

    def add_event(self, name, attributes=None, timestamp=None):
        pass

    def update_name(self, name):
        self.name = name

    def is_recording(self):
        return True

    def set_status(self, status, description=None):
        pass

    def record_exception(self, exception, attributes=None, timestamp=None, escaped=False):
        pass


class Tracer(trace.Tracer):
    def __init__(self, log, span_class=None):
        self.log, self.span_class = log, span_class or Span

    def start_span(self, name, context=None, kind=trace.SpanKind.INTERNAL, attributes=None, links=None,
                   start_time=None, record_exception=True, set_status_on_exception=True):
        parent = trace.get_current_span(context)
        return self.span_class(name, parent if isinstance(parent, Span) else None, attributes, start_time, self.log)

    @contextlib.contextmanager
    def start_as_current_span(self, name, context=None, kind=trace.SpanKind.INTERNAL, attributes=None, links=None,
                              start_time=None, record_exception=True, set_status_on_exception=True, end_on_exit=True):
        span = self.start_span(name, context, kind, attributes, links, start_time)
        with trace.use_span(span, end_on_exit=end_on_exit):
            yield span


class Provider(trace.TracerProvider):
    def __init__(self, span_class=None):
        self.spans: list = []
        self.names: list = []
        self.span_class = span_class

    def get_tracer(self, instrumenting_module_name, *args, **kwargs):
        self.names.append(instrumenting_module_name)
        return Tracer(self.spans, self.span_class)


def test_write_retrieve_and_job_spans_carry_counts_not_text(engine, store, llm, clock):
    provider = Provider()
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock, tracer_provider=provider)
    try:
        llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana keeps secret bees")]))
        r = km.write("a1", "Ana keeps secret bees", "Pedro")
        op = [s for s in provider.spans if s.name == "oramem.knowledge.write"]
        assert len(op) == 1 and op[0].end_time is not None and op[0].parent is None
        assert op[0].attributes["oramem.llm_calls"] == r.stats.llm_calls
        assert op[0].attributes["oramem.tokens.total"] == r.tokens_used.total_tokens
        assert op[0].attributes["oramem.success"] is True
        steps = [s for s in provider.spans if s.parent is op[0]]
        assert [s.name for s in steps] == [f"oramem.knowledge.{x.name}" for x in r.stats.steps]
        assert all(s.end_time >= s.start_time for s in steps)
        assert set(provider.names) == {"oramem.knowledge"}

        provider.spans.clear()
        q = km.retrieve("a1", "what does Ana keep?")
        names = [s.name for s in provider.spans]
        assert names[0] == "oramem.knowledge.retrieve" and "oramem.knowledge.plan" in names
        assert all(s.parent is provider.spans[0] for s in provider.spans[1:])
        assert q.stats.llm_calls == 0

        provider.spans.clear()
        llm.route("extract", extract([("Rui", "person")], [("Rui", "Rui sails boats")]))
        job = km.write("a1", "Rui sails boats", "Pedro", background=True)
        km.process_jobs()
        jobs = [s for s in provider.spans if s.name == "oramem.knowledge.job"]
        assert len(jobs) == 1 and jobs[0].attributes["oramem.job_id"] == job.job_id
        # no message, fact or query text in any span
        for s in provider.spans:
            for v in s.attributes.values():
                assert not (isinstance(v, str) and ("bees" in v or "boats" in v or "Ana" in v)), (s.name, v)
    finally:
        km.close()


def test_tracer_provider_is_checked(store, llm):
    with pytest.raises(TypeError, match="TracerProvider"):
        KnowledgeMemory(store, llm, tracer_provider=object())


class QuietSpan(Span):
    def is_recording(self):
        return False


def test_no_step_spans_under_an_operation_span_that_does_not_record(engine, store, llm, clock):
    provider = Provider(QuietSpan)  # an unsampled operation, or the API's no-op
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock, tracer_provider=provider)
    try:
        llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana keeps secret bees")]))
        r = km.write("a1", "Ana keeps secret bees", "Pedro")
        assert r.success and r.stats.steps  # the steps are still timed in the result
        assert [s.name for s in provider.spans] == ["oramem.knowledge.write"]
        provider.spans.clear()
        km.retrieve("a1", "what does Ana keep?")
        assert [s.name for s in provider.spans] == ["oramem.knowledge.retrieve"]
    finally:
        km.close()
