"""Root cause of a failing interaction, with the evidence that decided it.

The rule reads the judges' verdicts of one failing interaction and applies the first match.
A query is *short* when it has fewer than ``MIN_QUERY_WORDS`` words and no chat history to
resolve it; shortness alone never overrides what the context and faithfulness judges found.

1. The answer is an abstention (faithfulness label ``abstained``):
   - a chunk judged relevant reached the prompt → ``abstained_wrongly``;
   - otherwise the golden set says the question is answerable → ``retrieval``.
   (An abstention with no relevant context and no such evidence is a pass, not a failure.)
2. No chunk judged relevant reached the prompt:
   - the answer makes claims the context does not support (unfaithful) and the golden set says
     the question is answerable → ``both``;
   - the answer is unfaithful otherwise → ``no_answer_expected``: with nothing relevant in
     context the system should have abstained instead of answering;
   - the answer stays with the (irrelevant) context → ``retrieval``.
3. The answer is unfaithful (context relevant or unknown) → ``generation``.
4. A relevant chunk reached the prompt and the answer is faithful:
   - the answer is off the question → ``ambiguous_query`` for a short query (nothing else to
     blame: the question was underspecified), else ``generation``;
   - only the context precision failed → ``retrieval``.
5. Context relevance unknown (not judged or judge error), answer not unfaithful:
   - a short query → ``ambiguous_query``;
   - the answer is off the question → ``generation``, else ``retrieval``.

"Golden says" means the nearest golden query has cosine >= the near-duplicate threshold: a case
with relevant chunks makes the question ``answerable``, one without makes it ``no_answer``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ROOT_CAUSES = (
    "retrieval",
    "generation",
    "both",
    "no_answer_expected",
    "abstained_wrongly",
    "ambiguous_query",
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
    context_precision: float | None = None


@dataclass(frozen=True, slots=True)
class RootCause:
    """A root-cause label and a one-line reason."""

    label: str
    evidence: str


def query_words(query: str | None) -> int:
    """Number of words in the query."""
    return len(_WORD.findall(query or ""))


def assign(s: Signals) -> RootCause:
    """Apply the documented rule to a failing interaction."""
    n_words = query_words(s.query)
    short = n_words < MIN_QUERY_WORDS and not s.has_history
    vague = RootCause("ambiguous_query", f"query has {n_words} word(s) and no chat history")
    golden = {"answerable": "; golden set: answerable", "no_answer": "; golden set: no answer"}
    gnote = golden.get(s.expected or "", "")
    if s.abstained:
        if s.context_relevant:
            chunks = ", ".join(s.relevant_chunks[:3]) or "a chunk"
            return RootCause("abstained_wrongly", f"abstained although {chunks} was relevant")
        return RootCause("retrieval", "abstained with no relevant chunk in the prompt" + gnote)
    if s.context_relevant is False:
        none = f"none of {s.n_chunks} chunk(s) in the prompt was relevant"
        if s.faithful is False and s.expected == "answerable":
            return RootCause("both", f"{none} and the answer is unsupported{gnote}")
        if s.faithful is False:
            return RootCause(
                "no_answer_expected",
                f"{none}; the answer made unsupported claims instead of abstaining{gnote}",
            )
        return RootCause("retrieval", f"{none}; the answer stayed with that context")
    if s.context_relevant:
        chunks = ", ".join(s.relevant_chunks[:3]) or "a relevant chunk"
        if s.faithful is False:
            return RootCause("generation", f"{chunks} reached the prompt; the answer is unfaithful")
        if s.answer_relevant is False:
            if short:
                return vague
            return RootCause(
                "generation", f"{chunks} reached the prompt; the answer is off the question"
            )
        prec = "" if s.context_precision is None else f" ({s.context_precision:.2f})"
        return RootCause("retrieval", f"context precision below threshold{prec}")
    if s.faithful is False:
        return RootCause("generation", "answer is unfaithful; context relevance unknown")
    if short:
        return vague
    if s.answer_relevant is False:
        return RootCause("generation", "answer is off the question; context relevance unknown")
    return RootCause("retrieval", "only the retrieval metrics failed")


__all__ = ["MIN_QUERY_WORDS", "ROOT_CAUSES", "RootCause", "Signals", "assign", "query_words"]
