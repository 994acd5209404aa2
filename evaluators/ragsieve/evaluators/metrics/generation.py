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
from datetime import datetime
from typing import Any

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges import safe_evaluate
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


async def _answer(answerer: Callable[..., Any], query: str, texts: list[str]) -> str:
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


async def generation_metrics(
    answerable: Sequence[GoldenCase],
    no_answer: Sequence[GoldenCase],
    run: Mapping[str, Sequence[str]],
    texts: Mapping[str, str],
    answerer: Callable[..., Any],
    judges: Sequence[Any],
    *,
    sample: int = 20,
    seed: int = 0,
    concurrency: int = 4,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Answer and judge up to ``sample`` answerable and ``sample`` no-answer cases."""
    if sample < 1:
        raise ConfigError(f"sample: must be >= 1 (got {sample})")
    names = [j.name for j in judges]
    if ABSTENTION_JUDGE not in names:
        raise ConfigError(f"judges: abstention needs the {ABSTENTION_JUDGE!r} judge")
    stamp = now or utcnow()
    gate = asyncio.Semaphore(concurrency)
    answer_errors: dict[str, str] = {}

    async def one(case: GoldenCase, which: Sequence[Any]) -> tuple[str, list[EvalResult]]:
        chunks = [(cid, texts[cid]) for cid in dict.fromkeys(run.get(case.id, ())) if cid in texts]
        async with gate:
            try:
                answer = await _answer(answerer, case.query, [t for _, t in chunks])
            except Exception as exc:  # the user's answerer: record, keep going
                answer_errors[case.id] = f"{type(exc).__name__}: {exc}"
                return case.id, []
            interaction = make_interaction(case, answer, chunks, stamp)
            results = [r for j in which for r in await safe_evaluate(j, interaction)]
        return case.id, results

    picked = sample_cases(answerable, sample, seed)
    picked_na = sample_cases(no_answer, sample, seed)
    abstain = [j for j in judges if j.name == ABSTENTION_JUDGE]
    done = await asyncio.gather(
        *[one(c, judges) for c in picked], *[one(c, abstain) for c in picked_na]
    )
    ans, na = done[: len(picked)], done[len(picked) :]
    by_judge = {n: [r for _, rs in ans for r in rs if r.evaluator == n] for n in names}
    faith_na = [r for _, rs in na for r in rs if r.evaluator == ABSTENTION_JUDGE]
    faith_ans = by_judge[ABSTENTION_JUDGE]
    abstained_na = sum(r.label == "abstained" for r in faith_na)
    return {
        "sample": sample,
        "seed": seed,
        "judges": {
            n: {"version": j.version, **_summary(by_judge[n])}
            for n, j in zip(names, judges, strict=True)
        },
        "n_answered": len(picked) + len(picked_na) - len(answer_errors),
        "answerer_errors": answer_errors,
        "abstention_rate_no_answer": abstained_na / len(faith_na) if faith_na else None,
        "n_no_answer_judged": len(faith_na),
        "abstention_rate_answerable": (
            sum(r.label == "abstained" for r in faith_ans) / len(faith_ans) if faith_ans else None
        ),
        "cases": {cid: {r.evaluator: r.label for r in rs} for cid, rs in [*ans, *na]},
    }
