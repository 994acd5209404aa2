"""The HTTP receiver: one object answering the OTLP routes, ``/v1/feedback`` and ``/readyz``.

:class:`Receiver` is built by the app's lifespan around the open writer; each route calls one of
its methods. Every signal goes through :meth:`Receiver.ingest`: authorize, read the body within
its limits, decode it in a worker thread (:mod:`ragsieve.collector.receive.signals`), wait for
the commit, answer. The same error always gets the same status, whichever signal it came from.
"""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from ragsieve.collector.receive.intake import BodyTimeout, Busy, ByteBudget, Claim, read_body
from ragsieve.collector.receive.signals import Decoded, Signal
from ragsieve.collector.receive.writer import SpanWriter, WriteRefused, commit
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import Store
from ragsieve.collector.wire import codec
from ragsieve.collector.wire.feedback import parse_feedback, require_json
from ragsieve.evaluators.errors import BadPayload, PayloadTooLarge, StoreError

log = logging.getLogger(__name__)

_GRPC_CODES = {400: 3, 401: 16, 413: 3, 415: 3, 429: 8, 503: 14}  # HTTP status -> google.rpc code


class Counters:
    """What ``/readyz`` reports; shared by the HTTP and gRPC receivers."""

    def __init__(self) -> None:
        self.inflight = 0
        self.accepted_spans = 0
        self.rejected_spans = 0
        self.requests = 0
        self.client_disconnects = 0
        self.body_timeouts = 0

    def count(self, signal: str, decoded: Decoded) -> None:
        """Count one acknowledged request."""
        self.requests += 1
        self.accepted_spans += len(decoded.job.spans)
        self.rejected_spans += decoded.rejected
        if decoded.rejected:
            log.warning("%s: %s", signal, decoded.message)


@dataclass
class Receiver:
    """The request handlers around one store, writer, byte budget and decode pool."""

    store: Store
    cfg: CollectorSettings
    writer: SpanWriter
    budget: ByteBudget
    counters: Counters
    decode_slots: anyio.CapacityLimiter
    token: str | None = None
    body_idle_s: float = 10.0
    body_deadline_s: float = 30.0
    forwarder: Any = field(default=None)

    # -- OTLP signals ----------------------------------------------------------------------------
    async def ingest(self, request: Request, signal: Signal) -> Response:
        """Store one OTLP/HTTP request of ``signal``; the 2xx means every item is durable."""
        try:
            encoding = codec.media_encoding(request.headers.get("content-type"))
        except BadPayload as exc:
            return self._error("json", exc.status_code, str(exc))
        if not self._authorized(request):
            return self._error(encoding, 401, "missing or wrong bearer token")
        claim = self.budget.claim()
        try:
            # Reading holds only the bytes received, never a request slot: a client that sends
            # nothing costs nothing but its socket until the idle deadline drops it.
            raw = await self._read_body(request, claim)
            return await self._within_inflight(request, signal, encoding, raw, claim)
        except ClientDisconnect:
            return self._gone(request)
        except BodyTimeout as exc:
            return self._timed_out(exc)
        except Busy:
            return self._overloaded(encoding, 429, "too many bytes in flight")
        except PayloadTooLarge as exc:
            return self._error(encoding, 413, str(exc), Connection="close")
        except BadPayload as exc:
            log.info("rejected %s request: %s", signal.name, exc)
            return self._error(encoding, exc.status_code, str(exc))
        finally:
            claim.release()

    async def _within_inflight(
        self, request: Request, signal: Signal, encoding: codec.Encoding, raw: bytes, claim: Claim
    ) -> Response:
        if self.counters.inflight >= self.cfg.max_inflight_requests:
            return self._overloaded(encoding, 429, "too many requests in flight")
        self.counters.inflight += 1
        try:
            content_encoding = request.headers.get("content-encoding")
            decoded = await self._decode(signal, encoding, raw, content_encoding, claim)
            return await self._store(signal, encoding, decoded)
        finally:
            self.counters.inflight -= 1

    async def _decode(
        self,
        signal: Signal,
        encoding: codec.Encoding,
        raw: bytes,
        content_encoding: str | None,
        claim: Claim,
    ) -> Decoded:
        def work() -> Decoded:
            body = codec.decompress(raw, content_encoding, self.cfg.max_body_bytes, claim.charge)
            return signal.decode(body, encoding, self.cfg)

        try:
            return await anyio.to_thread.run_sync(work, limiter=self.decode_slots)
        except (BadPayload, Busy) as exc:
            # Its traceback holds the worker's frames (the decompressed body, the parsed request)
            # in a cycle through anyio's future that only the GC would free: concurrent bombs
            # piled up gigabytes that way. Drop those frames now.
            raise exc.with_traceback(None) from None

    async def _store(self, signal: Signal, encoding: codec.Encoding, decoded: Decoded) -> Response:
        job = decoded.job
        if job.spans or job.log_events:
            try:
                await commit(self.writer, job)
            except WriteRefused as exc:
                if exc.retry:
                    return self._overloaded(encoding, 503, str(exc))
                return self._error(encoding, 400, str(exc))
        self.counters.count(signal.name, decoded)
        body = signal.respond(encoding, decoded.rejected, decoded.message)
        return Response(body, media_type=codec.content_type_for(encoding))

    # -- feedback and probes ---------------------------------------------------------------------
    async def feedback(self, request: Request) -> Response:
        """Store one feedback item (JSON); answers the trace id it joined."""
        if not self._authorized(request):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)
        claim = self.budget.claim()
        try:
            require_json(request.headers.get("content-type"))
            fb = parse_feedback(await self._read_body(request, claim))
        except ClientDisconnect:
            return self._gone(request)
        except BodyTimeout as exc:
            return self._timed_out(exc)
        except Busy:
            return self._json_retry({"error": "too many bytes in flight"}, 429)
        except BadPayload as exc:
            headers = {"Connection": "close"} if exc.status_code == 413 else None
            return JSONResponse({"error": str(exc)}, status_code=exc.status_code, headers=headers)
        finally:
            claim.release()
        try:
            trace_id = await run_in_threadpool(self.store.write_feedback, fb)
        except StoreError as exc:
            return self._json_retry({"error": str(exc)}, 503)
        return JSONResponse({"stored": True, "trace_id": trace_id}, status_code=200)

    async def readyz(self, request: Request) -> Response:
        """Ready when a write to the store can succeed now; counters, queue depth, outbox state.

        Not ready (503 with the reason) when the store is unreachable, read-only, full, or its
        file was deleted or replaced: a probe that only read would say ready to every one.
        """
        try:
            problem = await run_in_threadpool(self.store.write_problem)
            outbox = await run_in_threadpool(self.store.outbox_stats)
        except StoreError as exc:
            problem = str(exc)
        if problem is not None:
            return JSONResponse({"status": "unavailable", "error": problem}, status_code=503)
        worker = getattr(self.forwarder, "worker", None)
        c = self.counters
        return JSONResponse(
            {
                "status": "ready",
                "queued_writes": self.writer.depth,
                "accepted_spans": c.accepted_spans,
                "rejected_spans": c.rejected_spans,
                "inflight_requests": c.inflight,
                "inflight_bytes": self.budget.used,
                "client_disconnects": c.client_disconnects,
                "body_timeouts": c.body_timeouts,
                "outbox": outbox,
                "forwarder": dict(vars(worker.stats)) if worker is not None else None,
            }
        )

    # -- helpers -----------------------------------------------------------------------------------
    def _authorized(self, request: Request) -> bool:
        if self.token is None:
            return True
        got = request.headers.get("authorization", "")
        return hmac.compare_digest(got.encode(), f"Bearer {self.token}".encode())

    async def _read_body(self, request: Request, claim: Claim) -> bytes:
        return await read_body(
            request,
            limit=self.cfg.max_body_bytes,
            claim=claim,
            idle_s=self.body_idle_s,
            deadline_s=self.body_deadline_s,
        )

    def _gone(self, request: Request) -> Response:
        self.counters.client_disconnects += 1
        log.debug("client %s disconnected before sending its whole body", request.client)
        return Response(status_code=400)  # nobody is left to read it

    def _timed_out(self, exc: BodyTimeout) -> Response:
        self.counters.body_timeouts += 1
        log.debug("%s", exc)
        return JSONResponse({"error": str(exc)}, status_code=408, headers={"Connection": "close"})

    def _error(
        self, encoding: codec.Encoding, status: int, message: str, **headers: str
    ) -> Response:
        return Response(
            codec.status_body(encoding, _GRPC_CODES.get(status, 2), message),
            status_code=status,
            media_type=codec.content_type_for(encoding),
            headers=headers,
        )

    def _overloaded(self, encoding: codec.Encoding, status: int, message: str) -> Response:
        return self._error(
            encoding, status, message, **{"Retry-After": str(self.cfg.retry_after_s)}
        )

    def _json_retry(self, body: dict[str, Any], status: int) -> Response:
        headers = {"Retry-After": str(self.cfg.retry_after_s)}
        return JSONResponse(body, status_code=status, headers=headers)


__all__ = ["Counters", "Receiver"]
