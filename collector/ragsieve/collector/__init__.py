"""The collector: OTLP spans in, stored, derived into interactions, forwarded.

Rooms, lowest first; each imports only the rooms before it (``tests/test_layering.py``), and
``receive``, ``derive`` and ``forward`` never import one another: they meet in the store.

- ``wire/``: request bytes decoded into ``SpanRecord``s, ``LogEvent``s and ``Feedback``; OTLP
  responses.
- ``store/``: spans, interactions, feedback, outbox and job results, chosen by URL scheme;
  ``retention`` purges old rows.
- ``receive/``: OTLP over HTTP and gRPC, and feedback, written to the store in group commits.
- ``derive/``: where a span becomes an interaction. ``derive/settle.py`` picks the traces that
  went quiet, and ``derive(spans, log_events, feedback)`` in ``derive/normalize.py`` turns one
  trace into one ``RagInteraction`` (steps in ``derive/assemble.py``).
- ``forward/``: the durable outbox drained to Phoenix or any OTLP/HTTP endpoint.
- ``serve/``: the ASGI app whose lifespan runs receive, settle and forward, and uvicorn.

Beside the rooms: ``instrument`` (the public OpenTelemetry helper for a RAG app; imports no room),
``settings`` (``CollectorSettings``; imports no room), ``timeutil`` (durations and windows as
typed), ``cliopts`` (options every ``ragsieve`` command shares) and ``cli`` (``ragsieve collector
serve``, ``ragsieve interactions``).

This package gives ``SpanRecord``, ``LogEvent``, ``Store``, ``open_store`` and, lazily,
``create_app`` and ``instrument``.
"""

from __future__ import annotations

from ragsieve.collector.store import Store, open_store
from ragsieve.collector.wire.spans import LogEvent, SpanRecord

__all__ = ["LogEvent", "SpanRecord", "Store", "create_app", "instrument", "open_store"]


def __getattr__(name: str) -> object:
    # Lazy: the ASGI app pulls in starlette; instrument pulls in the OTel SDK.
    if name == "create_app":
        from ragsieve.collector.serve.app import create_app

        return create_app
    if name == "instrument":
        from ragsieve.collector.instrument import instrument

        return instrument
    raise AttributeError(name)
