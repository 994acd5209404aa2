"""Generation metrics on demand: answer a sample of golden cases, judge them, measure abstention.

The answerer is a user callable ``answer(query, chunks) -> str`` (sync or async) where ``chunks``
is the list of chunk texts in rank order. Judges come from :mod:`ragsieve.evaluators.judges`;
abstention is the faithfulness judge's ``abstained`` label.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges import Judge, safe_evaluate
from ragsieve.evaluators.records import (
    EvalResult,
    GoldenCase,
    RagInteraction,
    RetrievedDocument,
    utcnow,
)

log = logging.getLogger(__name__)
ABSTENTION_JUDGE = "faithfulness"


def sample_cases(cases: Sequence[GoldenCase], n: int, seed: int = 0) -> list[GoldenCase]:
    """Pick ``n`` cases by a seeded hash of their ids: stable across runs and file reorderings."""
    key = lambda c: hashlib.sha256(f"{seed}:{c.id}".encode()).hexdigest()  # noqa: E731
    return sorted(cases, key=key)[: max(n, 0)]


def make_interaction(
    case: GoldenCase, answer: str | None, chunks: Sequence[tuple[str, str]], now: datetime
) -> RagInteraction:
    """A synthetic interaction for one golden case; ids derive from the case id."""
    digest = hashlib.sha256(f"golden:{case.id}".encode()).hexdigest()
    docs = tuple(
        RetrievedDocument(id=cid, content=text, rank=i, in_prompt=True)
        for i, (cid, text) in enumerate(chunks)
    )
    return RagInteraction(
        trace_id=digest[:32],
        span_id=digest[32:48],
        started_at=now,
        query=case.query,
        answer=answer,
        documents=docs,
    )


async def _answer(answerer: Callable[..., object], query: str, texts: list[str]) -> str:
    out = answerer(query, texts)
    if inspect.isawaitable(out):
        out = await out
    if not isinstance(out, str):
        raise TypeError(f"answerer returned {type(out).__name__}, expected str")
    return out


def _summary(results: Sequence[EvalResult]) -> dict[str, Any]:
    scores = [r.score for r in results if r.score is not None]
    return {
        "n": len(results),
        "labels": dict(Counter(r.label for r in results)),
        "mean_score": sum(scores) / len(scores) if scores else None,
        "n_error": sum(r.is_error for r in results),
    }


@dataclass
class _Answering:
    """Answers one case with its retrieved chunks and judges the answer (bounded concurrency)."""

    run: Mapping[str, Sequence[str]]
    texts: Mapping[str, str]
    answerer: Callable[..., object]
    gate: asyncio.Semaphore
    now: datetime
    errors: dict[str, str] = field(default_factory=dict)

    async def __call__(
        self, case: GoldenCase, judges: Sequence[Judge]
    ) -> tuple[str, list[EvalResult]]:
        ids = dict.fromkeys(self.run.get(case.id, ()))
        chunks = [(cid, self.texts[cid]) for cid in ids if cid in self.texts]
        async with self.gate:
            try:
                answer = await _answer(self.answerer, case.query, [t for _, t in chunks])
            except Exception as exc:  # the user's answerer: record, keep going
                self.errors[case.id] = f"{type(exc).__name__}: {exc}"
                return case.id, []
            interaction = make_interaction(case, answer, chunks, self.now)
            results = [r for j in judges for r in await safe_evaluate(j, interaction)]
        return case.id, results


Judged = Sequence[tuple[str, list[EvalResult]]]


def _rate(results: Sequence[EvalResult]) -> float | None:
    return sum(r.label == "abstained" for r in results) / len(results) if results else None


def _summarize(judges: Sequence[Judge], ans: Judged, na: Judged) -> dict[str, Any]:
    by_judge = {j.name: [r for _, rs in ans for r in rs if r.evaluator == j.name] for j in judges}
    faith_na = [r for _, rs in na for r in rs if r.evaluator == ABSTENTION_JUDGE]
    return {
        "judges": {j.name: {"version": j.version, **_summary(by_judge[j.name])} for j in judges},
        "abstention_rate_no_answer": _rate(faith_na),
        "n_no_answer_judged": len(faith_na),
        "abstention_rate_answerable": _rate(by_judge[ABSTENTION_JUDGE]),
        "cases": {cid: {r.evaluator: r.label for r in rs} for cid, rs in [*ans, *na]},
    }


async def generation_metrics(
    answerable: Sequence[GoldenCase],
    no_answer: Sequence[GoldenCase],
    run: Mapping[str, Sequence[str]],
    texts: Mapping[str, str],
    answerer: Callable[..., object],
    judges: Sequence[Judge],
    *,
    sample: int = 20,
    seed: int = 0,
    concurrency: int = 4,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Answer and judge up to ``sample`` answerable and ``sample`` no-answer cases."""
    if sample < 1:
        raise ConfigError(f"sample: must be >= 1 (got {sample})")
    if ABSTENTION_JUDGE not in [j.name for j in judges]:
        raise ConfigError(f"judges: abstention needs the {ABSTENTION_JUDGE!r} judge")
    one = _Answering(run, texts, answerer, asyncio.Semaphore(concurrency), now or utcnow())
    picked = sample_cases(answerable, sample, seed)
    picked_na = sample_cases(no_answer, sample, seed)
    abstain = [j for j in judges if j.name == ABSTENTION_JUDGE]
    done = await asyncio.gather(
        *[one(c, judges) for c in picked], *[one(c, abstain) for c in picked_na]
    )
    summary = _summarize(judges, done[: len(picked)], done[len(picked) :])
    return {
        "sample": sample,
        "seed": seed,
        "judges": summary.pop("judges"),
        "n_answered": len(picked) + len(picked_na) - len(one.errors),
        "answerer_errors": one.errors,
        **summary,
    }
