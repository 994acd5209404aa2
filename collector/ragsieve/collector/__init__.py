"""Getting spans in and keeping them: OTLP receiver, store, derivation, forwarding."""

from __future__ import annotations

from ragsieve.collector.spans import LogEvent, SpanRecord
from ragsieve.collector.store import Store, open_store

__all__ = ["LogEvent", "SpanRecord", "Store", "create_app", "instrument", "open_store"]


def __getattr__(name: str) -> object:
    # Lazy: the ASGI app pulls in starlette; instrument pulls in the OTel SDK.
    if name == "create_app":
        from ragsieve.collector.app import create_app

        return create_app
    if name == "instrument":
        from ragsieve.collector.instrument import instrument

        return instrument
    raise AttributeError(name)
