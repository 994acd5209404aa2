"""Turn flagged interactions into golden-set candidates: scrub, deduplicate, categorise, count.

``grow`` is what the job calls after each run: it loads the candidates and the golden set,
prepares each failure (scrubbed query, its vector, its topic vector, its signature), lets
:func:`ragsieve.jobs.golden.growth.matching.match_candidates` decide (merge into the case it repeats
and say why, open a ``covered`` row when the golden set already holds the query, or open a
candidate for a person), re-clusters the categories, saves, and announces categories that just
became new. Re-running a window changes nothing: a trace already merged is recognised and skipped.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.records import RagInteraction, normalize_text
from ragsieve.jobs.golden.growth.categories import CategorySummary, categorise, summarize
from ragsieve.jobs.golden.growth.category_log import CategoryLog, announcement_json
from ragsieve.jobs.golden.growth.matching import Changes, Prepared, chunks_of, match_candidates
from ragsieve.jobs.golden.growth.merge import majority_cause
from ragsieve.jobs.golden.growth.reference import (
    DOC_WEIGHT,
    Embed,
    GoldenReference,
    load_reference,
    observed_twins,
    observed_vectors,
)
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.golden.growth.signature import DedupRule, doc_vector, from_interaction
from ragsieve.jobs.golden.growth.topics import Event, topic_vector
from ragsieve.jobs.sampling.golden_cache import cache_dir
from ragsieve.jobs.settings import GoldenSettings, Settings
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase

log = logging.getLogger(__name__)
MAX_SOURCES = 50  # provenance rows kept per candidate; source_trace_ids keeps every trace id
MAX_CHUNK_CHARS = 800
MAX_HISTORY_TURNS = 12  # earlier messages a follow-up's candidate keeps (the latest ones)
MAX_TURN_CHARS = 2000
# query·documents cosine below which a failure's documents stop counting for its topic (no
# closer than chance: the median cosine of a question with a passage it is not about), and from
# which they count in full (closer than 19 of 20 such passages: their 95th percentile). Derived
# on licence-clean sets, not fitted (bench/categories_clean.py, RAGTruth QA, HaluEval QA, MTRAG:
# medians 0.02-0.09, 95th percentiles 0.15-0.28, means 0.04 and 0.20; left out, at most 0.244
# of a source's unrelated passages count in full, HaluEval, and none of its own is dropped)
RELATED_DOCS = (0.04, 0.2)


def candidate_id(norm_query: str) -> str:
    """``q_`` + 12 hex of the normalised query: the id a golden case of that query gets."""
    return "q_" + hashlib.sha256(norm_query.encode()).hexdigest()[:12]


def _default_embed(texts: Sequence[str]) -> np.ndarray:
    from ragsieve.evaluators.tools.embeddings import embed

    return embed(texts)


class Scrubber:
    """Applies PII redaction (when enabled) and tallies what it removed."""

    def __init__(self, enabled: bool, patterns: Sequence[str]) -> None:
        self.enabled = enabled
        self.patterns = tuple(patterns)
        self.counts: Counter[str] = Counter()
        if enabled:
            self("")  # validate the patterns before touching any data

    def __call__(self, text: str | None) -> str | None:
        if text is None or not self.enabled:
            return text
        from ragsieve.evaluators.tools.redact import redact

        try:
            clean, counts = redact(text, self.patterns)
        except ValueError as exc:
            raise ConfigError(f"golden.pii_patterns: {exc}") from None
        self.counts.update(counts)
        return clean


def _source(
    f: FlaggedCase, scrub: Scrubber, now: datetime, query: str, answer: str | None
) -> dict[str, Any]:
    return {
        "trace_id": f.interaction.trace_id,
        "query": query,  # this failure's own wording and answer (scrubbed), shown in review
        "answer": (answer or "")[:MAX_CHUNK_CHARS],  # (asked_as)
        "span_id": f.interaction.span_id,
        "run_id": f.run_id,
        "stratum": f.stratum,
        "inclusion_p": f.inclusion_p,
        "root_cause": f.root_cause,
        "evidence": scrub(f.evidence),
        "flagged_at": now.isoformat(),
    }


def _new_body(f: FlaggedCase, query: str, scrub: Scrubber, now: datetime) -> dict[str, Any]:
    it = f.interaction
    chunks = [
        {
            "id": d.id,
            "rank": d.rank,
            "score": d.score,
            "in_prompt": d.in_prompt,
            "content": (scrub(d.content) or "")[:MAX_CHUNK_CHARS] if d.content else None,
        }
        for d in sorted(it.documents, key=lambda d: d.rank)
    ]
    missed = f.metadata.get("missed_chunk")
    suggested = [str(missed), *it.retrieved_ids] if missed else list(it.retrieved_ids)
    answer = scrub(it.answer)
    return {
        "query": query,
        "askings": [query],  # every distinct wording merged into this candidate
        **_conversation(it, query, scrub),
        "answer": answer,
        "chunks": chunks,
        "suggested_chunk_ids": suggested,  # a chunk the retriever missed comes first
        "missed_chunk": str(missed) if missed else None,
        "reference_answer": None,
        "relevant_chunks": {},
        "source_trace_ids": [it.trace_id],
        "source_span_ids": [it.span_id],
        "sources": [_source(f, scrub, now, query, answer)],
        "root_causes": {f.root_cause: 1},
        "evidence": scrub(f.evidence),
        "judges": [
            {
                "evaluator": r.evaluator,
                "judge_version": r.judge_version,
                "judge_model": r.judge_model,
                "prompt_version": r.prompt_version,
                "label": r.label,
                "score": r.score,
                "explanation": scrub(r.explanation),
            }
            for r in f.results
        ],
        "metadata": {str(k): v for k, v in f.metadata.items()},
        "first_flagged_at": now.isoformat(),
    }


def _conversation(it: RagInteraction, query: str, scrub: Scrubber) -> dict[str, Any]:
    """A follow-up's ``chat_history`` (the last turns, scrubbed) and ``standalone_query`` (the
    retrieval query of the step that fed the answer, when it differs from the turn's text).

    A first turn gets neither: its query is already its meaning.
    """
    turns = [m for m in it.chat_history if m.role in ("user", "human", "assistant", "ai")]
    if not turns:
        return {}
    fed = {d.span_id for d in it.context}
    step_queries = [st.query for st in it.stages if st.span_id in fed and st.query]
    rewrites = [
        q
        for q in (*reversed(step_queries), *reversed(it.retrieval_queries))
        if normalize_text(q) != normalize_text(it.query or "")
    ]
    return {
        "chat_history": [
            {"role": m.role, "content": (scrub(m.content) or "")[:MAX_TURN_CHARS]}
            for m in turns[-MAX_HISTORY_TURNS:]
        ],
        "standalone_query": scrub(rewrites[0]) if rewrites else None,
    }


def add_asking(body: dict[str, Any], query: str) -> None:
    """Record ``query`` among the candidate's askings (its distinct wordings, first one first)."""
    askings = body.setdefault("askings", [body.get("query")] if body.get("query") else [])
    norms = {normalize_text(str(q)) for q in askings}
    if normalize_text(query) not in norms and len(askings) < MAX_SOURCES:
        askings.append(query)


def asked_as(body: dict[str, Any]) -> list[str]:
    """The candidate's other wordings, each with the answer its own failure gave when known: a
    reviewer judges every merged failure, not only the first one's answer."""
    answers = {s.get("query"): s.get("answer") for s in body.get("sources") or []}
    return [
        f"{q}  -> answered: {answers[q]}" if answers.get(q) else str(q)
        for q in body.get("askings") or []
        if q != body.get("query")
    ]


def _merge(
    row: Candidate,
    f: FlaggedCase,
    query: str,
    scrub: Scrubber,
    now: datetime,
    sim: float,
    why: str = "",
) -> None:
    body = row.body
    row.seen += 1
    add_asking(body, query)
    if f.root_cause != row.root_cause:  # one failure, read differently by the judges
        why = f"{why or f'cosine {sim:.2f}'}; judged {f.root_cause}, not {row.root_cause}"
    body.setdefault("source_trace_ids", []).append(f.interaction.trace_id)
    body.setdefault("source_span_ids", []).append(f.interaction.span_id)
    sources = body.setdefault("sources", [])
    if len(sources) < MAX_SOURCES:
        entry = _source(f, scrub, now, query, scrub(f.interaction.answer))
        entry["similarity"] = round(sim, 4)
        entry["merged_because"] = why
        sources.append(entry)
    # every merged trace says why, also past MAX_SOURCES
    body.setdefault("merged_because", {})[f.interaction.trace_id] = why or f"cosine {sim:.2f}"
    causes = body.setdefault("root_causes", {})
    causes[f.root_cause] = causes.get(f.root_cause, 0) + 1
    row.root_cause = majority_cause(causes, row.root_cause)
    body["last_flagged_at"] = now.isoformat()


def golden_settings(settings: Settings | GoldenSettings) -> GoldenSettings:
    """The ``golden`` section of ``settings`` (or ``settings`` itself)."""
    return settings.golden if isinstance(settings, Settings) else settings


def dedup_rule(cfg: GoldenSettings) -> DedupRule:
    """The duplicate rule the settings describe."""
    return DedupRule(cfg.near_duplicate_cosine, cfg.support_cosine)


def prepare(
    store: Store, flagged: Sequence[FlaggedCase], scrub: Scrubber, embed: Embed
) -> list[Prepared]:
    """Scrubbed query, query vector, topic vector and signature of each failure with a query."""
    todo = [f for f in flagged if normalize_text(f.interaction.query or "")]  # "¿?" has none
    if not todo:
        return []
    queries = [scrub(f.interaction.query) or "" for f in todo]
    quiet = Scrubber(scrub.enabled, scrub.patterns)  # the answer is counted when it is stored
    vectors = embed(queries)
    sigs = [
        from_interaction(
            f.interaction,
            q,
            quiet(f.interaction.answer),
            f.root_cause,
            str(f.metadata["missed_chunk"]) if f.metadata.get("missed_chunk") else None,
            f.results,
        )
        for f, q in zip(todo, queries, strict=True)
    ]
    chunks = observed_vectors(store, todo, embed)
    return [
        Prepared(
            f, q, v, topic_vector(v, doc_vector(chunks, s), DOC_WEIGHT, related=RELATED_DOCS), s
        )
        for f, q, v, s in zip(todo, queries, vectors, sigs, strict=True)
    ]


def grow(
    store: Store,
    flagged: Sequence[FlaggedCase],
    settings: Settings | GoldenSettings,
    *,
    embed: Embed | None = None,
    now: Callable[[], datetime] | None = None,
) -> dict[str, Any]:
    """Add a run's flagged interactions to the candidates; returns the report's ``golden`` part.

    The report holds ``new_candidates``, ``merged_duplicates``, ``covered_by_golden``,
    ``already_seen``, ``skipped_no_query``, ``pii_scrubbed``, ``merges`` (trace, candidate,
    why), ``category_events`` (merges and splits of categories), ``new_categories`` (every
    category that is new now, with ``announced_now`` true in the one run that first announces
    it) and ``announced_categories`` (those ids).
    """
    cfg = golden_settings(settings)
    embed_fn = embed or _default_embed
    stamp = (now or (lambda: datetime.now(UTC)))()
    repo = CandidateRepo(store)
    scrub = Scrubber(cfg.scrub_pii, cfg.pii_patterns)
    reference = load_reference(
        repo, cfg.path, embed_fn, cache=None if embed else cache_dir(store.url)
    )
    rows = repo.select(["candidate", "accepted", "rejected", "covered"])
    prepared = prepare(store, flagged, scrub, embed_fn)
    changes = match_candidates(
        prepared,
        rows,
        reference,
        rule=dedup_rule(cfg),
        twins=observed_twins(store, chunks_of(prepared)),
        new_body=lambda p: _new_body(p.case, p.query, scrub, stamp),
        merge=lambda row, p, sim, why: _merge(row, p.case, p.query, scrub, stamp, sim, why),
        candidate_id=candidate_id,
    )
    changes.counts["skipped_no_query"] = len(flagged) - len(prepared)
    out = _categorise_and_save(repo, rows, changes, reference, cfg, stamp, flagged)
    out["pii_scrubbed"] = dict(scrub.counts)
    log.info("golden growth: %s", {k: out[k] for k in ("new_candidates", "merged_duplicates")})
    return out


def _categorise_and_save(
    repo: CandidateRepo,
    rows: Sequence[Candidate],
    changes: Changes,
    reference: GoldenReference,
    cfg: GoldenSettings,
    stamp: datetime,
    flagged: Sequence[FlaggedCase],
) -> dict[str, Any]:
    """Re-cluster, save what changed, announce categories that became new; the report part."""
    everyone = list(({r.id: r for r in rows} | changes.rows).values())
    events = _recategorise(everyone, changes)
    repo.save(changes.rows.values(), now=stamp.timestamp())
    catlog = CategoryLog(repo.store)
    announced = catlog.announced()
    summaries = summarize(
        everyone,
        reference,
        new_threshold=cfg.new_category_cosine,
        min_cases=cfg.new_category_min_cases,
        recorded=catlog.names(),
        announced=announced,
    )
    # new now: announced before and still new, or new with enough failures to announce
    due = [
        s
        for s in summaries
        if s.new and (s.id in announced or s.failures_seen >= cfg.new_category_min_cases)
    ]
    run_id = flagged[0].run_id if flagged else None
    fresh = {s.id for s in catlog.announce(summaries, due, events, stamp.timestamp(), run_id)}
    out = _report(changes, flagged, summaries, reference)
    # every category that is new now (alerts and the weekly report follow their state); the
    # ones this run announces for the first time say so, and only those are printed as news
    out["new_categories"] = [{**announcement_json(s), "announced_now": s.id in fresh} for s in due]
    out["announced_categories"] = sorted(fresh)
    out["category_events"] = [e.__dict__ for e in events]
    return out


def _recategorise(rows: list[Candidate], changes: Changes) -> list[Event]:
    """Re-cluster every row; rows whose category or topic moved join ``changes.rows``."""
    before = {r.id: (r.category, r.body.get("topic")) for r in rows}
    assigned, events = categorise(rows)
    for r in rows:
        r.category = assigned.get(r.id, r.category)
        if (r.category, r.body.get("topic")) != before[r.id] or r.id in changes.rows:
            changes.rows[r.id] = r
    return events


def _report(
    changes: Changes,
    flagged: Sequence[FlaggedCase],
    summaries: Sequence[CategorySummary],
    reference: GoldenReference,
) -> dict[str, Any]:
    keys = ("new_candidates", "merged_duplicates", "covered_by_golden", "already_seen")
    out: dict[str, Any] = {k: int(changes.counts[k]) for k in (*keys, "skipped_no_query")}
    cat_of = {t: r.category for t, r in changes.by_trace.items()}
    traces = [f.interaction.trace_id for f in flagged]
    named = {t: str(cat_of.get(t, "no_query") or "uncategorised") for t in traces}
    out["flagged_by_category"] = dict(Counter(named[t] for t in traces))
    out["category_by_trace"] = named  # the run report's flagged cases name theirs
    out["merges"] = changes.merges
    out["categories"] = len(summaries)
    out["open_candidates"] = sum(s.statuses.get("candidate", 0) for s in summaries)
    out["golden_reference"] = {"source": reference.source, "cases": len(reference)}
    return out
