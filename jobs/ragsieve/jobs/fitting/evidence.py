"""The labelled examples a fit learns from: each labelled trace's offline evidence and verdicts.

A trace's evidence is the newest stored offline result per metric that recorded it (a calibrated
run records the same evidence: weights only change how it combines); a trace judged before the
judges recorded evidence, or never judged offline, is judged now with the uncalibrated offline
judges. The anchors (:func:`build_anchors`) are the newest unlabelled traces the job judged, read
the same way but never judged here: a fit weighs what a change would do to their verdicts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges import build_judges, safe_evaluate
from ragsieve.evaluators.judges.combined.calibrated import UNKNOWN
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.fitting.labels import Label, effective
from ragsieve.jobs.fitting.table import METRICS, Example, Item, verdict_table
from ragsieve.jobs.results.judgements import load_interactions

if TYPE_CHECKING:
    from ragsieve.jobs.settings import Settings

OFFLINE_PREFIX = "offline-"  # any offline judge version records its evidence
ANCHORS = 2000  # unlabelled traces whose verdicts a fit weighs what it changes against


def has_evidence(r: EvalResult) -> bool:
    """A result a fit can re-score: unknown (nothing to weigh), or with its evidence recorded."""
    if r.label in UNKNOWN or r.score is None:
        return True
    if r.evaluator == "context_relevance":
        chunks = r.metadata.get("chunks") or []
        return bool(chunks) and all("density" in c for c in chunks)
    return isinstance(r.metadata.get("evidence"), dict)


def stored_evidence(store: Store, trace_ids: Sequence[str]) -> dict[str, dict[str, EvalResult]]:
    """Newest offline result with evidence per (trace, metric)."""
    out: dict[str, dict[str, EvalResult]] = {}
    for tid, evaluator, version, body in store.query_in(
        "SELECT trace_id, evaluator, judge_version, body FROM results WHERE trace_id IN ({ids})"
        " ORDER BY created_at",
        trace_ids,
    ):
        if evaluator not in METRICS or not str(version).startswith(OFFLINE_PREFIX):
            continue
        r = EvalResult.model_validate(json.loads(body))
        if has_evidence(r):
            out.setdefault(tid, {})[evaluator] = r
    return out


async def _judge_missing(
    records: dict[str, RagInteraction],
    have: dict[str, dict[str, EvalResult]],
    settings: Settings,
) -> None:
    judges = build_judges(list(METRICS), thresholds=settings.jobs.thresholds)
    sem = asyncio.Semaphore(max(1, settings.jobs.concurrency))

    async def one(it: RagInteraction, judge: object) -> None:
        async with sem:
            for r in await safe_evaluate(judge, it):  # type: ignore[arg-type]
                have.setdefault(it.trace_id, {})[r.evaluator] = r

    await asyncio.gather(
        *(
            one(it, j)
            for tid, it in records.items()
            for j in judges
            if j.name not in have.get(tid, {})
        )
    )


def stored_scores(
    store: Store, trace_ids: Sequence[str], versions: Mapping[str, str]
) -> dict[str, dict[str, EvalResult]]:
    """Newest result per (trace, metric) of the given (uncalibrated) judge versions, or of
    those versions under a calibration (``<version>:cal…``)."""
    out: dict[str, dict[str, EvalResult]] = {}
    for tid, evaluator, version, body in store.query_in(
        "SELECT trace_id, evaluator, judge_version, body FROM results WHERE trace_id IN ({ids})"
        " ORDER BY created_at",
        trace_ids,
    ):
        want = versions.get(evaluator)
        if want and (version == want or str(version).startswith(f"{want}:cal")):
            out.setdefault(tid, {})[evaluator] = EvalResult.model_validate(json.loads(body))
    return out


def missed_chunks(store: Store, trace_ids: Sequence[str]) -> dict[str, tuple[str, bool]]:
    """The observed-corpus chunk the job's latest verdict on each trace found (retrieval
    missed it), and whether it holds what the answer says, for the traces that have one."""
    out: dict[str, tuple[str, bool]] = {}
    for tid, body in store.query_in(
        "SELECT s.trace_id, s.body FROM samples s JOIN runs r ON r.run_id = s.run_id"
        " WHERE s.trace_id IN ({ids}) ORDER BY r.started_at",
        trace_ids,
    ):
        meta = json.loads(body or "{}")
        if meta.get("missed_chunk"):
            out[tid] = (str(meta["missed_chunk"]), bool(meta.get("missed_holds_answer")))
        else:
            out.pop(tid, None)
    return out


def build_examples(
    store: Store, settings: Settings, labels: Sequence[Label]
) -> tuple[list[Example], list[Item], dict[str, int]]:
    """Examples and items for the labels on traces the store holds, and counts: ``judged_now``
    (offline: traces judged here for lack of stored evidence) and ``without_results`` (LLM and
    cascade judges are never called here: labelled traces they have not judged are left out)."""
    eff = effective(labels)
    examples, counts = _examples(store, settings, sorted({x.trace_id for x in eff}), judge=True)
    index = {ex.trace_id: i for i, ex in enumerate(examples)}
    items = [
        Item(index[x.trace_id], x.metric, x.verdict == "fail", x.root_cause)
        for x in eff
        if x.trace_id in index
    ]
    return examples, items, counts


def build_anchors(
    store: Store, settings: Settings, exclude: Sequence[str], limit: int = ANCHORS
) -> tuple[list[Example], list[float]]:
    """The ``limit`` unlabelled traces the job decided last, as examples (stored results only:
    nothing is judged here), and each one's weight: the inverse of the probability with which
    the job's sampler picked it, so the anchors stand for the traffic, not for the failure-
    seeking sample. A fit weighs what a change would do to their verdicts."""
    skip, picked = set(exclude), dict[str, float]()
    for (run,) in store.query("SELECT run_id FROM runs ORDER BY started_at DESC, run_id"):
        if len(picked) >= 2 * limit:  # enough, even if some lack results
            break
        rows = store.query(
            "SELECT trace_id, inclusion_p FROM samples WHERE run_id = ? ORDER BY trace_id", (run,)
        )
        for tid, p in rows:
            if tid not in skip and tid not in picked:
                picked[str(tid)] = float(p)
    examples, _ = _examples(store, settings, sorted(picked), judge=False)
    wanted = set(METRICS) & set(settings.jobs.judges)
    usable = [ex for ex in examples if ex.results and wanted <= set(ex.results)]
    order = {t: i for i, t in enumerate(picked)}
    usable = sorted(usable, key=lambda ex: order[ex.trace_id])[:limit]
    return usable, [1.0 / max(picked[ex.trace_id], 1e-6) for ex in usable]


def _examples(
    store: Store, settings: Settings, ids: Sequence[str], judge: bool
) -> tuple[list[Example], dict[str, int]]:
    """The examples of the traces ``ids`` the store holds (module docstring); ``judge``: judge
    offline now what has no stored evidence."""
    records = load_interactions(store, ids)
    counts = {"judged_now": 0, "without_results": 0}
    if settings.jobs.backend == "offline":
        have = stored_evidence(store, sorted(records))
        counts["judged_now"] = sum(1 for t in records if set(METRICS) - set(have.get(t, {})))
        if counts["judged_now"] and judge:
            asyncio.run(_judge_missing(records, have, settings))
    else:
        from ragsieve.jobs.judging.judges import make_judges

        judges = make_judges(settings, calibration=False)
        have = stored_scores(store, sorted(records), {j.name: str(j.version) for j in judges})
        counts["without_results"] = sum(1 for t in records if not have.get(t))
        records = {t: it for t, it in records.items() if have.get(t)}
    order = sorted(records)
    missed = missed_chunks(store, order)
    examples = []
    for tid in order:
        chunk, holds = missed.get(tid, (None, False))
        fail, causes = verdict_table(
            records[tid], have.get(tid, {}), chunk, settings.jobs.thresholds, holds_answer=holds
        )
        examples.append(Example(tid, have.get(tid, {}), fail, causes, group_of(records[tid])))
    return examples, counts


def group_of(it: RagInteraction) -> str:
    """The conversation a trace belongs to, else its question (case and spacing aside): labels
    of one group are cross-validated together, never one in the fold that tests the other."""
    if it.session_id:
        return f"session:{it.session_id}"
    question = " ".join((it.query or "").casefold().split())
    return f"question:{question}" if question else f"trace:{it.trace_id}"


__all__ = ["build_anchors", "build_examples", "group_of", "has_evidence", "stored_evidence"]
