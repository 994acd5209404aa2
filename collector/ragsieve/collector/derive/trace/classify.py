"""Span roles (SPAN_SPEC §3.3) and the trace tree: dedup, parents, local root, LLM leaves."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragsieve.collector.derive.trace.attrs import as_str, has_prefix, mapping
from ragsieve.collector.derive.trace.lookup import PromptIndex, llm_leaves
from ragsieve.collector.wire.spans import SpanRecord

KNOWN_ROLES = frozenset(
    {
        "CHAIN",
        "RETRIEVER",
        "RERANKER",
        "LLM",
        "EMBEDDING",
        "TOOL",
        "AGENT",
        "PROMPT",
        "GUARDRAIL",
        "EVALUATOR",
        "UNKNOWN",
    }
)
CONTEXT_ROLES = frozenset({"RETRIEVER", "RERANKER"})
PIPELINE_ROLES = frozenset({"CHAIN", "AGENT"})

GENAI_OPERATIONS = {
    "chat": "LLM",
    "text_completion": "LLM",
    "generate_content": "LLM",
    "retrieval": "RETRIEVER",
    "embeddings": "EMBEDDING",
    "execute_tool": "TOOL",
    "invoke_agent": "AGENT",
    "create_agent": "AGENT",
    "invoke_workflow": "AGENT",
    "plan": "AGENT",
    # OpenLLMetry's own operation names (opentelemetry-semantic-conventions-ai).
    "vector_db_retrieve": "RETRIEVER",
    "execute_task": "CHAIN",
    "llm_request": "LLM",
}
_TRACELOOP = {"workflow": "CHAIN", "task": "CHAIN", "agent": "AGENT", "tool": "TOOL"}
_LANGFUSE = {
    "generation": "LLM",
    "span": "CHAIN",
    "chain": "CHAIN",
    "retriever": "RETRIEVER",
    "agent": "AGENT",
    "tool": "TOOL",
    "embedding": "EMBEDDING",
    "evaluator": "EVALUATOR",
    "guardrail": "GUARDRAIL",
}
_REQUEST_TYPE = {"chat": "LLM", "completion": "LLM", "embedding": "EMBEDDING", "rerank": "RERANKER"}


def _zero_id(value: Any) -> bool:
    return not isinstance(value, str) or not value.strip("0 ")


def declared_role(attrs: Mapping[str, Any]) -> str | None:
    """Role from ``openinference.span.kind`` or ``gen_ai.operation.name`` (rules 1-2)."""
    kind = as_str(attrs.get("openinference.span.kind"))
    if kind:
        upper = kind.strip().upper()
        if upper == "DECISION":
            return "LLM"
        return upper if upper in KNOWN_ROLES else "OTHER"
    op = as_str(attrs.get("gen_ai.operation.name"))
    if op:
        return GENAI_OPERATIONS.get(op.strip().lower(), "OTHER")
    return None


def inferred_role(attrs: Mapping[str, Any]) -> str | None:
    """Role from vendor kind attributes or attribute sniffing (rules 3-4)."""
    for key, table in (
        ("traceloop.span.kind", _TRACELOOP),
        ("langfuse.observation.type", _LANGFUSE),
        ("llm.request.type", _REQUEST_TYPE),
    ):
        value = as_str(attrs.get(key))
        if value and value.strip().lower() in table:
            return table[value.strip().lower()]
    if has_prefix(attrs, "reranker.output_documents."):
        return "RERANKER"
    if has_prefix(attrs, "retrieval.documents.") or "gen_ai.retrieval.documents" in attrs:
        return "RETRIEVER"
    if (
        has_prefix(attrs, "llm.input_messages.")
        or has_prefix(attrs, "llm.output_messages.")
        or "llm.model_name" in attrs
        or "gen_ai.input.messages" in attrs
        or "gen_ai.output.messages" in attrs
        or has_prefix(attrs, "gen_ai.prompt.")
        or has_prefix(attrs, "gen_ai.completion.")
        or ("gen_ai.system" in attrs and "gen_ai.request.model" in attrs)
    ):
        return "LLM"
    return None


def _is_template_only(attrs: Mapping[str, Any]) -> bool:
    return (
        has_prefix(attrs, "llm.prompt_template.")
        and not has_prefix(attrs, "llm.input_messages.")
        and not has_prefix(attrs, "llm.output_messages.")
        and "llm.model_name" not in attrs
        and "gen_ai.request.model" not in attrs
        and "gen_ai.input.messages" not in attrs
        and "output.value" not in attrs
    )


def _better(a: SpanRecord, b: SpanRecord) -> SpanRecord:
    """Pick the copy of a re-delivered span: later end, then more attributes."""
    ka = (a.end_ns or 0, len(mapping(a.attributes)))
    kb = (b.end_ns or 0, len(mapping(b.attributes)))
    return b if kb > ka else a


def dedup(spans: Iterable[SpanRecord]) -> list[SpanRecord]:
    """One copy per span id, ordered by start time then id (deterministic for any input order)."""
    best: dict[str, SpanRecord] = {}
    for span in spans:
        if not isinstance(span, SpanRecord) or not isinstance(span.span_id, str):
            continue
        prev = best.get(span.span_id)
        best[span.span_id] = span if prev is None else _better(prev, span)
    return sorted(best.values(), key=lambda s: (_int(s.start_ns), s.span_id))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parent_of(span: SpanRecord) -> str | None:
    """The parent span id, None for an empty or all-zero id."""
    return None if _zero_id(span.parent_span_id) else span.parent_span_id


def local_root(spans: Sequence[SpanRecord]) -> SpanRecord | None:
    """The span without a parent, else the top span whose parent is remote; None if neither.

    An orphan whose parent is simply missing (not flagged remote) is not a root: the real root may
    still arrive.
    """
    uniq = dedup(spans)
    roots = [s for s in uniq if parent_of(s) is None]
    if roots:
        return roots[0]
    ids = {s.span_id for s in uniq}
    remote = [s for s in uniq if s.parent_is_remote and parent_of(s) not in ids]
    return remote[0] if remote else None


@dataclass
class TraceTree:
    """Deduplicated spans with parent/child links and a role per span."""

    spans: list[SpanRecord]
    by_id: dict[str, SpanRecord] = field(default_factory=dict)
    children: dict[str, list[SpanRecord]] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    inferred: bool = False
    _prompts: PromptIndex | None = field(default=None, repr=False, compare=False)

    @classmethod
    def build(cls, spans: Sequence[SpanRecord]) -> TraceTree:
        """Deduplicate, link and classify."""
        tree = cls(dedup(spans))
        tree.by_id = {s.span_id: s for s in tree.spans}
        for span in tree.spans:
            parent = parent_of(span)
            if parent in tree.by_id and parent != span.span_id:
                tree.children.setdefault(parent, []).append(span)
        for span in tree.spans:
            attrs = mapping(span.attributes)
            role = declared_role(attrs)
            if role is None:
                role = inferred_role(attrs)
                if role is not None:
                    tree.inferred = True
            role = role or "NONE"
            if role == "LLM" and _is_template_only(attrs):
                role = "PROMPT"
            tree.roles[span.span_id] = role
        return tree

    def role(self, span: SpanRecord) -> str:
        """The span's role (upper case; NONE for infrastructure spans)."""
        return self.roles.get(span.span_id, "NONE")

    def parent(self, span: SpanRecord) -> SpanRecord | None:
        """The parent span when it is in the trace."""
        pid = parent_of(span)
        return self.by_id.get(pid) if pid and pid != span.span_id else None

    def ancestors(self, span: SpanRecord) -> list[SpanRecord]:
        """Parents from nearest to farthest (cycle-safe)."""
        out: list[SpanRecord] = []
        seen = {span.span_id}
        cur = self.parent(span)
        while cur is not None and cur.span_id not in seen:
            out.append(cur)
            seen.add(cur.span_id)
            cur = self.parent(cur)
        return out

    def descendants(self, span: SpanRecord) -> list[SpanRecord]:
        """All spans below ``span`` (cycle-safe)."""
        out: list[SpanRecord] = []
        seen = {span.span_id}
        stack = list(self.children.get(span.span_id, ()))
        while stack:
            cur = stack.pop()
            if cur.span_id in seen:
                continue
            seen.add(cur.span_id)
            out.append(cur)
            stack.extend(self.children.get(cur.span_id, ()))
        return out

    def tops(self) -> list[SpanRecord]:
        """Spans whose parent is absent from the trace (roots, remote children, orphans).

        A trace made only of a parent cycle (corrupt ids) still gets its earliest span as top.
        """
        tops = [s for s in self.spans if self.parent(s) is None]
        return tops or self.spans[:1]

    def root(self) -> SpanRecord | None:
        """The local root (see :func:`local_root`)."""
        roots = [s for s in self.spans if parent_of(s) is None]
        if roots:
            return roots[0]
        remote = [s for s in self.tops() if s.parent_is_remote]
        return remote[0] if remote else None

    def llm_leaves(self) -> list[SpanRecord]:
        """LLM spans with no LLM descendant: the real model calls (one walk up from each)."""
        up = {s.span_id: p.span_id if (p := self.parent(s)) else None for s in self.spans}
        return llm_leaves(self.spans, self.roles, up)

    def prompts_ended_by(self, t_ns: int, exclude: set[str]) -> Iterator[SpanRecord]:
        """PROMPT spans with a template that ended by ``t_ns``, latest first (indexed once)."""
        if self._prompts is None:
            self._prompts = PromptIndex(self.spans, self.roles)
        return self._prompts.ended_by(t_ns, exclude)
