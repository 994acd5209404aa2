"""Group commit: many concurrent requests share one durable store transaction.

Each request hands its spans to :class:`SpanWriter` and waits; a single writer thread drains
everything queued so far into one ``write_spans`` call, so a commit's fsync is paid once per batch
rather than once per request. The queue is bounded: when it is full the receiver answers 503.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from ragsieve.collector.store import SpanWrite, Store
from ragsieve.collector.wire.spans import LogEvent, SpanRecord, SpanRow
from ragsieve.evaluators.errors import StoreError

log = logging.getLogger(__name__)


@dataclass
class WriteJob:
    """One request's worth of data to make durable (spans as ready rows, or records)."""

    spans: list[SpanRow | SpanRecord] = field(default_factory=list)
    forward: list[tuple[str, bytes, str, int]] = field(default_factory=list)
    log_events: list[LogEvent] = field(default_factory=list)
    done: Future[SpanWrite] = field(default_factory=Future)


class Overloaded(Exception):
    """The write queue is full; the client should retry later."""


class WriteRefused(Exception):
    """A job was not made durable: ``retry`` says whether the client should send it again."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


async def commit(writer: SpanWriter, job: WriteJob) -> SpanWrite:
    """Queue ``job`` and wait until it is durable; :class:`WriteRefused` says why it is not.

    Shared by the HTTP and gRPC receivers, which map ``retry`` to 503/UNAVAILABLE and the rest to
    400/INVALID_ARGUMENT.
    """
    try:
        future = writer.submit(job)
    except Overloaded:
        raise WriteRefused("store write queue is full", retry=True) from None
    try:
        return await asyncio.wrap_future(future)
    except StoreError as exc:
        raise WriteRefused(f"store unavailable: {exc}", retry=True) from None
    except (ValueError, OverflowError, UnicodeError) as exc:
        # Data the store cannot hold: permanent, so the client must not retry it.
        raise WriteRefused(f"cannot store this data: {exc}"[:300], retry=False) from None
    except Exception as exc:  # never a 500/UNKNOWN: the client must keep the data and retry
        log.exception("store write failed")
        raise WriteRefused(f"store write failed: {type(exc).__name__}", retry=True) from None


class SpanWriter:
    """A writer thread committing queued jobs in batches."""

    def __init__(self, store: Store, *, max_queued: int = 256, max_batch_spans: int = 20_000):
        self.store = store
        self.max_batch_spans = max_batch_spans
        self._q: queue.Queue[WriteJob | None] = queue.Queue(maxsize=max_queued)
        self._thread = threading.Thread(target=self._run, name="ragsieve-writer", daemon=True)
        self._thread.start()

    @property
    def depth(self) -> int:
        """Jobs waiting to be written."""
        return self._q.qsize()

    def submit(self, job: WriteJob) -> Future[SpanWrite]:
        """Queue a job; raises :class:`Overloaded` when the queue is full."""
        try:
            self._q.put_nowait(job)
        except queue.Full as exc:
            raise Overloaded("write queue is full") from exc
        return job.done

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued, then stop the thread."""
        self._q.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._q.get()
            if first is None:
                return
            batch = [first]
            n = len(first.spans)
            while n < self.max_batch_spans:
                try:
                    nxt = self._q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
                n += len(nxt.spans)
            self._write(batch)

    def _write(self, batch: list[WriteJob]) -> None:
        if len(batch) == 1 and len(batch[0].spans) > self.max_batch_spans:
            self._write_large(batch[0])
            return
        try:
            result = self._commit(batch)
        except StoreError as exc:  # transient: every waiting request answers 503
            log.error("store write failed for %d requests: %s", len(batch), exc)
            for job in batch:
                job.done.set_exception(exc)
            return
        except Exception as exc:  # any other driver error is about the data of this batch
            # (IntegrityError, DataError, an int a column cannot hold...); each store raises its
            # own kinds, so the guilty request is found by retrying, not by the exception's type.
            if len(batch) == 1:
                log.error("store refused a request: %r", exc)
                batch[0].done.set_exception(exc)
                return
            # One request's data broke the shared transaction: retry each on its own so only
            # the guilty request fails.
            log.warning("batch write failed (%r); retrying %d requests one by one", exc, len(batch))
            for job in batch:
                self._write([job])
            return
        for job in batch:
            job.done.set_result(result)

    def _write_large(self, job: WriteJob) -> None:
        """A request bigger than one batch: several transactions, acknowledged after the last."""
        step = self.max_batch_spans
        total = SpanWrite(0, 0, ())
        try:
            for start in range(0, len(job.spans), step):
                last = start + step >= len(job.spans)
                part = WriteJob(
                    spans=job.spans[start : start + step],
                    forward=job.forward if last else [],
                    log_events=job.log_events if last else [],
                )
                done = self._commit([part])
                total = SpanWrite(
                    total.written + done.written,
                    total.duplicates + done.duplicates,
                    tuple(dict.fromkeys((*total.traces, *done.traces))),
                )
        except Exception as exc:  # whatever it is, the waiting request must get an answer:
            # an exception escaping here would end the writer thread and hang every request.
            log.error("store write failed for a large request: %r", exc)
            job.done.set_exception(exc)
            return
        job.done.set_result(total)

    def _commit(self, batch: list[WriteJob]) -> SpanWrite:
        return self.store.write_spans(
            # SQLStore takes rows; the Store protocol's signature still says records only.
            [s for job in batch for s in job.spans],
            forward=[f for job in batch for f in job.forward],
            log_events=[e for job in batch for e in job.log_events],
        )
