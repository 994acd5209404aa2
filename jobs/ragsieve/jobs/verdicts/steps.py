"""Which retrieval step fed the answer, for the evidence of a trace that retrieved more than once.

Query rewriting, multi-hop retrieval and tools that search each add a retriever (or reranker)
span to one trace. The record keeps every step in ``stages`` (in the order they ended) and each
chunk's ``span_id``; the chunks judged are the ones that reached the final prompt (``context``).
:func:`step_note` names the steps those chunks came from, so a failure's evidence says which
step to look at: ``context from step 2 of 2 "search" (query "Since when has Paris ...")``.
"""

from __future__ import annotations

from ragsieve.evaluators.records import RagInteraction

QUERY_CHARS = 80


def step_note(rec: RagInteraction) -> str:
    """``"; context from step i of n ..."`` for a trace with several retrieval steps, else ``""``.

    Rerankers are not steps of their own: a reranked chunk counts for the retrieval step that
    found it (same chunk id).
    """
    steps = [st for st in rec.stages if st.stage != "rerank"]
    if len(steps) < 2:
        return ""
    spans = {d.span_id for d in rec.context}
    ids = {d.id for d in rec.context}
    named = []
    for i, st in enumerate(steps, start=1):
        if st.span_id in spans or any(d.id in ids for d in st.documents):
            query = f' (query "{st.query[:QUERY_CHARS]}")' if st.query else ""
            named.append(f'{i} "{st.name}"{query}')
    if not named:
        return f"; no chunk of the {len(steps)} retrieval steps reached the prompt"
    word = "step" if len(named) == 1 else "steps"
    return f"; context from {word} {', '.join(named)} of {len(steps)}"


__all__ = ["step_note"]
