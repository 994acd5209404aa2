"""The local-model judge tier: a model the user already has on disk, between heuristics and LLM.

Takes a model folder (an ONNX export, its ``tokenizer.json`` and a manifest, :mod:`.manifest`)
and a :class:`~.base.ModelConfig`; gives judges with the :class:`Judge` protocol:

- :class:`~.faithfulness.ModelFaithfulnessJudge`: each claim against its best context windows,
  by a pair (NLI, fact-checking) or token (hallucinated spans) model;
- :class:`~.context.ModelContextRelevanceJudge`: each chunk's windows by a reranker;
- :func:`tiered`: heuristics first, the model for what they are unsure of (or all), then an
  LLM judge, when there is one, for what the model is unsure of (:mod:`..combined.tiers`).

Answer relevance has no model judge: it stays the offline judge's. Nothing is downloaded:
onnxruntime and tokenizers (the ``model`` extra) read the folder; :mod:`.runtime` batches, caps
the threads and keeps a per-trace time limit; :mod:`.standin` writes tiny real models for
tests and benches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges.model.base import ModelConfig, ModelJudge
from ragsieve.evaluators.judges.model.manifest import Manifest, ModelFolderError, read_manifest
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS

if TYPE_CHECKING:
    from ragsieve.evaluators.judges.combined.tiers import TieredJudge

MODEL_METRICS = ("faithfulness", "context_relevance")


def model_judge(metric: str, config: ModelConfig, threshold: float | None = None) -> ModelJudge:
    """The model judge of ``metric`` from the folder ``config`` names for it; a folder that is
    not usable raises :class:`ModelFolderError`, a metric without a folder ``ConfigError``."""
    from ragsieve.evaluators.judges.model.context import ModelContextRelevanceJudge
    from ragsieve.evaluators.judges.model.faithfulness import ModelFaithfulnessJudge
    from ragsieve.evaluators.judges.model.runtime import load_model

    folder = config.folder(metric)
    if metric not in MODEL_METRICS or not folder:
        raise ConfigError(
            f"model.{metric}: no model folder set (the model tier judges"
            f" {' and '.join(MODEL_METRICS)})"
        )
    model = load_model(folder, threads=config.threads)
    cls = ModelFaithfulnessJudge if metric == "faithfulness" else ModelContextRelevanceJudge
    return cls(
        model,
        threshold=DEFAULT_THRESHOLDS[metric] if threshold is None else threshold,
        batch_size=config.batch_size,
        time_limit_s=config.time_limit_s,
        windows_per_claim=config.windows_per_claim,
        pass_at=config.uncertainty_band[1],
    )


def tiered(
    metric: str,
    config: ModelConfig,
    heuristic: Any,
    llm: Any | None = None,
    threshold: float | None = None,
) -> TieredJudge:
    """``heuristic`` → the model of ``metric`` → ``llm`` (when given), as one judge."""
    from ragsieve.evaluators.judges.combined.tiers import Tier, TieredJudge

    tiers = [
        Tier("offline", heuristic, config.band, config.escalate == "all"),
        Tier("model", model_judge(metric, config, threshold), config.uncertainty_band),
    ]
    if llm is not None:
        tiers.append(Tier("llm", llm))
    return TieredJudge(tiers)


__all__ = [
    "MODEL_METRICS",
    "Manifest",
    "ModelConfig",
    "ModelFolderError",
    "ModelJudge",
    "model_judge",
    "read_manifest",
    "tiered",
]
