"""Durable-outbox delivery: drain one store topic to an external endpoint, paced, with backoff."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ragsieve.collector.store import OutboxItem, Store

log = logging.getLogger(__name__)

#: How far ahead a dead-lettered item is parked; it stays in the outbox with its error.
DEAD_LETTER_DELAY_S = 30 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one delivery attempt.

    Attributes:
        delivered: the endpoint took the item; it is marked delivered.
        retry_after_s: the endpoint asked for this delay (``Retry-After``); otherwise backoff.
        error: why delivery failed, kept on the outbox row.
        dead_letter: the endpoint refused the item for good (e.g. a 400); it is parked far in the
            future with its error kept instead of being retried in a loop.
    """

    delivered: bool
    retry_after_s: float | None = None
    error: str | None = None
    dead_letter: bool = False


#: How often a worker counts its topic's pending rows, and how many rises in a row mean it is
#: falling behind (the rows arrive faster than its pace lets it deliver them).
WATCH_EVERY_S = 60.0
RISES_BEHIND = 3


@dataclass
class OutboxStats:
    """Counters of one worker since it started (``/readyz`` shows them under ``forwarder``).

    ``pending`` is the topic's undelivered rows at the last count; ``behind`` says, while it
    holds, that they have grown at every count for a while: delivery is slower than arrival
    and the outbox (on disk) grows without bound.
    """

    delivered: int = 0
    delivered_items: int = 0
    retried: int = 0
    dead_lettered: int = 0
    last_error: str | None = None
    pending: int | None = None
    behind: str | None = None


class OutboxWorker:
    """Delivers due outbox rows of one topic through ``send``, oldest first, one at a time.

    Each failed row gets its own exponential backoff with jitter (or the endpoint's
    ``Retry-After``); a retryable failure also pauses the whole worker, so a down endpoint is
    probed instead of hammered. Pacing spends ``item.items`` tokens per row against
    ``max_items_per_s`` (a public attribute the caller may tune while running). Store calls run in
    worker threads, so the event loop that serves ingest is never blocked on the database.

    On a store whose claims are leases shared with other processes (Postgres: ``due_outbox``
    claims rows for ``outbox_lease_s``, and a paced batch can outlast that), each row's lease is
    renewed right before it is sent (a row whose claim was lost to another forwarder is skipped)
    and the row is marked delivered at once, so no row is sent by two forwarders.

    Example:
        >>> async def send(item: OutboxItem) -> Outcome:  # doctest: +SKIP
        ...     return Outcome(delivered=True)
        >>> await OutboxWorker(store, "otlp", send, max_items_per_s=200).run(stop)  # doctest: +SKIP
    """

    def __init__(
        self,
        store: Store,
        topic: str,
        send: Callable[[OutboxItem], Awaitable[Outcome]],
        *,
        max_items_per_s: float | None = None,
        batch: int = 50,
        base_backoff_s: float = 0.5,
        max_backoff_s: float = 60.0,
        poll_interval_s: float = 0.5,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        if max_items_per_s is not None and max_items_per_s <= 0:
            raise ValueError(f"max_items_per_s must be > 0 or None, got {max_items_per_s}")
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        if base_backoff_s <= 0 or max_backoff_s < base_backoff_s:
            raise ValueError(
                f"need 0 < base_backoff_s <= max_backoff_s, got {base_backoff_s}, {max_backoff_s}"
            )
        self.store = store
        self.topic = topic
        self.send = send
        self.max_items_per_s = max_items_per_s
        self.batch = batch
        self.base_backoff_s = base_backoff_s
        self.max_backoff_s = max_backoff_s
        self.poll_interval_s = poll_interval_s
        self.clock = clock
        self.stats = OutboxStats()
        self._rng = rng or random.Random()
        self._next_send = 0.0  # monotonic time when the pacer allows the next send
        self._failures = 0  # consecutive retryable failures (drives the worker-wide pause)
        self._paused_until = 0.0  # monotonic
        self.watch_every_s = WATCH_EVERY_S
        self._watched_at = 0.0  # monotonic time of the last count of pending rows
        self._rises = 0  # consecutive counts that found more pending rows than the one before

    def backoff_s(self, attempts: int) -> float:
        """Delay before attempt ``attempts + 1``: exponential, capped, with equal jitter."""
        full = min(self.max_backoff_s, self.base_backoff_s * 2.0 ** min(attempts, 30))
        return full / 2 + self._rng.uniform(0, full / 2)

    async def _pace(self, items: int) -> None:
        rate = self.max_items_per_s
        now = time.monotonic()
        if rate is None:
            return
        if self._next_send > now:
            await asyncio.sleep(self._next_send - now)
            now = time.monotonic()
        # The debt of a large row is paid by the rows after it, so bursts stay one row long.
        self._next_send = max(self._next_send, now) + max(items, 1) / rate

    async def _attempt(self, item: OutboxItem) -> Outcome:
        try:
            return await self.send(item)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken sender must not stop delivery of other rows
            log.exception("outbox %s: sender failed on item %d", self.topic, item.id)
            return Outcome(delivered=False, error=f"{type(exc).__name__}: {exc}")

    async def run_once(self) -> int:
        """Try every due row once (up to ``batch``); returns how many were delivered."""
        items = await asyncio.to_thread(
            self.store.due_outbox, self.topic, now=self.clock(), limit=self.batch
        )
        renew = getattr(self.store, "renew_outbox_lease", None)  # only leased (shared) stores
        delivered: list[int] = []
        try:
            for item in items:
                if time.monotonic() < self._paused_until:
                    break
                await self._pace(item.items)
                if renew is not None:
                    kept = await asyncio.to_thread(renew, item, now=self.clock())
                    if kept is None:
                        log.info(
                            "outbox %s: item %d claimed elsewhere, skipped", self.topic, item.id
                        )
                        continue
                    item = kept
                outcome = await self._attempt(item)
                if outcome.delivered:
                    await self._delivered(item, leased=renew is not None, batch=delivered)
                elif outcome.dead_letter:
                    await self._dead_letter(item, outcome)
                else:
                    await self._retry_later(item, outcome)
                    break
        finally:
            if delivered:
                await asyncio.to_thread(self.store.mark_delivered, delivered, now=self.clock())
        return len(delivered)

    async def _delivered(self, item: OutboxItem, *, leased: bool, batch: list[int]) -> None:
        if leased:  # record it before the renewed lease can run out
            await asyncio.to_thread(self.store.mark_delivered, [item.id], now=self.clock())
        else:
            batch.append(item.id)
        self.stats.delivered += 1
        self.stats.delivered_items += item.items
        if self._failures:
            log.info("outbox %s: delivering again", self.topic)
        self._failures = 0

    async def _dead_letter(self, item: OutboxItem, outcome: Outcome) -> None:
        error = outcome.error or "not delivered"
        self.stats.last_error = error
        self.stats.dead_lettered += 1
        log.error(
            "outbox %s: item %d (%d items) refused for good, parked: %s",
            self.topic,
            item.id,
            item.items,
            error,
        )
        retry_at = self.clock() + DEAD_LETTER_DELAY_S
        await asyncio.to_thread(self.store.mark_retry, item.id, f"dead letter: {error}", retry_at)

    async def _retry_later(self, item: OutboxItem, outcome: Outcome) -> None:
        """Schedule the row again and pause the whole worker (the receiver is likely down)."""
        error = outcome.error or "not delivered"
        self.stats.last_error = error
        self.stats.retried += 1
        told = outcome.retry_after_s
        delay = told if told is not None else self.backoff_s(item.attempts)
        await asyncio.to_thread(self.store.mark_retry, item.id, error, self.clock() + delay)
        if self._failures == 0:
            log.warning("outbox %s: delivery failing, will retry: %s", self.topic, error)
        pause = max(delay if told is not None else 0.0, self.backoff_s(self._failures))
        self._failures += 1
        self._paused_until = time.monotonic() + pause

    async def watch_backlog(self) -> None:
        """Count the topic's pending rows; say loudly when they keep growing (falling behind).

        The pace (``max_items_per_s``) protects the endpoint; when spans arrive faster for
        long, the outbox holds the difference and grows until the disk is full. That is said
        once when it starts (a warning naming the pace and the backlog), kept in ``stats.behind``
        for ``/readyz`` while it lasts, and said again when the backlog shrinks.
        """
        stats = await asyncio.to_thread(self.store.outbox_stats)
        pending = int(stats.get(self.topic, {}).get("pending", 0))
        before, self.stats.pending = self.stats.pending, pending
        self._rises = self._rises + 1 if before is not None and pending > before else 0
        if self._rises >= RISES_BEHIND and self.stats.behind is None:
            pace = f"{self.max_items_per_s:g} items/s" if self.max_items_per_s else "no pace"
            failing = "deliveries failing" if self._failures else "deliveries succeeding"
            self.stats.behind = (
                f"outbox {self.topic}: falling behind: {pending} rows pending and growing at"
                f" each of the last {self._rises} counts ({pace}, {failing});"
                " the outbox grows until the disk is full: raise the pace if the endpoint takes"
                " more (collector.forward_max_spans_per_s), or forward less"
            )
            log.warning("%s", self.stats.behind)
        elif self.stats.behind is not None and before is not None and pending < before:
            log.warning(
                "outbox %s: catching up: %d rows pending (was %d)", self.topic, pending, before
            )
            self.stats.behind = None

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Deliver until ``stop`` is set or the task is cancelled; store errors are retried."""
        stop = stop or asyncio.Event()
        while not stop.is_set():
            try:
                if time.monotonic() - self._watched_at >= self.watch_every_s:
                    self._watched_at = time.monotonic()
                    await self.watch_backlog()
                delivered = await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # e.g. a locked or unavailable store: try again later
                log.exception("outbox %s: delivery pass failed", self.topic)
                delivered = 0
            wait = max(self._paused_until - time.monotonic(), 0.0)
            if delivered == 0 and wait == 0.0:
                wait = self.poll_interval_s
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=wait)


__all__ = ["DEAD_LETTER_DELAY_S", "WATCH_EVERY_S", "Outcome", "OutboxStats", "OutboxWorker"]
