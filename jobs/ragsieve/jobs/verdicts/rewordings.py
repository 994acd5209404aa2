"""One failure asked in other words: flagged traces of a run that are the same failure get one
root cause, decided on what all their readings show.

Two traces are the same failure when the retriever served them the same chunks, the system gave
the same answer, and their questions are near duplicates: the encoder's cosine at least
``SAME_QUESTION``, or the same words but for typos and a lead-in ("How do I protect myself from
fraud?" and "Do you know how do I protect myeslf from faud?", whose cosine is 0.58). Only their
wording differs, and the judges read wording: a typo can hide the chunk that answers from the
context judge, or the missed chunk from the observed-corpus search, so one copy is called
``retrieval`` and the other ``no_answer_expected``. As a follow-up's readings do
(:func:`ragsieve.evaluators.judges.offline.conversation.best_reading`), each wording may help the
others and never hurts them: every copy is decided again with the group's best context and
answer-relevance results (the highest scores any wording got) and the missed chunk any copy's
search found. A copy that would pass so keeps its own verdict (a run never drops a flag here);
a copy whose root cause changes says which trace's reading decided it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence

from rapidfuzz import fuzz

from ragsieve.evaluators.judges.offline.text.question import without_preamble
from ragsieve.evaluators.judges.offline.text.text import fold
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.evaluators.tools.embeddings import embed
from ragsieve.jobs.verdicts.flagging import CorpusAnswer, Verdict

SAME_QUESTION = 0.8  # question cosine at which two wordings ask the same thing
SAME_WORDING = 90.0  # ... or the character ratio of the two, lead-ins left out (0-100)
POOLED = ("context_relevance", "answer_relevance")

Redecide = Callable[[int, list[EvalResult], CorpusAnswer | None], Verdict]


def same_failure_groups(
    interactions: Sequence[RagInteraction], verdicts: Sequence[Verdict]
) -> list[list[int]]:
    """Indices of failed traces that are one failure in other words (two or more, with root
    causes that disagree)."""
    by_key: dict[tuple[tuple[str, ...], str], list[int]] = defaultdict(list)
    for i, (it, v) in enumerate(zip(interactions, verdicts, strict=True)):
        if v.outcome == "fail" and it.answer and it.query and it.documents:
            chunks = tuple(sorted(d.id for d in it.documents))
            by_key[(chunks, " ".join(re.findall(r"\w+", it.answer.casefold())))].append(i)
    out: list[list[int]] = []
    for members in by_key.values():
        if len(members) < 2 or len({verdicts[i].root_cause for i in members}) < 2:
            continue
        vecs = embed([interactions[i].query or "" for i in members])
        sims = vecs @ vecs.T
        first = interactions[members[0]].query or ""
        group = [members[0]] + [
            m
            for j, m in enumerate(members[1:], 1)
            if float(sims[0, j]) >= SAME_QUESTION
            or same_wording(first, interactions[m].query or "")
        ]
        if len(group) >= 2:
            out.append(group)
    return out


def same_wording(a: str, b: str) -> bool:
    """The same words but for typos and a lead-in ("Do you know how do I protect myeslf from
    faud?"): the encoder reads typos as other words, the character ratio does not."""
    a, b = fold(without_preamble(a)), fold(without_preamble(b))
    return fuzz.ratio(a, b) >= SAME_WORDING


def best_results(group: Sequence[int], results: Sequence[Sequence[EvalResult]]) -> dict[str, int]:
    """Per pooled metric, the member whose result scored highest."""
    best: dict[str, tuple[float, int]] = {}
    for i in group:
        for r in results[i]:
            if r.evaluator in POOLED and r.score is not None:
                if r.evaluator not in best or r.score > best[r.evaluator][0]:
                    best[r.evaluator] = (r.score, i)
    return {m: i for m, (_, i) in best.items()}


def agree(
    interactions: Sequence[RagInteraction],
    verdicts: list[Verdict],
    results: Sequence[Sequence[EvalResult]],
    corpora: Sequence[CorpusAnswer | None],
    redecide: Redecide,
) -> int:
    """Decide each same-failure group's copies again on the group's best readings (module
    docstring); ``verdicts`` is updated in place. Returns how many verdicts changed."""
    changed = 0
    for group in same_failure_groups(interactions, verdicts):
        best = best_results(group, results)
        found = [(j, c) for j in group if (c := corpora[j]) is not None and c.hit is not None]
        hit = found[0][1] if found else None
        sources = {best[m] for m in best} | ({found[0][0]} if found else set())
        for i in group:
            pooled = [r for r in results[i] if r.evaluator not in best]
            pooled += [_result_of(results[best[m]], m) for m in best]
            v = redecide(i, pooled, hit or corpora[i])
            if v.outcome != "fail" or v.root_cause == verdicts[i].root_cause:
                continue
            donors = sorted({interactions[j].trace_id for j in sources if j != i})
            note = f" (read with its rewording in trace {', '.join(donors)})" if donors else ""
            verdicts[i] = Verdict(
                v.outcome,
                v.failed_metrics,
                v.root_cause,
                v.evidence + note,
                v.abstained,
                v.context_relevant,
                v.rescued,
                v.missed_chunk,
                v.uncertain,
            )
            changed += 1
    return changed


def _result_of(rs: Sequence[EvalResult], metric: str) -> EvalResult:
    return next(r for r in rs if r.evaluator == metric)


__all__ = ["SAME_QUESTION", "agree", "best_results", "same_failure_groups"]
