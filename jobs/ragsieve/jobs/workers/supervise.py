"""Keep a queue worker running through a database outage, or exit non-zero (issue 47, row 5).

procrastinate's worker stops itself when the database goes away (its heartbeat or listener
fails), and ``run_worker_async`` then returned as if asked to stop: during a 10 s PostgreSQL stop
``workers worker`` exited 0, 141 batches waited, and a ``Restart=on-failure`` unit never brought
it back. :func:`supervise` tells the two apart. SIGINT/SIGTERM are ours: they finish the batch in
hand and return. A worker that stopped on its own is restarted once the server answers again,
retrying with exponential backoff; when it stays unreachable for ``give_up_s`` (or the worker
keeps failing that long), :class:`WorkerGaveUp` ends the command with a non-zero exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ragsieve.evaluators.errors import StoreError

log = logging.getLogger("ragsieve.jobs.workers")

STABLE_S = 30.0  # a run that lasted this long ends an outage: the give-up clock starts afresh


class WorkerGaveUp(StoreError):
    """The database stayed unreachable (or the worker kept failing) past the give-up time."""


@dataclass(frozen=True)
class Backoff:
    """Waits between reconnection attempts: ``first``, doubling up to ``most`` seconds."""

    first: float = 0.5
    most: float = 15.0

    def delays(self) -> Callable[[], float]:
        """A fresh sequence of waits (each call returns the next one)."""
        state = [self.first]

        def nxt() -> float:
            delay = state[0]
            state[0] = min(delay * 2, self.most)
            return delay

        return nxt


async def supervise(
    run_once: Callable[[], Awaitable[None]],
    reachable: Callable[[], Awaitable[str | None]],
    *,
    give_up_s: float,
    finishes: bool = False,
    backoff: Backoff = Backoff(),
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Run ``run_once`` until a stop signal; restart it when it stops on its own.

    Args:
        run_once: one worker run (open the app, run the worker, close the app).
        reachable: None when the database answers now, else why it does not.
        give_up_s: longest outage (or run of failures) ridden out before :class:`WorkerGaveUp`.
        finishes: the run is expected to end by itself (``--burst``): its normal return is done.
        backoff: the waits between reconnection attempts.
        clock: seconds, monotonic (injectable for tests).
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await _loop(run_once, reachable, stop, give_up_s, finishes, backoff, clock)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _loop(
    run_once: Callable[[], Awaitable[None]],
    reachable: Callable[[], Awaitable[str | None]],
    stop: asyncio.Event,
    give_up_s: float,
    finishes: bool,
    backoff: Backoff,
    clock: Callable[[], float],
) -> None:
    failing_since: float | None = None
    while True:
        started = clock()
        why = await _run_until_stop(run_once, stop)
        if stop.is_set() or (why is None and finishes):
            return
        if clock() - started >= STABLE_S:
            failing_since = None
        failing_since = started if failing_since is None else failing_since
        log.error("worker stopped on its own (%s); reconnecting", why or "the database went away")
        next_delay = backoff.delays()
        while True:
            if clock() - failing_since > give_up_s:
                raise WorkerGaveUp(
                    f"queue worker: the database was unreachable or the worker kept failing for"
                    f" over {give_up_s:g} s (last: {why or 'stopped on its own'}); giving up so"
                    " a supervisor restarts it"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), next_delay())
            if stop.is_set():
                return
            problem = await reachable()
            if problem is None:
                log.warning("database reachable again; restarting the worker")
                break
            why = problem


async def _run_until_stop(
    run_once: Callable[[], Awaitable[None]], stop: asyncio.Event
) -> str | None:
    """One run; on a stop signal it is cancelled (the worker finishes its batch). Why it failed."""
    task = asyncio.ensure_future(run_once())
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if not task.done():
        task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return None
    except Exception as exc:  # the database went away mid-call, or the worker failed
        return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return None


def pg_reachable(conninfo: str, timeout_s: float = 3.0) -> Callable[[], Awaitable[str | None]]:
    """A probe: None when a new connection to ``conninfo`` succeeds, else the driver's reason."""

    async def probe() -> str | None:
        import psycopg

        try:
            conn = await psycopg.AsyncConnection.connect(
                conninfo, connect_timeout=max(1, int(timeout_s))
            )
        except psycopg.Error as exc:
            return " ".join(str(exc).split("\n")[0].split())[:300]
        await conn.close()
        return None

    return probe


__all__ = ["Backoff", "WorkerGaveUp", "pg_reachable", "supervise"]
