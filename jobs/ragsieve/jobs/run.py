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
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragsieve.collector.settle import settle
from ragsieve.collector.store import Store
from ragsieve.collector.timeutil import parse_duration
from ragsieve.evaluators.judges import safe_evaluate
from ragsieve.evaluators.records import EvalResult, RagInteraction, utcnow
from ragsieve.jobs import annotations as phoenix
from ragsieve.jobs import resultstore
from ragsieve.jobs.flagged import FlaggedCase
from ragsieve.jobs.flagging import Verdict, decide
from ragsieve.jobs.report import ReviewLabel, failure_rate, judge_quality
from ragsieve.jobs.sampling import (
    GoldenIndex,
    Pick,
    SamplingSettings,
    StratifiedSampler,
    load_golden_index,
    unit_hash,
)

log = logging.getLogger(__name__)
JUDGE_TIMEOUT_S = 600.0  # last-resort guard; judges enforce their own request timeouts


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


def make_judges(settings: Any, names: Sequence[str] | None = None) -> list[Any]:
    """Build the configured judges (backend, LLM endpoint, cache) from settings."""
    from ragsieve.evaluators.judges import build_judges

    llm = settings.llm.to_config(settings.golden.pii_patterns)
    return build_judges(
        list(names or settings.jobs.judges),
        backend=settings.jobs.backend,
        llm=llm,
        cache_path=settings.jobs.cache_path,
    )


class _Spend:
    def __init__(self, budget_usd: float | None) -> None:
        self.budget_usd = budget_usd
        self.calls = 0
        self.usd = 0.0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.errors = 0
        self.skipped = 0
        self.cached = 0
        self.cascade_saved = 0
        self.results = 0
        self.deferred: set[str] = set()
        self.judged: set[str] = set()

    def over(self) -> bool:
        return self.budget_usd is not None and self.usd >= self.budget_usd

    def add(self, results: Sequence[EvalResult]) -> None:
        self.calls += 1
        for r in results:
            self.results += 1
            self.usd += r.cost_usd
            self.prompt_tokens += r.prompt_tokens
            self.completion_tokens += r.completion_tokens
            self.errors += r.label == "error"
            self.skipped += r.label == "skipped"
            self.cached += bool(r.cached)
            # an LLM call was saved only when one would have been made: not for skipped items
            self.cascade_saved += r.metadata.get("escalated") is False and r.label != "skipped"


async def _judge_all(
    store: Store,
    run_id: str,
    work: list[tuple[RagInteraction, Any]],
    *,
    concurrency: int,
    spend: _Spend,
    should_stop: Callable[[], bool],
) -> None:
    """Run every (interaction, judge) call with bounded concurrency and group-committed writes."""
    queue: asyncio.Queue[resultstore.Judgement | None] = asyncio.Queue()
    sem = asyncio.Semaphore(concurrency)
    failure: list[BaseException] = []

    async def writer() -> None:
        done = False
        while not done:
            batch = [await queue.get()]
            while not queue.empty():
                batch.append(queue.get_nowait())
            done = batch[-1] is None
            items = [b for b in batch if b is not None]
            if items and not failure:
                try:
                    await asyncio.to_thread(
                        resultstore.save_judgements, store, run_id, items, time.time()
                    )
                except Exception as exc:  # a store failure stops the run; nothing half-written
                    failure.append(exc)

    async def one(it: RagInteraction, judge: Any) -> None:
        async with sem:
            if failure or should_stop() or spend.over():
                spend.deferred.add(it.trace_id)
                return
            results = await safe_evaluate(judge, it, timeout_s=JUDGE_TIMEOUT_S)
            spend.add(results)
            spend.judged.add(it.trace_id)
            ok = all(r.label != "error" for r in results)
            await queue.put(
                resultstore.Judgement(
                    it.trace_id, judge.name, str(judge.version), results, checkpoint=ok
                )
            )

    write_task = asyncio.create_task(writer())
    try:
        await asyncio.gather(*(one(it, j) for it, j in work))
    finally:
        await queue.put(None)
        await write_task
    if failure:
        raise failure[0]


@dataclass
class _Decision:
    pick: Pick
    interaction: RagInteraction
    results: list[EvalResult]
    verdict: Verdict
    category: str
    missing: tuple[str, ...] = ()  # configured judges without a usable current-version result


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
    spend = _Spend(budget_usd if budget_usd is not None else job.budget_usd)
    picks = [*sel.picks, *sel.recovered]
    records = await asyncio.to_thread(
        resultstore.load_interactions, store, [p.trace_id for p in picks]
    )
    decisions: list[_Decision] = []
    flagged: list[FlaggedCase] = []
    audit: list[FlaggedCase] = []
    annotation_info: dict[str, Any] = {"queued": 0}
    golden_report: dict[str, Any] | None = None
    audit_info: dict[str, Any] = {"queued": 0, "already_queued": 0}
    if not dry_run:
        await asyncio.to_thread(resultstore.begin_run, store, run_id, now.timestamp())
        work = [
            (records[p.trace_id], j)
            for p in sel.picks
            if p.trace_id in records
            for j in judges
            if j.name not in done.get(p.trace_id, ())
        ]
        await _judge_all(
            store, run_id, work, concurrency=concurrency, spend=spend, should_stop=stop
        )
        decisions = await asyncio.to_thread(
            _decide_all, store, picks, records, versions, job.thresholds, golden
        )
        before = await asyncio.to_thread(
            resultstore.decided_traces, store, [d.pick.trace_id for d in decisions], key
        )
        fresh = [
            d
            for d in decisions
            if d.pick.trace_id not in before and d.verdict.outcome in ("pass", "fail")
        ]
        queued = []
        for d in fresh:
            meta = {"category": d.category, "failed_metrics": list(d.verdict.failed_metrics)}
            case = FlaggedCase(
                d.interaction,
                d.results,
                d.verdict.root_cause or "",
                d.verdict.evidence,
                run_id,
                d.pick.stratum,
                d.pick.inclusion_p,
                dict(meta),
            )
            if d.verdict.outcome == "fail":
                flagged.append(case)
            elif unit_hash(d.pick.trace_id, "audit", job.seed) < job.audit_share:
                audit.append(
                    FlaggedCase(
                        d.interaction,
                        d.results,
                        "none",
                        "audit of a pass",
                        run_id,
                        d.pick.stratum,
                        d.pick.inclusion_p,
                        {"audit": True, "category": d.category},
                    )
                )
            queued += phoenix.build_annotations(
                d.interaction.span_id,
                d.results,
                verdict=d.verdict.outcome,
                root_cause=d.verdict.root_cause,
                evidence=d.verdict.evidence,
                run_id=run_id,
            )
        annotation_info["queued"] = await asyncio.to_thread(phoenix.queue, store, queued)
        golden_report = await asyncio.to_thread(_grow, store, flagged, settings)
        audit_info = await asyncio.to_thread(_route_audits, store, audit, settings)
        audit_ids = {c.interaction.trace_id for c in audit}
        rows = [
            resultstore.SampleRow(
                d.pick.trace_id,
                d.pick.stratum,
                d.pick.inclusion_p,
                d.verdict.outcome,
                d.verdict.root_cause,
                {
                    "key": key,
                    "complete": not d.missing,
                    "missing": list(d.missing),
                    "recovered": d.pick.recovered,
                    "audit": d.pick.trace_id in audit_ids,
                    "evidence": d.verdict.evidence,
                    "failed_metrics": list(d.verdict.failed_metrics),
                    "category": d.category,
                    "upstream_p": d.pick.upstream_p,
                },
                versions,
            )
            for d in decisions
        ]
        await asyncio.to_thread(resultstore.save_samples, store, run_id, rows)
    labels = await asyncio.to_thread(resultstore.review_labels, store, key)
    report = _report(
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
    report["audit"].update(audit_info)
    report["audit"]["open"] = await asyncio.to_thread(resultstore.open_audits, store)
    if golden_report is not None:
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


def _decide_all(
    store: Store,
    picks: Sequence[Pick],
    records: dict[str, RagInteraction],
    versions: dict[str, str],
    thresholds: dict[str, float],
    golden: GoldenIndex | None,
) -> list[_Decision]:
    ids = [p.trace_id for p in picks]
    stored = resultstore.stored_results(store, ids, versions)
    done = resultstore.done_judges(store, ids, versions)
    out: list[_Decision] = []
    for p in picks:
        it = records.get(p.trace_id)
        if it is None:
            continue
        results = [
            r
            for r in stored.get(p.trace_id, [])
            if versions.get(r.evaluator) == r.judge_version or r.evaluator not in versions
        ]
        verdict = decide(it, results, thresholds)
        category = "uncategorized"
        if golden is not None and (verdict.outcome == "fail" or verdict.abstained):
            expected, category = golden.lookup(it.query or "")
            verdict = decide(it, results, thresholds, expected=expected)
        missing = tuple(sorted(set(versions) - done.get(p.trace_id, set())))
        if missing and verdict.outcome != "fail":
            # Only a failure is safe to keep before every judge has answered.
            why = f"partial: no usable result yet from {', '.join(missing)}"
            verdict = Verdict("unjudged", evidence=why, abstained=verdict.abstained)
        out.append(_Decision(p, it, results, verdict, category, missing))
    return out


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


def _report(
    run_id: str,
    lo: datetime,
    hi: datetime,
    settled: int,
    sel: Any,
    already: list[Pick],
    spend: _Spend,
    decisions: list[_Decision],
    flagged: list[FlaggedCase],
    audit: list[FlaggedCase],
    labels: Sequence[ReviewLabel],
    settings: Any,
    dry_run: bool,
    key: str,
    select_s: float,
    judges: Sequence[Any],
    need: dict[str, int],
) -> dict[str, Any]:
    rate = failure_rate(
        (
            (d.pick.stratum, d.verdict.outcome == "fail", d.pick.upstream_p)
            for d in decisions
            if d.verdict.outcome in ("pass", "fail") and not d.pick.recovered
        ),
        {k: v.population for k, v in sel.strata.items()},
    )
    ci = (rate["ci_low"], rate["ci_high"]) if rate["estimate"] is not None else None
    fails = [d for d in decisions if d.verdict.outcome == "fail"]
    flagged_ids = {c.interaction.trace_id for c in flagged}
    error_rate = spend.errors / spend.results if spend.results else 0.0
    max_rate = settings.jobs.max_judge_error_rate
    return {
        "run_id": None if dry_run else run_id,
        "dry_run": dry_run,
        "window": {"start": lo.isoformat(), "end": hi.isoformat()},
        "judges": [{"name": j.name, "version": str(j.version)} for j in judges],
        "judge_set": key,
        "settled": settled,
        "discovered": sel.discovered,
        "not_applicable": {
            "count": sum(sel.not_applicable.values()),
            "reasons": dict(sel.not_applicable),
        },
        "sampled": {
            "total": len(sel.picks),
            "by_stratum": {
                k: {
                    "population": v.population,
                    "sampled": v.sampled,
                    "inclusion_p": round(v.inclusion_p, 6),
                }
                for k, v in sel.strata.items()
            },
            "novelty_checked": sel.novelty_checked,
        },
        "upstream": {
            "keep_rule": dict(sel.upstream),
            "reweighted_picks": sum(p.upstream_p < 1 for p in sel.picks),
        },
        "select_s": round(select_s, 4),
        "already_judged": len(already),
        "would_judge": sum(need.get(p.trace_id, 0) > 0 for p in sel.picks) if dry_run else None,
        "judged": len(spend.judged),
        "judge_calls": spend.calls,
        "judge_errors": spend.errors,
        "judge_error_rate": round(error_rate, 6),
        "skipped": spend.skipped,
        "deferred": len(spend.deferred - spend.judged),
        "unjudged": sum(d.verdict.outcome == "unjudged" for d in decisions),
        "partial": sum(bool(d.missing) and d.verdict.outcome == "unjudged" for d in decisions),
        "recovered": sum(d.pick.recovered for d in decisions),
        "flagged": len(flagged),
        "flagged_in_sample": len(fails),
        "flagged_by_root_cause": dict(Counter(c.root_cause for c in flagged)),
        "flagged_by_category": dict(Counter(str(c.metadata.get("category")) for c in flagged)),
        "flagged_by_metric": dict(
            Counter(
                m for d in fails if d.pick.trace_id in flagged_ids for m in d.verdict.failed_metrics
            )
        ),
        "passed": sum(d.verdict.outcome == "pass" for d in decisions),
        "failure_rate": rate,
        "audit": {
            "share": settings.jobs.audit_share,
            "routed": len(audit),
            "trace_ids": [c.interaction.trace_id for c in audit],
        },
        "judge_quality": judge_quality(rate["estimate"], ci, labels),
        "cost": {
            "calls": spend.calls,
            "prompt_tokens": spend.prompt_tokens,
            "completion_tokens": spend.completion_tokens,
            "tokens": spend.prompt_tokens + spend.completion_tokens,
            "usd": round(spend.usd, 6),
            "saved_by_cache": spend.cached,
            "saved_by_cascade": spend.cascade_saved,
        },
        "budget": {
            "calls": settings.jobs.budget_calls,
            "usd": spend.budget_usd,
            "exhausted": bool(sel.budget_exhausted or spend.deferred),
        },
        "max_judge_error_rate": max_rate,
        "error_budget_exceeded": error_rate > max_rate,
    }


__all__ = ["RunOutcome", "make_judges", "run_once", "run_once_async"]
