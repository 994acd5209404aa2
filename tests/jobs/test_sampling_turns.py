"""Turns that ask nothing ("ok", "thanks!", statements) are sampled less, with known weights."""

from __future__ import annotations

import pytest

from ragsieve.jobs.run.estimate import failure_rate
from ragsieve.jobs.sampling.sampling import Candidate, StratifiedSampler
from ragsieve.jobs.settings import SamplingSettings

ASKS = ["How do I renew my licence?", "and on Saturdays?", "¿Cuánto cuesta?"]
SAYS = ["ok", "thanks!", "Don't do that I'll get insurance", "Vale, gracias"]


def cand(i: int, query: str) -> Candidate:
    return Candidate(
        trace_id=f"{i:032x}",
        started_at=float(i),
        n_context=3,
        context_chars=900,
        best_score=0.8,
        latency_ms=500.0,
        query=query,
    )


def population() -> list[Candidate]:
    asks = [cand(i, ASKS[i % len(ASKS)]) for i in range(600)]
    return asks + [cand(10_000 + i, SAYS[i % len(SAYS)]) for i in range(400)]


def test_turns_that_ask_nothing_are_a_stratum_sampled_at_a_lower_rate() -> None:
    sel = StratifiedSampler().sample(population(), sample_size=100)
    by = {k: (v.population, v.sampled) for k, v in sel.strata.items()}
    assert by["not_a_question"] == (400, 10)  # a quarter of the remainder rate (0.1)
    assert by["uniform"] == (600, 60)
    p = {pick.stratum: pick.inclusion_p for pick in sel.picks}
    assert p["not_a_question"] == pytest.approx(0.025)
    assert p["uniform"] == pytest.approx(0.1)
    said = {c.trace_id: c.query for c in population()}
    assert all(said[pk.trace_id] in SAYS for pk in sel.picks if pk.stratum == "not_a_question")


def test_the_rate_is_a_setting_and_weights_stay_unbiased() -> None:
    s = SamplingSettings(not_a_question_rate=1.0)
    sel = StratifiedSampler(s).sample(population(), sample_size=100)
    assert sel.strata["not_a_question"].sampled == 40
    # every statement fails, every question passes: the weighted rate is the population's
    low = StratifiedSampler().sample(population(), sample_size=100)
    decided = [(pk.stratum, pk.stratum == "not_a_question") for pk in low.picks]
    rate = failure_rate(decided, {k: v.population for k, v in low.strata.items()})
    assert rate["estimate"] == pytest.approx(0.4, abs=1e-6)
