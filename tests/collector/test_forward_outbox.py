"""OutboxWorker on a real SQLite store: delivery, backoff, Retry-After, pacing, dead letters."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from ragsieve.collector.forward.outbox import DEAD_LETTER_DELAY_S, OutboxWorker, Outcome
from ragsieve.collector.store import OutboxItem, Store

NOW = 1_800_000_000.0


def fill(store: Store, n: int, *, items: int = 1, topic: str = "t", now: float = NOW) -> None:
    for i in range(n):
        store.enqueue(topic, f"payload-{i}".encode(), "text/plain", items=items, now=now)


def rows(store: Store, topic: str = "t") -> list[tuple[int, int, float, str | None, float | None]]:
    return [
        (r[0], r[1], r[2], r[3], r[4])
        for r in store.query(
            "SELECT id, attempts, next_attempt_at, last_error, delivered_at FROM outbox"
            " WHERE topic = ? ORDER BY id",
            (topic,),
        )
    ]


class Recorder:
    """A send callback that answers from a script and records what it was given."""

    def __init__(self, *outcomes: Outcome) -> None:
        self.script = list(outcomes)
        self.seen: list[bytes] = []
        self.times: list[float] = []

    async def __call__(self, item: OutboxItem) -> Outcome:
        self.seen.append(item.payload)
        self.times.append(time.monotonic())
        return self.script.pop(0) if self.script else Outcome(True)


async def test_delivers_due_items_oldest_first_and_marks_them(store: Store) -> None:
    fill(store, 3)
    send = Recorder()
    worker = OutboxWorker(store, "t", send, clock=lambda: NOW)
    assert await worker.run_once() == 3
    assert send.seen == [b"payload-0", b"payload-1", b"payload-2"]
    assert all(r[4] == NOW for r in rows(store))
    assert store.outbox_stats()["t"] == {"pending": 0, "dead": 0, "delivered": 3}
    assert await worker.run_once() == 0  # nothing is sent twice
    assert len(send.seen) == 3


async def test_failure_backs_off_per_item_with_jitter_and_pauses_the_worker(store: Store) -> None:
    fill(store, 3)
    send = Recorder(Outcome(False, error="HTTP 503: busy"))
    worker = OutboxWorker(
        store, "t", send, base_backoff_s=2.0, clock=lambda: NOW, rng=random.Random(7)
    )
    assert await worker.run_once() == 0
    # The first failure stops the pass: the endpoint is struggling, the others are not tried.
    assert send.seen == [b"payload-0"]
    first, second, _ = rows(store)
    assert first[1] == 1 and first[3] == "HTTP 503: busy"
    assert NOW + 1.0 <= first[2] <= NOW + 2.0  # equal jitter on 2 s: [1, 2]
    assert second[1] == 0 and second[2] == NOW
    assert worker.stats.retried == 1 and worker.stats.last_error == "HTTP 503: busy"
    assert await worker.run_once() == 0  # paused: nothing tried
    assert len(send.seen) == 1


def test_backoff_grows_exponentially_and_is_capped(store: Store) -> None:
    worker = OutboxWorker(
        store, "t", Recorder(), base_backoff_s=0.5, max_backoff_s=8.0, rng=random.Random(1)
    )
    # equal jitter: half the capped exponential delay is fixed, the other half drawn uniformly
    same_seed = random.Random(1)
    for attempts, full in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (10, 8.0), (99, 8.0)]:
        for _ in range(5):
            expected = full / 2 + same_seed.uniform(0, full / 2)
            assert worker.backoff_s(attempts) == pytest.approx(expected, abs=1e-12)
    delays = [worker.backoff_s(3) for _ in range(200)]
    assert 2.0 <= min(delays) < 2.2 and 3.8 < max(delays) <= 4.0  # the whole jitter range


async def test_retry_after_is_honoured(store: Store) -> None:
    fill(store, 1)
    send = Recorder(Outcome(False, retry_after_s=42.0, error="HTTP 429: slow down"))
    worker = OutboxWorker(store, "t", send, clock=lambda: NOW)
    await worker.run_once()
    (row,) = rows(store)
    assert row[2] == NOW + 42.0 and row[3] == "HTTP 429: slow down"


async def test_retried_item_is_delivered_once_due(store: Store) -> None:
    fill(store, 2)
    now = [NOW]
    send = Recorder(Outcome(False, retry_after_s=0.0, error="connection refused"))
    worker = OutboxWorker(store, "t", send, base_backoff_s=0.01, clock=lambda: now[0])
    assert await worker.run_once() == 0
    await asyncio.sleep(0.02)  # the worker-wide pause (backoff of one failure) passes
    now[0] += 1
    assert await worker.run_once() == 2
    assert send.seen == [b"payload-0", b"payload-0", b"payload-1"]
    assert store.outbox_stats()["t"] == {"pending": 0, "dead": 0, "delivered": 2}


async def test_dead_letter_is_parked_with_its_error_counted_and_kept(store: Store) -> None:
    fill(store, 2)
    send = Recorder(Outcome(False, error="HTTP 400: bad", dead_letter=True))
    worker = OutboxWorker(store, "t", send, clock=lambda: NOW)
    assert await worker.run_once() == 1  # the next item is not held up by a dead letter
    first, second = rows(store)
    assert first[4] is None and first[2] == NOW + DEAD_LETTER_DELAY_S
    assert first[3] == "dead letter: HTTP 400: bad"
    assert second[4] == NOW
    assert worker.stats.dead_lettered == 1
    assert store.outbox_stats()["t"] == {"pending": 0, "dead": 1, "delivered": 1}


async def test_a_raising_sender_counts_as_a_failed_attempt(store: Store) -> None:
    fill(store, 1)

    async def broken(item: OutboxItem) -> Outcome:
        raise RuntimeError("boom")

    worker = OutboxWorker(store, "t", broken, clock=lambda: NOW)
    assert await worker.run_once() == 0
    (row,) = rows(store)
    assert row[1] == 1 and row[3] == "RuntimeError: boom" and row[4] is None


async def test_pacing_spends_the_rows_item_count(store: Store) -> None:
    fill(store, 4, items=10)
    send = Recorder()
    worker = OutboxWorker(store, "t", send, max_items_per_s=100.0, clock=lambda: NOW)
    assert await worker.run_once() == 4
    gaps = [b - a for a, b in zip(send.times, send.times[1:], strict=False)]
    assert all(gap >= 0.09 for gap in gaps), gaps  # 10 items at 100/s: 0.1 s apart


async def test_topics_are_independent(store: Store) -> None:
    fill(store, 1, topic="a")
    fill(store, 1, topic="b")
    send = Recorder()
    assert await OutboxWorker(store, "a", send, clock=lambda: NOW).run_once() == 1
    assert store.outbox_stats() == {
        "a": {"pending": 0, "dead": 0, "delivered": 1},
        "b": {"pending": 1, "dead": 0, "delivered": 0},
    }


async def test_run_delivers_new_rows_until_stopped(store: Store) -> None:
    send = Recorder()
    worker = OutboxWorker(store, "t", send, poll_interval_s=0.02)
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    await asyncio.sleep(0.05)
    await asyncio.to_thread(fill, store, 3, now=time.time() - 1)
    for _ in range(200):
        if worker.stats.delivered == 3:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 2)
    assert worker.stats.delivered == 3 and worker.stats.delivered_items == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_items_per_s": 0}, "max_items_per_s must be > 0"),
        ({"batch": 0}, "batch must be >= 1"),
        ({"base_backoff_s": 5, "max_backoff_s": 1}, "base_backoff_s <= max_backoff_s"),
    ],
)
def test_bad_settings_are_refused(store: Store, kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OutboxWorker(store, "t", Recorder(), **kwargs)
