"""The OTLP/HTTP receiver as an ASGI app: /v1/traces, /v1/logs, /v1/feedback, health probes.

The routes are thin: each hands its request to the
:class:`~ragsieve.collector.receive.receiver.Receiver` the lifespan builds around the open store
(with the writer thread, the decode pool and, when configured, the gRPC server, the settler and
the forwarder).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ragsieve.collector.derive.settle import LARGE_TRACE_SPANS, SettleBudget, settle
from ragsieve.collector.receive.intake import (
    BODY_DEADLINE_S,
    BODY_IDLE_S,
    DECODE_THREADS,
    ByteBudget,
)
from ragsieve.collector.receive.receiver import Counters, Receiver
from ragsieve.collector.receive.signals import FORWARD_TOPIC, LOGS, TRACES
from ragsieve.collector.receive.writer import SpanWriter
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import StoreError

log = logging.getLogger(__name__)
ForwarderFactory = Callable[[Store, CollectorSettings], Any]


def create_app(
    store: Store,
    settings: CollectorSettings | None = None,
    *,
    token: str | None = None,
    run_settler: bool = True,
    forwarder_factory: ForwarderFactory | None = None,
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

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        rx = Receiver(
            store,
            cfg,
            SpanWriter(store, max_queued=cfg.max_queued_writes),
            app.state.byte_budget,
            app.state.counters,
            anyio.CapacityLimiter(DECODE_THREADS),
            token=token,
            body_idle_s=body_idle_s,
            body_deadline_s=body_deadline_s,
        )
        store.late_window_s = cfg.late_window_s
        app.state.receiver = rx
        async with _background(app, rx, run_settler, forwarder_factory, grpc_port):
            yield

    app = Starlette(routes=ROUTES, lifespan=lifespan)
    app.state.counters = Counters()
    app.state.store = store
    app.state.byte_budget = ByteBudget(cfg.max_inflight_bytes)  # shared by HTTP and gRPC
    return app


def _receiver(request: Request) -> Receiver:
    built: Receiver = request.app.state.receiver  # set by the lifespan
    return built


async def _traces(request: Request) -> Response:
    return await _receiver(request).ingest(request, TRACES)


async def _logs(request: Request) -> Response:
    return await _receiver(request).ingest(request, LOGS)


async def _feedback(request: Request) -> Response:
    return await _receiver(request).feedback(request)


async def _readyz(request: Request) -> Response:
    return await _receiver(request).readyz(request)


async def _healthz(request: Request) -> Response:
    """Alive (answers without touching the store)."""
    return JSONResponse({"status": "ok"})


ROUTES = [
    Route("/v1/traces", _traces, methods=["POST"]),
    Route("/v1/logs", _logs, methods=["POST"]),
    Route("/v1/feedback", _feedback, methods=["POST"]),
    Route("/healthz", _healthz, methods=["GET"]),
    Route("/readyz", _readyz, methods=["GET"]),
]


@contextlib.asynccontextmanager
async def _background(
    app: Starlette,
    rx: Receiver,
    run_settler: bool,
    forwarder_factory: ForwarderFactory | None,
    grpc_port: int | None,
) -> AsyncIterator[None]:
    """The settler, the forwarder and the gRPC server while the app runs; the writer drained."""
    cfg, store = rx.cfg, rx.store
    tasks: list[asyncio.Task[None]] = []
    if run_settler:  # two lanes: small traces never wait behind a large one's derivation
        tasks.append(asyncio.create_task(_settle_loop(store, cfg, (0, LARGE_TRACE_SPANS))))
        tasks.append(asyncio.create_task(_settle_loop(store, cfg, (LARGE_TRACE_SPANS, None))))
    grpc_server = None
    if grpc_port is not None:
        from ragsieve.collector.receive.grpc_receiver import GrpcReceiver, start_grpc

        grpc_rx = GrpcReceiver(cfg, rx.writer, rx.decode_slots, rx.budget, rx.counters, rx.token)
        app.state.grpc_receiver = grpc_rx
        grpc_server, app.state.grpc_port = await start_grpc(grpc_rx, cfg.host, grpc_port)
    if cfg.forward_otlp:
        rx.forwarder = app.state.forwarder = (forwarder_factory or _default_forwarder)(store, cfg)
        tasks.append(asyncio.create_task(rx.forwarder.run()))
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
        await run_in_threadpool(rx.writer.close)


async def _settle_loop(store: Store, cfg: CollectorSettings, lane: tuple[int, int | None]) -> None:
    """Derive interactions of one size lane as traces go quiet, each lane with its own time
    budget per trace; the small-trace lane also prunes delivered outbox rows now and then."""
    passes, budget = 0, SettleBudget(cfg.max_trace_settle_s)
    while True:
        try:
            await run_in_threadpool(
                functools.partial(
                    settle,
                    store,
                    quiet_s=cfg.quiet_period_s,
                    max_wait_s=cfg.max_wait_s,
                    max_spans=cfg.max_trace_spans,
                    lane=lane,
                    budget=budget,
                )
            )
            passes += 1
            if lane[0] == 0 and passes % 60 == 0:  # delivered payloads are kept for inspection
                await run_in_threadpool(store.prune_outbox, cfg.outbox_retention_s)
        except StoreError as exc:  # the store is unavailable: one line a pass, no traceback
            log.error("settle pass failed: %s", exc)
        except Exception:  # keep settling after any other error
            log.exception("settle pass failed")
        await asyncio.sleep(cfg.settle_interval_s)


def _default_forwarder(store: Store, cfg: CollectorSettings) -> Any:
    from ragsieve.collector.forward.forwarder import Forwarder

    if cfg.forward_otlp is None:  # pragma: no cover - guarded by the caller
        raise ValueError("forward_otlp is not set")
    return Forwarder(
        store,
        cfg.forward_otlp,
        max_spans_per_s=cfg.forward_max_spans_per_s,
        headers=dict(cfg.forward_headers) or None,
    )


__all__ = ["FORWARD_TOPIC", "create_app"]
