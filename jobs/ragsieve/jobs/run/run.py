"""One job pass: settle, select the window, sample, judge concurrently, flag, annotate, report.

``run_once`` is what ``ragsieve jobs run``, ``ragsieve up`` and the demo call. A judgement's
results and its checkpoint commit together, so a rerun or a crash mid-run never judges a trace
twice for the same judge version and never skips one. A judge ``error`` is stored but not
checkpointed: the next run retries it. Verdicts are recorded per run in ``samples``; a trace is
"decided" once, so flagged cases and Phoenix annotations are emitted once per judge set. A pass
is final only when every configured judge has a usable result (a checkpoint) for its current
version; until then the trace is ``unjudged`` (partial) and a later run decides it. A fail is
kept as soon as one decided metric fails. Each run also decides every trace of the window whose
judgements are complete but whose verdict was never recorded (a crash before the verdicts were
saved), at no judge cost, even when the sample no longer draws it. Flagged
traces grow the golden candidates; an audit share of passes is queued for a person
(``golden/audit.py``); people's verdicts on both give the report's ``judge_quality``.
The parts live in the stage packages ``sampling``, ``judging`` (calls and writes), ``verdicts``
(decisions and what they emit), ``results`` (the tables), ``sinks`` (Phoenix annotations) and
``run.report``; this module only orchestrates them.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragsieve.collector.settle import settle, settling_note
from ragsieve.collector.store import Store
from ragsieve.collector.timeutil import parse_duration
from ragsieve.evaluators.records import utcnow
from ragsieve.jobs.judging.judges import make_judges
from ragsieve.jobs.judging.judging import judge_all
from ragsieve.jobs.judging.spend import Spend
from ragsieve.jobs.results import resultstore
from ragsieve.jobs.run.report import build_run_report
from ragsieve.jobs.sampling.golden_index import GoldenIndex, load_golden_index
from ragsieve.jobs.sampling.sampling import SamplingSettings, StratifiedSampler
from ragsieve.jobs.sinks import annotations as phoenix
from ragsieve.jobs.verdicts.corpus import ObservedCorpus
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase
from ragsieve.jobs.verdicts.verdicts import Decision, decide_all, emit_fresh, sample_rows

log = logging.getLogger(__name__)


@dataclass
class RunOutcome:
    """What one pass produced."""

    run_id: str
    report: dict[str, Any]
    flagged: list[FlaggedCase]
    audit: list[FlaggedCase] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """1 when the judge error rate went over budget, else 0."""
        return 1 if self.report.get("error_budget_exceeded") else 0


async def run_once_async(
    store: Store,
    settings: Any,
    *,
    now: datetime | None = None,
    judges: Sequence[Any] | None = None,
    window: tuple[datetime, datetime] | None = None,
    since: str | None = None,
    take_all: bool = False,
    budget_calls: int | None = None,
    budget_usd: float | None = None,
    settle_s: float | None = None,
    dry_run: bool = False,
    concurrency: int | None = None,
    sampling: SamplingSettings | None = None,
    deliver: bool = True,
    should_stop: Callable[[], bool] | None = None,
    golden: GoldenIndex | None = None,
) -> RunOutcome:
    """One pass of the online evaluator (see the module docstring); async variant."""
    job = settings.jobs
    concurrency = concurrency or job.concurrency
    sampling = sampling or job.sampling
    now = now or utcnow()
    t0 = time.monotonic()
    run_id = f"run-{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    stop = should_stop or (lambda: False)
    quiet = job.settle_s if settle_s is None else settle_s
    settled = await asyncio.to_thread(
        settle, store, quiet_s=quiet, max_wait_s=settings.collector.max_wait_s, now=now.timestamp()
    )
    max_wait = settings.collector.max_wait_s
    waiting, last_due = await asyncio.to_thread(store.settling, quiet_s=quiet, max_wait_s=max_wait)
    lo, hi = window or (now - parse_duration(since or job.since), now)
    judges = list(judges) if judges is not None else make_judges(settings)
    versions = {j.name: str(j.version) for j in judges}
    if len(versions) != len(judges):
        raise ValueError(f"two judges share a metric name: {[j.name for j in judges]}")
    key = "|".join(f"{n}={v}" for n, v in sorted(versions.items()))
    if golden is None:
        golden = load_golden_index(
            settings.golden.path,
            settings.golden.near_duplicate_cosine,
            settings.golden.new_category_cosine,
        )
    sampler = StratifiedSampler(
        sampling,
        seed=job.seed,
        golden_vectors=golden.vectors if golden else None,
        embed=golden.embed if golden else None,
    )
    t_sel = time.monotonic()
    cands = await asyncio.to_thread(resultstore.window_candidates, store, lo, hi)
    done = await asyncio.to_thread(resultstore.done_in_window, store, lo, hi, versions)
    need = {c.trace_id: len(judges) - len(done.get(c.trace_id, ())) for c in cands}
    complete = {t for t, js in done.items() if len(js) == len(versions)}
    if complete:
        complete -= await asyncio.to_thread(resultstore.decided_in_window, store, lo, hi, key)
    calls_budget = budget_calls if budget_calls is not None else job.budget_calls
    sel = sampler.sample(
        cands,
        sample_size=job.sample_size,
        take_all=take_all,
        budget_calls=calls_budget,
        calls_needed=lambda t: need.get(t, 0),
        recover=complete,
    )
    select_s = time.monotonic() - t_sel
    already = [p for p in sel.picks if need.get(p.trace_id, 0) == 0]
    spend = Spend(budget_usd if budget_usd is not None else job.budget_usd)
    picks = [*sel.picks, *sel.recovered]
    records = await asyncio.to_thread(
        resultstore.load_interactions, store, [p.trace_id for p in picks]
    )
    decisions: list[Decision] = []
    flagged: list[FlaggedCase] = []
    audit: list[FlaggedCase] = []
    annotation_info: dict[str, Any] = {"queued": 0}
    golden_report: dict[str, Any] | None = None
    audit_info: dict[str, Any] = {"queued": 0, "already_queued": 0}
    corpus_info: dict[str, Any] = {}
    if not dry_run:
        await asyncio.to_thread(resultstore.begin_run, store, run_id, now.timestamp())
        work = [
            (records[p.trace_id], j)
            for p in sel.picks
            if p.trace_id in records
            for j in judges
            if j.name not in done.get(p.trace_id, ())
        ]
        await judge_all(store, run_id, work, concurrency=concurrency, spend=spend, should_stop=stop)
        corpus = ObservedCorpus(store)
        corpus_new = await asyncio.to_thread(
            corpus.index_window, [c.trace_id for c in cands], records
        )
        corpus_info.update(new_chunks=corpus_new, chunks=await asyncio.to_thread(corpus.size))
        decisions = await asyncio.to_thread(
            decide_all, store, picks, records, versions, job.thresholds, golden, corpus
        )
        before = await asyncio.to_thread(
            resultstore.decided_traces, store, [d.pick.trace_id for d in decisions], key
        )
        flagged, audit, fresh = emit_fresh(
            decisions, before, run_id, seed=job.seed, audit_share=job.audit_share
        )
        queued = [a for d in fresh for a in _annotations(d, run_id)]
        annotation_info["queued"] = await asyncio.to_thread(phoenix.queue, store, queued)
        golden_report = await asyncio.to_thread(_grow, store, flagged, settings)
        audit_info = await asyncio.to_thread(_route_audits, store, audit, settings)
        audit_ids = {c.interaction.trace_id for c in audit}
        rows = sample_rows(decisions, key, versions, audit_ids)
        await asyncio.to_thread(resultstore.save_samples, store, run_id, rows)
    labels = await asyncio.to_thread(resultstore.review_labels, store, key)
    report = build_run_report(
        run_id,
        lo,
        hi,
        settled,
        sel,
        already,
        spend,
        decisions,
        flagged,
        audit,
        labels,
        settings,
        dry_run,
        key,
        select_s,
        judges,
        need,
    )
    at = now.timestamp()
    report["settling"] = {
        "traces": waiting,
        "due_within_s": None if last_due is None else round(max(0.0, last_due - at), 1),
        "note": settling_note(waiting, last_due, quiet_s=quiet, max_wait_s=max_wait, now=at),
    }
    report["audit"].update(audit_info)
    if corpus_info:
        report["observed_corpus"] = corpus_info
    report["audit"]["open"] = await asyncio.to_thread(resultstore.open_audits, store)
    if golden_report is not None:
        # the failure categories golden growth assigned (the ones `golden status` lists)
        report["flagged_by_category"] = golden_report.pop("flagged_by_category")
        report["golden"] = golden_report
    if not dry_run:
        if deliver and settings.phoenix.base_url:
            key_ = settings.phoenix.api_key
            annotation_info.update(
                await phoenix.deliver(
                    store,
                    settings.phoenix.base_url,
                    api_key=key_.get_secret_value() if key_ else None,
                )
            )
        report["annotations"] = annotation_info
        report["duration_s"] = round(time.monotonic() - t0, 3)
        await asyncio.to_thread(resultstore.finish_run, store, run_id, time.time(), report)
    report["duration_s"] = round(time.monotonic() - t0, 3)
    return RunOutcome(run_id, report, flagged, audit)


def run_once(store: Store, settings: Any, **kwargs: Any) -> RunOutcome:
    """One pass of the online evaluator; see :func:`run_once_async` for the arguments."""
    return asyncio.run(run_once_async(store, settings, **kwargs))


def _annotations(d: Decision, run_id: str) -> list[dict[str, Any]]:
    """The Phoenix annotations of one fresh decision: one per judge result, plus the verdict."""
    return phoenix.build_annotations(
        d.interaction.span_id,
        d.results,
        verdict=d.verdict.outcome,
        root_cause=d.verdict.root_cause,
        evidence=d.verdict.evidence,
        run_id=run_id,
    )


def _grow(store: Store, flagged: list[FlaggedCase], settings: Any) -> dict[str, Any] | None:
    try:
        mod = importlib.import_module("ragsieve.jobs.golden.candidates")
    except ModuleNotFoundError as exc:
        if exc.name in ("ragsieve.jobs.golden", "ragsieve.jobs.golden.candidates"):
            return None
        raise
    result: dict[str, Any] = mod.grow(store, flagged, settings)
    return result


def _route_audits(store: Store, audit: list[FlaggedCase], settings: Any) -> dict[str, Any]:
    if not audit:
        return {"queued": 0, "already_queued": 0}
    from ragsieve.jobs.golden.audit import route

    return dict(route(store, audit, settings))


__all__ = ["RunOutcome", "run_once", "run_once_async"]
