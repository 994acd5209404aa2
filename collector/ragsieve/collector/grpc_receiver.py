"""OTLP/gRPC on ``collector.grpc_port`` (4317): the trace and logs ``Export`` services.

The semantics are the HTTP receiver's, mapped to gRPC status codes as the OTLP specification
maps them: a bearer token in the ``authorization`` metadata (``UNAUTHENTICATED``), gzip
(``grpc-encoding``, undone by grpc), partial success in the response, ``RESOURCE_EXHAUSTED``
where HTTP answers 429 and ``UNAVAILABLE`` where it answers 503, both with a
``google.rpc.RetryInfo`` delay (the exporters honour it), ``INVALID_ARGUMENT`` where HTTP answers
400/413, ``collector.max_body_bytes`` as the message size limit, and ``OK`` only once every span
of the request is committed (the same :class:`SpanWriter` as HTTP).

It runs on the HTTP server's event loop, started and stopped by the app's lifespan, so both
share one writer, one decode pool and one byte budget. Requests arrive as raw bytes and are
decoded by :mod:`ragsieve.collector.otlp`, exactly as protobuf bodies over HTTP are.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from grpc import aio

from ragsieve.collector import otlp
from ragsieve.collector.intake import Busy, ByteBudget
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store.base import span_body
from ragsieve.collector.writer import Overloaded, SpanWriter, WriteJob
from ragsieve.evaluators.errors import BadPayload, ConfigError, PayloadTooLarge, StoreError

log = logging.getLogger(__name__)

TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
FORWARD_TOPIC = "otlp"


class _Refused(Exception):
    """A request answered with a gRPC error status (the HTTP receiver's non-2xx answers)."""

    def __init__(self, code: grpc.StatusCode, message: str, *, retry: bool = False) -> None:
        super().__init__(message)
        self.code, self.retry = code, retry


@dataclass
class GrpcReceiver:
    """The Export handlers; ``counters`` is the HTTP app's, so ``/readyz`` counts both."""

    cfg: CollectorSettings
    writer: SpanWriter
    decode_slots: anyio.CapacityLimiter
    budget: ByteBudget
    counters: Any
    token: str | None = None

    def _authorized(self, context: aio.ServicerContext) -> bool:
        if self.token is None:
            return True
        got = dict(context.invocation_metadata() or ()).get("authorization", "")
        value = got.decode() if isinstance(got, bytes) else str(got)
        return hmac.compare_digest(value.encode(), f"Bearer {self.token}".encode())

    async def export(self, kind: str, raw: bytes, context: aio.ServicerContext) -> bytes:
        """Decode, commit and acknowledge one Export request (or abort with its status)."""
        try:
            if not self._authorized(context):
                raise _Refused(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
            if self.counters.inflight >= self.cfg.max_inflight_requests:
                raise _Refused(
                    grpc.StatusCode.RESOURCE_EXHAUSTED, "too many requests in flight", retry=True
                )
            self.counters.inflight += 1
            try:
                return await self._store(kind, raw)
            finally:
                self.counters.inflight -= 1
        except _Refused as exc:
            trailing: tuple[tuple[str, bytes], ...] = ()
            if exc.retry:
                delay = RetryInfo(retry_delay=Duration(seconds=self.cfg.retry_after_s))
                trailing = (("google.rpc.retryinfo-bin", delay.SerializeToString()),)
            await context.abort(exc.code, str(exc), trailing_metadata=trailing)
            raise AssertionError("unreachable: abort raises") from None  # pragma: no cover

    async def _store(self, kind: str, raw: bytes) -> bytes:
        claim = self.budget.claim()
        try:
            try:
                claim.charge(len(raw))
                job, rejected, message = await anyio.to_thread.run_sync(
                    self._decode, kind, raw, limiter=self.decode_slots
                )
            except Busy:
                raise _Refused(
                    grpc.StatusCode.RESOURCE_EXHAUSTED, "too many bytes in flight", retry=True
                ) from None
            except BadPayload as exc:
                log.info("rejected gRPC %s request: %s", kind, exc)
                raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        finally:
            claim.release()
        if job.spans or job.log_events:
            await self._commit(job)
        self.counters.requests += 1
        self.counters.accepted_spans += len(job.spans)
        self.counters.rejected_spans += rejected
        if rejected:
            log.warning("%s: %s", kind, message)
        if kind == "traces":
            return otlp.trace_response("protobuf", rejected, message)
        return otlp.logs_response("protobuf", rejected, message)

    def _decode(self, kind: str, body: bytes) -> tuple[WriteJob, int, str]:
        if kind == "logs":
            logs = otlp.decode_logs(body, "protobuf")
            msg = otlp.rejection_message(logs.reasons, logs.rejected)
            return WriteJob(log_events=logs.events), logs.rejected, msg
        dec = otlp.decode_traces(body, "protobuf")
        if len(dec.spans) > self.cfg.max_spans_per_request:
            raise PayloadTooLarge(
                f"{len(dec.spans)} spans in one request; the limit is"
                f" {self.cfg.max_spans_per_request}: send smaller batches"
            )
        job = WriteJob(spans=dec.spans, bodies=[span_body(s) for s in dec.spans])
        if self.cfg.forward_otlp and dec.spans and dec.request is not None:
            payload = body if not dec.rejected else otlp.as_protobuf(dec.request)
            job.forward.append((FORWARD_TOPIC, payload, "application/x-protobuf", len(dec.spans)))
        return job, dec.rejected, otlp.rejection_message(dec.reasons, dec.rejected)

    async def _commit(self, job: WriteJob) -> None:
        try:
            future = self.writer.submit(job)
        except Overloaded:
            raise _Refused(
                grpc.StatusCode.UNAVAILABLE, "store write queue is full", retry=True
            ) from None
        try:
            await asyncio.wrap_future(future)
        except StoreError as exc:
            raise _Refused(
                grpc.StatusCode.UNAVAILABLE, f"store unavailable: {exc}", retry=True
            ) from None
        except (ValueError, OverflowError, UnicodeError) as exc:
            raise _Refused(
                grpc.StatusCode.INVALID_ARGUMENT, f"cannot store this data: {exc}"[:300]
            ) from None
        except Exception as exc:  # never UNKNOWN: the client must keep the data and retry
            log.exception("store write failed")
            raise _Refused(
                grpc.StatusCode.UNAVAILABLE,
                f"store write failed: {type(exc).__name__}",
                retry=True,
            ) from None

    def handlers(self) -> list[grpc.GenericRpcHandler]:
        """The two services, taking and returning raw protobuf bytes."""

        def method(kind: str) -> grpc.RpcMethodHandler:
            async def call(raw: bytes, context: aio.ServicerContext) -> bytes:
                return await self.export(kind, raw, context)

            return grpc.unary_unary_rpc_method_handler(call)

        return [
            grpc.method_handlers_generic_handler(TRACE_SERVICE, {"Export": method("traces")}),
            grpc.method_handlers_generic_handler(LOGS_SERVICE, {"Export": method("logs")}),
        ]


async def start_grpc(receiver: GrpcReceiver, host: str, port: int) -> tuple[aio.Server, int]:
    """Serve ``receiver`` on ``host:port`` (0 = a free port); returns the server and its port.

    ``SO_REUSEPORT`` is off, so a port another process listens on fails here (ConfigError)
    instead of silently sharing its traffic.
    """
    limit = receiver.cfg.max_body_bytes
    server = aio.server(
        handlers=receiver.handlers(),
        options=[
            ("grpc.so_reuseport", 0),
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ],
        maximum_concurrent_rpcs=receiver.cfg.max_inflight_requests + receiver.cfg.max_queued_writes,
    )
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError as exc:
        raise ConfigError(f"--grpc-port {port}: cannot bind {address} ({exc})") from None
    if not bound:
        raise ConfigError(f"--grpc-port {port}: {address} is already in use")
    await server.start()
    return server, bound


__all__ = ["LOGS_SERVICE", "TRACE_SERVICE", "GrpcReceiver", "start_grpc"]
