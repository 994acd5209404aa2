"""Retrieved chunks per stage, the stage that fed the prompt, and the prompt containment check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ragsieve.collector.derive.fields.extract import QUESTION_KEYS, value_text
from ragsieve.collector.derive.trace.attrs import (
    KNOWN_LENGTH_LIMITS,
    MAX_TEXT_CHARS,
    as_float,
    as_str,
    cap,
    get_str,
    has_prefix,
    is_redacted,
    mapping,
    normalize_ws,
    parse_object,
    unflatten,
)
from ragsieve.collector.derive.trace.classify import TraceTree
from ragsieve.collector.derive.trace.genai import retrieval_documents
from ragsieve.collector.derive.trace.taskio import (
    TASK_INPUT_KEYS,
    first_key,
    serialized_document_ids,
    task_documents,
)
from ragsieve.collector.wire.spans import SpanRecord
from ragsieve.evaluators.records import RetrievalStage, RetrievedDocument, Stage, content_chunk_id

ID_KEYS = ("chunk_id", "id", "node_id", "_id", "uuid", "pk", "vector_id")
DOC_KEYS = ("source", "file_path", "url", "ref_doc_id", "doc_id", "title")
RERANK_SCORE_KEYS = ("relevance_score", "rerank_score")
SCORE_KEYS = ("score", "_score", "similarity", "similarity_score", "distance")
NEEDLE_CHARS = 200
IdSource = Literal["native", "metadata", "content_hash", "position"]


@dataclass
class StageOutput:
    """One retriever/reranker span's ordered output plus bookkeeping for the flags."""

    span: SpanRecord
    kind: Stage
    outer: bool
    query: str | None
    docs: list[RetrievedDocument]
    inputs: list[RetrievedDocument] = field(default_factory=list)
    redacted: bool = False
    truncated: bool = False

    def record(self) -> RetrievalStage:
        """The public, frozen view of this stage."""
        return RetrievalStage(
            stage=self.kind,
            span_id=self.span.span_id,
            name=self.span.name,
            query=self.query,
            documents=tuple(self.docs),
        )


def _metadata(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return {str(k): v for k, v in raw.items()}
    parsed = parse_object(raw)
    if parsed is not None:
        return parsed
    return {"_raw": cap(str(raw), 2000)}


def make_doc(
    fields: Mapping[str, Any],
    rank: int,
    span: SpanRecord,
    stage: Stage,
    retriever: str | None,
    rerank_stage: bool,
) -> tuple[RetrievedDocument, bool, bool]:
    """One chunk from ``{id, content, score, metadata}``; returns (doc, redacted, truncated)."""
    meta = _metadata(fields.get("metadata"))
    raw_content = fields.get("content")
    content = raw_content if isinstance(raw_content, str) and raw_content.strip() else None
    redacted = is_redacted(content)
    if redacted:
        content = None
    truncated = content is not None and (
        len(content) in KNOWN_LENGTH_LIMITS or len(content) > MAX_TEXT_CHARS
    )
    native = fields.get("id")
    chunk_id = as_str(native) if not is_redacted(native) else None
    id_source: IdSource = "native"
    if chunk_id is None:
        chunk_id = next((as_str(meta.get(k)) for k in ID_KEYS if as_str(meta.get(k))), None)
        id_source = "metadata"
    if chunk_id is None and content is not None:
        chunk_id, id_source = content_chunk_id(content), "content_hash"
    if chunk_id is None:
        chunk_id, id_source = f"pos:{span.span_id}:{rank}", "position"
    score = as_float(fields.get("score"))
    if score is None:
        keys = RERANK_SCORE_KEYS + SCORE_KEYS
        score = next(
            (as_float(meta.get(k)) for k in keys if as_float(meta.get(k)) is not None), None
        )
    doc = RetrievedDocument(
        id=chunk_id,
        id_source=id_source,
        content=cap(content),
        score=score,
        rank=rank,
        stage=stage,
        metadata=meta,
        span_id=span.span_id,
        retriever_name=retriever,
        document_key=next((as_str(meta.get(k)) for k in DOC_KEYS if as_str(meta.get(k))), None),
        rerank_score=score if rerank_stage else None,
        retrieval_score=None if rerank_stage else score,
        possibly_truncated=truncated,
    )
    return doc, redacted, truncated


def _oi_docs(
    attrs: Mapping[str, Any],
    prefix: str,
    span: SpanRecord,
    stage: Stage,
    retriever: str | None,
    rerank: bool,
) -> tuple[list[RetrievedDocument], bool, bool]:
    docs, redacted, truncated, seen = [], False, False, set()
    items = unflatten(attrs, prefix)
    if items and [i for i, _ in items] != list(range(len(items))):
        truncated = True  # gaps: evicted or dropped list elements
    for rank, item in items:
        fields = {k: item.get("document." + k) for k in ("id", "content", "score", "metadata")}
        doc, red, trunc = make_doc(fields, rank, span, stage, retriever, rerank)
        redacted, truncated = redacted or red, truncated or trunc
        if doc.id not in seen:
            seen.add(doc.id)
            docs.append(doc)
    return docs, redacted, truncated


def _query(attrs: Mapping[str, Any], key: str) -> str | None:
    value = get_str(attrs, key)
    return None if value is None or is_redacted(value) else cap(value_text(value, QUESTION_KEYS))


def _retriever_name(span: SpanRecord) -> str:
    attrs = mapping(span.attributes)
    meta = parse_object(attrs.get("metadata")) or {}
    return (
        get_str(attrs, "gen_ai.data_source.id")
        or as_str(meta.get("ls_retriever_name"))
        or span.name
    )


def build_stages(tree: TraceTree, scope: set[str]) -> list[StageOutput]:
    """Every retriever/reranker stage inside ``scope``, ordered by end time."""
    stages: list[StageOutput] = []
    for span in tree.spans:
        role = tree.role(span)
        if span.span_id not in scope or role not in {"RETRIEVER", "RERANKER"}:
            continue
        attrs = mapping(span.attributes)
        name = _retriever_name(span)
        if role == "RERANKER":
            docs, red, trunc = _oi_docs(
                attrs, "reranker.output_documents", span, "rerank", name, True
            )
            inputs, red2, _ = _oi_docs(
                attrs, "reranker.input_documents", span, "retrieval", name, False
            )
            query = _query(attrs, "reranker.query") or _query(attrs, "input.value")
            stages.append(
                StageOutput(span, "rerank", True, query, docs, inputs, red or red2, trunc)
            )
            continue
        outer = not any(tree.role(a) == "RETRIEVER" for a in tree.ancestors(span))
        if (task := _task_stage(tree, span, outer, name)) is not None:
            stages.append(task)
            continue
        if "gen_ai.retrieval.documents" in attrs or (
            get_str(attrs, "gen_ai.operation.name") == "retrieval"
            and not any(k.startswith("retrieval.documents.") for k in attrs)
        ):
            docs, red, trunc = [], False, False
            for rank, fields in retrieval_documents(attrs.get("gen_ai.retrieval.documents")):
                doc, r, t = make_doc(fields, rank, span, "genai_retrieval", name, False)
                red, trunc = red or r, trunc or t
                docs.append(doc)
            query = _query(attrs, "gen_ai.retrieval.query.text")
            stages.append(StageOutput(span, "genai_retrieval", outer, query, docs, [], red, trunc))
            continue
        # A retriever that wraps retrievers and reports rerank scores is a compression reranker.
        wraps = any(tree.role(d) == "RETRIEVER" for d in tree.descendants(span))
        probe = unflatten(attrs, "retrieval.documents")
        rerank = wraps and any(
            k in _metadata(item.get("document.metadata"))
            for _, item in probe
            for k in RERANK_SCORE_KEYS
        )
        kind: Stage = "rerank" if rerank else "retrieval"
        docs, red, trunc = _oi_docs(attrs, "retrieval.documents", span, kind, name, rerank)
        query = _query(attrs, "input.value")
        stages.append(StageOutput(span, kind, outer, query, docs, [], red, trunc))
    stages.sort(key=lambda s: (s.span.end_ns or s.span.start_ns, s.span.start_ns, s.span.span_id))
    return stages


def _task_stage(tree: TraceTree, span: SpanRecord, outer: bool, name: str) -> StageOutput | None:
    """A retriever whose documents are its task output (OpenLLMetry, Langfuse), else None."""
    attrs = mapping(span.attributes)
    if "gen_ai.retrieval.documents" in attrs or has_prefix(attrs, "retrieval.documents."):
        return None
    found = task_documents(attrs)
    if found is None:
        return None
    ids: dict[str, str] | None = None
    docs, red, trunc = [], False, False
    for rank, fields in found:
        content = fields.get("content")
        if fields.get("id") is None and isinstance(content, str) and content.strip():
            ids = serialized_document_ids(tree.spans) if ids is None else ids
            fields = {**fields, "id": ids.get(content_chunk_id(content))}
        doc, r, t = make_doc(fields, rank, span, "retrieval", name, False)
        red, trunc = red or r, trunc or t
        docs.append(doc)
    query = _query(attrs, first_key(attrs, TASK_INPUT_KEYS) or TASK_INPUT_KEYS[0])
    return StageOutput(span, "retrieval", outer, query, docs, [], red, trunc)


def join_scores(stages: list[StageOutput]) -> None:
    """Fill ``retrieval_score`` / ``rerank_score`` across stages by chunk id, then content hash."""
    ret: dict[str, float] = {}
    rer: dict[str, float] = {}
    for st in stages:
        for docs, table in ((st.docs, rer if st.kind == "rerank" else ret), (st.inputs, ret)):
            for doc in docs:
                _first_score(table, doc)
    # A chunk known only by its content hash takes the native id another stage reported for it.
    # (Only across spans: equal texts inside one list are different chunks.)
    named: dict[str, list[tuple[str, str, str | None]]] = {}
    for st in stages:
        for doc in list(st.docs) + list(st.inputs):
            if doc.content and doc.id_source in ("native", "metadata"):
                named.setdefault(content_chunk_id(doc.content), []).append(
                    (doc.id, doc.id_source, doc.span_id)
                )
    for st in stages:
        for i, doc in enumerate(st.docs):
            keys = _keys(doc)
            other = next((n for n in named.get(doc.id, ()) if n[2] != doc.span_id), None)
            if doc.id_source == "content_hash" and other is not None:
                doc = doc.model_copy(update={"id": other[0], "id_source": other[1]})
            rs = (
                doc.retrieval_score
                if doc.retrieval_score is not None
                else next((ret[k] for k in keys if k in ret), None)
            )
            ks = (
                doc.rerank_score
                if doc.rerank_score is not None
                else next((rer[k] for k in keys if k in rer), None)
            )
            st.docs[i] = doc.model_copy(update={"retrieval_score": rs, "rerank_score": ks})


def _first_score(table: dict[str, float], doc: RetrievedDocument) -> None:
    """Remember ``doc``'s score under each of its keys, unless one came first."""
    if doc.score is not None:
        for key in _keys(doc):
            table.setdefault(key, doc.score)


def _keys(doc: RetrievedDocument) -> list[str]:
    keys = [doc.id]
    if doc.content:
        keys.append(content_chunk_id(doc.content))
    return keys


def select_context(
    stages: list[StageOutput], gen: SpanRecord | None
) -> tuple[list[StageOutput], str]:
    """The stages whose output fed the generation (SPAN_SPEC §3.4.4 rules 1-2)."""
    if gen is not None:
        before = [s for s in stages if s.span.end_ns and s.span.end_ns <= gen.start_ns]
    else:
        before = list(stages)
    reranks = [s for s in before if s.kind == "rerank" and s.outer]
    if reranks:
        last = reranks[-1]
        return [s for s in reranks if s.span.end_ns >= last.span.start_ns], "reranker_output"
    rets = [s for s in before if s.outer and s.kind in {"retrieval", "genai_retrieval"}]
    if rets:
        genai = all(s.kind == "genai_retrieval" for s in rets)
        return rets, "genai_retrieval" if genai else "retriever_output"
    return [], "none"


def needle(content: str) -> str:
    """The normalized prefix of a chunk that the containment check looks for."""
    return normalize_ws(content)[:NEEDLE_CHARS]


def in_haystack(doc: RetrievedDocument, haystack: str | None) -> bool | None:
    """True/False containment of the chunk in the normalized prompt; None when unknowable."""
    if haystack is None or not doc.content:
        return None
    probe = needle(doc.content)
    return bool(probe) and probe in haystack
