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
saved), at no judge cost, even when the sample no longer draws it. Flagged traces grow the
golden candidates; an audit share of passes is queued for a person (``golden/review/audit.py``);
people's verdicts on both give the report's ``judge_quality``.
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
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from ragsieve.collector.derive.settle import settle, settling_note
from ragsieve.collector.store import Store
from ragsieve.collector.store.retention import purge_expired
from ragsieve.collector.timeutil import parse_duration
from ragsieve.evaluators.judges import Judge
from ragsieve.evaluators.records import RagInteraction, utcnow
from ragsieve.jobs.judging.judges import make_judges
from ragsieve.jobs.judging.judging import judge_all
from ragsieve.jobs.judging.spend import Spend
from ragsieve.jobs.results import resultstore
from ragsieve.jobs.run import lease
from ragsieve.jobs.run.after import misdated
from ragsieve.jobs.run.report import build_run_report
from ragsieve.jobs.sampling.golden_cache import cache_dir
from ragsieve.jobs.sampling.golden_index import GoldenIndex, load_golden_index
from ragsieve.jobs.sampling.sampling import (
    Candidate,
    Pick,
    Selection,
    StratifiedSampler,
    TakeAllSampler,
)
from ragsieve.jobs.settings import SamplingSettings, Settings
from ragsieve.jobs.sinks import annotations as phoenix
from ragsieve.jobs.verdicts.corpus import ObservedCorpus
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase, emit_fresh, sample_rows
from ragsieve.jobs.verdicts.verdicts import Decision, decide_all

log = logging.getLogger(__name__)


@dataclass
class RunOutcome:
    """What one pass produced."""

    run_id: str
    report: dict[str, Any]
    flagged: list[FlaggedCase]
    audit: list[FlaggedCase] = field(default_factory=list)
    skipped: str | None = None  # why this pass did nothing (another run held the store)

    @property
    def exit_code(self) -> int:
        """1 when the judge error rate went over budget, else 0."""
        return 1 if self.report.get("error_budget_exceeded") else 0


@dataclass(frozen=True)
class RunOptions:
    """What a caller may set for one pass; ``None`` means the setting in ``settings.jobs``.

    ``take_all`` judges every settled trace of the window (a sampler of its own, every stratum
    at probability one); ``dry_run`` stops after the plan; ``deliver=False`` queues Phoenix
    annotations without sending them.
    """

    now: datetime | None = None
    judges: Sequence[Judge] | None = None
    window: tuple[datetime, datetime] | None = None
    since: str | None = None
    take_all: bool = False
    budget_calls: int | None = None
    budget_usd: float | None = None
    settle_s: float | None = None
    dry_run: bool = False
    concurrency: int | None = None
    sampling: SamplingSettings | None = None
    deliver: bool = True
    should_stop: Callable[[], bool] | None = None
    golden: GoldenIndex | None = None
    lease_wait_s: float = lease.WAIT_S


@dataclass
class RunPlan:
    """Everything decided before any judge call: the window, the judges and the sample."""

    run_id: str
    now: datetime
    started: float  # time.monotonic() at the start
    lo: datetime
    hi: datetime
    quiet_s: float
    settled: int
    waiting: int
    last_due: float | None
    judges: list[Judge]
    versions: dict[str, str]
    key: str  # the judge set: "name=version|..."
    golden: GoldenIndex | None
    candidates: list[Candidate]
    done: dict[str, set[str]]  # trace id -> judges already checkpointed at their version
    need: dict[str, int]  # trace id -> judge calls still needed
    selection: Selection
    select_s: float
    records: dict[str, RagInteraction]

    @property
    def picks(self) -> list[Pick]:
        """The sample plus the recovered traces, in that order."""
        return [*self.selection.picks, *self.selection.recovered]

    @property
    def already_judged(self) -> list[Pick]:
        """Picks every judge had already judged: free this run."""
        return [p for p in self.selection.picks if self.need.get(p.trace_id, 0) == 0]

    def work(self) -> list[tuple[RagInteraction, Judge]]:
        """The judge calls this run makes: each sampled trace times each judge not yet done."""
        return [
            (self.records[p.trace_id], j)
            for p in self.selection.picks
            if p.trace_id in self.records
            for j in self.judges
            if j.name not in self.done.get(p.trace_id, ())
        ]


@dataclass
class RunResult:
    """What executing a plan produced: decisions, what they emitted, and what that cost."""

    spend: Spend
    decisions: list[Decision] = field(default_factory=list)
    flagged: list[FlaggedCase] = field(default_factory=list)
    audit: list[FlaggedCase] = field(default_factory=list)
    annotations: dict[str, Any] = field(default_factory=lambda: {"queued": 0})
    golden: dict[str, Any] | None = None
    audits: dict[str, Any] = field(default_factory=lambda: {"queued": 0, "already_queued": 0})
    corpus: dict[str, Any] = field(default_factory=dict)


async def run_once_async(store: Store, settings: Settings, **options: Any) -> RunOutcome:
    """One pass (module docstring; ``options``: :class:`RunOptions`), under the run lease."""
    opts = RunOptions(**options)
    if opts.dry_run:
        return await _run_leased(store, settings, opts, None)
    now = opts.now or utcnow()
    lo, hi = opts.window or (now - parse_duration(opts.since or settings.jobs.since), now)
    got = await lease.acquire_async(store, (lo, hi), opts.lease_wait_s, opts.should_stop)
    if got.lease is None:  # skipped (lease.py logs why)
        return RunOutcome("", lease.lease_report(got, lo, hi), [], skipped=got.skipped)
    try:
        opts = replace(opts, should_stop=got.should_stop(opts.should_stop))
        return await _run_leased(store, settings, opts, got)
    finally:
        await asyncio.to_thread(got.lease.release)


async def _run_leased(
    store: Store, settings: Settings, opts: RunOptions, got: lease.Acquired | None
) -> RunOutcome:
    plan = await plan_run(store, settings, opts)
    job = settings.jobs
    budget_usd = opts.budget_usd if opts.budget_usd is not None else job.budget_usd
    result = RunResult(spend=Spend(budget_usd))
    if not opts.dry_run:
        result = await execute(store, settings, plan, opts, result)
    report = await _report(store, settings, plan, result, dry_run=opts.dry_run)
    if got is not None:
        report.update(lease.lease_report(got, plan.lo, plan.hi))
    if not opts.dry_run:
        await _deliver(store, settings, result, deliver=opts.deliver)
        report["annotations"] = result.annotations
        report["retention"] = await asyncio.to_thread(_purge, store, settings)
        report["duration_s"] = round(time.monotonic() - plan.started, 3)
        await asyncio.to_thread(resultstore.finish_run, store, plan.run_id, time.time(), report)
    report["duration_s"] = round(time.monotonic() - plan.started, 3)
    return RunOutcome(plan.run_id, report, result.flagged, result.audit)


async def plan_run(store: Store, settings: Settings, opts: RunOptions) -> RunPlan:
    """Settle, pick the window and the judges, and draw the sample; no judge is called."""
    job = settings.jobs
    now = opts.now or utcnow()
    started = time.monotonic()
    quiet = job.settle_s if opts.settle_s is None else opts.settle_s
    max_wait = settings.collector.max_wait_s
    cap = settings.collector.max_trace_spans  # the collector's own bound on a trace
    settled = await asyncio.to_thread(
        settle, store, quiet_s=quiet, max_wait_s=max_wait, now=now.timestamp(), max_spans=cap
    )
    waiting, last_due = await asyncio.to_thread(store.settling, quiet_s=quiet, max_wait_s=max_wait)
    lo, hi = opts.window or (now - parse_duration(opts.since or job.since), now)
    judges = list(opts.judges) if opts.judges is not None else make_judges(settings, store=store)
    versions = {j.name: str(j.version) for j in judges}
    if len(versions) != len(judges):
        raise ValueError(f"two judges share a metric name: {[j.name for j in judges]}")
    key = "|".join(f"{n}={v}" for n, v in sorted(versions.items()))
    golden = opts.golden if opts.golden is not None else _golden_index(settings)
    t_sel = time.monotonic()
    cands = await asyncio.to_thread(resultstore.window_candidates, store, lo, hi)
    done = await asyncio.to_thread(resultstore.done_in_window, store, lo, hi, versions)
    need = {c.trace_id: len(judges) - len(done.get(c.trace_id, ())) for c in cands}
    complete = {t for t, js in done.items() if len(js) == len(versions)}
    if complete:
        complete -= await asyncio.to_thread(resultstore.decided_in_window, store, lo, hi, key)
    sampler_cls = TakeAllSampler if opts.take_all else StratifiedSampler
    sampler = sampler_cls(
        opts.sampling or job.sampling,
        seed=job.seed,
        golden_vectors=golden.vectors if golden else None,
        embed=golden.embed if golden else None,
    )
    sel = sampler.sample(
        cands,
        sample_size=job.sample_size,
        budget_calls=opts.budget_calls if opts.budget_calls is not None else job.budget_calls,
        calls_needed=lambda t: need.get(t, 0),
        recover=complete,
    )
    select_s = time.monotonic() - t_sel
    ids = [p.trace_id for p in (*sel.picks, *sel.recovered)]
    records = await asyncio.to_thread(resultstore.load_interactions, store, ids)
    run_id = f"run-{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    return RunPlan(
        run_id, now, started, lo, hi, quiet, settled, waiting, last_due, judges, versions, key,
        golden, cands, done, need, sel, select_s, records,
    )  # fmt: skip


async def execute(
    store: Store, settings: Settings, plan: RunPlan, opts: RunOptions, result: RunResult
) -> RunResult:
    """Judge the plan's calls, decide every pick, and emit what the fresh decisions produce."""
    job = settings.jobs
    await asyncio.to_thread(resultstore.begin_run, store, plan.run_id, plan.now.timestamp())
    await judge_all(
        store,
        plan.run_id,
        plan.work(),
        concurrency=opts.concurrency or job.concurrency,
        spend=result.spend,
        should_stop=opts.should_stop or (lambda: False),
    )
    corpus = ObservedCorpus(store)
    ids = [c.trace_id for c in plan.candidates]
    new_chunks = await asyncio.to_thread(corpus.index_window, ids, plan.records)
    result.corpus.update(new_chunks=new_chunks, chunks=await asyncio.to_thread(corpus.size))
    result.decisions = await asyncio.to_thread(
        decide_all, store, plan.picks, plan.records, plan.versions, job.thresholds, plan.golden,
        corpus,
    )  # fmt: skip
    await asyncio.to_thread(_emit, store, settings, plan, result)
    return result


def _emit(store: Store, settings: Settings, plan: RunPlan, result: RunResult) -> None:
    """Flag, audit, annotate, grow the golden candidates and record the samples (in a thread)."""
    job = settings.jobs
    decided = [d.pick.trace_id for d in result.decisions]
    before = resultstore.decided_traces(store, decided, plan.key)
    result.flagged, result.audit, fresh = emit_fresh(
        result.decisions, before, plan.run_id, seed=job.seed, audit_share=job.audit_share
    )
    queued = [a for d in fresh for a in _annotations(d, plan.run_id)]
    result.annotations["queued"] = phoenix.queue(store, queued)
    result.golden = _grow(store, result.flagged, settings)
    result.audits = _route_audits(store, result.audit, settings)
    audit_ids = {c.interaction.trace_id for c in result.audit}
    rows = sample_rows(result.decisions, plan.key, plan.versions, audit_ids, job.audit_share)
    resultstore.save_samples(store, plan.run_id, rows)


async def _report(
    store: Store, settings: Settings, plan: RunPlan, result: RunResult, *, dry_run: bool
) -> dict[str, Any]:
    """The run report from the plan and the result."""
    labels = await asyncio.to_thread(resultstore.review_labels, store, plan.key)
    report = build_run_report(
        plan.run_id, plan.lo, plan.hi, plan.settled, plan.selection, plan.already_judged,
        result.spend, result.decisions, result.flagged, result.audit, labels, settings, dry_run,
        plan.key, plan.select_s, plan.judges, plan.need,
    )  # fmt: skip
    at = plan.now.timestamp()
    due = None if plan.last_due is None else round(max(0.0, plan.last_due - at), 1)
    note = settling_note(
        plan.waiting, plan.last_due, quiet_s=plan.quiet_s,
        max_wait_s=settings.collector.max_wait_s, now=at,
    )  # fmt: skip
    report["settling"] = {"traces": plan.waiting, "due_within_s": due, "note": note}
    report["misdated"] = await asyncio.to_thread(misdated, store, at)  # 1970 / 2100 stamps
    report["audit"].update(result.audits)
    if result.corpus:
        report["observed_corpus"] = result.corpus
    report["audit"]["open"] = await asyncio.to_thread(resultstore.open_audits, store)
    if result.golden is not None:
        # the failure categories golden growth assigned (the ones `golden status` lists)
        report["flagged_by_category"] = result.golden.pop("flagged_by_category")
        named = result.golden.pop("category_by_trace", {})
        for case in report["flagged_cases"]:  # the failure category, the golden set's beside it
            case["golden_category"] = case["category"]
            case["category"] = named.get(case["trace_id"], case["category"])
        report["golden"] = result.golden
    return report


async def _deliver(store: Store, settings: Settings, result: RunResult, *, deliver: bool) -> None:
    """Send queued Phoenix annotations now when Phoenix is configured and delivery is on."""
    if not (deliver and settings.phoenix.base_url):
        return
    key = settings.phoenix.api_key
    result.annotations.update(
        await phoenix.deliver(
            store, settings.phoenix.base_url, api_key=key.get_secret_value() if key else None
        )
    )


def _purge(store: Store, settings: Settings) -> dict[str, Any] | None:
    """Delete traces older than ``collector.retention_days`` in small batches (off = None)."""
    days = settings.collector.retention_days
    if not days:
        return None
    return asdict(purge_expired(store, retention_days=days))


def _golden_index(settings: Settings) -> GoldenIndex | None:
    g, cache = settings.golden, cache_dir(settings.store)  # vectors kept across runs
    return load_golden_index(g.path, g.near_duplicate_cosine, g.new_category_cosine, cache=cache)


def run_once(store: Store, settings: Settings, **options: Any) -> RunOutcome:
    """One pass of the online evaluator; ``options`` are :class:`RunOptions`."""
    return asyncio.run(run_once_async(store, settings, **options))


def _annotations(d: Decision, run_id: str) -> list[dict[str, Any]]:
    """The Phoenix annotations of one fresh decision: one per judge result, plus the verdict."""
    return phoenix.build_annotations(
        d.interaction.span_id,
        d.results,
        verdict=d.verdict.outcome,
        root_cause=d.verdict.root_cause,
        evidence=d.verdict.evidence,
        run_id=run_id,
        session_id=d.interaction.session_id,
    )


def _grow(store: Store, flagged: list[FlaggedCase], settings: Settings) -> dict[str, Any] | None:
    try:
        mod = importlib.import_module("ragsieve.jobs.golden.growth.candidates")
    except ModuleNotFoundError as exc:
        if exc.name in ("ragsieve.jobs.golden", "ragsieve.jobs.golden.growth.candidates"):
            return None
        raise
    result: dict[str, Any] = mod.grow(store, flagged, settings)
    return result


def _route_audits(store: Store, audit: list[FlaggedCase], settings: Settings) -> dict[str, Any]:
    if not audit:
        return {"queued": 0, "already_queued": 0}
    from ragsieve.jobs.golden.review.audit import route

    return dict(route(store, audit, settings))


__all__ = [
    "RunOptions",
    "RunOutcome",
    "RunPlan",
    "RunResult",
    "execute",
    "plan_run",
    "run_once",
    "run_once_async",
]
