"""How the claims' evidence becomes one faithfulness probability: a model fitted to people's labels.

The offline faithfulness judge checks every claim of an answer against the context (lexical
support, values, names, negation). Which of those signals predicts what a person calls a
hallucination, and how strongly, is not set by hand: ``bench/fit_faithfulness.py`` fits a
logistic model on human-labelled answers that real LLMs (and people) wrote from retrieved
passages, choosing every number leave one source out (fit on the other sets, test on the one
left out; the worst left-out set counts), and writes ``faithfulness_model.json`` beside this
module. The file names the datasets it was fitted on (only sets whose licence allows shipping
numbers learned from them) and every left-out set's figures.

The model's probability is shifted so that its chosen operating point falls on the job's
faithfulness threshold: ``jobs.thresholds.faithfulness`` stays the one decision. Just above
the threshold, inside the file's uncertainty band, the evidence is too weak to call a pass: the
judge says ``uncertain`` instead of guessing (never flagged; audited, or escalated in a cascade).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

MODEL_FILE = Path(__file__).with_name("faithfulness_model.json")

FEATURES = (
    "min",  # the weakest claim's support
    "mean",  # the claims' mean support
    "share",  # the share of supported claims
    "novel_max",  # the largest share of one claim's content the context never states
    "novel_all",  # the share of all claims' content the context never states
    "values_missing",  # a number or date the context never states
    "names_missing",  # a name the context never writes
    "negation",  # a claim negated against its closest context sentence
    "rare_missing",  # an unsupported claim holds a rare word the context never writes
    "names_share",  # the share of claims with a name the context never writes
    "rare_share",  # the share of claims that are unsupported and hold such a rare word
    "short_gap",  # in a reply of one or two claims: how far its weakest claim is from support
    "nothing_near",  # a claim about the world with no context sentence near it
    "apart",  # the claims' mean share of content no one context sentence holds together
)
# Each problem counts twice: whether any claim has it, and the share of claims that have it. A
# long answer often trips one check on one claim and is still faithful; a one-claim answer that
# trips it has nothing else to stand on. The shares keep that difference, and ``short_gap`` says
# it of support itself: a short reply stands on each of its claims.
SHORT_CLAIMS = 2
RARE = 2.0  # rarity (text.rarity) from which a missing word is specific enough to count
# Not a feature: the answer's length. It predicts hallucination on one dataset (long answers of
# small models) and not on others; a judge must weigh evidence, not a dataset's habits.


@dataclass(frozen=True, slots=True)
class SupportModel:
    """Logistic weights over :data:`FEATURES`, the intercept and the uncertainty band."""

    coef: Mapping[str, float]
    intercept: float
    uncertain_width: float  # above the threshold by less than this: uncertain, not faithful
    fitted_on: tuple[str, ...] = ()
    version: str = "m0"

    def probability(self, features: Mapping[str, float]) -> float:
        """P(faithful) under the model, on the job's scale."""
        z = self.intercept + sum(self.coef[f] * float(features[f]) for f in FEATURES)
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def drivers(self, features: Mapping[str, float], top: int = 2) -> list[str]:
        """The features that pulled the probability down the most (for the explanation)."""
        pulls = sorted((self.coef[f] * (float(features[f]) - _NEUTRAL[f]), f) for f in FEATURES)
        return [f for pull, f in pulls[:top] if pull < -0.25]


_NEUTRAL = {  # a fully supported one-claim answer: what a pull is measured from
    "min": 1.0,
    "mean": 1.0,
    "share": 1.0,
    "novel_max": 0.0,
    "novel_all": 0.0,
    "values_missing": 0.0,
    "names_missing": 0.0,
    "negation": 0.0,
    "rare_missing": 0.0,
    "names_share": 0.0,
    "rare_share": 0.0,
    "short_gap": 0.0,
    "nothing_near": 0.0,
    "apart": 0.0,
}

DRIVER_TEXT = {
    "min": "one claim is weakly supported",
    "mean": "the claims are weakly supported on average",
    "share": "few claims are supported",
    "novel_max": "one claim says much the context never does",
    "novel_all": "much of the answer is not in the context",
    "values_missing": "a number or date is not in the context",
    "names_missing": "a name is not in the context",
    "negation": "a claim's negation differs from the context",
    "rare_missing": "a specific word is not in the context",
    "names_share": "names not in the context",
    "rare_share": "specific words not in the context",
    "short_gap": "a short reply rests on a weakly supported claim",
    "nothing_near": "nothing in the context comes near a claim",
    "apart": "the context states the claims' words apart, not together",
}


def features(verdicts: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The model's inputs from the per-claim verdicts (claims that only restate the question
    count when nothing else is said)."""
    informative = [v for v in verdicts if v.get("reason") != "only restates the question"]
    vs = informative or list(verdicts)
    supports = [float(v["support"]) for v in vs]
    novel = [float(v.get("novel", 0.0)) for v in vs]
    rare = [float(v.get("rarest_missing", 0.0)) >= RARE and not v.get("supported") for v in vs]
    return {
        "min": min(supports),
        "mean": sum(supports) / len(supports),
        "share": sum(bool(v.get("supported")) for v in verdicts) / len(verdicts),
        "novel_max": max(novel),
        "novel_all": sum(novel) / len(novel),
        "values_missing": float(any(v.get("values_missing") for v in vs)),
        "names_missing": float(any(v.get("names_missing") for v in vs)),
        "negation": float(any(v.get("negation") for v in vs)),
        "rare_missing": float(any(rare)),
        "names_share": sum(bool(v.get("names_missing")) for v in vs) / len(vs),
        "rare_share": sum(rare) / len(vs),
        "short_gap": 1.0 - min(supports) if len(vs) <= SHORT_CLAIMS else 0.0,
        "nothing_near": float(any(v.get("nothing_near") for v in vs)),
        "apart": 1.0 - sum(float(v.get("together", 1.0)) for v in vs) / len(vs),
    }


def parse_model(data: Mapping[str, Any], source: str = str(MODEL_FILE)) -> SupportModel:
    """A :class:`SupportModel` from its JSON form; a missing or non-finite number is an error."""
    try:
        coef = {f: float(data["coef"][f]) for f in FEATURES}
        intercept = float(data["intercept"])
        width = float(data["uncertain_width"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{source}: not a faithfulness model ({exc!r})") from exc
    if not all(math.isfinite(x) for x in (*coef.values(), intercept, width)):
        raise ValueError(f"{source}: every weight must be a finite number")
    fitted = tuple(str(s) for s in data.get("fitted_on", ()))
    return SupportModel(coef, intercept, width, fitted, str(data.get("version", "m0")))


@lru_cache(maxsize=1)
def shipped_model() -> SupportModel:
    """The model fitted by ``bench/fit_faithfulness.py`` and shipped in the package."""
    return parse_model(json.loads(MODEL_FILE.read_text(encoding="utf-8")))


__all__ = ["DRIVER_TEXT", "FEATURES", "MODEL_FILE", "SupportModel", "features", "shipped_model"]
