"""Interaction assembly on traces shaped like each instrumentor's (SPAN_SPEC §1.5-1.6, §2)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import tracefixtures as tf

from ragsieve.collector.derive.normalize import derive
from ragsieve.evaluators.records import Message, TokenUsage, content_chunk_id

HASH = [content_chunk_id(c["content"]) for c in tf.CHUNKS]


def test_content_hash_ids_are_pinned():
    assert HASH[0] == "sha256:8787da0c9f912074028c2217b256ffc1"
    assert content_chunk_id("  Annual plans\ncan be refunded ") == content_chunk_id(
        "Annual plans can be refunded"
    )


def test_langchain_retrievalqa():
    rec = derive(tf.langchain_retrievalqa())
    assert rec is not None
    assert (rec.trace_id, rec.span_id) == (f"{1:032x}", "0000000100000001")
    assert (rec.query, rec.query_source) == (tf.QUESTION, "root_input")
    assert (rec.answer, rec.answer_source) == (tf.ANSWER, "root_output")
    assert [(d.id, d.id_source, d.rank, d.score, d.in_prompt, d.stage) for d in rec.documents] == [
        (HASH[i], "content_hash", i, None, True, "retrieval") for i in range(4)
    ]
    assert rec.documents[0].document_key == "policies/refunds.md"
    assert rec.documents[0].retriever_name == "vectorstore"
    assert rec.documents[0].content == tf.CHUNKS[0]["content"]
    assert rec.context_source == "retriever_output"
    # ChatOpenAI wraps the OpenAI instrumentor's ChatCompletion: one call, counted once.
    assert rec.generation_span_id == "0000000100000006"
    assert rec.llm_call_count == 1
    assert (rec.model, rec.request_model, rec.provider) == (
        "gpt-4o-mini-2024-07-18",
        "gpt-4o-mini",
        "openai",
    )
    assert rec.tokens == TokenUsage(prompt=412, completion=38, total=450)
    assert rec.finish_reason == "stop"
    assert rec.prompt.template == tf.TEMPLATE
    assert rec.prompt.template_variables == {
        "context": tf.context_text(tf.CHUNKS[:4]),
        "question": tf.QUESTION,
    }
    assert rec.prompt.system == tf.SYSTEM
    assert rec.prompt.messages[1] == Message(role="user", content=tf.stuffed_prompt(tf.CHUNKS[:4]))
    assert rec.started_at == datetime(2025, 11, 29, 7, 6, 40, tzinfo=UTC)
    assert (rec.latency_ms, rec.latency_is_estimate) == (2400.0, False)
    assert (rec.retrieval_latency_ms, rec.generation_latency_ms) == (175.0, 2175.0)
    assert (rec.session_id, rec.user_id, rec.tags) == ("sess-42", "user-7", ("support", "beta"))
    assert rec.metadata["tenant"] == "acme"
    assert rec.attributes == {
        "service.name": "support-rag",
        "service.version": "1.4.2",
        "deployment.environment": "staging",
        "openinference.project.name": "support",
        "model": "gpt-4o-mini-2024-07-18",
        "provider": "openai",
        "metadata.route": "support/ask",
        "metadata.tenant": "acme",
    }
    assert (rec.project, rec.service_name, rec.environment) == ("support", "support-rag", "staging")
    assert rec.instrumentation == (
        "openinference.instrumentation.langchain",
        "openinference.instrumentation.openai",
    )
    assert (rec.status, rec.completeness, rec.convention) == ("ok", "complete", "openinference")
    assert not (
        rec.content_missing
        or rec.content_redacted
        or rec.possibly_truncated
        or rec.kind_inferred
        or rec.multi_pipeline
        or rec.attributes_dropped
    )
    assert rec.span_count == 6
    assert rec.retrieved_ids == HASH[:4]


def test_langchain_lcel_containment_catches_format_docs_cut():
    rec = derive(tf.langchain_lcel())
    assert rec is not None
    assert [(d.id, d.in_prompt) for d in rec.documents] == [
        (HASH[0], True),
        (HASH[1], True),
        (HASH[2], True),
        (HASH[3], False),
    ]
    assert rec.context_source == "containment"
    assert rec.retrieved_ids == HASH[:3]
    # the PROMPT sibling that ended before the generation supplies the template
    assert rec.prompt.template == tf.TEMPLATE
    assert rec.streaming is True and rec.ttft_ms is None
    assert rec.tokens == TokenUsage()  # streaming: unknown, never 0
    assert (rec.model, rec.request_model) == ("gpt-4o-mini", "gpt-4o-mini")
    assert rec.answer_source == "root_output"


def test_llamaindex_reranker_feeds_the_prompt():
    rec = derive(tf.llamaindex_rerank())
    assert rec is not None
    assert [
        (d.id, d.rank, d.score, d.retrieval_score, d.rerank_score, d.in_prompt, d.stage)
        for d in rec.documents
    ] == [
        ("node-2b91", 0, 0.982, 0.842, 0.982, True, "rerank"),
        ("node-7f3a", 1, 0.955, 0.871, 0.955, True, "rerank"),
        ("node-5e07", 2, 0.412, 0.731, 0.412, True, "rerank"),
    ]
    assert rec.context_source == "reranker_output"
    assert [(s.stage, s.name, [d.id for d in s.documents]) for s in rec.stages] == [
        ("retrieval", "VectorIndexRetriever.retrieve", [c["id"] for c in tf.CHUNKS]),
        ("rerank", "CohereRerank.postprocess_nodes", ["node-2b91", "node-7f3a", "node-5e07"]),
    ]
    assert rec.stages[1].query == tf.QUESTION
    assert rec.generation_span_id == "0000000300000008"  # OpenAI.chat, not the predict wrapper
    assert rec.prompt.template_variables == {
        "context_str": tf.context_text(tf.RERANKED),
        "query_str": tf.QUESTION,
    }
    assert (rec.model, rec.request_model) == ("gpt-4o-2024-08-06", "gpt-4o")
    assert rec.tokens == TokenUsage(prompt=655, completion=41, total=696)
    assert (rec.ttft_ms, rec.streaming) == (320.0, True)
    assert rec.retrieval_latency_ms == 537.0  # 2..260 and 261..540 merged into one span of time
    assert (rec.session_id, rec.user_id) == (None, None)


def test_haystack_prompt_builder_is_not_the_generation():
    rec = derive(tf.haystack_pipeline())
    assert rec is not None
    assert rec.generation_span_id == "0000000400000005"
    assert rec.llm_call_count == 1  # PromptBuilder is re-labelled PROMPT
    assert (rec.query, rec.query_source) == (tf.QUESTION, "root_input")  # nested pipeline input
    # pipeline output is {"llm": {"replies": [...]}}: no answer key, so the generation's text wins
    assert (rec.answer, rec.answer_source) == (tf.ANSWER, "generation_output")
    assert [(d.id, d.score, d.in_prompt) for d in rec.documents] == [
        ("node-7f3a", 0.871, True),
        ("node-2b91", 0.842, True),
        ("node-c410", 0.803, True),
    ]
    assert rec.prompt.template_variables == {"question": tf.QUESTION}
    assert rec.tokens == TokenUsage(prompt=300, completion=30, total=330)
    assert (rec.project, rec.service_name) == ("hs-rag", "hs-rag")


def test_dspy_content_only_retrieve_takes_colbert_ids():
    rec = derive(tf.dspy_program())
    assert rec is not None
    assert (rec.query, rec.query_source) == (tf.QUESTION, "root_input")
    assert (rec.answer, rec.answer_source) == (tf.ANSWER, "root_output")
    # outer Retrieve.forward has content only; the nested ColBERTv2 span reports int pids
    assert [
        (d.id, d.id_source, d.score, d.retrieval_score, d.in_prompt, d.span_id)
        for d in rec.documents
    ] == [
        ("1000", "native", None, 0.871, True, "0000000500000002"),
        ("1001", "native", None, 0.842, True, "0000000500000002"),
        ("1002", "native", None, 0.803, True, "0000000500000002"),
    ]
    assert [s.name for s in rec.stages] == ["ColBERTv2.__call__", "Retrieve.forward"]
    assert rec.model == "openai/gpt-4o-mini"


def test_genai_current_conventions():
    rec = derive(tf.genai_new())
    assert rec is not None
    assert rec.span_id == "0000000600000001"  # the HTTP root: where annotations attach
    assert (rec.query, rec.query_source) == (tf.QUESTION, "genai_query")
    assert (rec.answer, rec.answer_source) == (tf.ANSWER, "genai_output")  # reasoning dropped
    assert [
        (d.id, d.rank, d.score, d.in_prompt, d.stage, d.retriever_name) for d in rec.documents
    ] == [
        (c["id"], i, c["score"], True, "genai_retrieval", "kb-articles")
        for i, c in enumerate(tf.CHUNKS[:3])
    ]
    assert rec.documents[0].metadata == {"source": "policies/refunds.md"}
    assert rec.context_source == "genai_retrieval"
    assert (rec.model, rec.request_model, rec.provider) == ("gpt-4o-2024-08-06", "gpt-4o", "openai")
    assert rec.tokens == TokenUsage(prompt=512, completion=44, total=556)
    assert (rec.ttft_ms, rec.streaming, rec.finish_reason) == (420.0, True, "stop")
    assert (rec.session_id, rec.user_id) == ("conv-77", "u-19")
    assert rec.prompt.system == tf.SYSTEM
    assert rec.chat_history == (
        Message(role="user", content="Hi"),
        Message(role="assistant", content="Hello! How can I help?"),
    )
    assert rec.attributes["http.route"] == "/ask"
    assert rec.attributes["deployment.environment.name"] == "prod"
    assert (rec.environment, rec.convention, rec.status) == ("prod", "genai", "ok")


def test_genai_metadata_only_trace_is_kept_and_flagged():
    rec = derive(tf.genai_new(content=False))
    assert rec is not None
    assert (rec.query, rec.answer, rec.content_missing) == (None, None, True)
    assert (rec.model, rec.tokens.total, rec.latency_ms) == ("gpt-4o-2024-08-06", 556, 1800.0)
    assert [(d.id, d.content, d.in_prompt) for d in rec.documents] == [
        (c["id"], None, None) for c in tf.CHUNKS[:3]
    ]
    assert rec.status == "ok"


def test_genai_legacy_span_events():
    rec = derive(tf.genai_span_events())
    assert rec is not None
    assert (rec.query, rec.query_source) == (tf.QUESTION, "last_user_message")
    assert (rec.answer, rec.answer_source) == (tf.ANSWER, "genai_output")
    assert rec.tokens == TokenUsage(prompt=120, completion=25, total=145)  # "120" was a string
    assert (rec.model, rec.request_model) == ("gpt-3.5-turbo-0125", "gpt-3.5-turbo")
    assert (rec.convention, rec.kind_inferred) == ("genai_legacy", True)
    assert rec.documents == () and rec.context_source == "none"


def test_genai_log_events_are_joined_by_span_id():
    spans, logs = tf.genai_log_events()
    bare = derive(spans)
    rec = derive(spans, logs)
    assert bare is not None and rec is not None
    assert (bare.query, bare.answer, bare.content_missing) == (None, None, True)
    assert (rec.query, rec.answer, rec.content_missing) == (tf.QUESTION, tf.ANSWER, False)
    assert rec.prompt.messages == (
        Message(role="system", content=tf.SYSTEM),
        Message(role="user", content=tf.QUESTION),
    )
    assert rec.tokens == TokenUsage(prompt=80, completion=20, total=100)


def test_errors_and_status():
    rec = derive(tf.errored_trace())
    assert rec is not None
    assert rec.status == "error"
    assert [(e.span_id, e.span_name, e.role, e.type, e.message) for e in rec.errors] == [
        ("0000000900000001", "rag", "CHAIN", "openai.RateLimitError", "quota exceeded"),
        (
            "0000000900000003",
            "generate",
            "LLM",
            "openai.RateLimitError",
            "Error code: 429 - quota exceeded",
        ),
    ]
    assert (rec.answer, rec.query) == (None, tf.QUESTION)
    assert rec.generation_span_id == "0000000900000003"  # has a model, so still the generation
    assert [d.in_prompt for d in rec.documents] == [True, True]


def test_langchain_compression_retriever_is_the_rerank_stage():
    b = tf.TraceBuilder(20)
    root = b.span(
        "RetrievalQA",
        None,
        0,
        2000,
        "CHAIN",
        {"input.value": tf.QUESTION, "output.value": tf.ANSWER},
    )
    kept = [tf.CHUNKS[1], tf.CHUNKS[0]]
    outer = {**tf.doc_attrs("retrieval.documents", kept, ids=False, scores=False)}
    for i, (c, s) in enumerate(zip(kept, [0.97, 0.64], strict=True)):
        outer[f"retrieval.documents.{i}.document.metadata"] = (
            f"{{'source': '{c['source']}', 'relevance_score': {s}}}"  # Python repr, not JSON
        )
    comp = b.span(
        "ContextualCompressionRetriever",
        root,
        5,
        400,
        "RETRIEVER",
        {"input.value": tf.QUESTION, **outer},
    )
    b.span(
        "VectorStoreRetriever",
        comp,
        6,
        100,
        "RETRIEVER",
        {
            "input.value": tf.QUESTION,
            **tf.doc_attrs("retrieval.documents", tf.CHUNKS[:4], ids=False, scores=False),
        },
    )
    b.span(
        "ChatOpenAI",
        root,
        401,
        1990,
        "LLM",
        {
            "llm.model_name": "gpt-4o-mini",
            **tf.msg_attrs("llm.input_messages", [("user", tf.stuffed_prompt(kept))]),
            **tf.msg_attrs("llm.output_messages", [("assistant", tf.ANSWER)]),
        },
    )
    rec = derive(b.spans)
    assert rec is not None
    assert [(s.stage, s.name, len(s.documents)) for s in rec.stages] == [
        ("retrieval", "VectorStoreRetriever", 4),
        ("rerank", "ContextualCompressionRetriever", 2),
    ]
    assert [
        (d.id, d.rank, d.score, d.rerank_score, d.stage, d.in_prompt) for d in rec.documents
    ] == [(HASH[1], 0, 0.97, 0.97, "rerank", True), (HASH[0], 1, 0.64, 0.64, "rerank", True)]
    assert rec.documents[0].metadata == {"source": "policies/refunds.md", "relevance_score": 0.97}
    assert rec.context_source == "reranker_output"


def test_cancelled_stream_is_not_an_error():
    spans = tf.llamaindex_rerank(21)
    root = spans[0]
    spans[0] = replace(root, events=(tf.event("span.cancelled", 3000, reason="client gone"),))
    rec = derive(spans)
    assert rec is not None
    assert (rec.status, rec.errors) == ("cancelled", ())


def test_genai_exception_log_event_is_an_error():
    spans, logs = tf.genai_log_events(22)
    chat = spans[1]
    logs.append(
        tf.LogEvent(
            chat.trace_id,
            chat.span_id,
            "gen_ai.client.operation.exception",
            chat.end_ns,
            {"exception.type": "httpx.ReadTimeout", "exception.message": "timed out"},
        )
    )
    rec = derive(spans, logs)
    assert rec is not None
    assert rec.status == "error"
    assert [(e.span_id, e.role, e.type, e.message) for e in rec.errors] == [
        (chat.span_id, "LLM", "httpx.ReadTimeout", "timed out")
    ]
