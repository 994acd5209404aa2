"""The ``[model]`` settings: the local-model judge tier (folders on disk, threads, limits)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


def _band(band: tuple[float, float]) -> tuple[float, float]:
    lo, hi = band
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError("a band is [lo, hi] with 0 <= lo <= hi <= 1")
    return band


Band = Annotated[tuple[float, float], AfterValidator(_band)]


class ModelSettings(BaseModel):
    """Local ONNX models between the heuristics and the LLM (section ``[model]``)."""

    model_config = ConfigDict(extra="forbid")

    faithfulness: str | None = Field(
        None, description="Folder of a pair (NLI) or token (hallucination) model, exported to ONNX."
    )
    context_relevance: str | None = Field(
        None, description="Folder of a reranker (one relevance logit), exported to ONNX."
    )
    escalate: Literal["uncertain", "all"] = Field(
        "uncertain", description="Heuristic results the model re-judges: uncertain ones, or all."
    )
    band: Band = Field((0.35, 0.8), description="Heuristic scores inside [lo, hi] go to the model.")
    uncertainty_band: Band = Field(
        (0.5, 0.8),
        description="Model scores inside [lo, hi] go to the LLM judge (jobs.backend = cascade).",
    )
    threads: int = Field(1, ge=1, description="onnxruntime intra-op threads per model.")
    batch_size: int = Field(8, ge=1, description="Pairs per model run.")
    time_limit_s: float = Field(
        10.0, gt=0, description="Model time per trace; past it the model's verdict is an error."
    )
    windows_per_claim: int = Field(
        3, ge=1, description="Context windows each claim is checked against (best first)."
    )

    def to_config(self) -> Any:
        """The judges' ``ModelConfig``, or None when no model folder is set."""
        if not self.faithfulness and not self.context_relevance:
            return None
        from ragsieve.evaluators.judges.model import ModelConfig

        return ModelConfig(**self.model_dump())


__all__ = ["ModelSettings"]
