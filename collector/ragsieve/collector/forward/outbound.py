"""Every outbound HTTP call (Phoenix, webhooks), bounded in time and in what it reads back.

httpx's ``timeout`` bounds each read, not the call: an endpoint that answers 200 and then sends
its body one byte a second keeps a request alive for ever, and ``resp.content`` reads a 1 GiB
body whole. :func:`post` gives a call ``total_s`` in all (then ``httpx.ReadTimeout``, a
``TransportError`` like any other time-out) and keeps at most :data:`MAX_RESPONSE_BYTES` of the
body, the rest left unread; it asks for an uncompressed answer and reads the raw bytes, so a
compressed body cannot inflate past the cap either. Every caller only needs the status, a few
headers and the start of the body (an error message, OTLP partial success).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

MAX_RESPONSE_BYTES = 64 * 1024
_DROP = {"content-encoding", "content-length", "transfer-encoding"}


async def post(
    client: httpx.AsyncClient,
    url: str,
    *,
    total_s: float,
    max_bytes: int = MAX_RESPONSE_BYTES,
    headers: dict[str, str] | None = None,
    **kwargs: Any,
) -> httpx.Response:
    """POST within ``total_s``; the response holds at most ``max_bytes`` of its body.

    Raises:
        httpx.ReadTimeout: no complete answer within ``total_s`` (other ``httpx`` errors as usual).
    """
    sent = {"Accept-Encoding": "identity", **(headers or {})}
    try:
        async with asyncio.timeout(total_s):
            async with client.stream("POST", url, headers=sent, **kwargs) as resp:
                body = await _read_capped(resp, max_bytes)
    except TimeoutError:
        raise httpx.ReadTimeout(f"no complete answer from {url} within {total_s:g} s") from None
    kept = [(k, v) for k, v in resp.headers.multi_items() if k.lower() not in _DROP]
    return httpx.Response(resp.status_code, headers=kept, content=bytes(body), request=resp.request)


async def _read_capped(resp: httpx.Response, max_bytes: int) -> bytearray:
    """At most ``max_bytes`` of the raw body; the caller closing the stream drops the rest."""
    body = bytearray()
    async for chunk in resp.aiter_raw():
        body += chunk[: max_bytes - len(body)]
        if len(body) >= max_bytes:
            break
    return body


__all__ = ["MAX_RESPONSE_BYTES", "post"]
