"""Each metric's raw score under candidate evidence weights, vectorised over the examples.

The offline judges record the evidence their score combines; :class:`Scorer` recombines it for
any weights without judging again, and :func:`weight_grid` lists the weights a fit tries.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragsieve.evaluators.judges.combined.calibrated import (
    DEFAULT_WEIGHTS,
    UNKNOWN,
)
from ragsieve.evaluators.judges.offline import context
from ragsieve.evaluators.records import EvalResult
from ragsieve.jobs.fitting.table import METRICS, Example


def _evidence(r: EvalResult | None) -> Mapping[str, Any] | None:
    """The evidence a decided offline result recorded (what its score combines), or None."""
    if r is None or r.label in UNKNOWN:
        return None
    ev = r.metadata.get("evidence")
    return ev if isinstance(ev, Mapping) else None


class Scorer:
    """Each metric's raw score for every example under given weights, vectorised.

    With ``weighted=False`` (LLM and cascade judges: a threshold only) a metric's score is the
    stored result's raw score, whatever the weights.
    """

    def __init__(self, examples: Sequence[Example], weighted: bool = True) -> None:
        n = len(examples)
        self.n = n
        self.weighted = weighted
        self.raw = {
            m: np.array([_raw(ex.results.get(m)) for ex in examples], float) for m in METRICS
        }
        self.faith = np.full((n, 4), np.nan)  # model, mean, min, share
        self.faith_cap = np.ones(
            n
        )  # a decisive contradiction caps the score (faithfulness.combine)
        self.ans = np.full((n, 4), np.nan)
        self.abstained = np.zeros(n, bool)
        rows: list[tuple[int, Mapping[str, Any]]] = []
        for i, ex in enumerate(examples):
            self._read(i, ex, rows)
        self.owner = np.array([i for i, _ in rows], int)
        c = [ch for _, ch in rows]
        self.terms = np.array([float(x["terms"]) for x in c], float)
        typed = [x.get("typed") for x in c]
        self.untyped = np.array([t is None for t in typed], bool)
        self.typed_false = np.array([t is False for t in typed], bool)
        self.type_credit = np.where(self.untyped, context.UNTYPED_CREDIT, [bool(t) for t in typed])
        self.cos = np.array([np.nan if x.get("cosine") is None else float(x["cosine"]) for x in c])
        self.other = np.array([bool(x.get("other_language")) for x in c], bool)
        self.density = np.array([float(x["density"]) for x in c], float)

    def _read(self, i: int, ex: Example, rows: list[tuple[int, Mapping[str, Any]]]) -> None:
        ev = _evidence(ex.results.get("faithfulness"))
        if ev is not None:
            self.faith[i] = [ev.get("model", ev["mean"]), ev["mean"], ev["min"], ev["share"]]
            self.faith_cap[i] = float(ev.get("cap", 1.0))
        r = ex.results.get("answer_relevance")
        ev = _evidence(r)
        if r is not None and ev is not None:
            self.ans[i] = [ev["addressed"], ev["type_ok"], ev["direct"], ev["specificity"]]
            self.abstained[i] = bool(r.metadata.get("abstained"))
        r = ex.results.get("context_relevance")
        if r is not None and r.label not in UNKNOWN and r.score is not None:
            rows += [(i, ch) for ch in r.metadata.get("chunks") or [] if "density" in ch]

    def score(self, metric: str, w: Mapping[str, float]) -> np.ndarray:
        """Raw scores (NaN where the metric is unknown)."""
        if not self.weighted:
            return self.raw[metric]
        if metric == "faithfulness":
            vec = np.array([w.get("model", 0.0), w["mean"], w["min"], w["share"]])
            return np.minimum(self.faith @ vec, self.faith_cap)
        if metric == "answer_relevance":
            vec = np.array([w["addressed"], w["type_ok"], w["direct"], w["specificity"]])
            s = self.ans @ vec
            s = np.where(self.ans[:, 1] == 0, s * 0.7, s)
            return np.where(self.abstained, np.minimum(s, 0.2), s)
        return self._context(w)

    def _context(self, w: Mapping[str, float]) -> np.ndarray:
        lexical = w["terms"] * self.terms + w["type"] * self.type_credit
        lexical = np.where(self.typed_false, np.minimum(lexical, 0.6 * self.terms + 0.1), lexical)
        floor = context.SEMANTIC_FLOOR - np.where(self.other, context.XLING_FLOOR_SHIFT, 0.0)
        with np.errstate(invalid="ignore"):
            meaning = np.clip((self.cos - floor) / context.SEMANTIC_SPAN, 0.0, 1.0)
        blended = w["lexical"] * lexical + w["meaning"] * meaning * (0.5 + 0.5 * self.type_credit)
        both = np.where(np.isnan(self.cos), lexical, np.maximum(lexical, blended))
        graded = np.round(
            both * (1.0 - context.DENSITY_WEIGHT + context.DENSITY_WEIGHT * self.density), 4
        )
        out = np.full(self.n, np.nan)
        if len(graded):
            np.fmax.at(out, self.owner, graded)
        return out


def _raw(r: EvalResult | None) -> float:
    """A result's score before any calibration rescaled it; NaN when unknown."""
    if r is None or r.label in UNKNOWN or r.score is None:
        return float("nan")
    return float(r.metadata.get("raw_score", r.score))


def weight_grid(metric: str) -> list[dict[str, float]]:
    """Candidate weights: the simplex on a grid (faithfulness and answer relevance), pairs for
    context relevance; the defaults always among them."""
    default = dict(DEFAULT_WEIGHTS[metric])
    keys = list(default)
    out = [default]
    if metric == "context_relevance":
        for t, lex in itertools.product(np.arange(0.4, 1.01, 0.1), np.arange(0.3, 0.91, 0.1)):
            t, lex = round(float(t), 2), round(float(lex), 2)
            out.append(
                {"terms": t, "type": round(1 - t, 2), "lexical": lex, "meaning": round(1 - lex, 2)}
            )
        return out
    steps = 10 if len(keys) == 3 else 8
    for parts in itertools.product(range(steps + 1), repeat=len(keys) - 1):
        if sum(parts) <= steps:
            vals = [p / steps for p in parts] + [(steps - sum(parts)) / steps]
            out.append({k: round(v, 4) for k, v in zip(keys, vals, strict=True)})
    return out


__all__ = ["Scorer", "weight_grid"]
