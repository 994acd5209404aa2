"""The OTLP/HTTP receiver as an ASGI app: /v1/traces, /v1/logs, /v1/feedback, health probes."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ragsieve.collector import otlp
from ragsieve.collector.feedback import parse_feedback, require_json
from ragsieve.collector.intake import (
    BODY_DEADLINE_S,
    BODY_IDLE_S,
    DECODE_THREADS,
    BodyTimeout,
    Busy,
    ByteBudget,
    Claim,
    read_body,
)
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.settle import settle
from ragsieve.collector.store import Store
from ragsieve.collector.store.base import span_body
from ragsieve.collector.writer import Overloaded, SpanWriter, WriteJob
from ragsieve.evaluators.errors import (
    BadPayload,
    PayloadTooLarge,
    StoreError,
)

log = logging.getLogger(__name__)
FORWARD_TOPIC = "otlp"


class _Counters:
    def __init__(self) -> None:
        self.inflight = 0
        self.accepted_spans = 0
        self.rejected_spans = 0
        self.requests = 0
        self.client_disconnects = 0
        self.body_timeouts = 0


def create_app(
    store: Store,
    settings: CollectorSettings | None = None,
    *,
    token: str | None = None,
    run_settler: bool = True,
    forwarder_factory: Callable[[Store, CollectorSettings], Any] | None = None,
    body_idle_s: float = BODY_IDLE_S,
    body_deadline_s: float = BODY_DEADLINE_S,
    grpc_port: int | None = None,
) -> Starlette:
    """Build the receiver around an open store.

    Args:
        store: where spans go; every acknowledged span is committed before the 2xx.
        settings: limits, settle timing and forwarding.
        token: bearer token required on POST endpoints (None: no auth).
        run_settler: derive interactions in the background as traces go quiet.
        forwarder_factory: builds the outbox delivery worker when ``forward_otlp`` is set.
        body_idle_s: longest pause while a client sends its body (408 after it).
        body_deadline_s: longest time to receive a whole body (408 after it).
        grpc_port: also serve OTLP/gRPC on this port (0 = a free one; None = no gRPC), on
            ``settings.host``, sharing the writer and limits; its port is ``app.state.grpc_port``.
    """
    cfg = settings or CollectorSettings()
    counters = _Counters()
    writer: SpanWriter | None = None

    def _unauthorized(request: Request) -> bool:
        if token is None:
            return False
        got = request.headers.get("authorization", "")
        return not hmac.compare_digest(got.encode(), f"Bearer {token}".encode())

    budget = ByteBudget(cfg.max_inflight_bytes)
    decode_slots: anyio.CapacityLimiter | None = None

    async def _read_body(request: Request, claim: Claim) -> bytes:
        return await read_body(
            request,
            limit=cfg.max_body_bytes,
            claim=claim,
            idle_s=body_idle_s,
            deadline_s=body_deadline_s,
        )

    def _gone(request: Request) -> Response:
        counters.client_disconnects += 1
        log.debug("client %s disconnected before sending its whole body", request.client)
        return Response(status_code=400)  # nobody is left to read it

    def _timed_out(exc: BodyTimeout) -> Response:
        counters.body_timeouts += 1
        log.debug("%s", exc)
        return JSONResponse({"error": str(exc)}, status_code=408, headers={"Connection": "close"})

    def _error(encoding: otlp.Encoding, status: int, message: str, **headers: str) -> Response:
        grpc_code = {400: 3, 401: 16, 413: 3, 415: 3, 429: 8, 503: 14}.get(status, 2)
        return Response(
            otlp.status_body(encoding, grpc_code, message),
            status_code=status,
            media_type=otlp.content_type_for(encoding),
            headers=headers,
        )

    def _overloaded(encoding: otlp.Encoding, status: int, message: str) -> Response:
        return _error(encoding, status, message, **{"Retry-After": str(cfg.retry_after_s)})

    async def _ingest(request: Request, kind: str) -> Response:
        assert writer is not None and decode_slots is not None  # noqa: S101 - set in lifespan
        try:
            encoding = otlp.media_encoding(request.headers.get("content-type"))
        except BadPayload as exc:
            return _error("json", exc.status_code, str(exc))
        if _unauthorized(request):
            return _error(encoding, 401, "missing or wrong bearer token")
        claim = budget.claim()
        try:
            # Reading holds only the bytes received, never a request slot: a client that sends
            # nothing costs nothing but its socket until the idle deadline drops it.
            raw = await _read_body(request, claim)
            if counters.inflight >= cfg.max_inflight_requests:
                return _overloaded(encoding, 429, "too many requests in flight")
            counters.inflight += 1
            try:
                return await _decode_and_store(request, kind, encoding, raw, claim, writer)
            finally:
                counters.inflight -= 1
        except ClientDisconnect:
            return _gone(request)
        except BodyTimeout as exc:
            return _timed_out(exc)
        except Busy:
            return _overloaded(encoding, 429, "too many bytes in flight")
        except PayloadTooLarge as exc:
            return _error(encoding, 413, str(exc), Connection="close")
        except BadPayload as exc:
            log.info("rejected %s request: %s", kind, exc)
            return _error(encoding, exc.status_code, str(exc))
        finally:
            claim.release()

    async def _decode_and_store(
        request: Request,
        kind: str,
        encoding: otlp.Encoding,
        raw: bytes,
        claim: Claim,
        writer: SpanWriter,
    ) -> Response:
        enc_header = request.headers.get("content-encoding")

        def decode() -> tuple[WriteJob, int, str]:
            body = otlp.decompress(raw, enc_header, cfg.max_body_bytes, claim.charge)
            if kind == "traces":
                dec = otlp.decode_traces(body, encoding)
                if len(dec.spans) > cfg.max_spans_per_request:
                    raise PayloadTooLarge(
                        f"{len(dec.spans)} spans in one request; the limit is"
                        f" {cfg.max_spans_per_request}: send smaller batches"
                    )
                job = WriteJob(spans=dec.spans, bodies=[span_body(s) for s in dec.spans])
                if cfg.forward_otlp and dec.spans and dec.request is not None:
                    as_received = encoding == "protobuf" and not dec.rejected
                    payload = body if as_received else otlp.as_protobuf(dec.request)
                    job.forward.append(
                        (FORWARD_TOPIC, payload, "application/x-protobuf", len(dec.spans))
                    )
                return job, dec.rejected, otlp.rejection_message(dec.reasons, dec.rejected)
            logs = otlp.decode_logs(body, encoding)
            msg = otlp.rejection_message(logs.reasons, logs.rejected)
            return WriteJob(log_events=logs.events), logs.rejected, msg

        assert decode_slots is not None  # noqa: S101 - set in lifespan
        try:
            job, rejected, message = await anyio.to_thread.run_sync(decode, limiter=decode_slots)
        except (BadPayload, Busy) as exc:
            # Its traceback holds the worker's frames (the decompressed body, the parsed request)
            # in a cycle through anyio's future that only the GC would free: concurrent bombs
            # piled up gigabytes that way. Drop those frames now.
            raise exc.with_traceback(None) from None
        if job.spans or job.log_events:
            try:
                future = writer.submit(job)
            except Overloaded:
                return _overloaded(encoding, 503, "store write queue is full")
            try:
                await asyncio.wrap_future(future)
            except StoreError as exc:
                return _overloaded(encoding, 503, f"store unavailable: {exc}")
            except (ValueError, OverflowError, UnicodeError) as exc:
                # Data the store cannot hold: permanent, so the client must not retry it.
                return _error(encoding, 400, f"cannot store this data: {exc}"[:300])
            except Exception as exc:  # never a 500: the client must keep the data and retry
                log.exception("store write failed")
                return _overloaded(encoding, 503, f"store write failed: {type(exc).__name__}")
        counters.requests += 1
        counters.accepted_spans += len(job.spans)
        counters.rejected_spans += rejected
        if rejected:
            log.warning("%s: %s", kind, message)
        body_out = (
            otlp.trace_response(encoding, rejected, message)
            if kind == "traces"
            else otlp.logs_response(encoding, rejected, message)
        )
        return Response(body_out, media_type=otlp.content_type_for(encoding))

    async def traces(request: Request) -> Response:
        return await _ingest(request, "traces")

    async def logs(request: Request) -> Response:
        return await _ingest(request, "logs")

    async def feedback(request: Request) -> Response:
        if _unauthorized(request):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)
        claim = budget.claim()
        try:
            require_json(request.headers.get("content-type"))
            fb = parse_feedback(await _read_body(request, claim))
        except ClientDisconnect:
            return _gone(request)
        except BodyTimeout as exc:
            return _timed_out(exc)
        except Busy:
            return JSONResponse(
                {"error": "too many bytes in flight"},
                status_code=429,
                headers={"Retry-After": str(cfg.retry_after_s)},
            )
        except BadPayload as exc:
            headers = {"Connection": "close"} if exc.status_code == 413 else None
            return JSONResponse({"error": str(exc)}, status_code=exc.status_code, headers=headers)
        finally:
            claim.release()
        try:
            trace_id = await run_in_threadpool(store.write_feedback, fb)
        except StoreError as exc:
            return JSONResponse(
                {"error": str(exc)},
                status_code=503,
                headers={"Retry-After": str(cfg.retry_after_s)},
            )
        return JSONResponse({"stored": True, "trace_id": trace_id}, status_code=200)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        try:
            outbox = await run_in_threadpool(store.outbox_stats)
        except StoreError as exc:
            return JSONResponse({"status": "unavailable", "error": str(exc)}, status_code=503)
        forwarder = getattr(app.state, "forwarder", None)
        worker = getattr(forwarder, "worker", None)
        return JSONResponse(
            {
                "status": "ready",
                "queued_writes": writer.depth if writer else 0,
                "accepted_spans": counters.accepted_spans,
                "rejected_spans": counters.rejected_spans,
                "inflight_requests": counters.inflight,
                "inflight_bytes": budget.used,
                "client_disconnects": counters.client_disconnects,
                "body_timeouts": counters.body_timeouts,
                "outbox": outbox,
                "forwarder": dict(vars(worker.stats)) if worker is not None else None,
            }
        )

    async def _settle_loop() -> None:
        passes = 0
        while True:
            try:
                await run_in_threadpool(
                    settle, store, quiet_s=cfg.quiet_period_s, max_wait_s=cfg.max_wait_s
                )
                passes += 1
                if passes % 60 == 0:  # delivered payloads are kept a while for inspection
                    await run_in_threadpool(store.prune_outbox, cfg.outbox_retention_s)
            except Exception:  # keep settling after a transient store error
                log.exception("settle pass failed")
            await asyncio.sleep(cfg.settle_interval_s)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        nonlocal writer, decode_slots
        decode_slots = anyio.CapacityLimiter(DECODE_THREADS)
        store.late_window_s = cfg.late_window_s
        writer = SpanWriter(store, max_queued=cfg.max_queued_writes)
        tasks: list[asyncio.Task[None]] = []
        if run_settler:
            tasks.append(asyncio.create_task(_settle_loop()))
        grpc_server = None
        if grpc_port is not None:
            from ragsieve.collector.grpc_receiver import GrpcReceiver, start_grpc

            receiver = GrpcReceiver(cfg, writer, decode_slots, budget, counters, token)
            grpc_server, app.state.grpc_port = await start_grpc(receiver, cfg.host, grpc_port)
        if cfg.forward_otlp:
            factory = forwarder_factory or _default_forwarder
            app.state.forwarder = factory(store, cfg)
            tasks.append(asyncio.create_task(app.state.forwarder.run()))
        try:
            yield
        finally:
            if grpc_server is not None:  # finish the Exports in flight, then refuse new ones
                await grpc_server.stop(grace=5.0)
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await run_in_threadpool(writer.close)

    app = Starlette(
        routes=[
            Route("/v1/traces", traces, methods=["POST"]),
            Route("/v1/logs", logs, methods=["POST"]),
            Route("/v1/feedback", feedback, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.counters = counters
    app.state.store = store
    app.state.byte_budget = budget  # shared by HTTP and gRPC requests in flight
    return app


def _default_forwarder(store: Store, cfg: CollectorSettings) -> Any:
    from ragsieve.collector.forward import Forwarder

    if cfg.forward_otlp is None:  # pragma: no cover - guarded by the caller
        raise ValueError("forward_otlp is not set")
    return Forwarder(
        store,
        cfg.forward_otlp,
        max_spans_per_s=cfg.forward_max_spans_per_s,
        headers=dict(cfg.forward_headers) or None,
    )
