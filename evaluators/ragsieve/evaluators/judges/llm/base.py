"""The cached LLM judge base: render the prompt, call the model n times, validate, score."""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from ragsieve.evaluators.errors import JudgeError
from ragsieve.evaluators.judges.llm.cache import ResultCache, input_hash
from ragsieve.evaluators.judges.llm.client import (
    LLMCallError,
    LLMClient,
    LLMConfig,
    parse_json_object,
)
from ragsieve.evaluators.judges.llm.families import model_family
from ragsieve.evaluators.judges.llm.prompt import fill, load_prompt, sent_fields
from ragsieve.evaluators.judges.offline.claims import find_injections
from ragsieve.evaluators.records import EvalResult, RagInteraction

# The logger keeps the name it had before the module split, so logging configs still match it.
log = logging.getLogger(__name__)
_warned_self_preference: set[tuple[str, str]] = set()
CACHE_FORMAT = 2  # bump when the cached payload changes shape


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
            sent = sent_fields(raw, self.config, meta)
            key = input_hash(
                f"format={CACHE_FORMAT}",
                self.version,
                self.settings_digest(),
                *(f"{k}={v}" for k, v in sorted(sent.items())),
            )
            cached = self._from_cache(x, sent, key, meta)
            if cached is not None:
                return [cached]
            runs, verdicts, latency = await self._call(x, sent, usage)
            label, score, explanation, extra = self._aggregate(runs)
            meta.update(extra, llm_latency_ms=round(latency, 3))
            if self.cache is not None:
                entry = {
                    "verdicts": verdicts,
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                }
                self.cache.put(self.name, self.prompt_version, self.config.model, key, entry)
            return [self._result(x, label, score, explanation, meta, (usage[0], usage[1]))]
        except Exception as exc:  # never raise into the job: the error is a result
            log.warning("%s failed on trace %s: %s", self.name, x.trace_id, exc)
            return [
                self._result(
                    x, "error", None, f"LLM judge failed: {exc}", meta, (usage[0], usage[1])
                )
            ]

    def _from_cache(
        self, x: RagInteraction, sent: dict[str, str], key: str, meta: dict[str, Any]
    ) -> EvalResult | None:
        """The result rebuilt from cached verdicts (scored against this trace), or None."""
        if self.cache is None:
            return None
        hit = self.cache.get(self.name, self.prompt_version, self.config.model, key)
        if hit is None or not isinstance(hit.get("verdicts"), list):
            return None
        runs = [self.score(self.verdict_model.model_validate(v), x, sent) for v in hit["verdicts"]]
        label, score, explanation, extra = self._aggregate(runs)
        meta.update(extra, cache="hit")
        tokens = (int(hit["prompt_tokens"]), int(hit["completion_tokens"]))
        return self._result(x, label, score, explanation, meta, tokens, True)

    async def _call(
        self, x: RagInteraction, sent: dict[str, str], usage: list[int]
    ) -> tuple[list[Any], list[Any], float]:
        """``n_runs`` model calls: the scored runs, the raw verdicts and the summed latency;
        ``usage`` counts the tokens spent, also by a call that fails."""
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
        return runs, verdicts, latency

    def relabel(self, score: float, labels: list[str]) -> str:
        """Label of an n-run average (majority of the per-run labels on ties)."""
        return max(set(labels), key=labels.count)
