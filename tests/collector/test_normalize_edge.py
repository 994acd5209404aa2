"""Interaction assembly on the awkward traces of SPAN_SPEC §3.6: gaps, duplicates, lost roots."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import tracefixtures as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsieve.collector.derive.normalize import derive, local_root
from ragsieve.collector.wire.spans import SpanRecord
from ragsieve.evaluators.records import Feedback, content_chunk_id
from ragsieve.evaluators.tools.limits import MAX_CHUNK_CHARS


def test_no_spans_gives_none():
    assert derive([]) is None
    assert local_root([]) is None


def test_order_and_duplicates_do_not_change_the_record():
    spans = tf.llamaindex_rerank()
    base = derive(spans)
    shuffled = list(spans) + tf.early_copies(spans)
    random.Random(7).shuffle(shuffled)
    again = derive(shuffled)
    assert base is not None and again is not None
    assert again.model_dump() == base.model_dump()
    assert again.span_count == len(spans)


def test_missing_root_is_incomplete_but_keeps_content():
    spans = tf.without_root(tf.langchain_retrievalqa())
    assert local_root(spans) is None  # the root may still arrive: not settled
    rec = derive(spans)
    assert rec is not None
    assert (rec.completeness, rec.status) == ("no_root", "incomplete")
    assert rec.span_id == "0000000100000002"  # highest unparented span (earliest start)
    assert (rec.latency_ms, rec.latency_is_estimate, rec.ended_at) == (2385.0, True, None)
    # StuffDocumentsChain is now the top-most chain: its JSON input still names the question
    assert (rec.query, rec.query_source) == (tf.QUESTION, "root_input")
    assert rec.answer == tf.ANSWER
    assert len(rec.documents) == 4


def test_local_root_rules():
    spans = tf.langchain_retrievalqa()
    assert local_root(list(reversed(spans))) == spans[0]
    remote = tf.remote_parent_trace()
    assert local_root(remote) == remote[0]
    zero_parent = [
        SpanRecord(trace_id="ab" * 16, span_id="cd" * 8, parent_span_id="0" * 16, name="root")
    ]
    assert local_root(zero_parent) == zero_parent[0]


def test_remote_parent_trace_is_complete():
    rec = derive(tf.remote_parent_trace())
    assert rec is not None
    assert (rec.completeness, rec.status, rec.span_id) == ("complete", "ok", "0000000a00000001")
    assert rec.ended_at == datetime(2025, 11, 29, 7, 6, 40, 800000, tzinfo=UTC)


def test_redacted_inputs():
    rec = derive(tf.redacted(tf.langchain_retrievalqa()))
    assert rec is not None
    assert rec.content_redacted is True
    assert (rec.query, rec.query_source, rec.retrieval_queries) == (None, "none", ())
    assert rec.answer == tf.ANSWER  # outputs were not hidden
    # documents are never hidden, but with the prompt hidden containment is unknowable
    assert [d.in_prompt for d in rec.documents] == [None] * 4
    assert all(m.content != "__REDACTED__" for m in rec.prompt.messages)
    assert rec.prompt.template_variables is None


QA = [(tf.QUESTION, tf.ANSWER, tf.CHUNKS[0])] + [
    (f"Question {k}?", f"Answer {k}.", tf.CHUNKS[k % 5]) for k in range(1, 7)
]


def _qa_pipeline(
    b: tf.TraceBuilder, parent, t: float, q: str, a: str, chunk: dict, wrapper: str = "RetrievalQA"
):
    p = b.span(wrapper, parent, t, t + 1500, "CHAIN", {"input.value": q, "output.value": a})
    b.span(
        "retriever",
        p,
        t + 1,
        t + 50,
        "RETRIEVER",
        {"input.value": q, **tf.doc_attrs("retrieval.documents", [chunk])},
    )
    b.span(
        "ChatOpenAI",
        p,
        t + 51,
        t + 1400,
        "LLM",
        {
            "llm.model_name": "gpt-4o-mini",
            **tf.msg_attrs("llm.input_messages", [("user", f"{chunk['content']}\n\n{q}")]),
            **tf.msg_attrs("llm.output_messages", [("assistant", a)]),
        },
    )
    return p


def test_reused_trace_id_is_multi_pipeline():
    b = tf.TraceBuilder(11)
    first = _qa_pipeline(b, None, 0, *QA[0])
    _qa_pipeline(b, None, 2000, *QA[1])  # a second root: the client reused the trace id
    rec = derive(b.spans)
    assert rec is not None
    assert (rec.multi_pipeline, rec.span_id) == (True, first.span_id)
    assert (rec.query, rec.answer) == (tf.QUESTION, tf.ANSWER)
    assert [d.id for d in rec.documents] == ["node-7f3a"]
    assert (rec.llm_call_count, rec.generation_span_id) == (1, "0000000b00000003")


def test_batch_job_is_multi_pipeline_derived_from_the_first():
    b = tf.TraceBuilder(16)
    batch = b.span("batch_eval", None, 0, 20_000, "CHAIN", {"input.value": "7 questions"})
    for k, qa in enumerate(QA):
        _qa_pipeline(b, batch, 100 + k * 2000, *qa)
    rec = derive(b.spans)
    assert rec is not None
    assert (rec.multi_pipeline, rec.span_id) == (True, batch.span_id)
    assert (rec.query, rec.answer, rec.llm_call_count) == (tf.QUESTION, tf.ANSWER, 1)
    assert [d.id for d in rec.documents] == ["node-7f3a"]


def test_agent_calling_query_engine_tools_is_one_pipeline():
    b = tf.TraceBuilder(17, scope="openinference.instrumentation.llama_index")
    final = "Refunds: 30 days in full, then pro rata; invoices come by email."
    agent = b.span(
        "ReActAgent.chat",
        None,
        0,
        9000,
        "AGENT",
        {"input.value": "refund window and invoices?", "output.value": final},
    )
    for k in range(2):
        tool = b.span("QueryEngineTool.call", agent, 100 + k * 3000, 3000 + k * 3000, "TOOL", {})
        _qa_pipeline(b, tool, 101 + k * 3000, *QA[k * 3], wrapper="RetrieverQueryEngine.query")
    b.span(
        "OpenAI.chat",
        agent,
        6500,
        8900,
        "LLM",
        {
            "llm.model_name": "gpt-4o",
            **tf.msg_attrs("llm.input_messages", [("user", "Observation: ...")]),
            **tf.msg_attrs("llm.output_messages", [("assistant", final)]),
        },
    )
    rec = derive(b.spans)
    assert rec is not None
    assert rec.multi_pipeline is False
    assert (rec.query, rec.answer, rec.model) == ("refund window and invoices?", final, "gpt-4o")
    assert (rec.generation_span_id, rec.llm_call_count) == (b.spans[-1].span_id, 3)
    # both tools' retrievals ended before the final call; its prompt holds neither chunk
    assert [(d.id, d.in_prompt) for d in rec.documents] == [
        ("node-7f3a", False),
        ("node-91de", False),
    ]


def test_query_rewrite_and_post_hoc_critique_are_auxiliary_calls():
    b = tf.TraceBuilder(12)
    raw, rewritten = "and for annual ones?", "refund window for annual plans"
    root = b.span(
        "ConversationalRetrievalChain",
        None,
        0,
        4000,
        "CHAIN",
        {
            "input.value": json.dumps({"question": raw, "chat_history": [["hi", "hello"]]}),
            "output.value": tf.ANSWER,
        },
    )
    b.span(
        "condense",
        root,
        1,
        400,
        "LLM",
        {
            "llm.model_name": "gpt-4o-mini",
            "llm.token_count.prompt": 50,
            "llm.token_count.completion": 8,
            **tf.msg_attrs("llm.input_messages", [("user", f"Rephrase: {raw}")]),
            **tf.msg_attrs("llm.output_messages", [("assistant", rewritten)]),
        },
    )
    b.span(
        "retriever",
        root,
        401,
        450,
        "RETRIEVER",
        {"input.value": rewritten, **tf.doc_attrs("retrieval.documents", tf.CHUNKS[:2])},
    )
    b.span(
        "answer",
        root,
        451,
        3000,
        "LLM",
        {
            "llm.model_name": "gpt-4o",
            "llm.token_count.prompt": 300,
            "llm.token_count.completion": 40,
            **tf.msg_attrs("llm.input_messages", [("user", tf.stuffed_prompt(tf.CHUNKS[:2], raw))]),
            **tf.msg_attrs("llm.output_messages", [("assistant", tf.ANSWER)]),
        },
    )
    b.span(
        "critique",
        root,
        3001,
        3990,
        "LLM",
        {  # reads the same chunks, ends last
            "llm.model_name": "gpt-4o-mini",
            **tf.msg_attrs(
                "llm.input_messages",
                [("user", tf.stuffed_prompt(tf.CHUNKS[:2], raw) + "\nIs the answer grounded?")],
            ),
            **tf.msg_attrs("llm.output_messages", [("assistant", "grounded: yes")]),
        },
    )
    rec = derive(b.spans)
    assert rec is not None
    assert (rec.query, rec.retrieval_queries) == (raw, (rewritten,))
    assert (rec.generation_span_id, rec.model, rec.llm_call_count) == (
        "0000000c00000004",
        "gpt-4o",
        3,
    )
    assert (rec.tokens.prompt, rec.tokens.completion) == (300, 40)


def test_weird_attribute_values_degrade_instead_of_raising():
    b = tf.TraceBuilder(13, scope="hand")
    huge = "x" * 10_000_000
    root = b.span(
        "rag",
        None,
        0,
        100,
        "chain",
        {  # lower-case kind is accepted
            "input.value": "{broken json",
            "output.value": 42,
            "metadata": "not json",
            "tag.tags": "not-a-list",
            "session.id": ["a", "b"],
        },
        events=[{"name": 7}, {"garbage": True}],
    )
    attrs = {
        "retrieval.documents.0.document.content": tf.CHUNKS[0]["content"],
        "retrieval.documents.0.document.score": "0.5",
        "retrieval.documents.0.document.metadata": "{'source': 'a.md', 'chunk_id': 'c-1'}",
        "retrieval.documents.1.document.content": 5,
        "retrieval.documents.1.document.score": "abc",
        "retrieval.documents.1.document.metadata": "{not: valid",
        "retrieval.documents.10.document.content": huge,
        "retrieval.documents.2.document.id": True,
        "retrieval.documents.2.document.content": "x" * 4096,
    }
    b.span("retrieve", root, 1, 10, "RETRIEVER", attrs)
    b.span(
        "generate",
        root,
        11,
        99,
        "LLM",
        {
            "llm.model_name": 3.5,
            "llm.token_count.prompt": "12",
            "llm.token_count.completion": -1.5,
            "llm.input_messages.0.message.content": None,
            "llm.output_messages.x.message.content": "?",
        },
    )
    rec = derive(b.spans)
    assert rec is not None
    assert "ragsieve.derive_error" not in rec.attributes
    assert (rec.query, rec.query_source) == ("{broken json", "root_input")
    assert rec.answer is None  # 42 is not text
    assert [(d.rank, d.id, d.id_source, d.score) for d in rec.documents] == [
        (0, "c-1", "metadata", 0.5),
        (1, "pos:0000000d00000002:1", "position", None),
        (2, content_chunk_id("x" * 4096), "content_hash", None),
        (10, content_chunk_id(huge), "content_hash", None),
    ]
    assert rec.documents[1].metadata == {"_raw": "{not: valid"}
    assert rec.documents[2].possibly_truncated is True  # exactly a common length limit
    assert len(rec.documents[3].content or "") == MAX_CHUNK_CHARS  # capped, flagged
    assert rec.documents[3].possibly_truncated is True
    assert rec.possibly_truncated is True  # also: index gap 2 -> 10
    assert (rec.model, rec.tokens.prompt, rec.tokens.completion) == ("3.5", 12, None)
    assert (rec.session_id, rec.tags, rec.metadata) == (None, (), {})


def test_feedback_latest_human_signal_wins():
    spans = tf.langchain_retrievalqa()
    trace_id = spans[0].trace_id
    up = Feedback(
        trace_id=trace_id, label="thumbs_up", created_at=datetime(2025, 11, 29, 8, tzinfo=UTC)
    )
    down = Feedback(trace_id=trace_id, score=0, created_at=datetime(2025, 11, 29, 9, tzinfo=UTC))
    other = Feedback(
        trace_id="f" * 32, label="thumbs_up", created_at=datetime(2025, 11, 29, 10, tzinfo=UTC)
    )
    rec = derive(spans, feedback=[down, other, up], revision=3, late_spans=2)
    assert rec is not None
    assert rec.feedback == (up, down)
    assert (rec.feedback_polarity, rec.revision, rec.late_spans) == (-1, 3, 2)
    assert derive(spans).feedback_polarity is None  # type: ignore[union-attr]
    rating = Feedback(trace_id=trace_id, score=2, created_at=datetime(2025, 11, 30, tzinfo=UTC))
    assert derive(spans, feedback=[up, rating]).feedback_polarity == -1  # type: ignore[union-attr]


def test_inline_annotations_count_only_when_human():
    b = tf.TraceBuilder(14)
    b.span(
        "rag",
        None,
        0,
        100,
        "CHAIN",
        {
            "input.value": tf.QUESTION,
            "output.value": tf.ANSWER,
            "trace.annotations.0.annotation.name": "user_feedback",
            "trace.annotations.0.annotation.label": "👎",
            "trace.annotations.0.annotation.annotator_kind": "HUMAN",
            "annotations.0.annotation.name": "user_feedback",
            "annotations.0.annotation.label": "thumbs_up",
            "annotations.0.annotation.annotator_kind": "LLM",
        },
    )
    rec = derive(b.spans)
    assert rec is not None
    assert [(f.label, f.source, f.span_id) for f in rec.feedback] == [
        ("👎", "oi_inline", "0000000e00000001")
    ]
    assert rec.feedback_polarity == -1


def test_numeric_index_order_and_gaps():
    b = tf.TraceBuilder(15)
    chunks = [dict(c, id=f"n{i}") for i, c in enumerate(tf.CHUNKS * 3)]
    attrs = tf.doc_attrs("retrieval.documents", chunks)
    attrs = {k: v for k, v in attrs.items() if not k.startswith("retrieval.documents.4.")}
    b.span("retrieve", None, 0, 10, "RETRIEVER", attrs)
    rec = derive(b.spans)
    assert rec is not None
    assert [d.rank for d in rec.documents] == [0, 1, 2, 3, *range(5, 15)]
    assert [d.id for d in rec.documents][-3:] == ["n12", "n13", "n14"]
    assert (rec.completeness, rec.status, rec.possibly_truncated) == (
        "missing_generation",
        "incomplete",
        True,
    )


_KEYS = [
    "openinference.span.kind",
    "input.value",
    "output.value",
    "llm.model_name",
    "retrieval.documents.0.document.content",
    "retrieval.documents.1.document.id",
    "retrieval.documents.0.document.metadata",
    "llm.input_messages.0.message.content",
    "llm.output_messages.0.message.content",
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.retrieval.documents",
    "llm.token_count.prompt",
    "reranker.output_documents.0.document.score",
    "metadata",
    "tag.tags",
    "session.id",
    "llm.prompt_template.variables",
    "gen_ai.response.finish_reasons",
]
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=30)
    | st.sampled_from(
        [
            "CHAIN",
            "LLM",
            "RETRIEVER",
            "retrieval",
            "chat",
            "__REDACTED__",
            "{}",
            '[{"role": "user"}]',
            "[1, 2]",
            '"q"',
            '{"question": 1}',
        ]
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=12), _VALUES, max_size=8),
            st.integers(0, 4),
            st.integers(-5, 10**19),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_fuzzed_spans_never_raise(raw):
    spans = [
        SpanRecord(
            trace_id="ab" * 16,
            span_id=f"{i:016x}",
            parent_span_id=None if parent == 0 else f"{parent:016x}",
            name=f"s{i}",
            start_ns=start,
            end_ns=start + 5,
            status_code=status,
            attributes=attrs,
        )
        for i, (attrs, parent, start, status) in enumerate(raw, 1)
    ]
    rec = derive(spans)
    assert rec is not None
    assert "ragsieve.derive_error" not in rec.attributes
    assert rec.span_count == len(spans)


def test_tail_sampling_stamps_reach_the_attributes():
    """SPAN_SPEC §5: the tier's baseline share and keeping policy land in ``attributes``."""
    import dataclasses

    spans = tf.llamaindex_rerank()
    stamps = {"rag.sampling.baseline_percentage": 10.0, "rag.sampling.config": "ragsieve-tail-v1"}
    stamped = [dataclasses.replace(s, resource={**s.resource, **stamps}) for s in spans]
    # the policy (a scope attribute upstream) copied onto one span by a transform processor
    last = stamped[-1]
    stamped[-1] = dataclasses.replace(
        last, attributes={**last.attributes, "tailsampling.policy": " baseline "}
    )
    it = derive(stamped)
    assert it is not None
    assert it.attributes["rag.sampling.baseline_percentage"] == 10.0
    assert it.attributes["rag.sampling.config"] == "ragsieve-tail-v1"
    assert it.attributes["tailsampling.policy"] == "baseline"
    plain = derive(spans)
    assert plain is not None
    assert not {k for k in plain.attributes if k.startswith(("rag.sampling", "tailsampling"))}
    # a bool or an empty value is not a usable stamp
    odd = [
        dataclasses.replace(
            s,
            resource={
                **s.resource,
                "rag.sampling.baseline_percentage": True,
                "rag.sampling.config": " ",
            },
        )
        for s in spans
    ]
    got = derive(odd)
    assert got is not None and "rag.sampling.baseline_percentage" not in got.attributes
    assert "rag.sampling.config" not in got.attributes
