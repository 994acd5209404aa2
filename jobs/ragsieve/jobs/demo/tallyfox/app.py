"""The Tallyfox demo RAG app: answers queries with OpenInference spans and logs what it planted."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from opentelemetry.trace import TracerProvider

from ragsieve.collector.instrument import (
    instrument,
    llm_span,
    rag_span,
    reranker_span,
    retriever_span,
)
from ragsieve.jobs.demo.tallyfox import failures
from ragsieve.jobs.demo.tallyfox.generate import (
    ExtractiveGenerator,
    Generation,
    OpenAIGenerator,
    build_messages,
)
from ragsieve.jobs.demo.tallyfox.kb import Fact, KnowledgeBase, load_kb
from ragsieve.jobs.demo.tallyfox.retrieval import Hit, HybridRetriever, Reranker
from ragsieve.jobs.demo.tallyfox.traffic import OUT_OF_CORPUS, Query, generate_traffic

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PlantedRecord:
    """The app's own log line for one query (never sent in spans)."""

    trace_id: str
    session_id: str
    query: str
    lang: str
    variant: str
    kind: str | None  # planted failure kind, None for clean traffic
    expected_root_cause: str | None
    fact_key: str | None  # None: out-of-corpus question
    gold_chunk_ids: tuple[str, ...]
    context_chunk_ids: tuple[str, ...]
    answer: str
    organic_failure: str | None = None  # a clean query the pipeline itself got wrong

    @property
    def is_clean(self) -> bool:
        """Neither planted nor an organic failure: flagging it is a false positive."""
        return self.kind is None and self.organic_failure is None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (one JSONL line)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlantedRecord:
        """Rebuild a record from :meth:`to_json` output."""
        data = dict(data)
        data["gold_chunk_ids"] = tuple(data["gold_chunk_ids"])
        data["context_chunk_ids"] = tuple(data["context_chunk_ids"])
        return cls(**data)


def _docs(hits: Sequence[Any]) -> list[dict[str, Any]]:
    return [
        {"id": h.chunk.id, "content": h.chunk.text, "score": h.score, "metadata": h.chunk.metadata}
        for h in hits
    ]


class DemoApp:
    """Retrieve (BM25 + dense, RRF) -> rerank -> generate, with planted failures on request."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        kb: KnowledgeBase | None = None,
        candidates: int = 8,
        top_k: int = 4,
        rerank: bool = True,
        llm_base_url: str | None = None,
        llm_model: str = "gpt-4o-mini",
        seed: int = 0,
        log_path: Path | None = None,
    ) -> None:
        if not 1 <= top_k <= candidates:
            raise ValueError(f"need 1 <= top_k ({top_k}) <= candidates ({candidates})")
        self.kb = kb or load_kb()
        self.retriever = HybridRetriever(self.kb)
        self.reranker = Reranker(self.retriever.encoder) if rerank else None
        self.generator: ExtractiveGenerator | OpenAIGenerator = (
            OpenAIGenerator(llm_base_url, model=llm_model)
            if llm_base_url
            else ExtractiveGenerator(self.retriever.encoder, self.kb)
        )
        self.provider, self.candidates, self.top_k, self.seed = (
            tracer_provider,
            candidates,
            top_k,
            seed,
        )
        self.log_path = log_path
        self.records: list[PlantedRecord] = []

    def warm(self, queries: Sequence[Query]) -> None:
        """Encode the query texts in one batch (much cheaper than one encoder call per query)."""
        self.retriever.encoder.vectors([q.text for q in queries])

    def answer(self, q: Query) -> PlantedRecord:
        """Answer one query, emitting CHAIN -> RETRIEVER -> RERANKER -> LLM spans."""
        rng = random.Random(f"{self.seed}:{q.index}")
        fact = self.kb.facts[q.fact_key] if q.fact_key else None
        exclude = (
            failures.exclude_topic(fact.topic) if q.planted == "retrieval_miss" and fact else None
        )
        tp = self.provider
        with rag_span(
            q.text, q.session_id, q.user_id, {"app": "tallyfox-help"}, tracer_provider=tp
        ) as root:
            with retriever_span(q.text, tracer_provider=tp) as r:
                hits = self.retriever.search(q.text, self.candidates, exclude=exclude)
                r.record(_docs(hits))
            context = self._rerank(q.text, hits)
            messages = build_messages(q.text, context)
            with llm_span(
                self.generator.model,
                messages,
                self.generator.provider,
                invocation_parameters={"temperature": 0},
                tracer_provider=tp,
            ) as llm:
                gen = self.generator.generate(q.text, context, force=q.planted == "retrieval_miss")
                answer = self._plant(q, gen, context, rng)
                llm.set("llm.model_name", gen.model)
                llm.record(
                    answer,
                    prompt_tokens=gen.prompt_tokens,
                    completion_tokens=gen.completion_tokens,
                    finish_reason="stop",
                )
            root.record(answer)
            trace_id = root.trace_id
        record = self._record(q, trace_id, fact, context, answer, gen)
        self.records.append(record)
        if self.log_path is not None:
            with self.log_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")
        return record

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        """The top-k hits, reranked (inside a RERANKER span) when the app has a reranker."""
        if self.reranker is None:
            return hits[: self.top_k]
        with reranker_span(
            query,
            _docs(hits),
            model_name=self.reranker.model_name,
            top_k=self.top_k,
            tracer_provider=self.provider,
        ) as rr:
            context = self.reranker.rerank(query, hits, self.top_k)
            rr.record(_docs(context))
        return context

    def _record(
        self,
        q: Query,
        trace_id: str,
        fact: Fact | None,
        context: Sequence[Any],
        answer: str,
        gen: Generation,
    ) -> PlantedRecord:
        """What the app did for ``q``: the ground truth the scorecard compares flags with."""
        ctx_ids = tuple(h.chunk.id for h in context)
        return PlantedRecord(
            trace_id=trace_id,
            session_id=q.session_id,
            query=q.text,
            lang=q.lang,
            variant=q.variant,
            kind=q.planted,
            expected_root_cause=failures.ROOT_CAUSE.get(q.planted or ""),
            fact_key=q.fact_key,
            gold_chunk_ids=tuple(sorted(fact.chunk_ids)) if fact else (),
            context_chunk_ids=ctx_ids,
            answer=answer,
            organic_failure=None if q.planted else self._organic(q, gen, ctx_ids),
        )

    def _plant(self, q: Query, gen: Generation, context: Sequence[Any], rng: random.Random) -> str:
        kind, fact = q.planted, self.kb.facts.get(q.fact_key or "")
        if kind is None or kind == "retrieval_miss":
            return gen.answer
        if kind == "missing_abstention":
            return OUT_OF_CORPUS[q.ooc_id or 0][q.lang][1]
        if kind == "off_topic":
            return failures.off_topic(q.lang, rng)
        if fact is None:
            raise ValueError(f"planted kind {kind!r} needs an in-corpus query, got {q.text!r}")
        if kind == "wrong_chunk":
            avoid = [h.chunk.id for h in context]
            return failures.wrong_chunk_sentence(self.kb, fact.topic, q.lang, rng, avoid)[0]
        gold = self.kb.answer_sentence(fact, q.lang)
        if kind == "changed_numbers":
            base = gen.answer if failures.has_number(gen.answer) and not gen.abstained else gold
            return failures.change_numbers(base, " ".join(h.chunk.text for h in context), rng)
        if kind == "unsupported_claim":
            return failures.unsupported_claim(
                gold if gen.abstained else gen.answer, fact.topic, q.lang, rng
            )
        raise ValueError(f"unknown planted failure kind {kind!r}")

    def _organic(self, q: Query, gen: Generation, ctx_ids: Sequence[str]) -> str | None:
        if q.fact_key is None:
            return None if gen.abstained else "answered_out_of_corpus"
        fact = self.kb.facts[q.fact_key]
        if not fact.chunk_ids & set(ctx_ids):
            return "retrieval_miss"
        if gen.abstained:
            return "abstained"
        golds = {self.kb.chunk(cid).sentences[i] for cid, i in fact.answers.values()}
        if isinstance(self.generator, ExtractiveGenerator) and gen.answer not in golds:
            return "wrong_sentence"
        return None


def run_traffic(
    endpoint: str,
    n_queries: int = 300,
    *,
    seed: int = 0,
    failure_share: float = 0.3,
    llm_base_url: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    log_path: Path | None = None,
    service_name: str = "tallyfox-help-demo",
) -> list[PlantedRecord]:
    """Send the demo traffic through the real OTLP exporter to ``endpoint``; return the log."""
    provider = instrument(
        service_name, endpoint, set_global=False, flush_on_exit=False, project_name="ragsieve-demo"
    )
    try:
        app = DemoApp(
            tracer_provider=provider, llm_base_url=llm_base_url, seed=seed, log_path=log_path
        )
        queries = generate_traffic(app.kb, n_queries, seed=seed, failure_share=failure_share)
        app.warm(queries)
        for done, q in enumerate(queries, 1):
            app.answer(q)
            if progress is not None:
                progress(done, len(queries))
        if not provider.force_flush(timeout_millis=60_000):
            log.warning("span export did not finish within 60 s; some demo traces may be missing")
        return app.records
    finally:
        provider.shutdown()
