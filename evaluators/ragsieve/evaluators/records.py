"""The records every layer shares: interactions, verdicts, feedback and golden cases.

These are frozen pydantic models because they cross boundaries (store rows, JSONL files, Phoenix
annotations). Field names are the ones the CLI prints: ``query`` for the question and
``documents`` for the chunks that fed the generation step.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ragsieve.evaluators.tools.limits import (
    MAX_ANSWER_CHARS,
    MAX_CHUNK_CHARS,
    MAX_QUESTION_CHARS,
    clip_fields,
)
from ragsieve.evaluators.tools.lookalike import matching_text

JSONScalar = str | int | float | bool

Stage = Literal["retrieval", "rerank", "genai_retrieval", "prompt"]
Status = Literal["ok", "error", "degraded", "cancelled", "incomplete"]
Completeness = Literal["complete", "generation_only", "no_root", "missing_generation", "timed_out"]
Convention = Literal[
    "openinference", "genai", "genai_legacy", "openllmetry", "langfuse", "mixed", "unknown"
]


def utcnow() -> datetime:
    """Return the current time as a tz-aware UTC datetime."""
    return datetime.now(UTC)


def normalize_text(text: str) -> str:
    """Fold case, accents, whitespace and look-alikes so that trivially different strings
    compare equal: format characters removed (a zero-width space joins, never splits), NFKC
    before casefold, confusable letters read as Latin (``tools.lookalike.matching_text``)."""
    folded = unicodedata.normalize("NFKD", matching_text(text).casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    folded = re.sub(r"[^\w\s]", " ", folded)
    return " ".join(folded.split())


def content_chunk_id(content: str) -> str:
    """Stable id for a chunk that arrived without one: ``sha256:`` + 32 hex of its normal form."""
    folded = " ".join(unicodedata.normalize("NFC", content).split())
    digest = hashlib.sha256(folded.encode("utf-8")).hexdigest()
    return f"sha256:{digest[:32]}"


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RetrievedDocument(_Record):
    """One chunk as a retrieval stage reported it."""

    id: str = Field(description="Native id, metadata id, or sha256:<hex> of the content.")
    content: str | None = None
    score: float | None = None
    rank: int = Field(ge=0, description="Position in the stage's output, 0-based.")
    in_prompt: bool | None = Field(
        default=None, description="Reached the generation prompt; None when the prompt is unknown."
    )
    stage: Stage = "retrieval"
    id_source: Literal["native", "metadata", "content_hash", "position"] = "native"
    document_key: str | None = None
    metadata: Mapping[str, Any] = Field(default_factory=dict)
    span_id: str | None = None
    retriever_name: str | None = None
    retrieval_score: float | None = None
    rerank_score: float | None = None
    possibly_truncated: bool = False

    @model_validator(mode="before")
    @classmethod
    def _clip(cls, data: Any) -> Any:  # a chunk is cut to what a judge reads (evaluators.limits)
        return clip_fields(data, {"content": MAX_CHUNK_CHARS})


class RetrievalStage(_Record):
    """The ordered output of one retriever or reranker span."""

    stage: Stage
    span_id: str
    name: str
    query: str | None = None
    documents: tuple[RetrievedDocument, ...] = ()


class Message(_Record):
    """One chat message, text only."""

    role: str
    content: str
    name: str | None = None


class Prompt(_Record):
    """What the generation step was given."""

    template: str | None = None
    template_variables: Mapping[str, Any] | None = None
    template_version: str | None = None
    system: str | None = None
    messages: tuple[Message, ...] = ()
    text: str | None = None


class TokenUsage(_Record):
    """Token counts of one or more LLM calls."""

    prompt: int | None = None
    completion: int | None = None
    total: int | None = None


class SpanError(_Record):
    """A span that ended in error."""

    span_id: str
    span_name: str
    role: str | None = None
    type: str | None = None
    message: str | None = None


class Feedback(_Record):
    """A person's (or an app's) judgement of a trace or a span."""

    trace_id: str | None = None
    span_id: str | None = None
    score: float | None = None
    label: str | None = None
    comment: str | None = None
    source: str = "api"
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("trace_id", "span_id")
    @classmethod
    def _hex_id(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return None
        size = 32 if info.field_name == "trace_id" else 16
        low = v.strip().lower()
        if len(low) != size or any(c not in "0123456789abcdef" for c in low):
            raise ValueError(f"must be {size} hex characters (got {v[:40]!r})")
        return low

    @model_validator(mode="after")
    def _needs_target(self) -> Feedback:
        if not self.trace_id and not self.span_id:
            raise ValueError("feedback needs trace_id or span_id")
        if self.score is None and self.label is None:
            raise ValueError("feedback needs score or label")
        return self

    @property
    def polarity(self) -> int:
        """-1 negative, 0 neutral, +1 positive, read from the label first, then the score."""
        if self.label:
            low = self.label.strip().lower()
            if low in {"thumbs_down", "down", "negative", "bad", "no", "wrong", "-1", "0"}:
                return -1
            if low in {"thumbs_up", "up", "positive", "good", "yes", "correct", "1", "+1"}:
                return 1
        if self.score is not None:
            if self.score < 0.5:
                return -1
            if self.score > 0.5:
                return 1
        return 0


class RagInteraction(_Record):
    """One retrieval + generation turn, derived from one trace (SPAN_SPEC §3)."""

    trace_id: str = Field(description="32 lowercase hex; the key.")
    span_id: str = Field(description="Root span id: where annotations attach.")
    revision: int = 1
    project: str | None = None
    service_name: str | None = None
    environment: str | None = None
    convention: Convention = "unknown"
    instrumentation: tuple[str, ...] = ()

    session_id: str | None = None
    user_id: str | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = Field(default_factory=dict)
    attributes: Mapping[str, JSONScalar] = Field(
        default_factory=dict, description="Flat attributes used for stratified sampling."
    )

    started_at: datetime
    ended_at: datetime | None = None
    latency_ms: float | None = None
    latency_is_estimate: bool = False
    retrieval_latency_ms: float | None = None
    generation_latency_ms: float | None = None
    ttft_ms: float | None = None
    streaming: bool = False

    query: str | None = None
    query_source: str = "none"
    retrieval_queries: tuple[str, ...] = ()
    chat_history: tuple[Message, ...] = ()
    judged_question_source: Literal["rewrite", "typed", "unknown"] = Field(
        default="typed",
        description="Which question the answering call was given: the app's rewrite (a condense"
        " step), the typed turn, or 'unknown' when the trace does not show it.",
    )
    documents: tuple[RetrievedDocument, ...] = Field(
        default=(), description="The chunks of the stage that fed the generation, in rank order."
    )
    stages: tuple[RetrievalStage, ...] = ()
    context_source: str = "none"
    prompt: Prompt = Field(default_factory=Prompt)
    answer: str | None = None
    answer_source: str = "none"
    finish_reason: str | None = None

    model: str | None = None
    request_model: str | None = None
    provider: str | None = None
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float | None = None
    llm_call_count: int = 0
    generation_span_id: str | None = None

    status: Status = "ok"
    errors: tuple[SpanError, ...] = ()
    feedback: tuple[Feedback, ...] = ()
    feedback_polarity: int | None = None

    completeness: Completeness = "complete"
    content_missing: bool = False
    content_redacted: bool = False
    attributes_dropped: bool = False
    possibly_truncated: bool = False
    kind_inferred: bool = False
    multi_pipeline: bool = False
    late_spans: int = 0
    span_count: int = 0

    @model_validator(mode="before")
    @classmethod
    def _clip(cls, data: Any) -> Any:  # what a judge reads is bounded (evaluators.limits)
        return clip_fields(data, {"query": MAX_QUESTION_CHARS, "answer": MAX_ANSWER_CHARS})

    @property
    def context(self) -> tuple[RetrievedDocument, ...]:
        """Chunks that reached the prompt (all documents when that is unknown)."""
        known = [d for d in self.documents if d.in_prompt is not None]
        if not known:
            return self.documents
        return tuple(d for d in self.documents if d.in_prompt)

    @property
    def retrieved_ids(self) -> list[str]:
        """Chunk ids in rank order, as offline evaluation reads them."""
        return [d.id for d in sorted(self.context, key=lambda d: d.rank)]


EvalLabel = str


class EvalResult(_Record):
    """A judge's verdict, shaped like a Phoenix span annotation."""

    trace_id: str
    span_id: str
    evaluator: str = Field(description="Registry name, e.g. 'faithfulness'.")
    label: EvalLabel = Field(description="e.g. faithful | unfaithful | abstained | error | skipped")
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    explanation: str | None = None
    judge_model: str | None = None
    judge_version: str = "1"
    prompt_version: str = ""
    annotator_kind: Literal["LLM", "CODE", "HUMAN"] = "CODE"
    metadata: Mapping[str, Any] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("score")
    @classmethod
    def _no_nan(cls, v: float | None) -> float | None:
        if v is not None and v != v:
            raise ValueError("score must not be NaN; use None with label='error'")
        return v

    @property
    def is_error(self) -> bool:
        """True when the judge could not decide."""
        return self.label == "error"


GOLDEN_ALIASES: Mapping[str, str] = {
    "pregunta": "query",
    "question": "query",
    "chunks_relevantes": "relevant_chunks",
    "gold_chunk_ids": "relevant_chunks",
    "respuesta_ideal": "reference_answer",
    "gold_answer": "reference_answer",
    "categoria": "category",
}


GoldenRole = Literal["dev", "regression", "holdout"]
"""What a golden case is for: tuning, the CI gate, or the locked release check."""


class GoldenCase(_Record):
    """One golden-set case; no relevant chunk means the system must abstain."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    query: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    relevant_chunks: Mapping[str, int] = Field(default_factory=dict)
    reference_answer: str | None = Field(None, max_length=MAX_ANSWER_CHARS)
    category: str | None = None
    source: Literal["production", "synthetic", "manual"] = "manual"
    reviewed: bool = False
    created_at: datetime | None = None
    metadata: Mapping[str, Any] = Field(default_factory=dict)
    role: GoldenRole | None = None
    """``dev`` (tune on it), ``regression`` (the CI gate) or ``holdout`` (rare, aggregate-only
    looks); None until ``ragsieve golden split`` assigns one (see ``evaluators.roles``)."""
    chat_history: tuple[Message, ...] = ()
    """A follow-up's conversation before ``query`` (user and assistant turns, oldest first);
    ``eval`` hands it to a retriever that takes ``history``."""
    standalone_query: str | None = None
    """A follow-up's meaning as one question (the app's rewrite, reviewed); ``eval`` searches
    with it when the retriever takes no ``history``."""

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        out: dict[str, Any] = {}
        for key, value in data.items():
            out[GOLDEN_ALIASES.get(key, key)] = value
        if "id" not in out and isinstance(out.get("query"), str):
            key = normalize_text(out["query"])
            turns = out.get("chat_history") or ()
            if turns:  # "and on Saturdays?" of two conversations: two cases
                said = [str(m.get("content", "")) for m in turns if isinstance(m, Mapping)]
                key += "\n" + normalize_text(" ".join(said))
            out["id"] = "q_" + hashlib.sha256(key.encode()).hexdigest()[:12]
        rel = out.get("relevant_chunks")
        if isinstance(rel, list | tuple):
            out["relevant_chunks"] = {str(cid): 1 for cid in rel}
        elif rel is None:
            out["relevant_chunks"] = {}
        return out

    @field_validator("relevant_chunks")
    @classmethod
    def _grades(cls, v: Mapping[str, int]) -> Mapping[str, int]:
        for cid, grade in v.items():
            if not 0 <= grade <= 3:
                raise ValueError(f"grade for {cid!r} must be 0..3 (got {grade})")
        return v

    @property
    def is_no_answer(self) -> bool:
        """True when no chunk has a grade above 0: the system should abstain."""
        return not any(g > 0 for g in self.relevant_chunks.values())
