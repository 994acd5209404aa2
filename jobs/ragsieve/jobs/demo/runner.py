"""The whole demo loop: collector, app traffic, settle, one job pass over every trace, scorecard."""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsieve.collector.derive.settle import settle
from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import ServerThread
from ragsieve.collector.store import open_store
from ragsieve.evaluators.errors import StoreError
from ragsieve.evaluators.records import utcnow
from ragsieve.jobs.demo.scorecard import Floors, Scorecard, score
from ragsieve.jobs.demo.tallyfox.app import PlantedRecord, run_traffic

if TYPE_CHECKING:
    from ragsieve.collector.store import Store
    from ragsieve.jobs.run.run import RunOutcome
    from ragsieve.jobs.settings import Settings

log = logging.getLogger(__name__)
QUIET_S = 0.5  # the demo's traffic ends at once; no need for production's 15 s quiet period
LEASE_WAIT_S = 120.0  # another `jobs run` on the demo's store: wait this long, then say so
Progress = Callable[[str], None]


@dataclass
class DemoResult:
    """What one demo run produced."""

    scorecard: Scorecard
    report: dict[str, Any]
    flagged: list[Any]
    planted: list[PlantedRecord]
    floors: Floors
    store_url: str
    timings: dict[str, float] = field(default_factory=dict)
    phoenix_url: str | None = None

    @property
    def failures(self) -> list[str]:
        """Missed floors (empty when the scorecard passes)."""
        return self.scorecard.failures(self.floors)


def floors_from(settings: Settings) -> Floors:
    """Scorecard floors from the ``[demo]`` settings section."""
    demo = settings.demo
    return Floors(
        planted_recall=demo.min_planted_recall,
        root_cause_accuracy=demo.min_root_cause_accuracy,
        false_positive_rate=demo.max_false_positive_rate,
    )


def _settled_count(store: Store, trace_ids: list[str]) -> int:
    """How many of ``trace_ids`` already have their interaction row (queried in batches)."""
    have = 0
    for i in range(0, len(trace_ids), 500):
        batch = trace_ids[i : i + 500]
        marks = ",".join("?" * len(batch))
        sql = f"SELECT COUNT(*) FROM interactions WHERE trace_id IN ({marks})"  # noqa: S608
        have += int(store.query(sql, batch)[0][0])
    return have


def _wait_settled(store: Store, trace_ids: list[str], max_wait_s: float, progress: Progress) -> int:
    """Settle until every trace of THIS run's traffic has its interaction (or ``max_wait_s``
    passes); rows already in a reused store do not count."""
    deadline = time.monotonic() + max_wait_s
    expected = len(set(trace_ids))
    wanted = sorted(set(trace_ids))
    while True:
        settle(store, quiet_s=QUIET_S, max_wait_s=max_wait_s)
        have = _settled_count(store, wanted)
        if have >= expected or time.monotonic() > deadline:
            progress(f"settled {have}/{expected} traces")
            return have
        time.sleep(QUIET_S / 2)


def _pending(store: Store) -> int:
    return sum(int(v.get("pending", 0)) for v in store.outbox_stats().values())


def _wait_outbox(
    store: Store, max_wait_s: float, progress: Progress, deliver_annotations: Any = None
) -> None:
    """Wait until the outbox (forwarded spans, annotations) is delivered or ``max_wait_s`` ends."""
    import asyncio

    from ragsieve.jobs.sinks import annotations

    deadline = time.monotonic() + max_wait_s
    while (left := _pending(store)) and time.monotonic() < deadline:
        if deliver_annotations is not None:
            ph = deliver_annotations.phoenix
            key = ph.api_key.get_secret_value() if ph.api_key else None
            asyncio.run(annotations.deliver(store, ph.base_url, api_key=key, base_backoff_s=0.5))
        time.sleep(0.5)
    progress("outbox delivered" if not left else f"outbox: {left} item(s) still pending")


def run_demo(
    settings: Settings,
    *,
    workdir: Path,
    store_url: str | None = None,
    llm_base_url: str | None = None,
    forward_otlp: str | None = None,
    phoenix_url: str | None = None,
    progress: Progress = lambda msg: None,
    traffic_progress: Callable[[int, int], None] | None = None,
) -> DemoResult:
    """Run the demo end to end inside ``workdir``; score the job's flags against the app's log."""
    url = store_url or f"sqlite:///{workdir / 'demo.db'}"
    store = open_store(url)
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    cfg = settings.collector.model_copy(
        update={
            "port": 0,
            "quiet_period_s": QUIET_S,
            "settle_interval_s": 0.25,
            "forward_otlp": forward_otlp,
        }
    )
    try:
        server = ServerThread(create_app(store, cfg), port=0).start()
        progress(f"collector listening on {server.url}")
        try:
            pass_ = _Pass(store, settings, workdir, timings, progress)
            planted = pass_.traffic(f"{server.url}/v1/traces", llm_base_url, traffic_progress)
            outcome = pass_.judge(planted, forward_otlp=forward_otlp, phoenix_url=phoenix_url)
        finally:
            server.stop()
    finally:
        store.close()
    flagged = {c.interaction.trace_id: c.root_cause for c in outcome.flagged}
    card = score(planted, flagged)
    timings["total_s"] = round(time.monotonic() - t0, 2)
    floors = floors_from(settings)
    return DemoResult(
        card, outcome.report, outcome.flagged, planted, floors, url, timings, phoenix_url
    )


@dataclass
class _Pass:
    """The demo's two timed steps against a running collector: send traffic, then judge it."""

    store: Store
    settings: Settings
    workdir: Path
    timings: dict[str, float]
    progress: Progress
    start: datetime = field(default_factory=utcnow)  # when traffic began

    def traffic(
        self,
        endpoint: str,
        llm_base_url: str | None,
        traffic_progress: Callable[[int, int], None] | None,
    ) -> list[PlantedRecord]:
        """Send the demo app's queries; wait until every trace is assembled."""
        demo = self.settings.demo
        self.start = utcnow()
        t0 = time.monotonic()
        planted = run_traffic(
            endpoint,
            demo.queries,
            seed=demo.seed,
            failure_share=demo.failure_share,
            llm_base_url=llm_base_url,
            progress=traffic_progress,
            log_path=self.workdir / "planted.jsonl",
        )
        self.timings["traffic_s"] = round(time.monotonic() - t0, 2)
        t1 = time.monotonic()
        ids = [p.trace_id for p in planted]
        _wait_settled(self.store, ids, self.settings.collector.max_wait_s, self.progress)
        self.timings["settle_s"] = round(time.monotonic() - t1, 2)
        return planted

    def judge(
        self, planted: list[PlantedRecord], *, forward_otlp: str | None, phoenix_url: str | None
    ) -> RunOutcome:
        """One job pass over every demo trace; annotations delivered when Phoenix is on."""
        from ragsieve.jobs.run.run import run_once

        if forward_otlp:  # spans must reach Phoenix before the annotations that point at them
            _wait_outbox(self.store, 120.0, self.progress)
        self.progress(f"judging {len(planted)} traces with the {self.settings.jobs.backend} judges")
        _say_lease_holder(self.store, self.progress)
        t2 = time.monotonic()
        outcome = run_once(
            self.store,
            self.settings,
            window=(self.start - timedelta(seconds=5), utcnow() + timedelta(seconds=5)),
            take_all=True,
            settle_s=QUIET_S,
            deliver=phoenix_url is not None,
            lease_wait_s=LEASE_WAIT_S,
        )
        if outcome.skipped:  # a scorecard of nothing judged would read as "every plant missed"
            raise StoreError(
                f"demo: the job pass did not run: {outcome.skipped}; the demo judges its own"
                " traffic, so give it a store no other `jobs run` uses (--store)"
            )
        self.timings["job_s"] = round(time.monotonic() - t2, 2)
        if phoenix_url:
            _wait_outbox(self.store, 60.0, self.progress, deliver_annotations=self.settings)
        return outcome


def _say_lease_holder(store: Store, progress: Progress) -> None:
    """Say so when another ``jobs run`` holds the store's run lease: the demo waits for it."""
    from ragsieve.jobs.run.lease import Lease

    holder = Lease(store).current()
    if holder is not None and holder.expires_at >= time.time():
        progress(
            f"another run ({holder.holder}) holds this store's run lease; waiting for it"
            f" (up to {LEASE_WAIT_S:.0f} s)"
        )


def temp_workdir() -> tempfile.TemporaryDirectory[str]:
    """A temporary directory for the demo's store and planted log."""
    return tempfile.TemporaryDirectory(prefix="ragsieve-demo-")
