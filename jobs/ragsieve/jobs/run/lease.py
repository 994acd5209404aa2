"""The run lease: one ``jobs run`` at a time on a store, so no trace is judged twice.

Two runs on one store (``ragsieve up`` plus a cron, two cron entries, two hosts on one
PostgreSQL) would otherwise each plan the same window before either checkpoints anything: every
trace judged twice, budgets spent twice, two history points for one window. A run therefore holds
a row of the ``leases`` table (name ``jobs.run``, a holder id and an expiry) while it plans and
executes, renewed from a thread every third of its time to live; a run killed mid-way stops
renewing and its lease expires, so the next run takes over without a person.

A run that finds the lease held waits (polling) and then:

- runs, when the lease was released or expired and no run finished the window meanwhile;
- is **skipped** when the run it waited for finished a window covering its own (the same window
  but for the traces that arrived while that run was judging; the next scheduled run has them);
- is **skipped** when the lease is still held after ``wait_s``.

Either way it says so (``RunOutcome.skipped``); nothing is judged twice.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ragsieve.collector.store import Store

log = logging.getLogger(__name__)

NAME = "jobs.run"
TTL_S = 60.0  # a holder that stops renewing loses the lease this long after its last renewal
WAIT_S = 900.0  # how long a second run waits for the first before it gives up (skips)
POLL_S = 0.5


def holder_id() -> str:
    """``host:pid:random``: which process holds the lease, readable in an error."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class Holder:
    """Who holds the lease and until when."""

    holder: str
    acquired_at: float
    expires_at: float


class Lease:
    """One named lease row: acquire (when free or expired), renew, release."""

    def __init__(
        self,
        store: Store,
        *,
        name: str = NAME,
        ttl_s: float = TTL_S,
        holder: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.name, self.ttl_s = store, name, ttl_s
        self.holder = holder or holder_id()
        self.clock = clock
        self.lost = threading.Event()  # set when a renewal found the lease taken
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def current(self) -> Holder | None:
        """The lease row, or None when nobody holds it."""
        rows = self.store.query(
            "SELECT holder, acquired_at, expires_at FROM leases WHERE name = ?", (self.name,)
        )
        return Holder(str(rows[0][0]), float(rows[0][1]), float(rows[0][2])) if rows else None

    def try_acquire(self) -> bool:
        """Take the lease when it is free, expired or already ours; True when we hold it."""
        now = self.clock()
        with self.store.transaction() as cur:
            cur.execute(
                self.store.sql(
                    "INSERT INTO leases (name, holder, acquired_at, expires_at) VALUES (?,?,?,?)"
                    " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
                    " acquired_at = excluded.acquired_at, expires_at = excluded.expires_at"
                    " WHERE leases.expires_at < ? OR leases.holder = ?"
                ),
                (self.name, self.holder, now, now + self.ttl_s, now, self.holder),
            )
            cur.execute(self.store.sql("SELECT holder FROM leases WHERE name = ?"), (self.name,))
            row = cur.fetchone()
        return row is not None and str(row[0]) == self.holder

    def renew(self) -> bool:
        """Push the expiry on; False (and ``lost`` set) when someone else holds it now."""
        n = self.store.execute(
            "UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ?",
            (self.clock() + self.ttl_s, self.name, self.holder),
        )
        if n != 1:
            self.lost.set()
        return n == 1

    def release(self) -> None:
        """Give the lease up (only if still ours) and stop renewing."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.store.execute(
            "DELETE FROM leases WHERE name = ? AND holder = ?", (self.name, self.holder)
        )

    def keep_renewed(self) -> None:
        """Renew from a daemon thread every third of the time to live until released."""

        def loop() -> None:
            while not self._stop.wait(self.ttl_s / 3):
                try:
                    if not self.renew():
                        log.error("run lease %s lost to another run; stopping", self.name)
                        return
                except Exception:  # a store hiccup: the next tick retries before expiry
                    log.warning("run lease renewal failed; retrying", exc_info=True)

        self._thread = threading.Thread(target=loop, name="ragsieve-run-lease", daemon=True)
        self._thread.start()


@dataclass
class Acquired:
    """What waiting for the lease came to: held (run), or why this run is skipped."""

    lease: Lease | None
    waited_s: float
    waited_for: str | None = None  # the holder found when this run arrived
    skipped: str | None = None
    took_over: str | None = None  # an expired holder this run replaced

    def should_stop(self, asked: Callable[[], bool] | None) -> Callable[[], bool]:
        """``asked``, or the lease was lost (another run took it over): stop judging."""
        lost = self.lease.lost if self.lease is not None else threading.Event()
        return lambda: lost.is_set() or (asked is not None and asked())


def _finished_since(store: Store, t: float) -> list[tuple[str, float, float, dict[str, Any]]]:
    import json

    rows = store.query(
        "SELECT run_id, started_at, finished_at, report FROM runs"
        " WHERE finished_at >= ? AND report IS NOT NULL ORDER BY finished_at",
        (t,),
    )
    return [(str(r[0]), float(r[1]), float(r[2]), json.loads(r[3])) for r in rows]


def _covers(run: tuple[str, float, float, dict[str, Any]], lo: datetime, hi: datetime) -> bool:
    """Whether a finished run judged ``[lo, hi)`` but for what arrived while it ran."""
    _, started, finished, report = run
    win = report.get("window") or {}
    if report.get("dry_run") or not win:
        return False
    w_lo, w_hi = datetime.fromisoformat(win["start"]), datetime.fromisoformat(win["end"])
    slack = finished - started + 1.0
    return w_lo.timestamp() <= lo.timestamp() + 1.0 and w_hi.timestamp() >= hi.timestamp() - slack


def acquire(
    store: Store,
    window: tuple[datetime, datetime],
    *,
    wait_s: float = WAIT_S,
    poll_s: float = POLL_S,
    ttl_s: float = TTL_S,
    should_stop: Callable[[], bool] = lambda: False,
) -> Acquired:
    """Wait for the run lease (module docstring); a held lease is renewed until released."""
    lease = Lease(store, ttl_s=ttl_s)
    t0, m0 = time.time(), time.monotonic()
    first = lease.current()
    waited_for = first.holder if first is not None and first.expires_at >= t0 else None
    told = False
    while True:
        before = lease.current()
        if lease.try_acquire():
            break
        waited = time.monotonic() - m0
        holder = before.holder if before else "another run"
        if not told:
            log.warning("waiting up to %.0f s for the run lease held by %s", wait_s, holder)
            told = True
        if waited >= wait_s or should_stop():
            why = "asked to stop" if should_stop() else f"gave up after {waited:.0f} s"
            return Acquired(
                None, waited, holder, skipped=f"another run ({holder}) holds the store; {why}"
            )
        time.sleep(poll_s)
    waited = time.monotonic() - m0
    took_over = None
    if before is not None and before.holder != lease.holder and before.expires_at < time.time():
        took_over = before.holder
        log.warning("run lease of %s expired (killed mid-run?); this run takes over", took_over)
    if waited_for is not None:
        done = [r for r in _finished_since(store, t0) if _covers(r, *window)]
        if done:
            lease.release()
            return Acquired(
                None,
                waited,
                waited_for,
                skipped=f"run {done[-1][0]} judged this window while this run waited"
                f" {waited:.1f} s; nothing left to judge twice",
            )
    lease.keep_renewed()
    return Acquired(lease, waited, waited_for, took_over=took_over)


async def acquire_async(
    store: Store,
    window: tuple[datetime, datetime],
    wait_s: float,
    should_stop: Callable[[], bool] | None,
) -> Acquired:
    """:func:`acquire` from a thread (the wait polls and sleeps)."""
    import asyncio

    cancelled = threading.Event()  # Ctrl-C cancels this task: the waiting thread stops too

    def stop() -> bool:
        return cancelled.is_set() or bool(should_stop and should_stop())

    try:
        got = await asyncio.to_thread(acquire, store, window, wait_s=wait_s, should_stop=stop)
    except asyncio.CancelledError:
        cancelled.set()
        raise
    if got.skipped:
        log.warning("jobs run skipped: %s", got.skipped)
    return got


def lease_report(got: Acquired, lo: datetime, hi: datetime) -> dict[str, Any]:
    """The run report's ``lease`` part; a skipped run's whole report."""
    part = {
        "waited_s": round(got.waited_s, 1),
        "waited_for": got.waited_for,
        "took_over": got.took_over,
        "skipped": got.skipped,
    }
    if got.skipped is None:
        return {"lease": part}
    window = {"start": lo.isoformat(), "end": hi.isoformat()}
    return {"run_id": None, "skipped": got.skipped, "window": window, "lease": part}


__all__ = ["Acquired", "Holder", "Lease", "acquire", "acquire_async", "holder_id", "lease_report"]
