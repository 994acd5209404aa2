"""The sections of the settings table that no stage owns: ``[jobs]``, ``[llm]``, ``[phoenix]``,
``[golden]`` and ``[demo]`` (a stage's own section sits beside them, named after the stage)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr

from ragsieve.collector.timeutil import parse_duration
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.jobs.settings.sampling import SamplingSettings


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _known_metric(name: str) -> str:
    """A ``jobs.thresholds`` key: a metric some judge reports (built-in or plugin)."""
    from ragsieve.evaluators.judges.registry import METRICS, available_judges

    known = {*METRICS, *available_judges()}
    if name not in known:
        raise ValueError(f"unknown metric; thresholds exist for {', '.join(METRICS)}")
    return name


MetricName = Annotated[str, AfterValidator(_known_metric)]
# A score threshold: finite and in [0, 1] (nan would flag nothing, inf or 1.7 everything).
Threshold = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


def _duration(text: str) -> str:
    try:
        parse_duration(text)
    except ValueError:  # the error line adds "(got ...)"
        raise ValueError("a duration, e.g. 90s, 15m, 2h, 7d") from None
    return text


# "90s", "15m", "2h", "7d": refused when the settings load, not when a command first reads it
Duration = Annotated[str, AfterValidator(_duration)]


def _with_defaults(given: dict[str, float]) -> dict[str, float]:
    """``[jobs.thresholds]`` naming one metric keeps the defaults of the others."""
    return {**DEFAULT_THRESHOLDS, **given}


class LLMSettings(_Section):
    """An OpenAI-compatible endpoint for LLM judges (section ``[llm]``)."""

    base_url: str | None = Field(
        None, description="OpenAI-compatible base URL (OpenAI, vLLM, Ollama, llama.cpp server)."
    )
    model: str = Field("gpt-4o-mini", description="Judge model name.")
    api_key: SecretStr | None = Field(
        None, description="API key; only from the env var RAGSIEVE_LLM__API_KEY, never from TOML."
    )
    timeout_s: float = Field(30.0, gt=0, description="Per-request timeout.")
    max_retries: int = Field(4, ge=0, description="Retries on 429/5xx/timeouts.")
    concurrency: int = Field(8, ge=1, description="Judge calls in flight at once.")
    n_runs: int = Field(1, ge=1, description="Runs averaged per verdict.")
    price_per_1k_prompt: float = Field(0.0, ge=0, description="USD per 1k prompt tokens.")
    price_per_1k_completion: float = Field(0.0, ge=0, description="USD per 1k completion tokens.")
    redact_pii: bool = Field(True, description="Redact PII before content leaves the machine.")
    backoff_s: float = Field(1.0, ge=0, description="First retry delay; doubles each retry.")
    uncertainty_band: tuple[float, float] = Field(
        (0.35, 0.8), description="Cascade: offline scores inside [lo, hi] go to the LLM judge."
    )
    json_mode: bool = Field(True, description="Ask the endpoint for response_format=json_object.")

    def to_config(self, extra_pii_patterns: list[str] | None = None) -> Any:
        """The judges' ``LLMConfig`` for this endpoint, or None when no base_url is set."""
        if not self.base_url:
            return None
        from ragsieve.evaluators.judges import LLMConfig

        return LLMConfig(
            base_url=self.base_url,
            model=self.model,
            api_key=self.api_key,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            concurrency=self.concurrency,
            n_runs=self.n_runs,
            price_per_1k_prompt=self.price_per_1k_prompt,
            price_per_1k_completion=self.price_per_1k_completion,
            redact_pii=self.redact_pii,
            extra_pii_patterns=tuple(extra_pii_patterns or ()),
            uncertainty_band=self.uncertainty_band,
            json_mode=self.json_mode,
        )


class JobSettings(_Section):
    """The scheduled online evaluator (section ``[jobs]``)."""

    every_minutes: float = Field(5.0, gt=0, description="How often `ragsieve up` runs the job.")
    since: Duration = Field("2h", description="Default window looked back over by each run.")
    settle_s: float = Field(15.0, ge=0, description="A trace must be quiet this long to count.")
    judges: list[str] = Field(
        default_factory=lambda: ["faithfulness", "answer_relevance", "context_relevance"],
        description="Metrics to judge.",
    )
    backend: Literal["offline", "llm", "cascade", "model"] = Field(
        "offline",
        description="Judge backend: offline heuristic, LLM, cascade, or model (local, [model]).",
    )
    budget_calls: int | None = Field(None, ge=1, description="Most judge calls per run.")
    budget_usd: float | None = Field(None, gt=0, description="Most judge spend per run (USD).")
    sample_size: int = Field(200, ge=1, description="Traces judged per run (beyond the strata).")
    thresholds: Annotated[dict[MetricName, Threshold], AfterValidator(_with_defaults)] = Field(
        default_factory=lambda: dict(DEFAULT_THRESHOLDS),
        description=(
            "A score below its threshold fails the metric: the judges label with these and the"
            " job flags with them (one decision per metric)."
        ),
    )
    audit_share: float = Field(
        0.05, ge=0, le=1, description="Share of passing traces routed to review (audit)."
    )
    false_flag_cost: float = Field(
        1.0,
        gt=0,
        le=100,
        allow_inf_nan=False,
        description=(
            "What one false flag costs you, in missed failures: `judges fit` maximises"
            " (recall + cost x specificity) / (1 + cost); 1 is balanced accuracy."
        ),
    )
    seed: int = Field(0, description="Seed of the deterministic sampler.")
    cache_path: str | None = Field(None, description="Judge result cache file (SQLite).")
    max_judge_error_rate: float = Field(
        0.5, ge=0, le=1, description="A run whose judge error rate exceeds this exits 1."
    )
    concurrency: int = Field(32, ge=1, description="Judge calls in flight at once in a run.")
    sampling: SamplingSettings = Field(
        default_factory=SamplingSettings, description="Strata, rates and quotas."
    )


class PhoenixSettings(_Section):
    """Where people review traces (section ``[phoenix]``)."""

    base_url: str | None = Field(
        None, description="Phoenix base URL, e.g. http://127.0.0.1:6006 (annotations, datasets)."
    )
    api_key: SecretStr | None = Field(
        None, description="Phoenix API key; only from RAGSIEVE_PHOENIX__API_KEY."
    )
    project: str = Field("default", description="Phoenix project the spans go to.")
    dataset: str = Field("ragsieve-candidates", description="Dataset `golden push` appends to.")
    executable: str | None = Field(
        None, description="`phoenix` executable in its own virtualenv (tests, demo --phoenix)."
    )


class GoldenSettings(_Section):
    """Golden-set growth (section ``[golden]``)."""

    path: str | None = Field(None, description="Current golden file, e.g. golden/golden_v3.jsonl.")
    near_duplicate_cosine: float = Field(
        0.9, gt=0, le=1, description="Embedding cosine above which two queries are duplicates."
    )
    new_category_cosine: float = Field(
        0.5,
        gt=0,
        le=1,
        description="A failure this close to a golden case (query + relevant documents) is"
        " covered; a topic area is new while most of its failures are not. A round setting, not"
        " fitted: licence-clean questions bracket it (0.43-0.55).",
    )
    support_cosine: float = Field(
        0.7,
        gt=0,
        le=1,
        description="Query cosine from which a repeat of the same failure (root cause, chunks"
        " or wrong value, key terms) is a duplicate.",
    )
    new_category_min_cases: int = Field(
        3, ge=1, description="Failures a new category needs before it is announced."
    )
    scrub_pii: bool = Field(True, description="Scrub PII from candidates before writing them.")
    pii_patterns: list[str] = Field(
        default_factory=list, description="Extra regexes to scrub from candidates."
    )


class DemoSettings(_Section):
    """`ragsieve demo` (section ``[demo]``)."""

    queries: int = Field(300, ge=1, description="Queries the demo app sends.")
    failure_share: float = Field(0.3, ge=0, le=1, description="Share of planted failures.")
    seed: int = Field(0, description="Traffic seed.")
    min_planted_recall: float = Field(0.85, ge=0, le=1, description="Scorecard floor.")
    min_root_cause_accuracy: float = Field(0.80, ge=0, le=1, description="Scorecard floor.")
    max_false_positive_rate: float = Field(0.10, ge=0, le=1, description="Scorecard ceiling.")


__all__ = [
    "DemoSettings",
    "GoldenSettings",
    "JobSettings",
    "LLMSettings",
    "MetricName",
    "PhoenixSettings",
    "Threshold",
]
