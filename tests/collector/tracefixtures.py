"""Realistic RAG trace fixtures (SPAN_SPEC §1.5-1.6, §2, §3.6) as SpanRecord lists.

Each builder returns the spans of one trace shaped like what the named instrumentor emits, with
deterministic ids (counters) and times (milliseconds after a fixed epoch). ``from_readable`` turns
spans recorded by the real opentelemetry-sdk into SpanRecords.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragsieve.collector.wire.spans import (
    FLAG_HAS_IS_REMOTE,
    FLAG_PARENT_IS_REMOTE,
    STATUS_ERROR,
    STATUS_OK,
    LogEvent,
    SpanRecord,
)

T0 = 1_764_400_000_000_000_000  # 2025-11-29T07:06:40Z in ns
MS = 1_000_000

QUESTION = "How long do I have to request a refund on an annual plan?"
ANSWER = (
    "You can request a full refund within 30 days of purchasing an annual plan; after that, "
    "refunds are prorated for the unused months."
)

CHUNKS = [
    {
        "id": "node-7f3a",
        "source": "policies/refunds.md",
        "score": 0.871,
        "content": "Annual plans can be refunded in full within 30 days of purchase. "
        "Contact billing support with your invoice number to start the refund.",
    },
    {
        "id": "node-2b91",
        "source": "policies/refunds.md",
        "score": 0.842,
        "content": "After the first 30 days, annual plans are refunded pro rata: you receive the "
        "unused whole months back to the original payment method.",
    },
    {
        "id": "node-c410",
        "source": "faq/billing.md",
        "score": 0.803,
        "content": "Monthly plans are not refundable, but you can cancel at any time and "
        "keep access until the end of the current billing period.",
    },
    {
        "id": "node-91de",
        "source": "faq/invoices.md",
        "score": 0.774,
        "content": "Invoices are emailed to the account owner on the first day of each "
        "billing cycle and can be downloaded from the Billing page.",
    },
    {
        "id": "node-5e07",
        "source": "policies/enterprise.md",
        "score": 0.731,
        "content": "Enterprise contracts follow the refund terms negotiated in the order form and "
        "are handled by your account manager.",
    },
]

SYSTEM = "You are a support assistant. Answer only from the context. Say 'I don't know' otherwise."
TEMPLATE = (
    "Use the following pieces of context to answer the question at the end.\n\n"
    "{context}\n\nQuestion: {question}\nHelpful Answer:"
)


def context_text(chunks: Sequence[Mapping[str, Any]]) -> str:
    """How ``format_docs`` / stuffing joins chunk texts."""
    return "\n\n".join(c["content"] for c in chunks)


def stuffed_prompt(chunks: Sequence[Mapping[str, Any]], question: str = QUESTION) -> str:
    """The user message of a stuff-documents chain."""
    return TEMPLATE.format(context=context_text(chunks), question=question)


def doc_attrs(
    prefix: str,
    chunks: Sequence[Mapping[str, Any]],
    *,
    ids: bool = True,
    scores: bool = True,
    metadata: bool = True,
    score_key: str = "score",
    start: int = 0,
) -> dict[str, Any]:
    """OpenInference flattened document list attributes."""
    out: dict[str, Any] = {}
    for i, c in enumerate(chunks, start):
        base = f"{prefix}.{i}.document"
        if ids:
            out[f"{base}.id"] = c["id"]
        out[f"{base}.content"] = c["content"]
        if scores:
            out[f"{base}.score"] = c[score_key]
        if metadata:
            out[f"{base}.metadata"] = json.dumps({"source": c["source"]})
    return out


def msg_attrs(prefix: str, messages: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """OpenInference flattened message list attributes."""
    out: dict[str, Any] = {}
    for i, (role, content) in enumerate(messages):
        out[f"{prefix}.{i}.message.role"] = role
        out[f"{prefix}.{i}.message.content"] = content
    return out


@dataclass
class TraceBuilder:
    """Builds the spans of one trace with counter ids and millisecond offsets."""

    trace_no: int = 1
    resource: dict[str, Any] = field(
        default_factory=lambda: {
            "service.name": "support-rag",
            "service.version": "1.4.2",
            "deployment.environment": "staging",
            "openinference.project.name": "support",
        }
    )
    scope: str = "openinference.instrumentation.langchain"
    spans: list[SpanRecord] = field(default_factory=list)

    @property
    def trace_id(self) -> str:
        """32 hex trace id derived from the trace number."""
        return f"{self.trace_no:032x}"

    def span(
        self,
        name: str,
        parent: SpanRecord | str | None,
        start_ms: float,
        end_ms: float,
        kind: str | None = None,
        attrs: Mapping[str, Any] | None = None,
        *,
        span_kind: int = 1,
        status: int = STATUS_OK,
        status_message: str = "",
        events: Iterable[Mapping[str, Any]] = (),
        flags: int = 0x101,
        scope: str | None = None,
    ) -> SpanRecord:
        """Add one span; ``kind`` becomes ``openinference.span.kind``."""
        attributes = dict(attrs or {})
        if kind is not None:
            attributes = {"openinference.span.kind": kind, **attributes}
        parent_id = parent.span_id if isinstance(parent, SpanRecord) else parent
        span = SpanRecord(
            trace_id=self.trace_id,
            span_id=f"{self.trace_no:08x}{len(self.spans) + 1:08x}",
            parent_span_id=parent_id,
            name=name,
            kind=span_kind,
            start_ns=T0 + int(start_ms * MS),
            end_ns=T0 + int(end_ms * MS),
            status_code=status,
            status_message=status_message,
            attributes=attributes,
            events=tuple(dict(e) for e in events),
            resource=dict(self.resource),
            scope_name=scope or self.scope,
            scope_version="0.1.0",
            flags=flags,
        )
        self.spans.append(span)
        return span


def event(name: str, at_ms: float, **attributes: Any) -> dict[str, Any]:
    """A span event dict as the receiver stores it."""
    return {"name": name, "time_ns": T0 + int(at_ms * MS), "attributes": attributes}


CTX = {
    "session.id": "sess-42",
    "user.id": "user-7",
    "metadata": json.dumps({"tenant": "acme", "route": "support/ask", "ls_run_depth": 0}),
    "tag.tags": ["support", "beta"],
}


def langchain_retrievalqa(n: int = 1, *, answer: str = ANSWER) -> list[SpanRecord]:
    """LangChain RetrievalQA with the OpenAI instrumentor also on (SPAN_SPEC §1.6 A)."""
    b = TraceBuilder(n)
    chunks = CHUNKS[:4]
    root = b.span(
        "RetrievalQA",
        None,
        0,
        2400,
        "CHAIN",
        {"input.value": QUESTION, "output.value": answer, **CTX},
    )
    b.span(
        "VectorStoreRetriever",
        root,
        5,
        180,
        "RETRIEVER",
        {
            "input.value": QUESTION,
            **doc_attrs("retrieval.documents", chunks, ids=False, scores=False),
            **CTX,
            "metadata": json.dumps({"tenant": "acme", "ls_retriever_name": "vectorstore"}),
        },
    )
    stuff = b.span(
        "StuffDocumentsChain",
        root,
        185,
        2390,
        "CHAIN",
        {
            "input.value": json.dumps(
                {"input_documents": [c["content"] for c in chunks], "question": QUESTION}
            ),
            "input.mime_type": "application/json",
            "output.value": answer,
            **CTX,
        },
    )
    llmchain = b.span(
        "LLMChain",
        stuff,
        190,
        2385,
        "CHAIN",
        {
            "llm.prompt_template.template": TEMPLATE,
            "llm.prompt_template.variables": json.dumps(
                {"context": context_text(chunks), "question": QUESTION}
            ),
            "input.value": json.dumps({"question": QUESTION, "context": context_text(chunks)}),
            "input.mime_type": "application/json",
            "output.value": answer,
            **CTX,
        },
    )
    messages = [("system", SYSTEM), ("user", stuffed_prompt(chunks))]
    llm_attrs = {
        **msg_attrs("llm.input_messages", messages),
        **msg_attrs("llm.output_messages", [("assistant", answer)]),
        "llm.model_name": "gpt-4o-mini-2024-07-18",
        "llm.provider": "openai",
        "llm.system": "openai",
        "llm.invocation_parameters": json.dumps({"model": "gpt-4o-mini", "temperature": 0}),
        "llm.token_count.prompt": 412,
        "llm.token_count.completion": 38,
        "llm.token_count.total": 450,
        "llm.finish_reason": "stop",
        **CTX,
    }
    chat = b.span("ChatOpenAI", llmchain, 195, 2380, "LLM", llm_attrs)
    b.span(
        "ChatCompletion",
        chat,
        200,
        2375,
        "LLM",
        {
            k: v
            for k, v in llm_attrs.items()
            if not k.startswith(("session", "user", "metadata", "tag"))
        },
        scope="openinference.instrumentation.openai",
    )
    return b.spans


def langchain_lcel(n: int = 2) -> list[SpanRecord]:
    """LCEL ``{context: retriever | format_docs, question} | prompt | llm | parser``; the
    ``format_docs`` step keeps only the first three of four chunks (SPAN_SPEC §1.6 B)."""
    b = TraceBuilder(n)
    chunks = [dict(c, content=c["content"]) for c in CHUNKS[:4]]
    kept = chunks[:3]
    root = b.span(
        "RunnableSequence",
        None,
        0,
        1900,
        "CHAIN",
        {"input.value": QUESTION, "output.value": ANSWER, **CTX},
    )
    par = b.span(
        "RunnableParallel<context,question>", root, 2, 150, "CHAIN", {"input.value": QUESTION}
    )
    seq = b.span("RunnableSequence", par, 3, 148, "CHAIN", {"input.value": QUESTION})
    b.span(
        "VectorStoreRetriever",
        seq,
        4,
        140,
        "RETRIEVER",
        {
            "input.value": QUESTION,
            **doc_attrs("retrieval.documents", chunks, ids=False, scores=False),
        },
    )
    b.span("format_docs", seq, 141, 147, "CHAIN", {"output.value": context_text(kept)})
    b.span(
        "RunnablePassthrough",
        par,
        3,
        4,
        "CHAIN",
        {"input.value": QUESTION, "output.value": QUESTION},
    )
    b.span(
        "ChatPromptTemplate",
        root,
        151,
        153,
        "PROMPT",
        {
            "llm.prompt_template.template": TEMPLATE,
            "llm.prompt_template.variables": json.dumps(
                {"context": context_text(kept), "question": QUESTION}
            ),
        },
    )
    b.span(
        "ChatOpenAI",
        root,
        154,
        1880,
        "LLM",
        {
            **msg_attrs("llm.input_messages", [("user", stuffed_prompt(kept))]),
            **msg_attrs("llm.output_messages", [("assistant", ANSWER)]),
            "llm.model_name": "gpt-4o-mini",
            "llm.invocation_parameters": json.dumps({"model_name": "gpt-4o-mini", "stream": True}),
        },
    )
    b.span(
        "StrOutputParser",
        root,
        1881,
        1890,
        "CHAIN",
        {"input.value": ANSWER, "output.value": ANSWER},
    )
    return b.spans


RERANKED = [CHUNKS[1], CHUNKS[0], CHUNKS[4]]
RERANK_SCORES = [0.982, 0.955, 0.412]


def llamaindex_rerank(n: int = 3) -> list[SpanRecord]:
    """LlamaIndex query engine with a Cohere reranker and a streaming chat (SPAN_SPEC §1.6 C)."""
    b = TraceBuilder(n, scope="openinference.instrumentation.llama_index")
    reranked = [dict(c, score=s) for c, s in zip(RERANKED, RERANK_SCORES, strict=True)]
    root = b.span(
        "RetrieverQueryEngine.query",
        None,
        0,
        3100,
        "CHAIN",
        {"input.value": QUESTION, "output.value": ANSWER},
    )
    ret = b.span(
        "VectorIndexRetriever.retrieve",
        root,
        2,
        260,
        "RETRIEVER",
        {"input.value": QUESTION, **doc_attrs("retrieval.documents", CHUNKS)},
    )
    b.span(
        "OpenAIEmbedding.get_query_embedding",
        ret,
        3,
        120,
        "EMBEDDING",
        {"embedding.model_name": "text-embedding-3-small"},
    )
    b.span(
        "CohereRerank.postprocess_nodes",
        root,
        261,
        540,
        "RERANKER",
        {
            "reranker.query": QUESTION,
            "reranker.top_k": 3,
            "reranker.model_name": "rerank-english-v3.0",
            **doc_attrs("reranker.input_documents", CHUNKS),
            **doc_attrs("reranker.output_documents", reranked),
        },
    )
    synth = b.span(
        "CompactAndRefine.synthesize", root, 541, 3090, "CHAIN", {"input.value": QUESTION}
    )
    get = b.span(
        "CompactAndRefine.get_response", synth, 542, 3085, "CHAIN", {"input.value": QUESTION}
    )
    predict = b.span(
        "OpenAI.predict",
        get,
        543,
        3080,
        "LLM",
        {
            "llm.prompt_template.template": "Context information is below.\n{context_str}\n"
            "Query: {query_str}\nAnswer: ",
            "llm.prompt_template.variables": json.dumps(
                {"context_str": context_text(reranked), "query_str": QUESTION}
            ),
        },
    )
    user = f"Context information is below.\n{context_text(reranked)}\nQuery: {QUESTION}\nAnswer: "
    b.span(
        "OpenAI.chat",
        predict,
        545,
        3075,
        "LLM",
        {
            **msg_attrs("llm.input_messages", [("system", SYSTEM), ("user", user)]),
            **msg_attrs("llm.output_messages", [("assistant", ANSWER)]),
            "llm.model_name": "gpt-4o-2024-08-06",
            "llm.provider": "openai",
            "llm.invocation_parameters": json.dumps({"model": "gpt-4o", "stream": True}),
            "llm.token_count.prompt": 655,
            "llm.token_count.completion": 41,
        },
        events=[event("First Token Stream Event", 865)],
    )
    return b.spans


def haystack_pipeline(n: int = 4) -> list[SpanRecord]:
    """Haystack: PromptBuilder typed LLM with only template attributes (SPAN_SPEC §1.5.3)."""
    b = TraceBuilder(
        n, scope="openinference.instrumentation.haystack", resource={"service.name": "hs-rag"}
    )
    chunks = CHUNKS[:3]
    root = b.span(
        "Pipeline.run",
        None,
        0,
        2000,
        "CHAIN",
        {
            "input.value": json.dumps(
                {
                    "data": {
                        "text_embedder": {"text": QUESTION},
                        "prompt_builder": {"question": QUESTION},
                    }
                }
            ),
            "input.mime_type": "application/json",
            "output.value": json.dumps(
                {"llm": {"replies": [ANSWER], "meta": [{"model": "gpt-4o"}]}}
            ),
            "output.mime_type": "application/json",
        },
    )
    b.span("SentenceTransformersTextEmbedder.run", root, 1, 50, "EMBEDDING", {})
    b.span(
        "InMemoryEmbeddingRetriever.run",
        root,
        51,
        90,
        "RETRIEVER",
        doc_attrs("retrieval.documents", chunks),
    )
    b.span(
        "PromptBuilder.run",
        root,
        91,
        95,
        "LLM",
        {
            "llm.prompt_template.template": "{% for d in documents %}{{ d.content }}{% endfor %}"
            " Question: {{question}}",
            "llm.prompt_template.variables": json.dumps({"question": QUESTION}),
        },
    )
    b.span(
        "OpenAIGenerator.run",
        root,
        96,
        1990,
        "LLM",
        {
            **msg_attrs("llm.input_messages", [("user", stuffed_prompt(chunks))]),
            **msg_attrs("llm.output_messages", [("assistant", ANSWER)]),
            "llm.model_name": "gpt-4o-2024-08-06",
            "llm.token_count.prompt": 300,
            "llm.token_count.completion": 30,
            "llm.token_count.total": 330,
        },
    )
    return b.spans


def dspy_program(n: int = 5) -> list[SpanRecord]:
    """DSPy RAG module: content-only Retrieve wrapping ColBERTv2 (SPAN_SPEC §1.5.4)."""
    b = TraceBuilder(n, scope="openinference.instrumentation.dspy")
    chunks = CHUNKS[:3]
    colbert = [dict(c, id=1000 + i) for i, c in enumerate(chunks)]  # integer pids
    root = b.span(
        "RAG.forward",
        None,
        0,
        1500,
        "CHAIN",
        {
            "input.value": json.dumps({"question": QUESTION}),
            "input.mime_type": "application/json",
            "output.value": json.dumps(
                {"context": [c["content"] for c in chunks], "answer": ANSWER}
            ),
            "output.mime_type": "application/json",
        },
    )
    retrieve = b.span(
        "Retrieve.forward",
        root,
        1,
        100,
        "RETRIEVER",
        {
            "input.value": json.dumps({"query": QUESTION}),
            **doc_attrs("retrieval.documents", chunks, ids=False, scores=False, metadata=False),
        },
    )
    b.span(
        "ColBERTv2.__call__",
        retrieve,
        2,
        99,
        "RETRIEVER",
        {
            "input.value": json.dumps({"query": QUESTION, "k": 3}),
            **doc_attrs("retrieval.documents", colbert, metadata=False),
        },
    )
    cot = b.span(
        "ChainOfThought.forward",
        root,
        101,
        1490,
        "CHAIN",
        {"input.value": json.dumps({"question": QUESTION, "context": "..."})},
    )
    pred = b.span("Predict(StringSignature).forward", cot, 102, 1485, "CHAIN", {})
    b.span(
        "LM.__call__",
        pred,
        103,
        1480,
        "LLM",
        {
            **msg_attrs(
                "llm.input_messages",
                [
                    ("system", "Your input fields are: context, question."),
                    (
                        "user",
                        f"[[ ## context ## ]]\n{context_text(chunks)}"
                        f"\n[[ ## question ## ]]\n{QUESTION}",
                    ),
                ],
            ),
            **msg_attrs("llm.output_messages", [("assistant", f"[[ ## answer ## ]]\n{ANSWER}")]),
            "llm.model_name": "openai/gpt-4o-mini",
        },
    )
    return b.spans


GENAI_DOCS = [
    {
        "id": c["id"],
        "score": c["score"],
        "content": c["content"],
        "metadata": {"source": c["source"]},
    }
    for c in CHUNKS[:3]
]


def genai_new(n: int = 6, *, content: bool = True) -> list[SpanRecord]:
    """OTel GenAI >= v1.40: HTTP root, retrieval span, chat span with JSON messages."""
    b = TraceBuilder(
        n,
        scope="opentelemetry.instrumentation.openai_v2",
        resource={"service.name": "support-bot", "deployment.environment.name": "prod"},
    )
    root = b.span(
        "POST /ask",
        None,
        0,
        1800,
        None,
        {"http.request.method": "POST", "http.route": "/ask", "enduser.id": "u-19"},
        span_kind=2,
        scope="opentelemetry.instrumentation.fastapi",
    )
    docs = GENAI_DOCS if content else [{"id": d["id"], "score": d["score"]} for d in GENAI_DOCS]
    retr = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.data_source.id": "kb-articles",
        "gen_ai.request.top_k": 3,
        "gen_ai.retrieval.documents": json.dumps(docs),
    }
    if content:
        retr["gen_ai.retrieval.query.text"] = QUESTION
    b.span("retrieval kb-articles", root, 5, 95, None, retr, span_kind=3)
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.response.id": "chatcmpl-AbC123",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 512,
        "gen_ai.usage.output_tokens": 44,
        "gen_ai.conversation.id": "conv-77",
        "gen_ai.request.stream": True,
        "gen_ai.response.time_to_first_chunk": 0.42,
    }
    if content:
        chat["gen_ai.system_instructions"] = json.dumps([{"type": "text", "content": SYSTEM}])
        chat["gen_ai.input.messages"] = json.dumps(
            [
                {"role": "user", "parts": [{"type": "text", "content": "Hi"}]},
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": "Hello! How can I help?"}],
                },
                {
                    "role": "user",
                    "parts": [{"type": "text", "content": stuffed_prompt(CHUNKS[:3])}],
                },
            ]
        )
        chat["gen_ai.output.messages"] = json.dumps(
            [
                {
                    "role": "assistant",
                    "finish_reason": "stop",
                    "parts": [
                        {"type": "reasoning", "content": "The policy says 30 days."},
                        {"type": "text", "content": ANSWER},
                    ],
                }
            ]
        )
    b.span("chat gpt-4o", root, 100, 1790, None, chat, span_kind=3)
    return b.spans


def genai_span_events(n: int = 7) -> list[SpanRecord]:
    """GenAI <= v1.27: content in ``gen_ai.content.*`` span events, legacy usage keys."""
    b = TraceBuilder(
        n, scope="opentelemetry.instrumentation.openai", resource={"service.name": "legacy-bot"}
    )
    root = b.span("answer_question", None, 0, 900, None, {}, span_kind=1)
    b.span(
        "chat gpt-3.5-turbo",
        root,
        10,
        890,
        None,
        {
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-3.5-turbo",
            "gen_ai.response.model": "gpt-3.5-turbo-0125",
            "gen_ai.usage.prompt_tokens": "120",
            "gen_ai.usage.completion_tokens": 25,
        },
        span_kind=3,
        events=[
            event(
                "gen_ai.content.prompt",
                11,
                **{
                    "gen_ai.prompt": json.dumps(
                        [
                            {"role": "system", "content": SYSTEM},
                            {"role": "user", "content": QUESTION},
                        ]
                    )
                },
            ),
            event(
                "gen_ai.content.completion",
                889,
                **{"gen_ai.completion": json.dumps([{"role": "assistant", "content": ANSWER}])},
            ),
        ],
    )
    return b.spans


def genai_log_events(n: int = 8) -> tuple[list[SpanRecord], list[LogEvent]]:
    """GenAI v1.28-v1.36: content arrives as log events on /v1/logs, joined by span id."""
    b = TraceBuilder(
        n, scope="opentelemetry.instrumentation.openai", resource={"service.name": "legacy-bot"}
    )
    root = b.span("handle", None, 0, 700, None, {}, span_kind=2)
    chat = b.span(
        "chat gpt-4o-mini",
        root,
        10,
        690,
        None,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": 80,
            "gen_ai.usage.output_tokens": 20,
        },
        span_kind=3,
    )
    logs = [
        LogEvent(
            b.trace_id,
            chat.span_id,
            "gen_ai.system.message",
            T0 + 11 * MS,
            {"gen_ai.system": "openai"},
            {"content": SYSTEM},
        ),
        LogEvent(
            b.trace_id,
            chat.span_id,
            "gen_ai.user.message",
            T0 + 12 * MS,
            {"gen_ai.system": "openai"},
            {"content": QUESTION},
        ),
        LogEvent(
            b.trace_id,
            chat.span_id,
            "gen_ai.choice",
            T0 + 689 * MS,
            {"gen_ai.system": "openai"},
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": ANSWER},
            },
        ),
    ]
    return b.spans, logs


def errored_trace(n: int = 9) -> list[SpanRecord]:
    """Hand-instrumented OI trace whose generation failed with a rate-limit error."""
    b = TraceBuilder(n, scope="my-rag")
    root = b.span(
        "rag",
        None,
        0,
        650,
        "CHAIN",
        {"input.value": QUESTION},
        status=STATUS_ERROR,
        status_message="RateLimitError: quota exceeded",
        events=[
            event(
                "exception",
                649,
                **{
                    "exception.type": "openai.RateLimitError",
                    "exception.message": "quota exceeded",
                },
            )
        ],
    )
    b.span(
        "retrieve",
        root,
        1,
        40,
        "RETRIEVER",
        {"input.value": QUESTION, **doc_attrs("retrieval.documents", CHUNKS[:2])},
    )
    b.span(
        "generate",
        root,
        41,
        640,
        "LLM",
        {
            "llm.model_name": "gpt-4o-mini",
            **msg_attrs("llm.input_messages", [("user", stuffed_prompt(CHUNKS[:2]))]),
        },
        status=STATUS_ERROR,
        status_message="Error code: 429",
        events=[
            event(
                "exception",
                639,
                **{
                    "exception.type": "openai.RateLimitError",
                    "exception.message": "Error code: 429 - quota exceeded",
                    "exception.stacktrace": "Traceback (most recent call last):\n"
                    + "  ...\n" * 500,
                },
            )
        ],
    )
    return b.spans


def remote_parent_trace(n: int = 10) -> list[SpanRecord]:
    """The RAG service's part of a distributed trace: its top span has a remote parent."""
    b = TraceBuilder(n, scope="my-rag")
    top = b.span(
        "rag",
        "00000000deadbeef",
        0,
        800,
        "CHAIN",
        {"input.value": QUESTION, "output.value": ANSWER},
        flags=0x101 | FLAG_HAS_IS_REMOTE | FLAG_PARENT_IS_REMOTE,
    )
    b.span(
        "retrieve",
        top,
        1,
        50,
        "RETRIEVER",
        {"input.value": QUESTION, **doc_attrs("retrieval.documents", CHUNKS[:2])},
    )
    b.span(
        "generate",
        top,
        51,
        790,
        "LLM",
        {
            "llm.model_name": "gpt-4o-mini",
            **msg_attrs("llm.input_messages", [("user", stuffed_prompt(CHUNKS[:2]))]),
            **msg_attrs("llm.output_messages", [("assistant", ANSWER)]),
        },
    )
    return b.spans


def redacted(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """What OPENINFERENCE_HIDE_INPUTS + HIDE_INPUT_MESSAGES do to a trace (documents stay)."""
    out = []
    for span in spans:
        attrs = dict(span.attributes)
        for key in list(attrs):
            if (
                key == "input.value"
                or key == "llm.prompt_template.variables"
                or (key.startswith("llm.input_messages.") and key.endswith(".content"))
            ):
                attrs[key] = "__REDACTED__"
        out.append(replace(span, attributes=attrs))
    return out


def without_root(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """The trace as seen when the root span was lost (crash, upstream sampling)."""
    return [s for s in spans if s.parent_span_id]


def early_copies(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """Retry duplicates: the same spans re-delivered, some with fewer attributes and no end."""
    return [
        replace(s, end_ns=0, attributes=dict(list(s.attributes.items())[:2])) for s in spans[::2]
    ]


def from_readable(span: Any) -> SpanRecord:
    """Convert an opentelemetry-sdk ReadableSpan to a SpanRecord (what the OTLP decoder yields)."""
    ctx, parent = span.context, span.parent
    flags = 0x100 | int(ctx.trace_flags)
    if parent is not None and parent.is_remote:
        flags |= 0x200
    res = dict(span.resource.attributes) if span.resource else {}
    return SpanRecord(
        trace_id=f"{ctx.trace_id:032x}",
        span_id=f"{ctx.span_id:016x}",
        parent_span_id=f"{parent.span_id:016x}" if parent is not None else None,
        name=span.name,
        kind=int(span.kind.value) + 1,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        status_code=int(span.status.status_code.value),
        status_message=span.status.description or "",
        attributes={
            k: list(v) if isinstance(v, tuple) else v for k, v in (span.attributes or {}).items()
        },
        events=tuple(
            {"name": e.name, "time_ns": e.timestamp, "attributes": dict(e.attributes or {})}
            for e in span.events
        ),
        links=tuple(
            {
                "trace_id": f"{link.context.trace_id:032x}",
                "span_id": f"{link.context.span_id:016x}",
                "attributes": dict(link.attributes or {}),
            }
            for link in span.links
        ),
        resource=res,
        scope_name=span.instrumentation_scope.name if span.instrumentation_scope else "",
        flags=flags,
        dropped_attributes_count=span.dropped_attributes,
        dropped_events_count=span.dropped_events,
        dropped_links_count=span.dropped_links,
    )
