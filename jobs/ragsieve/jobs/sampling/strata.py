"""Stratum classification: which one stratum each applicable interaction of a window falls in.

The first stratum that matches wins, in priority order: ``error``, ``negative_feedback``,
``low_retrieval``, ``tiny_context`` (both skipped by generation-only traces, which have no
retrieval step), ``slow``, ``novel`` (far from every golden query), then ``not_a_question``
(a chat turn that asks nothing: a statement, thanks, small talk; sampled at
``not_a_question_rate`` times the remainder rate), then one ``attr:key=value|...`` cell per
combination of the configured attributes, or ``uniform`` when none are configured. Thresholds
not set in the settings come from window quantiles; novelty embeds only a hash-chosen pool of
queries, so its cost per run stays bounded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragsieve.evaluators.judges.offline.conversation import turn_kind
from ragsieve.jobs.settings.sampling import SamplingSettings

NOT_A_QUESTION = "not_a_question"  # statements, confirmations, thanks: a remainder stratum
PRIORITY = ("error", "negative_feedback", "low_retrieval", "tiny_context", "slow", "novel")
# A generation-only trace (the app's instrumentation records the LLM call, no retrieval step) is
# finished and judgeable (answer relevance needs no context); the retrieval strata skip it.
JUDGEABLE = frozenset({"complete", "generation_only"})


@dataclass(frozen=True, slots=True)
class Candidate:
    """What sampling needs to know about one stored interaction (read without the full record)."""

    trace_id: str
    started_at: float
    status: str = "ok"
    completeness: str = "complete"
    has_query: bool = True
    has_answer: bool = True
    n_errors: int = 0
    feedback_polarity: int | None = None
    latency_ms: float | None = None
    n_context: int = 0
    context_chars: int = 0
    best_score: float | None = None
    query: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def not_applicable(self) -> str | None:
        """Why the trace cannot be judged, or None."""
        if self.completeness not in JUDGEABLE:
            return f"incomplete:{self.completeness}"
        if self.status in {"incomplete", "cancelled"}:
            return f"status:{self.status}"
        if not self.has_query:
            return "no_query"
        if not self.has_answer:
            return "no_answer"
        return None


def unit_hash(trace_id: str, salt: str, seed: int = 0) -> float:
    """A uniform number in [0, 1) from the trace id: the same on every replica and run."""
    digest = hashlib.blake2b(f"{seed}:{salt}:{trace_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def _quantile(values: Sequence[float], q: float) -> float:
    return float(np.quantile(np.asarray(values, dtype=np.float64), q))


def assign_strata(
    items: Sequence[Candidate],
    s: SamplingSettings,
    *,
    seed: int,
    golden_vectors: np.ndarray | None,
    embed: Callable[[Sequence[str]], np.ndarray] | None,
) -> tuple[dict[str, list[Candidate]], int]:
    """Strata in priority order → members; also how many queries novelty embedded."""
    scores = [c.best_score for c in items if c.best_score is not None]
    low = s.low_score
    if low is None and len(scores) >= s.min_population_for_quantile:
        low = _quantile(scores, s.low_score_quantile)
    lats = [c.latency_ms for c in items if c.latency_ms is not None]
    slow = s.slow_ms
    if slow is None and len(lats) >= s.min_population_for_quantile:
        slow = _quantile(lats, s.slow_quantile)
    groups: dict[str, list[Candidate]] = {name: [] for name in PRIORITY}
    rest: list[Candidate] = []
    for c in items:
        retrieved = c.completeness != "generation_only"  # no retrieval step: not low, not tiny
        if c.status in {"error", "degraded"} or c.n_errors:
            groups["error"].append(c)
        elif c.feedback_polarity == -1:
            groups["negative_feedback"].append(c)
        elif retrieved and low is not None and c.best_score is not None and c.best_score < low:
            groups["low_retrieval"].append(c)
        elif retrieved and (c.n_context == 0 or c.context_chars < s.tiny_context_chars):
            groups["tiny_context"].append(c)
        elif slow is not None and c.latency_ms is not None and c.latency_ms > slow:
            groups["slow"].append(c)
        else:
            rest.append(c)
    rest, checked = _split_novel(rest, groups["novel"], s, seed, golden_vectors, embed)
    for c in rest:  # "ok", "thanks!": sampled at a lower rate, in a stratum of their own
        name = NOT_A_QUESTION if c.query and turn_kind(c.query) != "question" else None
        groups.setdefault(name or _cell(c, s.attributes), []).append(c)
    return {k: v for k, v in groups.items() if v}, checked


def _cell(c: Candidate, keys: Sequence[str]) -> str:
    if not keys:
        return "uniform"
    return "attr:" + "|".join(f"{k}={c.attributes.get(k, '-')}" for k in keys)


def _split_novel(
    rest: list[Candidate],
    novel: list[Candidate],
    s: SamplingSettings,
    seed: int,
    golden_vectors: np.ndarray | None,
    embed: Callable[[Sequence[str]], np.ndarray] | None,
) -> tuple[list[Candidate], int]:
    pool_size = s.novelty_pool
    if golden_vectors is None or embed is None or not pool_size:
        return rest, 0
    if len(golden_vectors) == 0:
        return rest, 0
    # Only a hash-chosen pool is embedded, so the cost per run stays bounded.
    order = sorted(rest, key=lambda c: unit_hash(c.trace_id, "novelty", seed))
    pool = [c for c in order[:pool_size] if c.query]
    if not pool:
        return rest, 0
    sims = embed([c.query or "" for c in pool]) @ golden_vectors.T
    far = {
        c.trace_id
        for c, m in zip(pool, sims.max(axis=1), strict=True)
        if float(m) < s.novelty_cosine
    }
    novel.extend(c for c in pool if c.trace_id in far)
    return [c for c in rest if c.trace_id not in far], len(pool)


__all__ = [
    "NOT_A_QUESTION",
    "PRIORITY",
    "Candidate",
    "assign_strata",
    "unit_hash",
]
