"""The judge registry: built-ins plus the ``ragsieve.judges`` entry-point group, keyed by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Literal

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges.llm.client import LLMConfig
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS

if TYPE_CHECKING:
    from ragsieve.evaluators.judges.combined.calibrated import Calibration
    from ragsieve.evaluators.judges.model import ModelConfig
    from ragsieve.evaluators.judges.protocol import Judge

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
Backend = Literal["offline", "llm", "cascade", "model"]


def _offline(metric: str) -> Callable[..., Judge]:
    def make(**options: Any) -> Judge:
        from ragsieve.evaluators.judges.offline.context import ContextRelevanceJudge
        from ragsieve.evaluators.judges.offline.faithfulness import FaithfulnessJudge
        from ragsieve.evaluators.judges.offline.relevance import AnswerRelevanceJudge

        cls = {
            "faithfulness": FaithfulnessJudge,
            "answer_relevance": AnswerRelevanceJudge,
            "context_relevance": ContextRelevanceJudge,
        }[metric]
        return cls(**options)

    make.__doc__ = f"offline heuristic {metric} (deterministic, no LLM)"
    return make


def _llm(metric: str) -> Callable[..., Judge]:
    def make(*, llm: LLMConfig | None = None, cache_path: str | None = None, **_: Any) -> Judge:
        from ragsieve.evaluators.judges.llm import judges as lj

        if llm is None:
            raise ConfigError(f"judge 'llm_{metric}': needs an LLM config (base_url, model)")
        cls = {
            "faithfulness": lj.LLMFaithfulnessJudge,
            "answer_relevance": lj.LLMAnswerRelevanceJudge,
            "context_relevance": lj.LLMContextRelevanceJudge,
        }[metric]
        return cls(llm, cache_path=cache_path)

    make.__doc__ = f"LLM {metric} through an OpenAI-compatible endpoint"
    return make


def _cascade(metric: str) -> Callable[..., Judge]:
    def make(
        *,
        llm: LLMConfig | None = None,
        cache_path: str | None = None,
        model: ModelConfig | None = None,
        **opts: Any,
    ) -> Judge:
        from ragsieve.evaluators.judges.combined.cascade import CascadeJudge

        if llm is None:
            raise ConfigError(f"judge 'cascade_{metric}': needs an LLM config (base_url, model)")
        if model is not None and model.folder(metric):  # heuristics -> local model -> LLM
            from ragsieve.evaluators.judges.model import tiered

            top = _llm(metric)(llm=llm, cache_path=cache_path)
            return tiered(metric, model, _offline(metric)(**opts), top, opts.get("threshold"))
        return CascadeJudge(
            _offline(metric)(**opts),
            _llm(metric)(llm=llm, cache_path=cache_path),
            llm.uncertainty_band,
        )

    make.__doc__ = f"offline {metric}, escalated to the LLM inside the uncertainty band"
    return make


def _model(metric: str) -> Callable[..., Judge]:
    def make(*, model: ModelConfig | None = None, **opts: Any) -> Judge:
        from ragsieve.evaluators.judges.model import MODEL_METRICS, tiered

        if model is None:
            raise ConfigError(
                f"judge 'model_{metric}': the model backend needs a model folder"
                " (model.faithfulness or model.context_relevance)"
            )
        if metric not in MODEL_METRICS or not model.folder(metric):
            return _offline(metric)(**opts)  # no model for it: the offline judge's verdict
        return tiered(metric, model, _offline(metric)(**opts), None, opts.get("threshold"))

    make.__doc__ = (
        f"offline {metric}, re-judged by a local model (ONNX) where it is unsure"
        f" (offline alone when model.{metric} names no folder)"
    )
    if metric not in ("faithfulness", "context_relevance"):
        make.__doc__ = f"offline {metric} (the model backend keeps the offline judge)"
    return make


BUILTINS: Mapping[str, Callable[..., Judge]] = {
    **{m: _offline(m) for m in METRICS},
    **{f"llm_{m}": _llm(m) for m in METRICS},
    **{f"cascade_{m}": _cascade(m) for m in METRICS},
    **{f"model_{m}": _model(m) for m in METRICS},
}


def _plugins() -> dict[str, Any]:
    found = {ep.name: ep for ep in entry_points(group="ragsieve.judges")}
    clash = sorted(set(found) & set(BUILTINS))
    if clash:
        raise ConfigError(
            f"entry point group ragsieve.judges: {', '.join(clash)} collides with a built-in judge"
        )
    return found


def available_judges() -> dict[str, str]:
    """Every registered judge name with a one-line description."""
    out = {name: (make.__doc__ or "").strip() for name, make in BUILTINS.items()}
    for name, ep in _plugins().items():
        out[name] = f"plugin {ep.value}"
    return dict(sorted(out.items()))


def get_judge(name: str, **options: Any) -> Judge:
    """Build the judge registered as ``name``; unknown names raise ``ConfigError``."""
    if name in BUILTINS:
        return BUILTINS[name](**options)
    plugins = _plugins()
    if name not in plugins:
        names = sorted({*BUILTINS, *plugins})
        raise ConfigError(f"unknown judge {name!r}; available: {', '.join(names)}")
    obj = plugins[name].load()
    return obj(**options) if callable(obj) else obj


def _calibrated(key: str, metric: str, opts: dict[str, Any], calibration: Calibration) -> Judge:
    """Judge ``key`` under ``calibration``: labelled at the fitted threshold (the offline judge
    also combines its evidence with the fitted weights), scored on the job's scale."""
    from ragsieve.evaluators.judges.combined.calibrated import CalibratedJudge

    fitted = calibration.metrics[metric]
    job = float(opts.get("threshold", DEFAULT_THRESHOLDS[metric]))
    if key == metric:
        opts = {**opts, "threshold": fitted.threshold, "calibration": calibration.id}
        if fitted.weights:
            opts["weights"] = dict(fitted.weights)
    return CalibratedJudge(get_judge(key, **opts), fitted.threshold, job, calibration.id)


def build_judges(
    names: Sequence[str],
    *,
    backend: Backend = "offline",
    llm: LLMConfig | None = None,
    cache_path: str | None = None,
    thresholds: Mapping[str, float] | None = None,
    calibration: Calibration | None = None,
    model: ModelConfig | None = None,
) -> list[Judge]:
    """Judges for metric ``names`` on one backend; an explicit registry name is used as is.

    ``thresholds`` (metric → score) are the job's decision thresholds: the offline judges (alone
    or inside a cascade) label with them, so a judge's label and the job's flag are one decision.
    ``calibration`` (a fit, :mod:`.calibrated`) replaces the threshold of the judges of the
    backend it was fitted for (and the offline judge's evidence weights); a calibrated judge
    reports its score on the job's scale. Judges of another backend are built uncalibrated.
    ``model`` (the ``[model]`` settings) gives the ``model`` backend its folders, and puts the
    local model between the heuristics and the LLM in a ``cascade``.
    """
    if backend not in ("offline", "llm", "cascade", "model"):
        raise ConfigError(
            f"judges.backend: must be offline, llm, cascade or model (got {backend!r})"
        )
    out = []
    for name in names:
        key = name if (name not in METRICS or backend == "offline") else f"{backend}_{name}"
        opts: dict[str, Any] = {}
        if key.startswith(("llm_", "cascade_")):
            opts = {"llm": llm, "cache_path": cache_path}
        if key.startswith(("cascade_", "model_")) and model is not None:
            opts["model"] = model
        metric = key.removeprefix("cascade_").removeprefix("model_")  # an offline judge labels
        if thresholds and metric in METRICS and metric in thresholds:
            opts["threshold"] = float(thresholds[metric])
        # a calibration applies to the judges it was fitted for (their backend, their metric)
        kind = "offline" if key in METRICS else key.partition("_")[0]
        base = key.removeprefix(f"{kind}_")
        if calibration is None or calibration.backend != kind or base not in calibration.metrics:
            out.append(get_judge(key, **opts))
        else:
            out.append(_calibrated(key, base, opts, calibration))
    return out
