"""Forward received OTLP payloads from the durable outbox to Phoenix (or any OTLP/HTTP endpoint)."""

from __future__ import annotations

import asyncio
import email.utils
import gzip
import logging
import time
from collections.abc import Mapping

import httpx

from ragsieve.collector.forward import outbound
from ragsieve.collector.forward.outbox import OutboxWorker, Outcome
from ragsieve.collector.store import OutboxItem, Store
from ragsieve.collector.wire import codec, traces

log = logging.getLogger(__name__)

TOPIC = "otlp"
PROTOBUF = "application/x-protobuf"
RETRYABLE = frozenset({429, 502, 503, 504})
THROTTLE = frozenset({429, 503})


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or HTTP-date), if any."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # HTTP-dates are GMT by definition
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def _to_protobuf(item: OutboxItem) -> bytes:
    if item.content_type.split(";")[0].strip().lower() in (PROTOBUF, "application/protobuf"):
        return item.payload
    # Phoenix's endpoint takes protobuf only; rows queued as OTLP/JSON are re-encoded.
    decoded = traces.decode_traces(item.payload, "json")
    if decoded.request is None:
        raise ValueError("JSON payload has no request to re-encode")
    return codec.as_protobuf(decoded.request)


class Forwarder:
    """Drains the ``otlp`` outbox topic to an OTLP/HTTP traces URL at an adaptive pace.

    Phoenix answers 200 as soon as spans are in its in-memory queue and stores only a few hundred
    spans/s; a full queue answers 503. The pace therefore starts at ``max_spans_per_s``, halves
    on every 429/503 and creeps back up with each delivery (AIMD), so the outbox, not Phoenix's
    memory, holds the backlog.

    2xx: delivered. 429/502/503/504, other 5xx, connection errors and timeouts: retried with
    backoff, honouring ``Retry-After``. Any other 4xx: logged, counted and parked in the outbox as
    a dead letter (kept with its error, never dropped silently).

    Example:
        >>> await Forwarder(store, "http://127.0.0.1:6006/v1/traces").run()  # doctest: +SKIP
    """

    def __init__(
        self,
        store: Store,
        url: str,
        *,
        max_spans_per_s: float = 200.0,
        headers: Mapping[str, str] | None = None,
        min_spans_per_s: float | None = None,
        timeout_s: float = 10.0,
        compress: bool = True,
        batch: int = 50,
        max_backoff_s: float = 60.0,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"forward URL must be http(s)://..., got {url!r}")
        if max_spans_per_s <= 0:
            raise ValueError(f"max_spans_per_s must be > 0, got {max_spans_per_s}")
        self.url = url
        self.max_spans_per_s = max_spans_per_s
        self.min_spans_per_s = min_spans_per_s or max(max_spans_per_s / 64, 1.0)
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self.compress = compress
        self.rejected_spans = 0  # partial-success rejections reported by the endpoint
        self.worker = OutboxWorker(
            store,
            TOPIC,
            self.send,
            max_items_per_s=max_spans_per_s,
            batch=batch,
            base_backoff_s=min(0.5, max_backoff_s),
            max_backoff_s=max_backoff_s,
        )
        self._client: httpx.AsyncClient | None = None

    @property
    def spans_per_s(self) -> float:
        """The current pace."""
        return self.worker.max_items_per_s or self.max_spans_per_s

    def _slow_down(self) -> None:
        self.worker.max_items_per_s = max(self.spans_per_s / 2, self.min_spans_per_s)

    def _speed_up(self) -> None:
        step = self.max_spans_per_s / 20
        self.worker.max_items_per_s = min(self.spans_per_s + step, self.max_spans_per_s)

    async def send(self, item: OutboxItem) -> Outcome:
        """POST one outbox row; map the answer to an :class:`Outcome`."""
        try:
            body = await asyncio.to_thread(_to_protobuf, item)
        except Exception as exc:  # undecodable row: it can never be delivered
            return Outcome(False, error=f"cannot re-encode as protobuf: {exc}", dead_letter=True)
        headers = {**self.headers, "Content-Type": PROTOBUF}
        if self.compress:
            body = await asyncio.to_thread(gzip.compress, body, 1)
            headers["Content-Encoding"] = "gzip"
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout_s)
        try:
            resp = await outbound.post(
                self._client, self.url, total_s=self.timeout_s, content=body, headers=headers
            )
        except httpx.TransportError as exc:  # refused, reset, timed out: the endpoint is away
            return Outcome(False, error=f"{type(exc).__name__}: {exc}".rstrip(": "))
        code = resp.status_code
        if 200 <= code < 300:
            self._check_partial(resp, item)
            self._speed_up()
            return Outcome(True)
        reason = f"HTTP {code}: {resp.text[:200]}"
        retry_after = parse_retry_after(resp.headers.get("retry-after"))
        if code in THROTTLE:
            self._slow_down()
            log.info(
                "%s answered %d; pacing down to %.0f spans/s", self.url, code, self.spans_per_s
            )
        if code in RETRYABLE or code >= 500:
            return Outcome(False, retry_after_s=retry_after, error=reason)
        log.error("%s refused %d spans for good: %s", self.url, item.items, reason)
        return Outcome(False, error=reason, dead_letter=True)

    def _check_partial(self, resp: httpx.Response, item: OutboxItem) -> None:
        if not resp.content or "protobuf" not in resp.headers.get("content-type", ""):
            return
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        answer = ExportTraceServiceResponse()
        try:
            answer.ParseFromString(resp.content)
        except Exception:  # an odd body on a 2xx still means accepted
            return
        rejected = answer.partial_success.rejected_spans
        if rejected:
            self.rejected_spans += rejected
            log.warning(
                "%s rejected %d of %d spans: %s",
                self.url,
                rejected,
                item.items,
                answer.partial_success.error_message,
            )

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Deliver until cancelled (the app lifespan cancels it at shutdown) or ``stop`` is set."""
        try:
            await self.worker.run(stop)
        finally:
            if self._client is not None:
                await self._client.aclose()
                self._client = None


__all__ = ["Forwarder", "TOPIC", "parse_retry_after"]
