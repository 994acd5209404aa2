"""Pipeline scope of a trace: which spans belong to the main RAG pipeline, and where it starts."""

from __future__ import annotations

from ragsieve.collector.derive.trace.classify import (
    CONTEXT_ROLES,
    PIPELINE_ROLES,
    TraceTree,
    parent_of,
)
from ragsieve.collector.wire.spans import SpanRecord

MAX_PIPELINES = 5
AGENTIC_ROLES = frozenset({"AGENT", "TOOL"})


def units(tree: TraceTree) -> list[SpanRecord]:
    """Lowest spans whose subtree holds both a context stage and an LLM call."""
    leaves = {s.span_id for s in tree.llm_leaves()}
    flags: dict[str, set[str]] = {}
    for span in tree.spans:
        mark = (
            "ctx" if tree.role(span) in CONTEXT_ROLES else "llm" if span.span_id in leaves else None
        )
        if mark:
            for node in [span, *tree.ancestors(span)]:
                flags.setdefault(node.span_id, set()).add(mark)
    full = {sid for sid, f in flags.items() if f == {"ctx", "llm"}}
    return [
        s
        for s in tree.spans
        if s.span_id in full and not any(c.span_id in full for c in tree.descendants(s))
    ]


def subtree(tree: TraceTree, span: SpanRecord) -> set[str]:
    """Ids of ``span`` and everything below it."""
    return {span.span_id} | {d.span_id for d in tree.descendants(span)}


def pipeline_scope(tree: TraceTree) -> tuple[set[str], bool]:
    """Spans of the main pipeline, and whether the trace holds several independent ones.

    Independent pipelines are several true roots with an LLM call (a reused trace id), or
    more than ``MAX_PIPELINES`` retrieve+generate units outside any agent/tool (a batch).
    Orphans are fragments of one pipeline whose parents were lost, not pipelines.
    """
    roots = [t for t in tree.tops() if parent_of(t) is None or t.parent_is_remote]
    with_llm = [t for t in roots if any(tree.role(d) == "LLM" for d in [t, *tree.descendants(t)])]
    if len(with_llm) > 1:
        return subtree(tree, with_llm[0]), True
    found = [
        u
        for u in units(tree)
        if not any(tree.role(a) in AGENTIC_ROLES for a in [u, *tree.ancestors(u)])
    ]
    if len(found) <= MAX_PIPELINES:
        return {s.span_id for s in tree.spans}, False
    main = found[0]
    others = {u.span_id for u in found[1:]}
    cur = main
    for anc in tree.ancestors(main):
        below = {d.span_id for d in tree.descendants(anc)} | {anc.span_id}
        if below & others:
            break
        cur = anc
    return subtree(tree, cur), True


def pipeline_root(
    tree: TraceTree, scope: set[str], top: SpanRecord, anchor: SpanRecord | None
) -> SpanRecord:
    """The outermost in-scope pipeline-role span above ``anchor`` (else its highest in-scope
    ancestor, else ``top``)."""
    if anchor is None:
        return top
    chain = [anchor, *tree.ancestors(anchor)]
    roles = [s for s in chain if tree.role(s) in PIPELINE_ROLES and s.span_id in scope]
    return roles[-1] if roles else next((s for s in reversed(chain) if s.span_id in scope), top)
