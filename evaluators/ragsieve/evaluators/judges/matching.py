"""What a judge reads of a turn: its texts in matching form, the stored record untouched.

:func:`for_judging` gives :func:`~ragsieve.evaluators.judges.protocol.safe_evaluate` (so every
judge, in every path) the question, answer, chunks, rewrites and history with invisible format
characters removed, NFKC applied and look-alike letters folded
(:func:`ragsieve.evaluators.tools.lookalike.matching_text`): a question typed with a zero-width
space, Cyrillic letters or math-bold letters reads as the plain one. Case and everything else are
kept; the stored interaction, which people are shown, keeps the text as it was sent.
"""

from __future__ import annotations

from ragsieve.evaluators.records import RagInteraction
from ragsieve.evaluators.tools.lookalike import matching_text


def for_judging(it: RagInteraction) -> RagInteraction:
    """``it`` with its texts in matching form; ``it`` itself when they are plain ASCII."""
    texts = [it.query or "", it.answer or "", *it.retrieval_queries]
    texts += [d.content or "" for d in it.documents] + [m.content for m in it.chat_history]
    if all(t.isascii() for t in texts):
        return it
    f = matching_text
    docs = tuple(
        d if d.content is None else d.model_copy(update={"content": f(d.content)})
        for d in it.documents
    )
    return it.model_copy(
        update={
            "query": None if it.query is None else f(it.query),
            "answer": None if it.answer is None else f(it.answer),
            "retrieval_queries": tuple(map(f, it.retrieval_queries)),
            "documents": docs,
            "chat_history": tuple(
                m.model_copy(update={"content": f(m.content)}) for m in it.chat_history
            ),
        }
    )


__all__ = ["for_judging"]
