"""LLM judges: versioned prompt -> OpenAI-compatible call -> validated verdict -> EvalResult."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from ragsieve.evaluators.embeddings import embed
from ragsieve.evaluators.errors import JudgeError
from ragsieve.evaluators.judges.cache import ResultCache, input_hash
from ragsieve.evaluators.judges.claims import find_injections
from ragsieve.evaluators.judges.context import context_precision
from ragsieve.evaluators.judges.llm import (
    LLMCallError,
    LLMClient,
    LLMConfig,
    model_family,
    parse_json_object,
)
from ragsieve.evaluators.judges.offline import chunk_texts
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.evaluators.redact import redact

log = logging.getLogger(__name__)
_warned_self_preference: set[tuple[str, str]] = set()


@lru_cache(maxsize=8)
def load_prompt(name: str) -> tuple[str, str]:
    """Return ``(template, prompt_version)`` of a packaged prompt; the version is its hash."""
    base = resources.files("ragsieve.evaluators.judges") / "prompts"
    text = (
        (base / "_preamble.md").read_text("utf-8") + "\n" + (base / f"{name}.md").read_text("utf-8")
    )
    return text, f"{name}@" + hashlib.sha256(text.encode()).hexdigest()[:12]


class _Claim(BaseModel):
    claim: str
    supported: bool
    evidence: str | None = None
    reason: str = ""


class FaithfulnessVerdict(BaseModel):
    """Structured reply of the faithfulness prompt."""

    reasoning: str
    abstained: bool = False
    claims: list[_Claim] = []


class AnswerRelevanceVerdict(BaseModel):
    """Structured reply of the answer-relevance prompt."""

    reasoning: str
    questions: list[str] = []
    noncommittal: bool = False


class _ChunkVerdict(BaseModel):
    index: int
    relevant: bool
    quote: str | None = None


class ContextRelevanceVerdict(BaseModel):
    """Structured reply of the context-relevance prompt."""

    reasoning: str
    chunks: list[_ChunkVerdict] = []


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


_PLACEHOLDER = re.compile(r"\{(question|context|answer|chunks|n_questions|fence)\}")
_MARKER = re.compile(r"<{3,}|>{3,}")
CACHE_FORMAT = 2  # bump when the cached payload changes shape


def fill(template: str, values: dict[str, str]) -> str:
    """Fill the known ``{placeholders}`` in ONE pass, so a ``{answer}`` inside traced text stays
    literal instead of receiving the answer."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def neutralise(text: str) -> tuple[str, int]:
    """Replace ``<<<``/``>>>`` runs in traced text with guillemets: they cannot pose as a fence."""
    return _MARKER.subn(lambda m: "\u00ab" if m.group(0)[0] == "<" else "\u00bb", text)


class LLMJudge:
    """Helper base: render the prompt, call the model (n runs), validate, score, cache."""

    name = ""
    prompt_name = ""
    verdict_model: type[BaseModel] = BaseModel

    def __init__(
        self, config: LLMConfig, *, cache_path: str | None = None, client: LLMClient | None = None
    ) -> None:
        self.config = config
        self.client = client or LLMClient(config)
        self.cache = ResultCache(cache_path) if cache_path else None
        self.template, self.prompt_version = load_prompt(self.prompt_name)
        self.version = f"llm-1:{self.prompt_version}:{config.model}:n{config.n_runs}"

    # -- metric-specific hooks -------------------------------------------------------------
    def skip_reason(self, x: RagInteraction) -> str | None:
        raise NotImplementedError

    def fields(self, x: RagInteraction) -> dict[str, str]:
        raise NotImplementedError

    def score(
        self, verdict: Any, x: RagInteraction, fields: dict[str, str]
    ) -> tuple[str, float | None, str, dict[str, Any]]:
        raise NotImplementedError

    # -- shared flow -----------------------------------------------------------------------
    def _result(
        self,
        x: RagInteraction,
        label: str,
        score: float | None,
        explanation: str,
        meta: dict[str, Any],
        usage: tuple[int, int] = (0, 0),
        cached: bool = False,
    ) -> EvalResult:
        return EvalResult(
            trace_id=x.trace_id,
            span_id=x.span_id,
            evaluator=self.name,
            label=label,
            score=None if score is None else round(min(1.0, max(0.0, score)), 4),
            explanation=explanation,
            judge_model=self.config.model,
            judge_version=self.version,
            prompt_version=self.prompt_version,
            annotator_kind="LLM",
            metadata=meta,
            prompt_tokens=usage[0],
            completion_tokens=usage[1],
            cost_usd=0.0 if cached else self.client.cost(*usage),
            cached=cached,
        )

    def _guard(self, x: RagInteraction, meta: dict[str, Any]) -> None:
        judge_fam, gen_fam = model_family(self.config.model), model_family(x.model)
        if judge_fam and judge_fam == gen_fam:
            meta["self_preference_risk"] = f"judge and generator are both {judge_fam} models"
            if (judge_fam, self.name) not in _warned_self_preference:
                _warned_self_preference.add((judge_fam, self.name))
                log.warning(
                    "%s: judge model %s is from the same family as the generator %s; "
                    "expect self-preference bias",
                    self.name,
                    self.config.model,
                    x.model,
                )

    def layout(self, sent: dict[str, str], fence: str) -> dict[str, str]:
        """Template values from the redacted, neutralised fields (hook for per-chunk fences)."""
        return sent

    def settings_digest(self) -> str:
        """Hash of every setting that can change a verdict for the same prompt and model."""
        c = self.config
        knobs = {
            "base_url": c.base_url.rstrip("/"),
            "n_runs": c.n_runs,
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
            "json_mode": c.json_mode,
            "redact_pii": c.redact_pii,
            "extra_pii_patterns": list(c.extra_pii_patterns),
        }
        return hashlib.sha256(json.dumps(knobs, sort_keys=True).encode()).hexdigest()[:16]

    def _sent_fields(self, raw: dict[str, str], meta: dict[str, Any]) -> dict[str, str]:
        """What leaves the machine: PII redacted (counted) and fence-like markers neutralised."""
        sent, redactions, neutralised = dict(raw), dict[str, int](), 0
        for k, v in raw.items():
            if self.config.redact_pii:
                v, counts = redact(v, self.config.extra_pii_patterns)
                for kind, n in counts.items():
                    redactions[kind] = redactions.get(kind, 0) + n
            sent[k], n_markers = neutralise(v)
            neutralised += n_markers
        if self.config.redact_pii:
            meta["pii_redactions"] = redactions
        if neutralised:
            meta["fence_markers_neutralised"] = neutralised
        return sent

    def _aggregate(
        self, runs: list[tuple[str, float | None, str, dict[str, Any]]]
    ) -> tuple[str, float | None, str, dict[str, Any]]:
        label, score, explanation, extra = runs[0]
        scores = [r[1] for r in runs if r[1] is not None]
        if len(runs) > 1 and scores:
            score = float(np.mean(scores))
            extra["run_scores"] = scores
            label = self.relabel(score, [r[0] for r in runs])
        return label, score, explanation, extra

    def _validate(self, text: str) -> BaseModel:
        try:
            return self.verdict_model.model_validate(parse_json_object(text))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise JudgeError(
                f"reply does not match the verdict schema: {err['loc']}: {err['msg']}"
            ) from exc

    async def evaluate(self, interaction: RagInteraction) -> list[EvalResult]:
        """Judge one interaction; any failure becomes ``label="error"`` (with the tokens spent).

        Only the validated verdicts and their token usage are cached; everything specific to the
        trace (PII counts, suspicious text, self-preference, per-chunk ids, scores) is recomputed
        from the current interaction, so a hit never carries another trace's data.
        """
        x = interaction
        meta: dict[str, Any] = {}
        usage = [0, 0]
        try:
            why = self.skip_reason(x)
            if why:
                return [self._result(x, "skipped", None, why, meta)]
            self._guard(x, meta)
            raw = self.fields(x)
            suspicious = [s for v in raw.values() for s in find_injections(v)]
            if suspicious:
                meta["suspicious_instructions"] = suspicious[:5]
            sent = self._sent_fields(raw, meta)
            key = input_hash(
                f"format={CACHE_FORMAT}",
                self.version,
                self.settings_digest(),
                *(f"{k}={v}" for k, v in sorted(sent.items())),
            )
            if self.cache is not None:
                hit = self.cache.get(self.name, self.prompt_version, self.config.model, key)
                if hit is not None and isinstance(hit.get("verdicts"), list):
                    runs = [
                        self.score(self.verdict_model.model_validate(v), x, sent)
                        for v in hit["verdicts"]
                    ]
                    label, score, explanation, extra = self._aggregate(runs)
                    meta.update(extra, cache="hit")
                    tokens = (int(hit["prompt_tokens"]), int(hit["completion_tokens"]))
                    return [self._result(x, label, score, explanation, meta, tokens, True)]
            fence = secrets.token_hex(6)
            prompt = fill(self.template, {**self.layout(sent, fence), "fence": fence})
            runs, verdicts, latency = [], [], 0.0
            for _ in range(self.config.n_runs):
                try:
                    reply = await self.client.complete(
                        [{"role": "user", "content": prompt}], parse=self._validate
                    )
                except LLMCallError as exc:
                    usage[0] += exc.prompt_tokens
                    usage[1] += exc.completion_tokens
                    raise
                usage[0] += reply.prompt_tokens
                usage[1] += reply.completion_tokens
                latency += reply.latency_ms
                verdicts.append(reply.value.model_dump(mode="json"))
                runs.append(self.score(reply.value, x, sent))
            label, score, explanation, extra = self._aggregate(runs)
            meta.update(extra, llm_latency_ms=round(latency, 3))
            if self.cache is not None:
                self.cache.put(
                    self.name,
                    self.prompt_version,
                    self.config.model,
                    key,
                    {
                        "verdicts": verdicts,
                        "prompt_tokens": usage[0],
                        "completion_tokens": usage[1],
                    },
                )
            return [self._result(x, label, score, explanation, meta, (usage[0], usage[1]))]
        except Exception as exc:  # never raise into the job: the error is a result
            log.warning("%s failed on trace %s: %s", self.name, x.trace_id, exc)
            return [
                self._result(
                    x, "error", None, f"LLM judge failed: {exc}", meta, (usage[0], usage[1])
                )
            ]

    def relabel(self, score: float, labels: list[str]) -> str:
        """Label of an n-run average (majority of the per-run labels on ties)."""
        return max(set(labels), key=labels.count)


class LLMFaithfulnessJudge(LLMJudge):
    """Claims of the answer checked against the context by an LLM, with verbatim evidence."""

    name, prompt_name, verdict_model = "faithfulness", "faithfulness", FaithfulnessVerdict

    def skip_reason(self, x: RagInteraction) -> str | None:
        if not (x.answer or "").strip():
            return "no answer"
        return None if chunk_texts(x) else "no context reached the prompt"

    def fields(self, x: RagInteraction) -> dict[str, str]:
        ctx = "\n\n".join(f"[{i}] {c}" for i, (_, _, c) in enumerate(chunk_texts(x)))
        return {"question": x.query or "(none)", "context": ctx, "answer": x.answer or ""}

    def score(
        self, v: Any, x: RagInteraction, f: dict[str, str]
    ) -> tuple[str, float | None, str, dict[str, Any]]:
        claims = [c.model_dump() for c in v.claims]
        ctx = _squash(f["context"])
        for c in claims:  # a quote that is not verbatim is not evidence
            if c["evidence"] and _squash(c["evidence"]) not in ctx:
                c["evidence_verbatim"] = False
        if v.abstained and not claims:
            return (
                "abstained",
                None,
                "the answer declines to answer",
                {"claims": [], "abstained": True},
            )
        if not claims:
            raise JudgeError("the model returned no claims")
        ok = sum(c["supported"] for c in claims)
        score = ok / len(claims)
        bad = [c["reason"] for c in claims if not c["supported"]]
        expl = f"{ok}/{len(claims)} claims supported" + (": " + "; ".join(bad[:3]) if bad else "")
        return (
            "faithful" if ok == len(claims) else "unfaithful",
            score,
            expl,
            {"claims": claims, "abstained": v.abstained, "reasoning": v.reasoning},
        )

    def relabel(self, score: float, labels: list[str]) -> str:
        return "faithful" if score >= 0.999 else "unfaithful"


class LLMAnswerRelevanceJudge(LLMJudge):
    """RAGAS-style: questions regenerated from the answer vs the real one (embedding cosine)."""

    name, prompt_name, verdict_model = (
        "answer_relevance",
        "answer_relevance",
        AnswerRelevanceVerdict,
    )
    threshold = 0.5

    def skip_reason(self, x: RagInteraction) -> str | None:
        if not (x.query or "").strip():
            return "no question"
        return None if (x.answer or "").strip() else "no answer"

    def fields(self, x: RagInteraction) -> dict[str, str]:
        return {"question": x.query or "", "answer": x.answer or "", "n_questions": "3"}

    def score(
        self, v: Any, x: RagInteraction, f: dict[str, str]
    ) -> tuple[str, float | None, str, dict[str, Any]]:
        meta = {
            "generated_questions": v.questions,
            "noncommittal": v.noncommittal,
            "reasoning": v.reasoning,
        }
        if v.noncommittal:
            return "irrelevant", 0.0, "noncommittal answer", meta
        if not v.questions:
            raise JudgeError("the model generated no questions")
        vecs = embed([f["question"], *v.questions])
        score = float(np.clip(np.mean(vecs[1:] @ vecs[0]), 0.0, 1.0))
        label = "relevant" if score >= self.threshold else "irrelevant"
        return label, score, f"regenerated questions match the question at cosine {score:.2f}", meta

    def relabel(self, score: float, labels: list[str]) -> str:
        return "relevant" if score >= self.threshold else "irrelevant"


class LLMContextRelevanceJudge(LLMJudge):
    """Per-chunk relevance by an LLM; score is rank-aware context precision@k."""

    name, prompt_name, verdict_model = (
        "context_relevance",
        "context_relevance",
        ContextRelevanceVerdict,
    )

    def skip_reason(self, x: RagInteraction) -> str | None:
        if not (x.query or "").strip():
            return "no question"
        return None if chunk_texts(x) else "no context"

    def fields(self, x: RagInteraction) -> dict[str, str]:
        chunks = {f"chunk:{i}": c for i, (_, _, c) in enumerate(chunk_texts(x))}
        return {"question": x.query or "", **chunks}

    def layout(self, sent: dict[str, str], fence: str) -> dict[str, str]:
        n = len(sent) - 1
        blocks = [
            f"<<<BEGIN CHUNK {i} {fence}>>>\n{sent[f'chunk:{i}']}\n<<<END CHUNK {i} {fence}>>>"
            for i in range(n)
        ]
        return {"question": sent["question"], "chunks": "\n".join(blocks)}

    def score(
        self, v: Any, x: RagInteraction, f: dict[str, str]
    ) -> tuple[str, float | None, str, dict[str, Any]]:
        chunks = chunk_texts(x)
        by_index = {c.index: c for c in v.chunks}
        missing = [i for i in range(len(chunks)) if i not in by_index]
        if missing:
            raise JudgeError(f"the model gave no verdict for chunk(s) {missing[:5]}")
        per = [
            {
                "id": cid,
                "rank": rank,
                "relevant": by_index[i].relevant,
                "score": 1.0 if by_index[i].relevant else 0.0,
                "quote": by_index[i].quote,
            }
            for i, (cid, rank, _) in enumerate(chunks)
        ]
        score = context_precision([c["score"] for c in per])
        n = sum(c["relevant"] for c in per)
        noise = [c["id"] for c in per if not c["relevant"]]
        expl = f"{n}/{len(per)} chunks relevant" + (
            f"; noise: {', '.join(noise[:5])}" if noise else ""
        )
        return (
            ("relevant" if n else "irrelevant"),
            score,
            expl,
            {"chunks": per, "k": len(per), "reasoning": v.reasoning},
        )

    def relabel(self, score: float, labels: list[str]) -> str:
        return "relevant" if score > 0 else "irrelevant"
