"""OTLP/gRPC on ``collector.grpc_port`` (4317): the trace and logs ``Export`` services.

The semantics are the HTTP receiver's, mapped to gRPC status codes as the OTLP specification
maps them: a bearer token in the ``authorization`` metadata (``UNAUTHENTICATED``), gzip
(``grpc-encoding``, undone by grpc), partial success in the response, ``RESOURCE_EXHAUSTED``
where HTTP answers 429 and ``UNAVAILABLE`` where it answers 503, both with a
``google.rpc.RetryInfo`` delay (the exporters honour it), ``INVALID_ARGUMENT`` where HTTP answers
400/413, ``collector.max_body_bytes`` as the message size limit, and ``OK`` only once every span
of the request is committed (the same :class:`SpanWriter` as HTTP).

Streams that open and never finish their message cannot hold the receiver: the handlers are
stream-unary, so an RPC is counted against ``max_inflight_requests`` only once its message is in,
and a message not complete within :data:`RECEIVE_DEADLINE_S` (the HTTP body deadline) ends the
stream with ``DEADLINE_EXCEEDED``. One connection holds at most
:data:`MAX_STREAMS_PER_CONNECTION` streams at once.

Memory is bounded as over HTTP. grpc's own decompression is off: it would inflate a message
whole, on every stream at once, before this module sees it (40 concurrent 70 MiB gzip bombs
held 2.4 GB). A message arrives as it was sent, at most :func:`grpc_message_limit` bytes on the
wire, and is inflated here by :func:`ragsieve.collector.wire.codec.decompress`, every step charged
to the byte budget HTTP shares (``max_inflight_bytes``; ``RESOURCE_EXHAUSTED`` when others hold
it) and stopped past ``max_body_bytes`` (``INVALID_ARGUMENT``, which exporters do not retry).
A message over ``max_body_bytes`` on the wire is ``INVALID_ARGUMENT`` too; past the limit grpc
itself answers ``RESOURCE_EXHAUSTED``, its own status.

It runs on the HTTP server's event loop, started and stopped by the app's lifespan, so both
share one writer, one decode pool and one byte budget. Requests arrive as raw bytes and are
decoded by :mod:`ragsieve.collector.wire.traces`, exactly as protobuf bodies over HTTP are.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import anyio
import anyio.to_thread
import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from grpc import aio

from ragsieve.collector.receive.intake import BODY_DEADLINE_S, Busy, ByteBudget
from ragsieve.collector.receive.receiver import Counters
from ragsieve.collector.receive.signals import LOGS, TRACES, Decoded, Signal
from ragsieve.collector.receive.writer import SpanWriter, WriteRefused, commit
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.wire import codec
from ragsieve.evaluators.errors import BadPayload, ConfigError, PayloadTooLarge

log = logging.getLogger(__name__)

TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
_UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
RECEIVE_DEADLINE_S = BODY_DEADLINE_S
MAX_STREAMS_PER_CONNECTION = 100


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
    counters: Counters
    token: str | None = None
    receive_deadline_s: float = RECEIVE_DEADLINE_S

    def _authorized(self, context: aio.ServicerContext) -> bool:
        if self.token is None:
            return True
        got = dict(context.invocation_metadata() or ()).get("authorization", "")
        value = got.decode() if isinstance(got, bytes) else str(got)
        return hmac.compare_digest(value.encode(), f"Bearer {self.token}".encode())

    async def receive(self, messages: AsyncIterator[bytes]) -> bytes:
        """The one request message of an Export stream, within :attr:`receive_deadline_s`."""
        raw: bytes | None = None
        try:
            async with asyncio.timeout(self.receive_deadline_s):
                async for message in messages:
                    if raw is not None:
                        raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "Export takes one message")
                    raw = message
        except TimeoutError:
            raise _Refused(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"request message not received within {self.receive_deadline_s:g} s",
            ) from None
        if raw is None:
            raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "no request message")
        return raw

    async def export(
        self, signal: Signal, messages: AsyncIterator[bytes], context: aio.ServicerContext
    ) -> bytes:
        """Receive, decode, commit and acknowledge one Export request (or abort with its status)."""
        try:
            if not self._authorized(context):
                raise _Refused(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
            raw = await self.receive(messages)
            limit = self.cfg.max_body_bytes
            if len(raw) > limit:  # as sent; grpc's own limit answers RESOURCE_EXHAUSTED past it
                raise _Refused(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"message of {len(raw)} bytes is over collector.max_body_bytes ({limit})",
                )
            if self.counters.inflight >= self.cfg.max_inflight_requests:
                raise _Refused(
                    grpc.StatusCode.RESOURCE_EXHAUSTED, "too many requests in flight", retry=True
                )
            self.counters.inflight += 1
            try:
                return await self._store(signal, raw)
            finally:
                self.counters.inflight -= 1
        except _Refused as exc:
            trailing: tuple[tuple[str, bytes], ...] = ()
            if exc.retry:
                delay = RetryInfo(retry_delay=Duration(seconds=self.cfg.retry_after_s))
                trailing = (("google.rpc.retryinfo-bin", delay.SerializeToString()),)
            await context.abort(exc.code, str(exc), trailing_metadata=trailing)
            raise AssertionError("unreachable: abort raises") from None  # pragma: no cover

    async def _store(self, signal: Signal, raw: bytes) -> bytes:
        claim = self.budget.claim()

        def work() -> Decoded:
            body = inflate(raw, self.cfg.max_body_bytes, claim.charge)
            return signal.decode(body, "protobuf", self.cfg)

        refused: _Refused | None = None
        try:
            claim.charge(len(raw))  # at once: a message that cannot be held is refused now
            decoded = await anyio.to_thread.run_sync(work, limiter=self.decode_slots)
        except (Busy, BadPayload) as exc:
            # Its traceback holds the worker's frames (the inflated body) in a cycle through
            # anyio's future that only the GC would free (see Receiver._decode): drop them, and
            # refuse outside this handler so no __context__ keeps them either.
            exc.with_traceback(None)
            if isinstance(exc, Busy):
                refused = _Refused(
                    grpc.StatusCode.RESOURCE_EXHAUSTED, "too many bytes in flight", retry=True
                )
            else:
                log.info("rejected gRPC %s request: %s", signal.name, exc)
                refused = _Refused(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        finally:
            claim.release()
        if refused is not None:
            raise refused
        if decoded.job.spans or decoded.job.log_events:
            try:
                await commit(self.writer, decoded.job)
            except WriteRefused as exc:
                code = (
                    grpc.StatusCode.UNAVAILABLE if exc.retry else grpc.StatusCode.INVALID_ARGUMENT
                )
                raise _Refused(code, str(exc), retry=exc.retry) from None
        self.counters.count(signal.name, decoded)
        return signal.respond("protobuf", decoded.rejected, decoded.message)

    def handlers(self) -> list[grpc.GenericRpcHandler]:
        """The two services, taking and returning raw protobuf bytes."""

        def method(signal: Signal) -> grpc.RpcMethodHandler:
            # stream-unary on the wire is what a unary client sends; it hands the stream over
            # before its message arrives, so a stream that never sends one can be timed out
            async def call(messages: AsyncIterator[bytes], context: aio.ServicerContext) -> bytes:
                return await self.export(signal, messages, context)

            return grpc.stream_unary_rpc_method_handler(call)

        return [
            grpc.method_handlers_generic_handler(TRACE_SERVICE, {"Export": method(TRACES)}),
            grpc.method_handlers_generic_handler(LOGS_SERVICE, {"Export": method(LOGS)}),
        ]


def sent_encoding(raw: bytes) -> str | None:
    """How a message arrived: ``gzip``, ``deflate`` (zlib) or ``None`` (plain protobuf).

    grpc hands over a message as sent and keeps its compression flag and ``grpc-encoding`` to
    itself, so the bytes tell: an OTLP request never starts with 0x1f (wire type 7 does not
    exist), which gzip always does; a zlib header is checked by its checksum.
    """
    if raw[:2] == b"\x1f\x8b":
        return "gzip"
    if len(raw) >= 2 and raw[0] == 0x78 and int.from_bytes(raw[:2], "big") % 31 == 0:
        return "deflate"
    return None


def inflate(raw: bytes, limit: int, charge: Callable[[int], None]) -> bytes:
    """``raw`` decompressed within ``limit`` bytes, each step charged first (see codec.decompress).

    A zlib-looking start that does not inflate is taken as plain protobuf (an unknown field 15
    can begin one); a gzip one that does not is refused.
    """
    encoding = sent_encoding(raw)
    try:
        return codec.decompress(raw, encoding, limit, charge)
    except PayloadTooLarge:
        raise
    except BadPayload:
        if encoding != "deflate":
            raise
        return raw


def grpc_message_limit(max_body_bytes: int) -> int:
    """grpc's own limit on a message as sent: ``max_body_bytes`` plus an eighth (at least
    1 MiB). Up to it a message over ``max_body_bytes`` is refused here (INVALID_ARGUMENT); past
    it grpc stops reading and answers RESOURCE_EXHAUSTED. Each stream may hold that much of
    its message before it is in (see the README's limits on hostile input)."""
    return min(max_body_bytes + max(max_body_bytes // 8, 1 << 20), 2**31 - 1)


async def start_grpc(receiver: GrpcReceiver, host: str, port: int) -> tuple[aio.Server, int]:
    """Serve ``receiver`` on ``host:port`` (0 = a free port); returns the server and its port.

    ``SO_REUSEPORT`` is off, so a port another process listens on fails here (ConfigError)
    instead of silently sharing its traffic.
    """
    limit = receiver.cfg.max_body_bytes
    # No maximum_concurrent_rpcs: grpc counts an RPC from its headers, so streams that never
    # send a message would fill it; the receiver counts requests once their message is in.
    server = aio.server(
        handlers=receiver.handlers(),
        options=[
            ("grpc.so_reuseport", 0),
            ("grpc.per_message_decompression", 0),  # inflated here, within the byte budget
            ("grpc.max_receive_message_length", grpc_message_limit(limit)),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
            ("grpc.max_concurrent_streams", MAX_STREAMS_PER_CONNECTION),
        ],
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
