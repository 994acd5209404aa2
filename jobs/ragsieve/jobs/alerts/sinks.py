"""Alert sinks: a generic JSON webhook and a Slack-compatible incoming webhook, via the outbox.

Each event is queued as one outbox row per configured sink (topics ``alerts_webhook`` and
``alerts_slack``) in the same transaction as the alert state, then delivered by the shared
:class:`~ragsieve.collector.forward.outbox.OutboxWorker`: exponential backoff with jitter (or the
receiver's ``Retry-After``), a refused connection, 408, 429 and 5xx retried, other 4xx and
every 3xx (redirects are not followed; the error names the ``Location``) parked as dead
letters. A receiver that is down loses nothing: the rows wait for the next run.

The webhook body::

    {"source": "ragsieve", "status": "firing" | "resolved" | "test", "alert": key,
     "rule": {"label", "kind", ...parameters}, "message", "values", "interval": [lo, hi] | null,
     "window": {"start", "end"}, "run_id", "since", "at", "links": {"report", "phoenix", "traces"}}
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from ragsieve.collector.forward.forwarder import outbound, parse_retry_after
from ragsieve.collector.forward.outbox import OutboxWorker, Outcome
from ragsieve.collector.store import OutboxItem, Store
from ragsieve.jobs.alerts.state import Event
from ragsieve.jobs.settings.alerts import AlertSettings

log = logging.getLogger(__name__)

WEBHOOK_TOPIC = "alerts_webhook"
SLACK_TOPIC = "alerts_slack"
CONTENT_TYPE = "application/json"


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def webhook_payload(
    event: Event, window: Mapping[str, Any] | None, links: Mapping[str, Any]
) -> dict[str, Any]:
    """The generic webhook's JSON body for one event."""
    return {
        "source": "ragsieve",
        "status": event.status,
        "alert": event.key,
        "rule": dict(event.rule),
        "message": event.message,
        "values": dict(event.values),
        "interval": list(event.interval) if event.interval else None,
        "window": dict(window) if window else None,
        "run_id": event.run_id,
        "since": _iso(event.since),
        "at": _iso(event.at),
        "links": dict(links),
    }


def slack_payload(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Slack incoming-webhook message (``text`` with mrkdwn) from the webhook body."""
    mark = {"firing": ":rotating_light: FIRING", "resolved": ":white_check_mark: RESOLVED"}
    head = mark.get(body["status"], ":information_source: TEST")
    links = body.get("links") or {}
    text = f"{head} *{body['rule'].get('label', body['alert'])}*: {body['message']}"
    if links.get("report"):
        text += f"\n<{links['report']}|report>"
    if links.get("phoenix"):
        text += f" · <{links['phoenix']}|Phoenix>"
    return {"text": text}


def topics(cfg: AlertSettings) -> dict[str, str]:
    """``{topic: url}`` of the configured sinks."""
    out = {}
    if cfg.webhook_url:
        out[WEBHOOK_TOPIC] = cfg.webhook_url
    if cfg.slack_webhook_url:
        out[SLACK_TOPIC] = cfg.slack_webhook_url
    return out


def encode(topic: str, body: Mapping[str, Any]) -> bytes:
    """The bytes a sink posts for the webhook ``body``."""
    payload = slack_payload(body) if topic == SLACK_TOPIC else body
    return json.dumps(payload, ensure_ascii=False, default=str).encode()


def outbox_rows(
    cfg: AlertSettings, bodies: Sequence[Mapping[str, Any]], now: float
) -> list[tuple[Any, ...]]:
    """Outbox rows (one per event and sink), keyed so a retried run does not queue twice."""
    return [
        (
            topic,
            f"{b['alert']}|{b['status']}|{b['at']}",
            encode(topic, b),
            CONTENT_TYPE,
            1,
            now,
            now,
        )
        for topic in topics(cfg)
        for b in bodies
    ]


class WebhookSender:
    """Posts one outbox row to a webhook URL; classifies the answer as an outbox ``Outcome``."""

    def __init__(self, url: str, *, timeout_s: float = 5.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self._client = httpx.AsyncClient(timeout=timeout_s)

    async def __call__(self, item: OutboxItem) -> Outcome:
        """Deliver one payload."""
        try:
            resp = await outbound.post(
                self._client,
                self.url,
                total_s=self.timeout_s,
                content=item.payload,
                headers={"Content-Type": CONTENT_TYPE},
            )
        except httpx.HTTPError as exc:
            return Outcome(False, error=f"unreachable: {type(exc).__name__}: {exc}")
        if resp.is_success:
            return Outcome(True)
        detail = failure(resp)
        if 300 <= resp.status_code < 400 or (
            400 <= resp.status_code < 500 and resp.status_code not in (408, 429)
        ):
            return Outcome(False, error=detail, dead_letter=True)  # asking again changes nothing
        after = parse_retry_after(resp.headers.get("Retry-After"))
        return Outcome(False, retry_after_s=after, error=detail)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()


async def _drain(store: Store, topic: str, url: str, cfg: AlertSettings, deadline: float) -> int:
    sender = WebhookSender(url, timeout_s=cfg.timeout_s)
    worker = OutboxWorker(
        store, topic, sender, base_backoff_s=cfg.backoff_s, max_backoff_s=cfg.max_backoff_s
    )
    delivered = 0
    try:
        while time.monotonic() < deadline:
            left = max(deadline - time.monotonic(), 0.1)
            n = await asyncio.wait_for(worker.run_once(), left)
            delivered += n
            if n == 0 or worker.stats.retried or worker.stats.dead_lettered:
                break
    except TimeoutError:
        pass  # out of time: the rest stays queued for the next run
    finally:
        await sender.aclose()
    return delivered


async def deliver(store: Store, cfg: AlertSettings) -> dict[str, dict[str, int]]:
    """Deliver due alert rows of every configured sink within ``deliver_s``; never raises."""
    deadline = time.monotonic() + cfg.deliver_s
    out: dict[str, dict[str, int]] = {}
    for topic, url in topics(cfg).items():
        try:
            delivered = await _drain(store, topic, url, cfg, deadline)
        # Whatever stops a drain (a locked or lost store, a driver error): the rows stay queued
        # for the next pass, and the other sinks still get theirs. The docstring promises no raise.
        except Exception as exc:
            log.warning("alert delivery to %s failed: %s", topic, exc)
            delivered = 0
        stats = store.outbox_stats().get(topic, {})
        out[topic] = {"delivered": delivered, "pending": stats.get("pending", 0)}
    return out


async def send_direct(url: str, payload: bytes, timeout_s: float) -> str | None:
    """Post ``payload`` once, outside the outbox (``alerts test``); the error, or None."""
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        try:
            resp = await outbound.post(
                client,
                url,
                total_s=timeout_s,
                content=payload,
                headers={"Content-Type": CONTENT_TYPE},
            )
        except httpx.HTTPError as exc:
            return f"unreachable: {type(exc).__name__}: {exc}"
    return None if resp.is_success else failure(resp)


def failure(resp: httpx.Response) -> str:
    """What a receiver's non-2xx answer says; a redirect names where it points.

    Redirects are not followed: the payload would go to a host nobody configured, and a
    webhook that moved is fixed in the config (``alerts.webhook_url``), not by asking again.
    """
    if resp.is_redirect or 300 <= resp.status_code < 400:
        where = resp.headers.get("Location") or "(no Location header)"
        return (
            f"{resp.status_code} redirect to {where[:300]}: webhooks are not followed through"
            " redirects; set the URL it points to"
        )
    return f"{resp.status_code}: {resp.text[:200]}"


__all__ = [
    "SLACK_TOPIC",
    "WEBHOOK_TOPIC",
    "WebhookSender",
    "deliver",
    "encode",
    "failure",
    "outbox_rows",
    "send_direct",
    "slack_payload",
    "topics",
    "webhook_payload",
]
