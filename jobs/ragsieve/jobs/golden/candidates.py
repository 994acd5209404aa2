"""Turn flagged interactions into golden-set candidates: scrub, deduplicate, categorise, count.

``grow`` is what the job calls after each run. Each flagged interaction either merges into an
existing candidate (same normalised query, or an embedding cosine at or above
``golden.near_duplicate_cosine``), becomes a ``covered`` row when the golden set already holds
its query, or becomes a new candidate waiting for a person. Re-running a window changes nothing:
a trace already merged into a candidate is recognised and skipped.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden.categories import assign, category_id, centroid_sums, summarize
from ragsieve.jobs.golden.reference import Embed, load_reference
from ragsieve.jobs.golden.repo import Candidate, CandidateRepo, encode_vector
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase

log = logging.getLogger(__name__)
MAX_SOURCES = 50  # provenance rows kept per candidate; source_trace_ids keeps every trace id
MAX_CHUNK_CHARS = 800


def candidate_id(norm_query: str) -> str:
    """``q_`` + 12 hex of the normalised query: the id a golden case of that query gets."""
    return "q_" + hashlib.sha256(norm_query.encode()).hexdigest()[:12]


def _default_embed(texts: Sequence[str]) -> np.ndarray:
    from ragsieve.evaluators.embeddings import embed

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
        from ragsieve.evaluators.redact import redact

        try:
            clean, counts = redact(text, self.patterns)
        except ValueError as exc:
            raise ConfigError(f"golden.pii_patterns: {exc}") from None
        self.counts.update(counts)
        return clean


def _source(f: FlaggedCase, scrub: Scrubber, now: datetime) -> dict[str, Any]:
    return {
        "trace_id": f.interaction.trace_id,
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
    return {
        "query": query,
        "answer": scrub(it.answer),
        "chunks": chunks,
        "suggested_chunk_ids": suggested,  # a chunk the retriever missed comes first
        "missed_chunk": str(missed) if missed else None,
        "reference_answer": None,
        "relevant_chunks": {},
        "source_trace_ids": [it.trace_id],
        "source_span_ids": [it.span_id],
        "sources": [_source(f, scrub, now)],
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


def _merge(row: Candidate, f: FlaggedCase, scrub: Scrubber, now: datetime, sim: float) -> None:
    body = row.body
    row.seen += 1
    body.setdefault("source_trace_ids", []).append(f.interaction.trace_id)
    body.setdefault("source_span_ids", []).append(f.interaction.span_id)
    sources = body.setdefault("sources", [])
    if len(sources) < MAX_SOURCES:
        entry = _source(f, scrub, now)
        entry["similarity"] = round(sim, 4)
        sources.append(entry)
    causes = body.setdefault("root_causes", {})
    causes[f.root_cause] = causes.get(f.root_cause, 0) + 1
    body["last_flagged_at"] = now.isoformat()


class _Index:
    """Unit vectors in a growable matrix: nearest-neighbour by dot product, amortised appends."""

    def __init__(self, vectors: Sequence[np.ndarray]) -> None:
        self._n = len(vectors)
        self._m = np.zeros((max(self._n * 2, 64), 512), dtype=np.float32)
        if vectors:
            self._m[: self._n] = np.vstack(vectors)

    def __len__(self) -> int:
        return self._n

    def add(self, vec: np.ndarray) -> None:
        if self._n == len(self._m):
            self._m = np.vstack([self._m, np.zeros_like(self._m)])
        self._m[self._n] = vec
        self._n += 1

    def nearest(self, vec: np.ndarray) -> tuple[int, float]:
        sims = self._m[: self._n] @ vec
        best = int(np.argmax(sims))
        return best, float(sims[best])


def grow(
    store: Any,
    flagged: Sequence[FlaggedCase],
    settings: Any,
    *,
    embed: Embed | None = None,
    now: Callable[[], datetime] | None = None,
) -> dict[str, Any]:
    """Add a run's flagged interactions to the candidates; returns the report's ``golden`` part.

    ``settings`` is the full settings object (its ``golden`` section is read) or a
    ``GoldenSettings``. The report holds ``new_candidates``, ``merged_duplicates``,
    ``covered_by_golden``, ``already_seen``, ``skipped_no_query``, ``pii_scrubbed`` and
    ``new_categories`` (id, name, terms, example queries, root cause, failures seen), the part the
    run report calls out first.
    """
    cfg = getattr(settings, "golden", settings)
    embed_fn = embed or _default_embed
    clock = now or (lambda: datetime.now(UTC))
    stamp = clock()
    repo = CandidateRepo(store)
    scrub = Scrubber(cfg.scrub_pii, cfg.pii_patterns)
    reference = load_reference(repo, cfg.path, embed_fn)
    rows = repo.select(["candidate", "accepted", "rejected", "covered"])
    by_norm = {r.norm_query: r for r in rows}
    by_trace = {t: r for r in rows for t in r.source_trace_ids}
    vec_rows: list[Candidate] = [r for r in rows if r.embedding is not None]
    index = _Index([r.embedding for r in vec_rows])  # type: ignore[misc]
    sums = centroid_sums(rows)
    cat_threshold = float(getattr(cfg, "category_cosine", cfg.new_category_cosine))
    dup_threshold = float(cfg.near_duplicate_cosine)

    todo = [f for f in flagged if normalize_text(f.interaction.query or "")]  # "¿?" has none
    queries = [scrub(f.interaction.query) or "" for f in todo]
    matrix = embed_fn(queries) if queries else np.zeros((0, 512), np.float32)
    report: Counter[str] = Counter(skipped_no_query=len(flagged) - len(todo))
    changed: dict[str, Candidate] = {}
    for f, query, vec in zip(todo, queries, matrix, strict=True):
        trace = f.interaction.trace_id
        if trace in by_trace:
            report["already_seen"] += 1
            continue
        norm = normalize_text(query)
        target = by_norm.get(norm)
        sim = 1.0
        if target is None and len(index):
            best, best_sim = index.nearest(vec)
            if best_sim >= dup_threshold:
                target, sim = vec_rows[best], best_sim
        gold_i = reference.exact(norm)
        gold_sim = 1.0 if gold_i is not None else 0.0
        if gold_i is None and len(reference):
            gsims = reference.vectors @ vec
            gold_i, gold_sim = int(np.argmax(gsims)), float(np.max(gsims))
        if target is not None and (sim >= gold_sim or target.status == "covered"):
            _merge(target, f, scrub, stamp, sim)
            report["merged_duplicates"] += 1
        else:
            is_covered = gold_i is not None and gold_sim >= dup_threshold
            body = _new_body(f, query, scrub, stamp)
            body["embedding"] = encode_vector(vec)
            cid = candidate_id(norm)
            if is_covered:
                body["golden_id"] = reference.ids[gold_i]  # type: ignore[index]
                body["golden_similarity"] = round(gold_sim, 4)
            cat = assign(vec, f.root_cause, sums, cat_threshold) or category_id(f.root_cause, cid)
            target = Candidate(
                id=cid,
                status="covered" if is_covered else "candidate",
                norm_query=norm,
                category=cat,
                root_cause=f.root_cause,
                body=body,
            )
            report["covered_by_golden" if is_covered else "new_candidates"] += 1
            by_norm[norm] = target
            vec_rows.append(target)
            index.add(vec)
            cause, total = sums.get(cat, (f.root_cause, np.zeros_like(vec)))
            sums[cat] = (cause, total + vec)
        by_trace[trace] = target
        changed[target.id] = target
    repo.save(changed.values(), now=stamp.timestamp())
    summaries = summarize(list(by_norm.values()), reference, new_threshold=cfg.new_category_cosine)
    touched = {c.category for c in changed.values()}
    out: dict[str, Any] = {
        k: int(report[k])
        for k in (
            "new_candidates",
            "merged_duplicates",
            "covered_by_golden",
            "already_seen",
            "skipped_no_query",
        )
    }
    out["pii_scrubbed"] = dict(scrub.counts)
    out["flagged_by_category"] = dict(
        Counter(
            by_trace[f.interaction.trace_id].category
            if f.interaction.trace_id in by_trace
            else "no_query"
            for f in flagged
        )
    )
    out["new_categories"] = [
        {
            "category": s.id,
            "name": s.name,
            "terms": s.terms,
            "examples": s.examples,
            "root_cause": s.root_cause,
            "failures_seen": s.failures_seen,
            "touched_this_run": s.id in touched,
        }
        for s in summaries
        if s.new
    ]
    out["categories"] = len(summaries)
    out["open_candidates"] = sum(1 for r in by_norm.values() if r.status == "candidate")
    out["golden_reference"] = {"source": reference.source, "cases": len(reference)}
    log.info("golden growth: %s", {k: out[k] for k in ("new_candidates", "merged_duplicates")})
    return out
