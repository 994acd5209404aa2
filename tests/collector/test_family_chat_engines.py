"""Conversations as LlamaIndex chat engines, Haystack rephrase pipelines, LangChain's
history-aware retrieval chain and plain LCEL chains with a ``MessagesPlaceholder``, a LangGraph
conversational RAG graph and DSPy programs with a ``dspy.History`` trace them (issue 45).

The real OpenInference instrumentors record a three-turn bike-share conversation through each
engine; the LLM is the framework's own custom-LLM base class answering from a script (a
completion-only model, as llama.cpp-style local servers are, or a chat model). Each turn is then
derived as the collector derives it, and read as the judges read it: the question they judge
(the engine's standalone rewrite where it made one), the conversation before the turn, the
chunks and the answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import Any

import dspy
import families
import pytest
import tracefixtures as tf
from dspy.utils.dummies import DummyLM
from haystack import Document as HaystackDocument
from haystack import Pipeline, component
from haystack.components.builders import PromptBuilder
from haystack.components.converters import OutputAdapter
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from langchain_classic.chains import create_history_aware_retriever, create_retrieval_chain
from langchain_classic.chains.combine_documents import create_stuff_documents_chain
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.documents import Document as LangChainDocument
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import END, START, MessagesState, StateGraph
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage, ChatResponse
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    CondenseQuestionChatEngine,
    ContextChatEngine,
)
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.memory import ChatMemoryBuffer
from openinference.instrumentation import using_session
from openinference.instrumentation.dspy import DSPyInstrumentor
from openinference.instrumentation.haystack import HaystackInstrumentor
from openinference.instrumentation.langchain import LangChainInstrumentor
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragsieve.collector.derive.normalize import derive
from ragsieve.collector.derive.sessions import turn_number
from ragsieve.evaluators.judges.offline.conversation import judged_question
from ragsieve.evaluators.records import RagInteraction

# The LlamaIndex instrumentor calls pydantic's deprecated ``.json()``; as an error (the suite's
# default) the instrumentor drops the LLM spans it was recording.
# The LangChain one calls a deprecated ``message.text()`` the same way.
pytestmark = [
    pytest.mark.filterwarnings(
        "ignore::pydantic.warnings.PydanticDeprecatedSince20:openinference.instrumentation.llama_index._handler"
    ),
    pytest.mark.filterwarnings(
        "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning:openinference.instrumentation._spans"
    ),
]

CHUNKS = {
    "rent": "A bike can be rented for up to 2 hours at a time; longer rides cost 1 euro per hour.",
    "lost": "A lost or stolen bike costs 400 euros unless it is reported within 24 hours.",
    "dock": "Return a rented bike at any dock; the app shows free docks in real time.",
}
# (typed turn, the engine's standalone rewrite, the answer): what the script replies.
TURNS = [
    ("How long can I rent a bike?", None, "Up to 2 hours at a time."),
    ("And if I lose it?", "What happens if I lose a rented bike?", "A lost bike costs 400 euros."),
    ("Where do I return it?", "Where do I return a rented bike?", "At any dock."),
]
REWRITES = {typed: rewrite for typed, rewrite, _ in TURNS if rewrite}
ANSWERS = {q: answer for typed, rewrite, answer in TURNS for q in (typed, rewrite) if q}


def _reply(prompt: str) -> str:
    """The script: asked to condense, the standalone form of the latest typed turn the prompt
    holds (a first turn is its own); else the answer to the last question the prompt asks."""
    if "standalone" in prompt.lower():
        typed = max((t for t, _, _ in TURNS), key=prompt.rfind)
        return REWRITES.get(typed, typed)
    asked = max(ANSWERS, key=prompt.rfind)
    return ANSWERS[asked]


class ScriptedCompletion(CustomLLM):
    """A completion-only model: chat engines write the conversation into one prompt string."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-completion", is_chat_model=False)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=_reply(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


class ScriptedChat(ScriptedCompletion):
    """A chat model: the engine hands it the conversation as messages."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-chat", is_chat_model=True)

    @llm_chat_callback()
    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        text = "\n".join(str(m.content) for m in messages)
        return ChatResponse(message=ChatMessage(role="assistant", content=_reply(text)))


@pytest.fixture(scope="module")
def recorded() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentors = [
        LlamaIndexInstrumentor(),
        HaystackInstrumentor(),
        DSPyInstrumentor(),
        LangChainInstrumentor(),
    ]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
    yield exporter
    for instrumentor in instrumentors:
        instrumentor.uninstrument()
    provider.shutdown()


def _turn_records(exporter: InMemorySpanExporter, ask: Any) -> list[RagInteraction]:
    """Each turn of the conversation asked through ``ask`` in one session, derived."""
    records = []
    with using_session("ride-1"):
        for typed, _, _ in TURNS:
            exporter.clear()
            ask(typed)
            spans = [tf.from_readable(s) for s in exporter.get_finished_spans()]
            rec = derive(spans)
            assert rec is not None
            records.append(rec)
    return records


def _assert_conversation(records: list[RagInteraction], *, condensed: bool, family: str) -> None:
    assert families.summary(records[-1]) == families.ROWS[family].cells()
    for n, (rec, (typed, rewrite, answer)) in enumerate(zip(records, TURNS, strict=True)):
        asked = judged_question(rec)
        assert (rec.query, rec.answer, rec.session_id) == (typed, answer, "ride-1")
        assert turn_number(rec) == n + 1
        assert [m.role for m in rec.chat_history] == ["user", "assistant"] * n
        assert [m.content for m in rec.chat_history[::2]] == [t for t, _, _ in TURNS[:n]]
        wanted = rewrite if condensed and rewrite else None
        assert (asked.text if asked.source == "rewrite" else None) == wanted, asked
        question = rewrite or typed
        best = max(CHUNKS, key=lambda k: sum(w in CHUNKS[k] for w in question.split()))
        assert any(CHUNKS[best] == d.content for d in rec.context), (best, rec.documents)


def _index() -> VectorStoreIndex:
    Settings.embed_model = MockEmbedding(embed_dim=8)
    docs = [Document(text=text, doc_id=key) for key, text in CHUNKS.items()]
    return VectorStoreIndex.from_documents(docs)


_CQ, _CPC, _CTX = (
    families.LLAMAINDEX_CONDENSE_QUESTION,
    families.LLAMAINDEX_CONDENSE_PLUS_CONTEXT,
    families.LLAMAINDEX_CONTEXT,
)
ENGINES = {
    "condense-question, completion model": (CondenseQuestionChatEngine, ScriptedCompletion, _CQ),
    "condense-question, chat model": (CondenseQuestionChatEngine, ScriptedChat, _CQ),
    "condense-plus-context, completion model": (
        CondensePlusContextChatEngine,
        ScriptedCompletion,
        _CPC,
    ),
    "condense-plus-context, chat model": (CondensePlusContextChatEngine, ScriptedChat, _CPC),
    "context, completion model": (ContextChatEngine, ScriptedCompletion, _CTX),
    "context, chat model": (ContextChatEngine, ScriptedChat, _CTX),
}


@pytest.mark.parametrize("name", list(ENGINES))
def test_llamaindex_chat_engines(recorded: InMemorySpanExporter, name: str) -> None:
    engine_type, llm_type, family = ENGINES[name]
    Settings.llm = llm_type()
    index = _index()
    memory = ChatMemoryBuffer.from_defaults()
    retriever = index.as_retriever(similarity_top_k=3)
    if engine_type is CondenseQuestionChatEngine:
        engine: Any = CondenseQuestionChatEngine.from_defaults(
            query_engine=index.as_query_engine(similarity_top_k=3), memory=memory
        )
    else:
        engine = engine_type.from_defaults(retriever=retriever, memory=memory)
    records = _turn_records(recorded, engine.chat)
    _assert_conversation(records, condensed=engine_type is not ContextChatEngine, family=family)
    if engine_type is CondenseQuestionChatEngine:
        # Its answering call is given the rewrite alone: the trace says so.
        assert [r.judged_question_source for r in records[1:]] == ["rewrite", "rewrite"]


@pytest.mark.parametrize("mode", ["condense_plus_context", "condense_question", "context"])
def test_llamaindex_as_chat_engine(recorded: InMemorySpanExporter, mode: str) -> None:
    """The one-line way in, ``index.as_chat_engine(chat_mode=...)``, over a chat model whose
    retriever returns nodes with their similarity scores: the same engines, read the same."""
    family = {"condense_plus_context": _CPC, "condense_question": _CQ, "context": _CTX}[mode]
    index = _index()
    engine = index.as_chat_engine(chat_mode=mode, llm=ScriptedChat(), similarity_top_k=3)
    records = _turn_records(recorded, engine.chat)
    _assert_conversation(records, condensed=mode != "context", family=family)
    assert all(d.score is not None for r in records for d in r.documents)


@component
class ScriptedGenerator:
    """A Haystack generator component answering from the script (Haystack ships no mock LLM)."""

    @component.output_types(replies=list[str], meta=list[dict[str, Any]])
    def run(self, prompt: str) -> dict[str, Any]:
        return {"replies": [_reply(prompt)], "meta": [{"model": "scripted-haystack"}]}


REPHRASE = (
    "Rewrite the question as a standalone question.\nConversation:\n{{history}}\n"
    "Question: {{query}}\nStandalone question:"
)
ANSWER = (
    "Answer from the context.\nContext:\n{% for d in documents %}{{ d.content }}\n{% endfor %}"
    "Conversation:\n{{history}}\nQuestion: {{query}}\nAnswer:"
)


def _haystack_pipeline() -> Pipeline:
    store = InMemoryDocumentStore()
    store.write_documents([HaystackDocument(content=t, id=k) for k, t in CHUNKS.items()])
    pipe = Pipeline()
    pipe.add_component("rephrase_prompt", PromptBuilder(REPHRASE, required_variables="*"))
    pipe.add_component("rephrase_llm", ScriptedGenerator())
    pipe.add_component("list_to_str_adapter", OutputAdapter("{{ replies[0] }}", output_type=str))
    pipe.add_component("retriever", InMemoryBM25Retriever(store, top_k=3))
    pipe.add_component("prompt_builder", PromptBuilder(ANSWER, required_variables="*"))
    pipe.add_component("llm", ScriptedGenerator())
    pipe.connect("rephrase_prompt.prompt", "rephrase_llm.prompt")
    pipe.connect("rephrase_llm.replies", "list_to_str_adapter")
    pipe.connect("list_to_str_adapter", "retriever.query")
    pipe.connect("retriever.documents", "prompt_builder.documents")
    pipe.connect("prompt_builder.prompt", "llm.prompt")
    return pipe


@pytest.mark.parametrize("extra_outputs", [False, True], ids=["cookbook outputs", "extra outputs"])
def test_haystack_rephrase_pipeline(recorded: InMemorySpanExporter, extra_outputs: bool) -> None:
    pipe = _haystack_pipeline()
    said: list[tuple[str, str]] = []
    include = {"retriever", "list_to_str_adapter"} if extra_outputs else set()

    def ask(typed: str) -> None:
        history = "\n".join(f"user: {q}\nassistant: {a}" for q, a in said)
        inputs = {"query": typed, "history": history or "(none)"}
        out = pipe.run(
            {"rephrase_prompt": inputs, "prompt_builder": inputs}, include_outputs_from=include
        )
        said.append((typed, out["llm"]["replies"][0]))

    records = _turn_records(recorded, ask)
    for rec, (_typed, _rewrite, answer) in zip(records, TURNS, strict=True):
        assert (rec.answer, rec.answer_source) == (answer, "generation_output")
        assert rec.context, "the answering call's chunks reached the record"
    _assert_conversation(records, condensed=True, family=families.HAYSTACK_REPHRASE)


class _Answer(dspy.Signature):
    """Answer the question from the context."""

    context: list[str] = dspy.InputField()
    history: dspy.History = dspy.InputField()
    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


class _ChatRAG(dspy.Module):
    def __init__(self) -> None:
        super().__init__()
        self.retrieve = dspy.Retrieve(k=3)
        self.generate = dspy.Predict(_Answer)

    def forward(self, question: str, history: dspy.History) -> dspy.Prediction:
        passages = self.retrieve(question).passages
        return self.generate(context=passages, history=history, question=question)


def _passages(query: str, k: int | None = None, **_: Any) -> list[dspy.Prediction]:
    return [dspy.Prediction(long_text=text) for text in CHUNKS.values()][:k]


def test_dspy_program_with_history(recorded: InMemorySpanExporter) -> None:
    lm = DummyLM([{"answer": answer} for _, _, answer in TURNS])
    program = _ChatRAG()
    said: list[dict[str, str]] = []

    def ask(typed: str) -> None:
        with dspy.context(lm=lm, rm=_passages):
            reply = program(question=typed, history=dspy.History(messages=list(said)))
        said.append({"question": typed, "answer": reply.answer})

    records = _turn_records(recorded, ask)
    # DSPy frames each turn in field markers ("[[ ## question ## ]]"): the history is the words.
    assert [m.content for m in records[-1].chat_history] == [
        text for typed, _, answer in TURNS[:2] for text in (typed, answer)
    ]
    assert all(r.judged_question_source == "typed" for r in records)
    _assert_conversation(records, condensed=False, family=families.DSPY_HISTORY)


class _GraphState(MessagesState):
    question: str
    context: str


def _langgraph_app() -> Any:
    """A LangGraph conversational RAG graph: condense the conversation into a standalone
    question, retrieve with it, answer from the chunks with the conversation as messages."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [LangChainDocument(page_content=t, id=k) for k, t in CHUNKS.items()], ids=list(CHUNKS)
    )
    retriever = store.as_retriever(search_kwargs={"k": 3})
    replies = [AIMessage(text) for typed, rw, answer in TURNS for text in (rw or typed, answer)]
    llm = GenericFakeChatModel(messages=iter(replies))
    condense = ChatPromptTemplate.from_messages(
        [
            ("system", "Rewrite the last question as a standalone question."),
            MessagesPlaceholder("messages"),
        ]
    )
    answer = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context:\n{context}"), MessagesPlaceholder("messages")]
    )

    def rewrite(state: _GraphState) -> dict[str, Any]:
        return {"question": (condense | llm).invoke({"messages": state["messages"]}).content}

    def retrieve(state: _GraphState) -> dict[str, Any]:
        docs = retriever.invoke(state["question"])
        return {"context": "\n\n".join(d.page_content for d in docs)}

    def generate(state: _GraphState) -> dict[str, Any]:
        reply = (answer | llm).invoke({"messages": state["messages"], "context": state["context"]})
        return {"messages": [reply]}

    graph = StateGraph(_GraphState)
    for node in (rewrite, retrieve, generate):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "rewrite")
    graph.add_edge("rewrite", "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", END)
    return graph.compile()


def test_langgraph_conversational_rag(recorded: InMemorySpanExporter) -> None:
    app = _langgraph_app()
    messages: list[AnyMessage] = []

    def ask(typed: str) -> None:
        out = app.invoke({"messages": [*messages, HumanMessage(typed)]})
        messages[:] = out["messages"]

    records = _turn_records(recorded, ask)
    # The typed turn is the graph input's last human message, not the retriever's rewrite.
    assert {r.query_source for r in records} == {"root_messages"}
    _assert_conversation(records, condensed=True, family=families.LANGGRAPH_CONDENSE)


def _vector_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [LangChainDocument(page_content=t, id=k) for k, t in CHUNKS.items()], ids=list(CHUNKS)
    )
    return store


# Still the documented way to keep a chain's history, though LangChain now points to LangGraph.
@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
@pytest.mark.filterwarnings("ignore:The class `InMemoryChatMessageHistory` was deprecated")
def test_langchain_history_aware_retrieval_chain(recorded: InMemorySpanExporter) -> None:
    replies = [text for typed, rw, answer in TURNS for text in ([rw] if rw else []) + [answer]]
    llm = GenericFakeChatModel(messages=iter([AIMessage(t) for t in replies]))
    condense = ChatPromptTemplate.from_messages(
        [
            ("system", "Given the chat history, write the latest question standalone."),
            MessagesPlaceholder("chat_history"),
            ("human", "{input}"),
        ]
    )
    answer = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer from the context:\n{context}"),
            MessagesPlaceholder("chat_history"),
            ("human", "{input}"),
        ]
    )
    retriever = create_history_aware_retriever(
        llm, _vector_store().as_retriever(search_kwargs={"k": 3}), condense
    )
    chain = create_retrieval_chain(retriever, create_stuff_documents_chain(llm, answer))
    histories: dict[str, InMemoryChatMessageHistory] = {}
    chat = RunnableWithMessageHistory(
        chain,
        lambda sid: histories.setdefault(sid, InMemoryChatMessageHistory()),
        input_messages_key="input",
        history_messages_key="chat_history",
        output_messages_key="answer",
    )

    def ask(typed: str) -> None:
        chat.invoke({"input": typed}, config={"configurable": {"session_id": "ride-1"}})

    records = _turn_records(recorded, ask)
    _assert_conversation(records, condensed=True, family=families.LANGCHAIN_HISTORY_AWARE)


def _lcel_chain() -> Any:
    """LangChain's plain LCEL RAG chain with the conversation in a ``MessagesPlaceholder``: the
    retriever searches with the typed turn, the model sees the history as messages."""
    replies = [AIMessage(answer) for _, _, answer in TURNS]
    llm = GenericFakeChatModel(messages=iter(replies))
    retriever = _vector_store().as_retriever(search_kwargs={"k": 3})
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer from the context:\n{context}"),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )

    def joined(docs: list[LangChainDocument]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    context = itemgetter("question") | retriever | RunnableLambda(joined)
    inputs = {"context": context, "question": itemgetter("question")}
    return (
        RunnablePassthrough.assign(**inputs)  # type: ignore[arg-type]
        | prompt
        | llm
        | StrOutputParser()
    )


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
@pytest.mark.filterwarnings("ignore:The class `InMemoryChatMessageHistory` was deprecated")
@pytest.mark.parametrize("kept_by", ["the app", "RunnableWithMessageHistory"])
def test_langchain_lcel_chain_with_messages_placeholder(
    recorded: InMemorySpanExporter, kept_by: str
) -> None:
    chain = _lcel_chain()
    said: list[AnyMessage] = []
    histories: dict[str, InMemoryChatMessageHistory] = {}
    kept = RunnableWithMessageHistory(
        chain,
        lambda sid: histories.setdefault(sid, InMemoryChatMessageHistory()),
        input_messages_key="question",
        history_messages_key="history",
    )

    def ask(typed: str) -> None:
        if kept_by == "the app":
            answer = chain.invoke({"question": typed, "history": list(said)})
            said.extend([HumanMessage(typed), AIMessage(answer)])
        else:
            kept.invoke({"question": typed}, config={"configurable": {"session_id": "ride-1"}})

    records = _turn_records(recorded, ask)
    assert {r.judged_question_source for r in records} == {"typed"}
    _assert_conversation(records, condensed=False, family=families.LANGCHAIN_LCEL_HISTORY)
