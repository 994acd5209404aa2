"""One failure asked in other words: flagged traces of a run that are the same failure get one
root cause, decided on what all their readings show.

Two traces are the same failure when the retriever served them the same chunks, the system gave
the same answer, and their questions are the same but for typos and a lead-in ("How do I protect
myself from fraud?" and "Do you know how do I protect myeslf from faud?", whose cosine is 0.58;
"renew" / "cancel" are other questions, however near the encoder holds them). Turns of a
conversation are left out: "And on Sundays?" asks another thing than "And on Saturdays?". A
refusal is kept: one refusal answers many questions, but here the questions are one question.
Only their wording differs, and the judges read wording: a typo can hide the chunk that answers
from the context judge, or the missed chunk from the observed-corpus search, so one copy is
called ``retrieval`` and the other ``no_answer_expected`` (or, for a refusal, one
``abstained_wrongly`` and the other ``retrieval``). As a follow-up's readings do
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
from dataclasses import replace

from rapidfuzz.distance import Levenshtein

from ragsieve.evaluators.judges.offline.text.question import without_preamble
from ragsieve.evaluators.judges.offline.text.spelling import deletions, misspells
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, content_words, fold, known_word
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.verdicts.flagging import CorpusAnswer, Verdict

MAX_TYPO_EDITS = 2  # letters a misspelt word may differ by from the word it stands for
MIN_DROPPED_LEN = 4  # a shorter word is too often another word with a letter less ("an", "and")
POOLED = ("context_relevance", "answer_relevance")
MAX_LEAD_INS = 3  # lead-ins read off one after another ("Do you know" + "oh,")

Redecide = Callable[[int, list[EvalResult], CorpusAnswer | None], Verdict]


def same_failure_groups(
    interactions: Sequence[RagInteraction], verdicts: Sequence[Verdict]
) -> list[list[int]]:
    """Indices of failed traces that are one failure in other words: two or more, with root
    causes that disagree. Turns of a conversation are left out ("And on Sundays?" is another
    question than "And on Saturdays?")."""
    by_key: dict[tuple[tuple[str, ...], str], list[int]] = defaultdict(list)
    for i, (it, v) in enumerate(zip(interactions, verdicts, strict=True)):
        if v.outcome != "fail" or it.chat_history:
            continue
        if it.answer and it.query and it.documents:
            chunks = tuple(sorted(d.id for d in it.documents))
            by_key[(chunks, " ".join(re.findall(r"\w+", it.answer.casefold())))].append(i)
    out: list[list[int]] = []
    for members in by_key.values():
        left = list(members)
        while len(left) > 1:
            first, rest = left[0], left[1:]
            asked = interactions[first].query or ""
            group = [first] + [m for m in rest if same_wording(asked, interactions[m].query or "")]
            left = [m for m in rest if m not in group]
            if len(group) > 1 and len({verdicts[i].root_cause for i in group}) > 1:
                out.append(group)
    return out


def same_wording(a: str, b: str) -> bool:
    """The same question but for typos and a lead-in ("How do I protect myself from fraud?",
    "Do you know how do I protect myeslf from faud?"): the same content words in the same
    order, where two differ only when one is a misspelling of the other (not an English or
    Spanish word, two letters away at most), or, once per question, when a dropped letter made
    another word ("plates" / "pates", "plans" / "pans"; the traces already share their chunks
    and their answer). "renew" / "cancel", "dental" / "mental", "2023" / "2024" are other
    questions, however near the encoder holds them."""
    wa, wb = _asked_words(a), _asked_words(b)
    if len(wa) != len(wb) or not wa:
        return False
    others = [(x, y) for x, y in zip(wa, wb, strict=True) if x != y and not _misspelt_pair(x, y)]
    return len(others) <= 1 and all(_dropped_letter(*p) for p in others)


def _asked_words(question: str) -> list[str]:
    """Content words after every lead-in ("Can you tell me: yes, what if..." as "what if..."),
    a misspelt function word ("myeslf") left out as its word would be."""
    for _ in range(MAX_LEAD_INS):
        shorter = without_preamble(question)
        if shorter == question:
            break
        question = shorter
    words = content_words(fold(question))
    return [w for w in words if not misspells(w, STOPWORDS)]


def _misspelt_pair(x: str, y: str) -> bool:
    if not (x.isalpha() and y.isalpha()) or (known_word(x) and known_word(y)):
        return False
    return Levenshtein.distance(x, y) <= MAX_TYPO_EDITS


def _dropped_letter(x: str, y: str) -> bool:
    """Two English or Spanish words, one the other with a letter left out, both four letters or
    more ("plates" / "pates"; not "tier" / "tier2")."""
    short, long_ = sorted((x, y), key=len)
    return (
        len(short) >= MIN_DROPPED_LEN
        and short.isalpha()
        and long_.isalpha()
        and known_word(short)
        and known_word(long_)
        and short in deletions(long_)
    )


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
        found = [(j, c, h) for j in group if (c := corpora[j]) and (h := c.hit)]
        top = min(found, key=lambda f: (-f[2].score, f[2].chunk_id), default=None)
        hit = top[1] if top else None
        sources = {*best.values(), *([top[0]] if top else [])}
        for i in group:
            pooled = [r for r in results[i] if r.evaluator not in best]
            pooled += [_result_of(results[best[m]], m) for m in best]
            v = redecide(i, pooled, hit or corpora[i])
            if v.outcome != "fail" or v.root_cause == verdicts[i].root_cause:
                continue
            donors = sorted({interactions[j].trace_id for j in sources if j != i})
            note = f" (read with its rewording in trace {', '.join(donors)})" if donors else ""
            own = verdicts[i]
            verdicts[i] = replace(
                v,
                failed_metrics=own.failed_metrics,  # what this trace's own judges found
                evidence=v.evidence + note,
                abstained=own.abstained,
                missed_chunk=v.missed_chunk if v.root_cause == "retrieval" else own.missed_chunk,
                uncertain=own.uncertain,
            )
            changed += 1
    return changed


def _result_of(rs: Sequence[EvalResult], metric: str) -> EvalResult:
    return next(r for r in rs if r.evaluator == metric)


__all__ = ["agree", "best_results", "same_failure_groups", "same_wording"]
