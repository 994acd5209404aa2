"""Failure-seeking stratified sampling of a window's interactions, deterministic by trace id.

Every applicable interaction of the window falls into exactly one stratum, the first that matches
in priority order: ``error``, ``negative_feedback``, ``low_retrieval``, ``tiny_context``, ``slow``,
``novel`` (far from every golden query), then one ``attr:key=value|...`` cell per combination of the
configured attributes, or ``uniform`` when none are configured. Within a stratum, candidates are
ordered by a salted hash of the trace id (the same order on every replica and rerun) and the
sample is a prefix of that order, so it is a simple random sample of the stratum and each pick's
inclusion probability is ``sampled / population`` of its stratum. Traces already judged cost
nothing, so a rerun picks the same traces for free.

Budget rule. A call budget is spent in two passes, each extending every stratum's hash-order
prefix (a stratum whose next trace does not fit stops there, so it stays a prefix): first every
stratum gets up to ``MIN_PER_STRATUM`` (2) picks, the remainder strata (``uniform`` / attribute
cells) before the priority strata, so the strata that carry most of the traffic are covered
before any budget goes to seeking failures; then the rest of the budget extends the strata in
priority order up to their quotas. Every stratum is therefore covered whenever the budget allows
``MIN_PER_STRATUM`` picks of each; a stratum left uncovered is reported (``coverage``) and the
run report bounds the whole-traffic rate instead of pretending (see ``ragsieve.jobs.report``).

Recovery. ``sample(..., recover=ids)`` also returns, as ``Selection.recovered`` picks marked
``recovered``, the given traces the sample did not choose (the job passes traces fully judged by
an earlier run that never recorded their verdict). They get their stratum's inclusion
probability, which approximates the draw that once chose them, and are left out of rates.

Upstream sampling. Behind a tail-sampling Collector tier (``deploy/otelcol/sampler.yaml``) the
store holds only the kept traces. The tier stamps ``rag.sampling.baseline_percentage`` on every
kept trace and, with the ``processor.tailsamplingprocessor.recordpolicy`` feature gate, records the
first policy that kept it as ``tailsampling.policy`` (an instrumentation-scope attribute; the
collector copies it into ``interaction.attributes``). A trace whose recorded policy is one of
``upstream_probabilistic_policies`` was kept by the hash of its trace id alone, with probability
``percentage / 100``; any other recorded policy (keep-errors, keep-slow, ...) keeps every such
trace, probability 1. Without a percentage there was no tier: probability 1. With a percentage
but no recorded policy (gate off, or a late span released from the decision cache) the keep
probability is unknown: it is taken as 1 and counted in the report as ``unknown_policy``. A
pick's inclusion probability is the upstream keep probability times the job's own share.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

PRIORITY = ("error", "negative_feedback", "low_retrieval", "tiny_context", "slow", "novel")
MIN_PER_STRATUM = 2  # picks every stratum gets from a call budget before priority spending


class StratumRule(BaseModel):
    """How much of one priority stratum to judge per run."""

    model_config = ConfigDict(extra="forbid")

    rate: float = Field(1.0, ge=0, le=1, description="Share of the stratum to judge.")
    quota: int | None = Field(None, ge=0, description="Most traces judged from it per run.")


class SamplingSettings(BaseModel):
    """Strata and their quotas (proposed section ``[jobs.sampling]``)."""

    model_config = ConfigDict(extra="forbid")

    error: StratumRule = Field(default_factory=lambda: StratumRule(rate=1.0, quota=100))
    negative_feedback: StratumRule = Field(default_factory=lambda: StratumRule(rate=1.0, quota=100))
    low_retrieval: StratumRule = Field(default_factory=lambda: StratumRule(rate=0.5, quota=50))
    tiny_context: StratumRule = Field(default_factory=lambda: StratumRule(rate=0.5, quota=50))
    slow: StratumRule = Field(default_factory=lambda: StratumRule(rate=0.5, quota=50))
    novel: StratumRule = Field(default_factory=lambda: StratumRule(rate=1.0, quota=25))
    low_score: float | None = Field(None, description="Best chunk score below this is low.")
    low_score_quantile: float = Field(0.1, gt=0, lt=1, description="Else: window quantile.")
    tiny_context_chars: int = Field(64, ge=0, description="Less context text than this is tiny.")
    slow_ms: float | None = Field(None, gt=0, description="Latency above this is slow.")
    slow_quantile: float = Field(0.95, gt=0, lt=1, description="Else: window quantile.")
    min_population_for_quantile: int = Field(20, ge=2, description="Quantile rules need this.")
    novelty_cosine: float = Field(0.6, gt=0, le=1, description="Below this to all golden: novel.")
    novelty_pool: int = Field(200, ge=0, description="Queries embedded per run for novelty.")
    attributes: list[str] = Field(default_factory=list, description="Attribute keys to stratify.")
    per_attribute_quota: int = Field(2, ge=0, description="Least judged per attribute cell.")
    upstream_probabilistic_policies: list[str] = Field(
        default_factory=lambda: ["baseline"],
        description="Tail-sampling policy names that keep a trace by probability only.",
    )


BASELINE_PCT = "rag.sampling.baseline_percentage"
POLICY = "tailsampling.policy"


def upstream_keep(attributes: Mapping[str, Any], probabilistic: Sequence[str]) -> tuple[float, str]:
    """``(keep probability, how it was decided)`` from the tail-sampling tier's attributes.

    ``how`` is ``none`` (no tier), ``probabilistic``, ``kept_by_policy``, ``unknown_policy`` or
    ``invalid_percentage``; see the module docstring for the rule.
    """
    raw = attributes.get(BASELINE_PCT)
    if raw is None:
        return 1.0, "none"
    try:
        pct = float(raw)
    except (TypeError, ValueError):
        return 1.0, "invalid_percentage"
    if not 0 < pct <= 100:
        return 1.0, "invalid_percentage"
    policy = attributes.get(POLICY)
    if not isinstance(policy, str) or not policy:
        return 1.0, "unknown_policy"
    if policy in probabilistic:
        return pct / 100.0, "probabilistic"
    return 1.0, "kept_by_policy"


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
        if self.completeness != "complete":
            return f"incomplete:{self.completeness}"
        if self.status in {"incomplete", "cancelled"}:
            return f"status:{self.status}"
        if not self.has_query:
            return "no_query"
        if not self.has_answer:
            return "no_answer"
        return None


@dataclass(frozen=True, slots=True)
class Pick:
    """One sampled trace."""

    trace_id: str
    stratum: str
    inclusion_p: float
    upstream_p: float = 1.0
    recovered: bool = False  # decided for an earlier run's sample; not part of this one


@dataclass
class StratumStat:
    """Population and sample of one stratum."""

    population: int
    sampled: int = 0

    @property
    def inclusion_p(self) -> float:
        """``sampled / population`` (0 when nothing was sampled)."""
        return self.sampled / self.population if self.population else 0.0


@dataclass
class Selection:
    """The sample of one window."""

    discovered: int
    not_applicable: dict[str, int]
    strata: dict[str, StratumStat]
    picks: list[Pick]
    budget_exhausted: bool = False
    novelty_checked: int = 0
    upstream: dict[str, int] = field(default_factory=dict)  # picks per upstream keep rule
    recovered: list[Pick] = field(default_factory=list)


def unit_hash(trace_id: str, salt: str, seed: int = 0) -> float:
    """A uniform number in [0, 1) from the trace id: the same on every replica and run."""
    digest = hashlib.blake2b(f"{seed}:{salt}:{trace_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def _quantile(values: Sequence[float], q: float) -> float:
    return float(np.quantile(np.asarray(values, dtype=np.float64), q))


@dataclass
class GoldenIndex:
    """Golden queries as vectors: novelty for sampling, answerability and category for flags."""

    cases: list[Any]
    vectors: np.ndarray
    embed: Callable[[Sequence[str]], np.ndarray]
    near_duplicate: float = 0.9
    new_category: float = 0.6

    def lookup(self, query: str) -> tuple[Any, str]:
        """``(expected, category)`` from the nearest golden case.

        ``expected`` is "answerable" / "no_answer" when the nearest case is a near duplicate,
        else None; the category is that case's when similar enough, else "new".
        """
        if not query or len(self.cases) == 0:
            return None, "new"
        sims = self.embed([query])[0] @ self.vectors.T
        best = int(np.argmax(sims))
        sim = float(sims[best])
        case = self.cases[best]
        expected = None
        if sim >= self.near_duplicate:
            expected = "no_answer" if case.is_no_answer else "answerable"
        category = (case.category or "uncategorized") if sim >= self.new_category else "new"
        return expected, category


_GOLDEN_CACHE: dict[tuple[str, float], GoldenIndex] = {}


def load_golden_index(
    path: str | None, near_duplicate: float = 0.9, new_category: float = 0.6
) -> GoldenIndex | None:
    """Load and embed the golden set at ``path`` (cached per file version); None without a path."""
    if not path:
        return None
    from pathlib import Path

    from ragsieve.evaluators.embeddings import embed
    from ragsieve.evaluators.errors import ConfigError
    from ragsieve.evaluators.golden import load_golden

    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"golden.path: {path}: no such file")
    stamp = (str(file.resolve()), file.stat().st_mtime)
    index = _GOLDEN_CACHE.get(stamp)
    if index is None:
        cases = list(load_golden(file).cases)
        vectors = embed([c.query for c in cases])
        index = GoldenIndex(cases, vectors, embed)
        _GOLDEN_CACHE.clear()
        _GOLDEN_CACHE[stamp] = index
    return GoldenIndex(index.cases, index.vectors, index.embed, near_duplicate, new_category)


class StratifiedSampler:
    """Assigns strata and draws the sample (see the module docstring).

    Args:
        settings: strata rules.
        seed: salts every hash; change it to draw a different (still deterministic) sample.
        golden_vectors: unit vectors of golden queries; None disables the novelty stratum.
        embed: text -> unit vectors, used for novelty.
    """

    def __init__(
        self,
        settings: SamplingSettings | None = None,
        *,
        seed: int = 0,
        golden_vectors: np.ndarray | None = None,
        embed: Callable[[Sequence[str]], np.ndarray] | None = None,
    ) -> None:
        self.settings = settings or SamplingSettings()
        self.seed = seed
        self.golden_vectors = golden_vectors
        self.embed = embed

    def describe(self) -> str:
        """One line naming the strata and the seed."""
        attrs = ",".join(self.settings.attributes) or "-"
        novelty = "on" if self.golden_vectors is not None else "off"
        return f"stratified(seed={self.seed}, novelty={novelty}, attributes={attrs})"

    def assign(self, items: Sequence[Candidate]) -> tuple[dict[str, list[Candidate]], int]:
        """Strata in priority order → members; also how many queries novelty embedded."""
        s = self.settings
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
            if c.status in {"error", "degraded"} or c.n_errors:
                groups["error"].append(c)
            elif c.feedback_polarity == -1:
                groups["negative_feedback"].append(c)
            elif low is not None and c.best_score is not None and c.best_score < low:
                groups["low_retrieval"].append(c)
            elif c.n_context == 0 or c.context_chars < s.tiny_context_chars:
                groups["tiny_context"].append(c)
            elif slow is not None and c.latency_ms is not None and c.latency_ms > slow:
                groups["slow"].append(c)
            else:
                rest.append(c)
        rest, checked = self._split_novel(rest, groups["novel"])
        for c in rest:
            groups.setdefault(self._cell(c), []).append(c)
        return {k: v for k, v in groups.items() if v}, checked

    def _cell(self, c: Candidate) -> str:
        keys = self.settings.attributes
        if not keys:
            return "uniform"
        return "attr:" + "|".join(f"{k}={c.attributes.get(k, '-')}" for k in keys)

    def _split_novel(
        self, rest: list[Candidate], novel: list[Candidate]
    ) -> tuple[list[Candidate], int]:
        pool_size = self.settings.novelty_pool
        if self.golden_vectors is None or self.embed is None or not pool_size:
            return rest, 0
        if len(self.golden_vectors) == 0:
            return rest, 0
        # Only a hash-chosen pool is embedded, so the cost per run stays bounded.
        order = sorted(rest, key=lambda c: unit_hash(c.trace_id, "novelty", self.seed))
        pool = [c for c in order[:pool_size] if c.query]
        if not pool:
            return rest, 0
        sims = self.embed([c.query or "" for c in pool]) @ self.golden_vectors.T
        far = {
            c.trace_id
            for c, m in zip(pool, sims.max(axis=1), strict=True)
            if float(m) < self.settings.novelty_cosine
        }
        novel.extend(c for c in pool if c.trace_id in far)
        return [c for c in rest if c.trace_id not in far], len(pool)

    def _want(self, name: str, population: int, uniform_rate: float) -> int:
        s = self.settings
        if name in PRIORITY:
            rule: StratumRule = getattr(s, name)
            want = math.ceil(rule.rate * population)
            return min(want, rule.quota) if rule.quota is not None else want
        if name == "uniform":
            return min(population, math.ceil(uniform_rate * population))
        return min(population, max(s.per_attribute_quota, math.ceil(uniform_rate * population)))

    def sample(
        self,
        items: Sequence[Candidate],
        *,
        sample_size: int,
        take_all: bool = False,
        budget_calls: int | None = None,
        calls_needed: Callable[[str], int] | None = None,
        recover: Collection[str] = (),
    ) -> Selection:
        """Draw the sample of ``items``; ``calls_needed(trace_id)`` is 0 for judged traces.

        ``recover``: traces to return as ``Selection.recovered`` when not drawn (module docstring).
        """
        reasons: dict[str, int] = {}
        eligible: list[Candidate] = []
        for c in items:
            why = c.not_applicable
            if why is None:
                eligible.append(c)
            else:
                reasons[why] = reasons.get(why, 0) + 1
        if take_all:
            groups, checked = {"all": list(eligible)} if eligible else {}, 0
        else:
            groups, checked = self.assign(eligible)
        rest_pop = sum(len(v) for k, v in groups.items() if k not in PRIORITY)
        uniform_rate = min(1.0, sample_size / rest_pop) if rest_pop else 0.0
        need = calls_needed or (lambda _tid: 1)
        probabilistic = self.settings.upstream_probabilistic_policies
        how: Counter[str] = Counter()
        left = budget_calls
        exhausted = False
        strata: dict[str, StratumStat] = {}
        plan: dict[str, tuple[list[Candidate], int]] = {}
        for name, members in groups.items():
            strata[name] = StratumStat(population=len(members))
            want = len(members) if take_all else self._want(name, len(members), uniform_rate)
            keys = {c.trace_id: unit_hash(c.trace_id, name, self.seed) for c in members}
            plan[name] = (sorted(members, key=lambda c: keys[c.trace_id]), want)
        chosen: dict[str, list[tuple[str, float]]] = {name: [] for name in groups}
        closed: set[str] = set()
        floor = MIN_PER_STRATUM if left is not None else 0
        rest_first = [n for n in groups if n not in PRIORITY] + [n for n in groups if n in PRIORITY]
        passes = [(n, floor) for n in rest_first] + [(n, None) for n in groups]
        for name, cap in passes:
            ordered, want = plan[name]
            limit = want if cap is None else min(want, cap)
            got = chosen[name]
            while name not in closed and len(got) < limit:
                c = ordered[len(got)]
                cost = need(c.trace_id)
                if left is not None and cost > left:
                    exhausted = True
                    closed.add(name)  # keep the sample a prefix of the hash order
                    break
                if left is not None:
                    left -= cost
                up, rule = upstream_keep(c.attributes, probabilistic)  # picks only: cheap
                how[rule] += 1
                got.append((c.trace_id, up))
        picks: list[Pick] = []
        extra: list[Pick] = []
        for name, got in chosen.items():
            stat = strata[name]
            stat.sampled = len(got)
            picks.extend(Pick(t, name, stat.inclusion_p * up, up) for t, up in got)
            if recover:
                taken = {t for t, _ in got}
                for c in plan[name][0]:
                    if c.trace_id in recover and c.trace_id not in taken:
                        up, _ = upstream_keep(c.attributes, probabilistic)
                        p = max(stat.inclusion_p, 1.0 / stat.population) * up
                        extra.append(Pick(c.trace_id, name, p, up, recovered=True))
        return Selection(len(items), reasons, strata, picks, exhausted, checked, dict(how), extra)


__all__ = [
    "MIN_PER_STRATUM",
    "PRIORITY",
    "Candidate",
    "GoldenIndex",
    "Pick",
    "SamplingSettings",
    "Selection",
    "StratifiedSampler",
    "StratumRule",
    "StratumStat",
    "load_golden_index",
    "unit_hash",
    "upstream_keep",
]
