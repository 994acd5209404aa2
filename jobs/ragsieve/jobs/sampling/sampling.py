"""The stratified sampler: quotas, the call budget and recovery over hash-ordered strata.

Every applicable interaction of the window falls into exactly one stratum (``strata``). Within a
stratum, candidates are ordered by a salted hash of the trace id (the same order on every replica
and rerun) and the sample is a prefix of that order, so it is a simple random sample of the
stratum and each pick's inclusion probability is ``sampled / population`` of its stratum.
Traces already judged cost nothing, so a rerun picks the same traces for free.

Budget rule. A call budget is spent in two passes, each extending every stratum's hash-order
prefix (a stratum whose next trace does not fit stops there, so it stays a prefix): first every
stratum gets up to ``MIN_PER_STRATUM`` (2) picks, the remainder strata (``uniform`` / attribute
cells) before the priority strata, so the strata that carry most of the traffic are covered
before any budget goes to seeking failures; then the rest of the budget extends the strata in
priority order up to their quotas. Every stratum is therefore covered whenever the budget allows
``MIN_PER_STRATUM`` picks of each; a stratum left uncovered is reported (``coverage``) and the
run report bounds the whole-traffic rate instead of pretending (see ``ragsieve.jobs.run.estimate``).

Recovery. ``sample(..., recover=ids)`` also returns, as ``Selection.recovered`` picks marked
``recovered``, the given traces the sample did not choose (the job passes traces fully judged by
an earlier run that never recorded their verdict). They get their stratum's inclusion
probability, which approximates the draw that once chose them, and are left out of rates.

Upstream sampling. Behind a tail-sampling Collector tier a pick's inclusion probability is the
upstream keep probability (``ragsieve.jobs.sampling.upstream``) times the job's own share.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragsieve.jobs.sampling.golden_index import GoldenIndex, load_golden_index
from ragsieve.jobs.sampling.strata import (
    PRIORITY,
    Candidate,
    SamplingSettings,
    StratumRule,
    assign_strata,
    unit_hash,
)
from ragsieve.jobs.sampling.upstream import BASELINE_PCT, POLICY, upstream_keep

MIN_PER_STRATUM = 2  # picks every stratum gets from a call budget before priority spending


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
        return assign_strata(
            items,
            self.settings,
            seed=self.seed,
            golden_vectors=self.golden_vectors,
            embed=self.embed,
        )

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
    "BASELINE_PCT",
    "MIN_PER_STRATUM",
    "POLICY",
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
