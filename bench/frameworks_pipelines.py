"""The pipelines of the frameworks benchmark, each built with the framework's own classes.

The model and the retriever are the frameworks' extension points (LlamaIndex ``CustomLLM`` and
``BaseRetriever``, a Haystack ``@component``, LangChain ``BaseChatModel`` and ``BaseRetriever``,
a DSPy ``LM`` and retrieval function) answering from a :class:`Script` that knows the turn being
asked: a condense prompt gets the turn's standalone rewrite, any other prompt the turn's answer,
and a retrieval the turn's chunks (``frameworks_traffic.retrieved``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dspy
from frameworks_traffic import CHUNKS, Turn, retrieved
from haystack import Document as HaystackDocument
from haystack import component


@dataclass
class Script:
    """What the scripted model and retriever answer for the turn being asked."""

    turn: Turn | None = None
    said: list[tuple[str, str]] = field(default_factory=list)

    def reply(self, prompt: str) -> str:
        assert self.turn is not None
        if "standalone" in prompt.lower():
            return self.turn.rewrite or self.turn.typed
        return self.turn.answer

    def chunks(self) -> list[tuple[str, str]]:
        assert self.turn is not None
        return [(key, CHUNKS[key]) for key in retrieved(self.turn)]


Ask = Callable[[str], None]


def _llamaindex(script: Script, engine: str, chat_model: bool) -> Ask:
    from llama_index.core.base.llms.types import ChatMessage, ChatResponse
    from llama_index.core.chat_engine import (
        CondensePlusContextChatEngine,
        CondenseQuestionChatEngine,
        ContextChatEngine,
    )
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
    from llama_index.core.memory import ChatMemoryBuffer
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    class Model(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted-local", is_chat_model=chat_model)

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
            return CompletionResponse(text=script.reply(prompt))

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
            raise NotImplementedError

        if chat_model:

            @llm_chat_callback()
            def chat(self, messages: Any, **kw: Any) -> ChatResponse:
                text = "\n".join(str(m.content) for m in messages)
                return ChatResponse(
                    message=ChatMessage(role="assistant", content=script.reply(text))
                )

    class Retriever(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [
                NodeWithScore(node=TextNode(id_=key, text=text), score=round(0.9 - 0.1 * i, 2))
                for i, (key, text) in enumerate(script.chunks())
            ]

    llm, retriever, memory = Model(), Retriever(), ChatMemoryBuffer.from_defaults()
    if engine == "condense_question":
        query_engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
        chat: Any = CondenseQuestionChatEngine.from_defaults(query_engine, memory=memory, llm=llm)
    elif engine == "condense_plus_context":
        chat = CondensePlusContextChatEngine.from_defaults(retriever, memory=memory, llm=llm)
    else:
        chat = ContextChatEngine.from_defaults(retriever, memory=memory, llm=llm)
    return lambda typed: chat.chat(typed) and None


@component
class ScriptedGenerator:
    """A Haystack generator answering from the script (defined at module level: the Haystack
    instrumentor wraps a component's class by its import path)."""

    def __init__(self, script: Script) -> None:
        self.script = script

    @component.output_types(replies=list[str], meta=list[dict[str, Any]])
    def run(self, prompt: str) -> dict[str, Any]:
        return {"replies": [self.script.reply(prompt)], "meta": [{"model": "scripted-local"}]}


@component
class ScriptedRetriever:
    """A Haystack retriever returning the script's chunks for the turn."""

    def __init__(self, script: Script) -> None:
        self.script = script

    @component.output_types(documents=list[HaystackDocument])
    def run(self, query: str) -> dict[str, Any]:
        docs = [
            HaystackDocument(id=key, content=text, score=round(0.9 - 0.1 * i, 2))
            for i, (key, text) in enumerate(self.script.chunks())
        ]
        return {"documents": docs}


def _haystack(script: Script) -> Ask:
    from haystack import Pipeline
    from haystack.components.builders import PromptBuilder
    from haystack.components.converters import OutputAdapter

    rephrase = (
        "Rewrite the question as a standalone question.\nConversation:\n{{history}}\n"
        "Question: {{query}}\nStandalone question:"
    )
    answer = (
        "Answer from the context.\nContext:\n{% for d in documents %}{{ d.content }}\n"
        "{% endfor %}Conversation:\n{{history}}\nQuestion: {{query}}\nAnswer:"
    )
    pipe = Pipeline()
    pipe.add_component("rephrase_prompt", PromptBuilder(rephrase, required_variables="*"))
    pipe.add_component("rephrase_llm", ScriptedGenerator(script))
    pipe.add_component("list_to_str_adapter", OutputAdapter("{{ replies[0] }}", output_type=str))
    pipe.add_component("retriever", ScriptedRetriever(script))
    pipe.add_component("prompt_builder", PromptBuilder(answer, required_variables="*"))
    pipe.add_component("llm", ScriptedGenerator(script))
    pipe.connect("rephrase_prompt.prompt", "rephrase_llm.prompt")
    pipe.connect("rephrase_llm.replies", "list_to_str_adapter")
    pipe.connect("list_to_str_adapter", "retriever.query")
    pipe.connect("retriever.documents", "prompt_builder.documents")
    pipe.connect("prompt_builder.prompt", "llm.prompt")

    def ask(typed: str) -> None:
        history = "\n".join(f"user: {q}\nassistant: {a}" for q, a in script.said) or "(none)"
        inputs = {"query": typed, "history": history}
        out = pipe.run(
            {"rephrase_prompt": inputs, "prompt_builder": inputs},
            include_outputs_from={"retriever", "list_to_str_adapter"},
        )
        script.said.append((typed, out["llm"]["replies"][0]))

    return ask


def _langgraph(script: Script) -> Ask:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.retrievers import BaseRetriever
    from langgraph.graph import END, START, MessagesState, StateGraph

    class Model(BaseChatModel):
        model_name: str = "scripted-chat"

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _generate(self, messages: list[BaseMessage], *a: Any, **kw: Any) -> ChatResult:
            text = "\n".join(str(m.content) for m in messages)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(script.reply(text)))])

    class Retriever(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [Document(page_content=t, id=k) for k, t in script.chunks()]

    llm, retriever = Model(), Retriever()
    condense = ChatPromptTemplate.from_messages(
        [
            ("system", "Rewrite the last question as a standalone question."),
            MessagesPlaceholder("messages"),
        ]
    )
    answer = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context:\n{context}"), MessagesPlaceholder("messages")]
    )

    class State(MessagesState):
        question: str
        context: str

    def rewrite(state: State) -> dict[str, Any]:
        return {"question": (condense | llm).invoke({"messages": state["messages"]}).content}

    def retrieve(state: State) -> dict[str, Any]:
        docs = retriever.invoke(state["question"])
        return {"context": "\n\n".join(d.page_content for d in docs)}

    def generate(state: State) -> dict[str, Any]:
        reply = (answer | llm).invoke({"messages": state["messages"], "context": state["context"]})
        return {"messages": [reply]}

    graph = StateGraph(State)
    for node in (rewrite, retrieve, generate):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "rewrite")
    graph.add_edge("rewrite", "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", END)
    app = graph.compile()
    messages: list[AnyMessage] = []

    def ask(typed: str) -> None:
        out = app.invoke({"messages": [*messages, HumanMessage(typed)]})
        messages[:] = out["messages"]

    return ask


def _dspy(script: Script) -> Ask:
    from dspy.utils.dummies import DummyLM

    class Answer(dspy.Signature):
        """Answer the question from the context."""

        context: list[str] = dspy.InputField()
        history: dspy.History = dspy.InputField()
        question: str = dspy.InputField()
        answer: str = dspy.OutputField()

    class ChatRAG(dspy.Module):
        def __init__(self) -> None:
            super().__init__()
            self.retrieve = dspy.Retrieve(k=3)
            self.generate = dspy.Predict(Answer)

        def forward(self, question: str, history: dspy.History) -> dspy.Prediction:
            passages = self.retrieve(question).passages
            return self.generate(context=passages, history=history, question=question)

    def passages(query: str, k: int | None = None, **_: Any) -> list[dspy.Prediction]:
        return [dspy.Prediction(long_text=text) for _, text in script.chunks()][:k]

    program, said = ChatRAG(), []

    def ask(typed: str) -> None:
        assert script.turn is not None
        lm = DummyLM([{"answer": script.turn.answer}])
        with dspy.context(lm=lm, rm=passages):
            reply = program(question=typed, history=dspy.History(messages=list(said)))
        said.append({"question": typed, "answer": reply.answer})

    return ask


PIPELINES: dict[str, Callable[[Script], Ask]] = {
    "llamaindex CondenseQuestionChatEngine (completion)": lambda s: _llamaindex(
        s, "condense_question", chat_model=False
    ),
    "llamaindex CondensePlusContextChatEngine (completion)": lambda s: _llamaindex(
        s, "condense_plus_context", chat_model=False
    ),
    "llamaindex CondensePlusContextChatEngine (chat)": lambda s: _llamaindex(
        s, "condense_plus_context", chat_model=True
    ),
    "llamaindex ContextChatEngine (chat)": lambda s: _llamaindex(s, "context", chat_model=True),
    "haystack rephrase pipeline, extra outputs": _haystack,
    "langgraph condense/retrieve/answer": _langgraph,
    "dspy Retrieve + Predict + History": _dspy,
}

# The pipelines that make a standalone rewrite of a follow-up (the others judge the typed turn
# with its history).
CONDENSES = frozenset(PIPELINES) - {
    "llamaindex ContextChatEngine (chat)",
    "dspy Retrieve + Predict + History",
}
