"""Root cause of a failing interaction, with the evidence that decided it.

The rule reads the judges' verdicts of one failing interaction (after the failure policy made
them agree: a chunk backing a faithful, on-question answer counts as relevant) and applies the
first match. A query is *short* when it has fewer than ``MIN_QUERY_WORDS`` words and no chat
history to resolve it; shortness alone never overrides what the other judges found.

1. The answer is an abstention (faithfulness label ``abstained``):
   - a chunk judged relevant (for an abstention, or nearly relevant and close in meaning)
     reached the prompt → ``abstained_wrongly``;
   - otherwise a chunk of the observed corpus answers the question, or the golden set says it
     is answerable → ``retrieval`` (the evidence names the missed chunk).
   (An abstention with no relevant context and no such evidence is a pass, not a failure.)
2. No chunk judged relevant reached the prompt:
   - a chunk of the observed corpus answers the question, or the golden set says it is
     answerable → ``retrieval``: the retriever missed it (the evidence names it, with its score
     and how many traces retrieved it before);
   - otherwise → ``no_answer_expected``: nothing the system has seen answers this ("no chunk
     seen in N answers this"), so it should have abstained instead of answering.
3. The answer is unfaithful (context relevant or unknown) → ``generation``, unless what it
   says holds in a chunk of the observed corpus that answers the question clearly better than
   every chunk in the prompt → ``retrieval``: the answer came from knowledge the prompt lacked,
   and the chunk that holds it is the one the retriever missed.
4. A relevant chunk reached the prompt and the answer is faithful, yet off the question →
   ``ambiguous_query`` for a short query (nothing else to blame), else ``generation``.
5. Context relevance unknown (not judged or judge error), answer not unfaithful:
   - a short query → ``ambiguous_query``;
   - the answer is off the question → ``generation``, else ``retrieval``.

"Golden says" means the nearest golden query has cosine >= the near-duplicate threshold: a case
with relevant chunks makes the question ``answerable``, one without makes it ``no_answer``.
``both`` (retrieval missed and the answer is unsupported) is kept for reviewers' corrections;
the rule does not assign it, since an unsupported answer without relevant context is expected.

The rule's cause is one piece of evidence (:mod:`ledger`): what else the trace and the store hold
(where the answer's words sit, a chunk that answers as well though the retriever missed it, one
the prompt dropped, the golden set's relevant chunks, a reviewer's correction) is weighed with
it, and when the causes do not decide, the root cause is ``undetermined`` with the two competing
lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ragsieve.jobs.verdicts.ledger import DEFAULT_WEIGHTS, UNDETERMINED, Piece, combine

ROOT_CAUSES = (
    "retrieval",
    "generation",
    "both",
    "no_answer_expected",
    "abstained_wrongly",
    "ambiguous_query",
    UNDETERMINED,
)
MIN_QUERY_WORDS = 3
Expectation = Literal["answerable", "no_answer"] | None
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Signals:
    """What the judges said about one interaction, reduced to what the rule needs.

    ``None`` means unknown (not judged, skipped or judge error).
    """

    query: str | None
    has_history: bool = False
    abstained: bool = False
    context_relevant: bool | None = None
    relevant_chunks: tuple[str, ...] = ()
    n_chunks: int = 0
    faithful: bool | None = None
    answer_relevant: bool | None = None
    expected: Expectation = None
    missed_chunk: str | None = None  # evidence line naming a corpus chunk that answers
    corpus_searched: int | None = None  # chunks of the observed corpus searched (None: not asked)
    near_only: bool = False  # an abstention's relevant chunks only nearly reached the threshold
    missed_holds_answer: bool = False  # the missed chunk holds what the unfaithful answer says
    pieces: tuple[Piece, ...] = ()  # evidence beyond the judges' (:mod:`ledger`)
    weights: Mapping[str, float] | None = None  # how the pieces weigh (None: the defaults)


@dataclass(frozen=True, slots=True)
class RootCause:
    """A root-cause label and a one-line reason."""

    label: str
    evidence: str
    competing: tuple[str, ...] = ()  # undetermined: the two lines that argue for each cause
    pieces: tuple[Piece, ...] = ()  # every piece weighed, the rule's first


def query_words(query: str | None) -> int:
    """Number of words in the query."""
    return len(_WORD.findall(query or ""))


def assign(s: Signals) -> RootCause:
    """The documented rule's cause, weighed with the other evidence (``s.pieces``)."""
    base = rule(s)
    if not s.pieces:
        return RootCause(base.label, base.evidence, (), (Piece("rule", base.label, base.evidence),))
    got = combine(
        [Piece("rule", base.label, base.evidence), *s.pieces], s.weights or DEFAULT_WEIGHTS
    )
    return RootCause(got.label, got.evidence, got.competing, got.pieces)


def rule(s: Signals) -> RootCause:
    """Apply the documented rule to a failing interaction."""
    n_words = query_words(s.query)
    short = n_words < MIN_QUERY_WORDS and not s.has_history
    vague = RootCause("ambiguous_query", f"query has {n_words} word(s) and no chat history")
    golden = {"answerable": "; golden set: answerable", "no_answer": "; golden set: no answer"}
    gnote = golden.get(s.expected or "", "")
    could = s.missed_chunk is not None or s.expected == "answerable"
    missed = s.missed_chunk or "the golden set says it is answerable"
    if s.abstained:
        if s.context_relevant:
            chunks = ", ".join(s.relevant_chunks[:3]) or "a chunk"
            note = " (nearly: close to the question in meaning)" if s.near_only else ""
            return RootCause("abstained_wrongly", f"abstained although {chunks} was relevant{note}")
        return RootCause("retrieval", f"abstained with no relevant chunk in the prompt; {missed}")
    if s.context_relevant is False:
        none = f"none of {s.n_chunks} chunk(s) in the prompt was relevant"
        if could:
            return RootCause("retrieval", f"{none}; {missed}")
        seen = (
            f"no chunk seen in {s.corpus_searched} answers this"
            if s.corpus_searched is not None
            else "nothing shows the question was answerable"
        )
        what = "made unsupported claims" if s.faithful is False else "answered"
        return RootCause(
            "no_answer_expected", f"{none}; {seen}; the system {what} instead of abstaining{gnote}"
        )
    if s.context_relevant:
        chunks = ", ".join(s.relevant_chunks[:3]) or "a relevant chunk"
        if s.faithful is False and s.missed_chunk is not None and s.missed_holds_answer:
            return RootCause(
                "retrieval",
                f"{chunks} reached the prompt, but what the answer says is not there; {missed}",
            )
        if s.faithful is False:
            return RootCause("generation", f"{chunks} reached the prompt; the answer is unfaithful")
        if s.answer_relevant is False and short:
            return vague
        return RootCause(
            "generation", f"{chunks} reached the prompt; the answer is off the question"
        )
    if s.faithful is False:
        return RootCause("generation", "answer is unfaithful; context relevance unknown")
    if short:
        return vague
    if s.answer_relevant is False:
        return RootCause("generation", "answer is off the question; context relevance unknown")
    return RootCause("retrieval", "only the retrieval metrics failed")


__all__ = [
    "MIN_QUERY_WORDS",
    "ROOT_CAUSES",
    "UNDETERMINED",
    "RootCause",
    "Signals",
    "assign",
    "query_words",
    "rule",
]
