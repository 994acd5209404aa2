"""A run history with a known true failure rate, for alert tests, the report bench and the demo.

Each simulated run samples three strata the way the job does (every ``error`` trace, part of
``low_retrieval`` and ``uniform``), draws each pick's failure from the true rate at that run
(times a per-stratum and per-route factor), and reports it through the job's own estimators
(``run.estimate.failure_rate``, ``run.breakdown``, ``judge_quality``), so a rule evaluated on
it sees what it would see on real runs: the same weights, intervals and report fields. Nothing
here touches a judge; the judging itself is what the rest of the job does.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.jobs.results.resultstore import begin_run, finish_run
from ragsieve.jobs.results.reviews import ReviewLabel
from ragsieve.jobs.run import breakdown
from ragsieve.jobs.run.estimate import failure_rate, judge_quality

ROUTES = {"/chat": 1.0, "/search": 1.6, "/faq": 0.5}
MODELS = ("gpt-4o-mini", "llama-3.1-8b")
TENANTS = ("acme", "globex", "initech")
QUERIES = (
    "How long does a refund take for {x}?",
    "Which plan includes {x}?",
    "Can I export {x} to CSV?",
    "Why was my {x} invoice charged twice?",
    "What is the SLA for {x}?",
)
THINGS = ("annual billing", "team seats", "audit logs", "SSO", "the mobile app", "API keys")


@dataclass(frozen=True)
class Stratum:
    """A simulated stratum: traffic per run, how much of it is judged, its failure factor."""

    name: str
    population: int
    sampled: int
    factor: float


STRATA = (
    Stratum("error", 12, 12, 3.0),
    Stratum("low_retrieval", 90, 45, 1.8),
    Stratum("uniform", 900, 200, 1.0),
)


@dataclass
class HistorySpec:
    """What to simulate: how many runs, how often, and the true base rate at run i."""

    runs: int
    rate: Callable[[int], float]
    start: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    every: timedelta = timedelta(hours=1)
    strata: Sequence[Stratum] = STRATA
    seed: int = 0
    new_category_at: Sequence[int] = ()


def _pick(rng: random.Random, stratum: Stratum, rate: float) -> tuple[Any, ...]:
    route = rng.choice(list(ROUTES))
    cells = {"route": route, "model": rng.choice(MODELS), "tenant": rng.choice(TENANTS)}
    failed = rng.random() < min(1.0, rate * stratum.factor * ROUTES[route])
    cause = ("retrieval" if rng.random() < 0.6 else "generation") if failed else None
    return (stratum.name, failed, 1.0, cause, cells)


def _flagged_cases(rng: random.Random, picks: Sequence[tuple[Any, ...]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for s, failed, _, cause, _cells in picks:
        if failed and len(out) < 20:
            query = rng.choice(QUERIES).format(x=rng.choice(THINGS))
            trace = f"{rng.getrandbits(128):032x}"
            out.append(
                {"trace_id": trace, "span_id": trace[:16], "root_cause": cause, "stratum": s,
                 "category": None, "query": query}
            )  # fmt: skip
    return out


def _new_categories(i: int, spec: HistorySpec) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k, first in enumerate(spec.new_category_at):
        if i >= first:
            size = min(3 + (i - first), 40)
            thing = THINGS[k % len(THINGS)]
            out.append(
                {"category": f"cat_{k:02d}", "name": f"questions about {thing}",
                 "terms": thing.split(), "root_cause": "retrieval", "failures_seen": size,
                 "examples": [q.format(x=thing) for q in QUERIES[:3]],
                 "touched_this_run": True}
            )  # fmt: skip
    return out


def run_report(
    i: int, spec: HistorySpec, rng: random.Random, labels: list[ReviewLabel]
) -> tuple[float, dict[str, Any]]:
    """Run ``i``'s start time and report; ``labels`` (people's reviews so far) grows by a few."""
    at = spec.start + i * spec.every
    true = spec.rate(i)
    picks = [_pick(rng, s, true) for s in spec.strata for _ in range(s.sampled)]
    pops = {s.name: s.population for s in spec.strata}
    rate = failure_rate([(s, f) for s, f, *_ in picks], pops)
    weighted = breakdown.weigh(picks, pops)
    fails = [p for p in picks if p[1]]
    if i % 3 == 0:  # a reviewer works through a flagged case and two audited passes
        labels.append(ReviewLabel(f"t{i}", "tp" if rng.random() < 0.85 else "fp"))
        labels += [ReviewLabel(f"a{i}.{j}", "fn" if rng.random() < 0.03 else "tn") for j in (0, 1)]
    ci = (rate["ci_low"], rate["ci_high"])
    calls = 3 * len(picks)
    report = {
        "run_id": f"run-{at:%Y%m%dT%H%M%S}-sim{spec.seed:02d}",
        "dry_run": False,
        "window": {"start": (at - spec.every).isoformat(), "end": at.isoformat()},
        "discovered": sum(pops.values()),
        "sampled": {
            "total": len(picks),
            "by_stratum": {
                s.name: {
                    "population": s.population,
                    "sampled": s.sampled,
                    "inclusion_p": round(s.sampled / s.population, 6),
                }
                for s in spec.strata
            },
        },  # fmt: skip
        "judged": len(picks),
        "judge_calls": calls,
        "judge_errors": sum(rng.random() < 0.004 for _ in range(calls)),
        "flagged": len(fails),
        "flagged_in_sample": len(fails),
        "flagged_by_root_cause": dict(Counter(str(p[3]) for p in fails)),
        "passed": len(picks) - len(fails),
        "failure_rate": rate,
        "failure_rate_by_stratum": breakdown.by_stratum(weighted),
        "failure_rate_by_cell": breakdown.by_cell(weighted),
        "failure_rate_by_root_cause": breakdown.by_root_cause(weighted),
        "judge_quality": judge_quality(rate["estimate"], ci, labels[-600:]),
        "cost": {"calls": calls, "tokens": calls * 900, "usd": round(calls * 0.00021, 6)},
        "flagged_cases": _flagged_cases(rng, picks),
        "golden": {"new_categories": _new_categories(i, spec)},
        "true_failure_rate": round(_true_rate(spec, true), 6),
    }
    return at.timestamp(), report


def _true_rate(spec: HistorySpec, base: float) -> float:
    """The traffic's true failure rate at base rate ``base`` (routes equally likely)."""
    route = sum(ROUTES.values()) / len(ROUTES)
    total = sum(s.population for s in spec.strata)
    return sum(s.population * min(1.0, base * s.factor * route) for s in spec.strata) / total


def simulate(spec: HistorySpec) -> Iterator[tuple[float, dict[str, Any]]]:
    """Every run's start time and report, oldest first (deterministic for a seed)."""
    rng = random.Random(spec.seed)
    labels: list[ReviewLabel] = []
    for i in range(spec.runs):
        yield run_report(i, spec, rng, labels)


def store_run(store: Store, started_at: float, report: dict[str, Any]) -> None:
    """Record one simulated run as the job records a real one."""
    begin_run(store, report["run_id"], started_at)
    finish_run(store, report["run_id"], started_at + 30.0, report)


__all__ = ["STRATA", "HistorySpec", "Stratum", "run_report", "simulate", "store_run"]
