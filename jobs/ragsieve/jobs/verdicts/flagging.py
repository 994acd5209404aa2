"""Failure policy: per-metric thresholds turn one interaction's judge results into pass or fail.

A metric fails when its score is below its threshold (or, without a score or threshold, when its
label is a failing one). ``error`` and ``skipped`` results are unknown, never failures. An
abstention is judged by the context it had: it fails only when a relevant chunk reached the
prompt, or when the golden set says the question is answerable (see :mod:`rootcause`); it passes
only when the context judge found no relevant chunk (or no chunk reached the prompt at all). With
context relevance unknown (not judged, judge error) an abstention stays ``unjudged``. An answer
given when the context judge found no relevant chunk at all fails as well, whatever its score.
Whether every configured judge answered is the job's business (``verdicts.decide_all``): a pass from
only some judges is partial, never final.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.verdicts.rootcause import Expectation, RootCause, Signals, assign

FAILING_LABELS = frozenset({"unfaithful", "irrelevant", "fail", "incorrect", "hallucinated"})
UNKNOWN_LABELS = frozenset({"error", "skipped"})
Outcome = Literal["pass", "fail", "unjudged"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision for one interaction."""

    outcome: Outcome
    failed_metrics: tuple[str, ...] = ()
    root_cause: str | None = None
    evidence: str = ""
    abstained: bool = False


def metric_failed(result: EvalResult, thresholds: Mapping[str, float]) -> bool | None:
    """True/False for a decided metric, None when the result is unknown."""
    if result.label in UNKNOWN_LABELS:
        return None
    threshold = thresholds.get(result.evaluator)
    if result.score is not None and threshold is not None:
        return result.score < threshold
    return result.label in FAILING_LABELS


def _context_signals(res: EvalResult | None) -> tuple[bool | None, tuple[str, ...], int]:
    if res is None or res.label in UNKNOWN_LABELS:
        return None, (), 0
    chunks = res.metadata.get("chunks") if isinstance(res.metadata, Mapping) else None
    if isinstance(chunks, Sequence) and chunks:
        rel = tuple(
            str(c.get("id")) for c in chunks if isinstance(c, Mapping) and c.get("relevant")
        )
        return bool(rel), rel, len(chunks)
    if res.score is not None:
        return res.score > 0, (), 0
    return res.label == "relevant", (), 0


def is_abstention(res: EvalResult | None) -> bool:
    """The faithfulness judge saw an abstention."""
    if res is None:
        return False
    meta = res.metadata if isinstance(res.metadata, Mapping) else {}
    return res.label == "abstained" or bool(meta.get("abstained"))


def decide(
    interaction: RagInteraction,
    results: Sequence[EvalResult],
    thresholds: Mapping[str, float],
    *,
    expected: Expectation = None,
) -> Verdict:
    """Pass, fail (with root cause and evidence) or unjudged for one interaction."""
    by_metric = {r.evaluator: r for r in results}
    faith = by_metric.get("faithfulness")
    ctx = by_metric.get("context_relevance")
    ans = by_metric.get("answer_relevance")
    decided = {m: metric_failed(r, thresholds) for m, r in by_metric.items()}
    if all(v is None for v in decided.values()):
        return Verdict("unjudged", evidence="no judge could decide")
    ctx_rel, rel_ids, n_chunks = _context_signals(ctx)
    abstained = is_abstention(faith)
    failed = tuple(sorted(m for m, v in decided.items() if v))
    if abstained and ctx_rel is None and not interaction.context:
        ctx_rel = False  # nothing reached the prompt: nothing relevant could have
    if abstained:
        if ctx_rel is None and expected != "answerable":
            why = "abstained; context relevance unknown"
            return Verdict("unjudged", evidence=why, abstained=True)
        if not ctx_rel and expected != "answerable":
            why = "correct abstention: no relevant context"
            return Verdict("pass", evidence=why, abstained=True)
        failed = tuple(sorted({*failed, "faithfulness"}))
    elif ctx_rel is False and n_chunks:
        # Nothing relevant reached the prompt yet the system answered: a retrieval failure even
        # when the answer is faithful to that (irrelevant) context.
        failed = tuple(sorted({*failed, "context_relevance"}))
    elif not failed:
        return Verdict("pass")
    signals = Signals(
        query=interaction.query,
        has_history=bool(interaction.chat_history),
        abstained=abstained,
        context_relevant=ctx_rel,
        relevant_chunks=rel_ids,
        n_chunks=n_chunks or len(interaction.context),
        faithful=None if faith is None or abstained else _ok(decided.get("faithfulness")),
        answer_relevant=None if ans is None else _ok(decided.get("answer_relevance")),
        expected=expected,
        context_precision=ctx.score if ctx is not None else None,
    )
    cause: RootCause = assign(signals)
    return Verdict("fail", failed, cause.label, cause.evidence, abstained)


def _ok(failed: bool | None) -> bool | None:
    return None if failed is None else not failed


__all__ = ["FAILING_LABELS", "Verdict", "decide", "is_abstention", "metric_failed"]
