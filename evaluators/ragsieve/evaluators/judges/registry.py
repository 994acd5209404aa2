"""The judge registry: built-ins plus the ``ragsieve.judges`` entry-point group, keyed by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Literal

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges.llm import LLMConfig
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS

if TYPE_CHECKING:
    from ragsieve.evaluators.judges.calibrated import Calibration

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
Backend = Literal["offline", "llm", "cascade"]


def _offline(metric: str) -> Callable[..., Any]:
    def make(**options: Any) -> Any:
        from ragsieve.evaluators.judges.context import ContextRelevanceJudge
        from ragsieve.evaluators.judges.faithfulness import FaithfulnessJudge
        from ragsieve.evaluators.judges.relevance import AnswerRelevanceJudge

        cls = {
            "faithfulness": FaithfulnessJudge,
            "answer_relevance": AnswerRelevanceJudge,
            "context_relevance": ContextRelevanceJudge,
        }[metric]
        return cls(**options)

    make.__doc__ = f"offline heuristic {metric} (deterministic, no LLM)"
    return make


def _llm(metric: str) -> Callable[..., Any]:
    def make(*, llm: LLMConfig | None = None, cache_path: str | None = None, **_: Any) -> Any:
        from ragsieve.evaluators.judges import llm_judges as lj

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


def _cascade(metric: str) -> Callable[..., Any]:
    def make(*, llm: LLMConfig | None = None, cache_path: str | None = None, **opts: Any) -> Any:
        from ragsieve.evaluators.judges.cascade import CascadeJudge

        if llm is None:
            raise ConfigError(f"judge 'cascade_{metric}': needs an LLM config (base_url, model)")
        return CascadeJudge(
            _offline(metric)(**opts),
            _llm(metric)(llm=llm, cache_path=cache_path),
            llm.uncertainty_band,
        )

    make.__doc__ = f"offline {metric}, escalated to the LLM inside the uncertainty band"
    return make


BUILTINS: Mapping[str, Callable[..., Any]] = {
    **{m: _offline(m) for m in METRICS},
    **{f"llm_{m}": _llm(m) for m in METRICS},
    **{f"cascade_{m}": _cascade(m) for m in METRICS},
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


def get_judge(name: str, **options: Any) -> Any:
    """Build the judge registered as ``name``; unknown names raise ``ConfigError``."""
    if name in BUILTINS:
        return BUILTINS[name](**options)
    plugins = _plugins()
    if name not in plugins:
        names = sorted({*BUILTINS, *plugins})
        raise ConfigError(f"unknown judge {name!r}; available: {', '.join(names)}")
    obj = plugins[name].load()
    return obj(**options) if callable(obj) else obj


def _calibrated(metric: str, opts: dict[str, Any], calibration: Calibration) -> Any:
    """The offline judge of ``metric`` under ``calibration``: fitted threshold and weights."""
    from ragsieve.evaluators.judges.calibrated import CalibratedJudge

    fitted = calibration.metrics[metric]
    job = float(opts.get("threshold", DEFAULT_THRESHOLDS[metric]))
    opts = {**opts, "threshold": fitted.threshold, "calibration": calibration.id}
    if fitted.weights:
        opts["weights"] = dict(fitted.weights)
    return CalibratedJudge(get_judge(metric, **opts), fitted.threshold, job, calibration.id)


def build_judges(
    names: Sequence[str],
    *,
    backend: Backend = "offline",
    llm: LLMConfig | None = None,
    cache_path: str | None = None,
    thresholds: Mapping[str, float] | None = None,
    calibration: Calibration | None = None,
) -> list[Any]:
    """Judges for metric ``names`` on one backend; an explicit registry name is used as is.

    ``thresholds`` (metric → score) are the job's decision thresholds: the offline judges (alone
    or inside a cascade) label with them, so a judge's label and the job's flag are one decision.
    ``calibration`` (a fit, :mod:`.calibrated`) replaces an offline judge's threshold and
    evidence weights; the judge reports its score on the job's scale. LLM and cascade judges
    are built uncalibrated (a fit on offline evidence says nothing about their scores).
    """
    if backend not in ("offline", "llm", "cascade"):
        raise ConfigError(f"judges.backend: must be offline, llm or cascade (got {backend!r})")
    out = []
    for name in names:
        key = name if (name not in METRICS or backend == "offline") else f"{backend}_{name}"
        opts: dict[str, Any] = {}
        if key.startswith(("llm_", "cascade_")):
            opts = {"llm": llm, "cache_path": cache_path}
        metric = key.removeprefix("cascade_")  # offline or cascade: an offline judge labels
        if thresholds and metric in METRICS and metric in thresholds:
            opts["threshold"] = float(thresholds[metric])
        # a calibration is fitted on the offline judge's evidence: it applies to that judge only
        if calibration is None or key not in calibration.metrics:
            out.append(get_judge(key, **opts))
        else:
            out.append(_calibrated(key, opts, calibration))
    return out
