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
    NOT_A_QUESTION,
    PRIORITY,
    Candidate,
    assign_strata,
    unit_hash,
)
from ragsieve.jobs.sampling.upstream import BASELINE_PCT, POLICY, upstream_keep
from ragsieve.jobs.settings.sampling import SamplingSettings, StratumRule

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
        if name == NOT_A_QUESTION:  # inclusion p stays sampled / population of the stratum
            return min(population, math.ceil(s.not_a_question_rate * uniform_rate * population))
        return min(population, max(s.per_attribute_quota, math.ceil(uniform_rate * population)))

    def sample(
        self,
        items: Sequence[Candidate],
        *,
        sample_size: int,
        budget_calls: int | None = None,
        calls_needed: Callable[[str], int] | None = None,
        recover: Collection[str] = (),
    ) -> Selection:
        """Draw the sample of ``items``; ``calls_needed(trace_id)`` is 0 for judged traces.

        ``recover``: traces to return as ``Selection.recovered`` when not drawn (module docstring).
        """
        eligible, reasons = _eligible(items)
        groups, checked = self.assign(eligible)
        rest_pop = sum(len(v) for k, v in groups.items() if k not in PRIORITY)
        uniform_rate = min(1.0, sample_size / rest_pop) if rest_pop else 0.0
        plan: dict[str, tuple[list[Candidate], int]] = {}
        for name, members in groups.items():
            keys = {c.trace_id: unit_hash(c.trace_id, name, self.seed) for c in members}
            want = self._want(name, len(members), uniform_rate)
            plan[name] = (sorted(members, key=lambda c: keys[c.trace_id]), want)
        draw = _Draw(plan, budget_calls, calls_needed or (lambda _tid: 1), self._probabilistic)
        draw.spend(MIN_PER_STRATUM if budget_calls is not None else 0)
        picks, extra, strata = draw.picks(recover)
        sel = Selection(len(items), reasons, strata, picks, draw.exhausted, checked)
        sel.upstream, sel.recovered = dict(draw.how), extra
        return sel

    @property
    def _probabilistic(self) -> Sequence[str]:
        return self.settings.upstream_probabilistic_policies


class TakeAllSampler(StratifiedSampler):
    """Every applicable trace of the window, in one stratum ``all`` at probability one."""

    def describe(self) -> str:
        """One line naming the sampler."""
        return "all (every settled trace)"

    def assign(self, items: Sequence[Candidate]) -> tuple[dict[str, list[Candidate]], int]:
        """One stratum holding everything; nothing embedded."""
        return ({"all": list(items)} if items else {}), 0

    def _want(self, name: str, population: int, uniform_rate: float) -> int:
        return population


def _eligible(items: Sequence[Candidate]) -> tuple[list[Candidate], dict[str, int]]:
    """The applicable candidates, and how many were not applicable per reason."""
    reasons: dict[str, int] = {}
    eligible: list[Candidate] = []
    for c in items:
        why = c.not_applicable
        if why is None:
            eligible.append(c)
        else:
            reasons[why] = reasons.get(why, 0) + 1
    return eligible, reasons


class _Draw:
    """Extends each stratum's hash-order prefix within the call budget (the budget rule)."""

    def __init__(
        self,
        plan: dict[str, tuple[list[Candidate], int]],
        budget: int | None,
        need: Callable[[str], int],
        probabilistic: Sequence[str],
    ) -> None:
        self.plan = plan
        self.left = budget
        self.need = need
        self.probabilistic = probabilistic
        self.exhausted = False
        self.how: Counter[str] = Counter()
        self.chosen: dict[str, list[tuple[str, float]]] = {name: [] for name in plan}
        self.closed: set[str] = set()

    def spend(self, floor: int) -> None:
        """First ``floor`` picks per stratum (remainder strata first), then up to the quotas."""
        names = list(self.plan)
        rest_first = [n for n in names if n not in PRIORITY] + [n for n in names if n in PRIORITY]
        for name in rest_first:
            self._extend(name, min(self.plan[name][1], floor))
        for name in names:
            self._extend(name, self.plan[name][1])

    def _extend(self, name: str, limit: int) -> None:
        ordered, _ = self.plan[name]
        got = self.chosen[name]
        while name not in self.closed and len(got) < limit:
            c = ordered[len(got)]
            cost = self.need(c.trace_id)
            if self.left is not None and cost > self.left:
                self.exhausted = True
                self.closed.add(name)  # keep the sample a prefix of the hash order
                return
            if self.left is not None:
                self.left -= cost
            up, rule = upstream_keep(c.attributes, self.probabilistic)  # picks only: cheap
            self.how[rule] += 1
            got.append((c.trace_id, up))

    def picks(
        self, recover: Collection[str]
    ) -> tuple[list[Pick], list[Pick], dict[str, StratumStat]]:
        """The picks with their inclusion probabilities, the recovered picks, and the strata."""
        picks: list[Pick] = []
        extra: list[Pick] = []
        strata: dict[str, StratumStat] = {}
        for name, got in self.chosen.items():
            ordered = self.plan[name][0]
            stat = strata[name] = StratumStat(population=len(ordered), sampled=len(got))
            picks.extend(Pick(t, name, stat.inclusion_p * up, up) for t, up in got)
            if recover:
                taken = {t for t, _ in got}
                extra.extend(self._recovered(name, ordered, stat, recover, taken))
        return picks, extra, strata

    def _recovered(
        self,
        name: str,
        ordered: list[Candidate],
        stat: StratumStat,
        recover: Collection[str],
        taken: set[str],
    ) -> list[Pick]:
        out: list[Pick] = []
        for c in ordered:
            if c.trace_id in recover and c.trace_id not in taken:
                up, _ = upstream_keep(c.attributes, self.probabilistic)
                p = max(stat.inclusion_p, 1.0 / stat.population) * up
                out.append(Pick(c.trace_id, name, p, up, recovered=True))
        return out


__all__ = [
    "BASELINE_PCT",
    "MIN_PER_STRATUM",
    "POLICY",
    "PRIORITY",
    "Candidate",
    "GoldenIndex",
    "Pick",
    "Selection",
    "StratifiedSampler",
    "StratumStat",
    "TakeAllSampler",
    "load_golden_index",
    "unit_hash",
    "upstream_keep",
]
