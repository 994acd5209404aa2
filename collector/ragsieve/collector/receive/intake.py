"""Reading a request body within bounds: its declared length, two deadlines, a shared byte budget.

Memory held by requests in flight is bounded by one :class:`ByteBudget`: every byte read from the
socket and every byte a decompressor produces is charged to the request's :class:`Claim` *before*
it is kept, and a request that would overdraw the budget while others hold part of it is refused
(429). One request on its own may always use the whole budget, so a single large body is never
starved. Decoded spans cost a further multiple of the body (about six times for protobuf); that
part is bounded by decoding at most :data:`DECODE_THREADS` bodies at once.

Time is bounded too: a client must keep sending (:data:`BODY_IDLE_S` between chunks) and finish
its body within :data:`BODY_DEADLINE_S`, or it gets 408 and the connection is closed. An exporter
gives up on a request long before that (10 s by default), so nothing useful is cut short.
"""

from __future__ import annotations

import asyncio
import threading

from starlette.requests import Request

from ragsieve.evaluators.errors import BadPayload, PayloadTooLarge

BODY_IDLE_S = 10.0
BODY_DEADLINE_S = 30.0
DECODE_THREADS = 4


class Busy(Exception):
    """Other requests hold the rest of the byte budget (429)."""


class BodyTimeout(Exception):
    """The client stopped sending, or sent too slowly (408)."""


class ByteBudget:
    """Bytes held by all requests in flight, shared across threads."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def claim(self) -> Claim:
        """A new, empty share for one request."""
        return Claim(self)

    def _charge(self, claim: Claim, n: int) -> None:
        with self._lock:
            others = self.used - claim.held
            if n > 0 and others and self.used + n > self.limit:
                raise Busy(f"{self.used} of {self.limit} bytes are held by requests in flight")
            self.used += n
            claim.held += n


class Claim:
    """The bytes one request holds of a :class:`ByteBudget`."""

    def __init__(self, budget: ByteBudget) -> None:
        self.budget = budget
        self.held = 0

    def charge(self, n: int) -> None:
        """Take ``n`` more bytes (a negative ``n`` gives some back); :class:`Busy` if refused."""
        self.budget._charge(self, n)

    def release(self) -> None:
        """Give back everything this request holds."""
        self.budget._charge(self, -self.held)


def declared_length(request: Request, limit: int) -> int | None:
    """The Content-Length header, refused at once when it is over ``limit`` (no body read)."""
    value = request.headers.get("content-length")
    if value is None:
        return None
    if not value.isdigit():
        raise BadPayload(f"Content-Length {value[:40]!r} is not a byte count")
    length = int(value)
    if length > limit:
        raise PayloadTooLarge(f"Content-Length {length} is over the {limit}-byte limit")
    return length


async def read_body(
    request: Request,
    *,
    limit: int,
    claim: Claim,
    idle_s: float = BODY_IDLE_S,
    deadline_s: float = BODY_DEADLINE_S,
) -> bytes:
    """The whole body, each chunk charged to ``claim`` before it is kept.

    Raises :class:`PayloadTooLarge` (declared or actual size over ``limit``), :class:`Busy`,
    :class:`BodyTimeout`, or Starlette's ``ClientDisconnect``.
    """
    declared_length(request, limit)
    loop = asyncio.get_running_loop()
    hard = loop.time() + deadline_s
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout_at(min(loop.time() + idle_s, hard)) as timer:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(f"body is over the {limit}-byte limit")
                claim.charge(len(chunk))
                chunks.append(chunk)
                timer.reschedule(min(loop.time() + idle_s, hard))
    except TimeoutError:
        got = f"{size} bytes"
        raise BodyTimeout(
            f"request body not received in time ({got} in; {idle_s:g} s idle or"
            f" {deadline_s:g} s in all)"
        ) from None
    if len(chunks) == 1:
        return chunks[0]
    claim.charge(size)  # joining copies: both exist for a moment
    body = b"".join(chunks)
    chunks.clear()
    claim.charge(-size)
    return body
