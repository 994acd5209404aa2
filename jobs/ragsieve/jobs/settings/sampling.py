"""The ``[jobs.sampling]`` settings: each stratum's rate and quota, and the thresholds."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class StratumRule(BaseModel):
    """How much of one priority stratum to judge per run."""

    model_config = ConfigDict(extra="forbid")

    rate: float = Field(1.0, ge=0, le=1, description="Share of the stratum to judge.")
    quota: int | None = Field(None, ge=0, description="Most traces judged from it per run.")

    @field_validator("quota", mode="before")
    @classmethod
    def _no_cap(cls, value: Any) -> Any:
        """``quota = "none"``: no cap (TOML has no null)."""
        return None if isinstance(value, str) and value.strip().lower() == "none" else value


# each stratum's own defaults; a table naming one of its keys keeps the other
STRATA: dict[str, dict[str, Any]] = {
    "error": {"rate": 1.0, "quota": 100},
    "negative_feedback": {"rate": 1.0, "quota": 100},
    "low_retrieval": {"rate": 0.5, "quota": 50},
    "tiny_context": {"rate": 0.5, "quota": 50},
    "slow": {"rate": 0.5, "quota": 50},
    "novel": {"rate": 1.0, "quota": 25},
}


def _stratum(name: str) -> Any:
    return Field(default_factory=lambda: StratumRule(**STRATA[name]))


class SamplingSettings(BaseModel):
    """Strata and their quotas (proposed section ``[jobs.sampling]``)."""

    model_config = ConfigDict(extra="forbid")

    error: StratumRule = _stratum("error")
    negative_feedback: StratumRule = _stratum("negative_feedback")
    low_retrieval: StratumRule = _stratum("low_retrieval")
    tiny_context: StratumRule = _stratum("tiny_context")
    slow: StratumRule = _stratum("slow")
    novel: StratumRule = _stratum("novel")
    low_score: float | None = Field(None, description="Best chunk score below this is low.")
    low_score_quantile: float = Field(0.1, gt=0, lt=1, description="Else: window quantile.")
    tiny_context_chars: int = Field(64, ge=0, description="Less context text than this is tiny.")
    slow_ms: float | None = Field(None, gt=0, description="Latency above this is slow.")
    slow_quantile: float = Field(0.95, gt=0, lt=1, description="Else: window quantile.")
    min_population_for_quantile: int = Field(20, ge=2, description="Quantile rules need this.")
    novelty_cosine: float = Field(0.6, gt=0, le=1, description="Below this to all golden: novel.")
    novelty_pool: int = Field(200, ge=0, description="Queries embedded per run for novelty.")
    attributes: list[str] = Field(default_factory=list, description="Attribute keys to stratify.")
    per_attribute_quota: int = Field(2, ge=0, description="Least judged per attribute cell.")
    not_a_question_rate: float = Field(
        0.25,
        ge=0,
        le=1,
        description="Share of the remainder rate given to turns that ask nothing (statements, "
        "thanks, small talk).",
    )
    upstream_probabilistic_policies: list[str] = Field(
        default_factory=lambda: ["baseline"],
        description="Tail-sampling policy names that keep a trace by probability only.",
    )

    @model_validator(mode="before")
    @classmethod
    def _stratum_defaults(cls, data: Any) -> Any:
        """``[jobs.sampling.slow]`` with ``rate`` alone keeps the slow stratum's own quota."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for k, v in data.items():
            if k in STRATA and isinstance(v, StratumRule):
                v = v.model_dump(exclude_unset=True)
            if k in STRATA and isinstance(v, dict):
                out[k] = {**STRATA[k], **v}
        return out


__all__ = ["SamplingSettings", "StratumRule"]
