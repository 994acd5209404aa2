"""Fit the offline faithfulness judge's evidence model on people's labels; write the shipped file.

Usage: ``.venv/bin/python bench/fit_faithfulness.py [--data DIR] [--check]``
-> writes ``evaluators/ragsieve/evaluators/judges/offline/faithfulness_model.json``
(``--check``: only compares what it would write with the shipped file, exit 1 when they differ).

What is fitted: a logistic model of P(faithful) over the per-answer evidence the judge records
(``support_model.FEATURES``), on answers real LLMs wrote from retrieved passages and people
labelled. Only sets whose licence allows shipping what is learned from them are used: RAGTruth
QA (MIT) and HaluEval QA (MIT), both dev parts in ``../shared/data``. MEMERAG (CC BY-NC) and
LFQA-Verification (no licence stated) are never fitted on: ``bench/realrag.py`` measures them.

How: an L2-regularised logistic regression whose weights keep the sign the evidence dictates
(support never counts against an answer). Its regularisation strength and the datasets'
relative weight are chosen by 5-fold cross-validation grouped by question (a question's answers
from all generating models stay in one fold): the highest mean out-of-fold AUC over the two sets
(long answers and short ones must both be ranked; ties: the more hallucinations the worse set
flags at the operating point, then the stronger regularisation).
The operating point is chosen on the out-of-fold
probabilities: the threshold whose false-alarm rate on faithful RAGTruth answers is
``TARGET_FALSE_ALARMS``; the intercept is then shifted so that this point falls on the job's
faithfulness threshold (``jobs.thresholds.faithfulness``), which stays the one decision. The
uncertainty band lies just above the threshold: the next answers a looser threshold would flag,
up to ``UNCERTAIN_FALSE_ALARMS`` of the faithful ones. They are not flagged; the job audits them
and a cascade asks its LLM judge.

Deterministic: the same data gives the same file byte for byte.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for part in ("evaluators", "collector", "jobs"):
    sys.path.insert(0, str(ROOT / part))

import numpy as np  # noqa: E402

from ragsieve.evaluators.judges.offline.faithfulness import FaithfulnessJudge  # noqa: E402
from ragsieve.evaluators.judges.offline.support_model import FEATURES, MODEL_FILE  # noqa: E402
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS  # noqa: E402
from ragsieve.evaluators.quality.calibration import (  # noqa: E402
    LabelledRow,
    auc,
    row_to_interaction,
)

DATA = ROOT.parent / "shared" / "data"
FIT_SETS = {  # folder -> licence (only these may ship fitted numbers)
    "realrag/ragtruth_qa": "MIT",
    "halueval_qa": "MIT",
}
TARGET_FALSE_ALARMS = 0.15  # flagged faithful RAGTruth answers, out of fold (goal: <= 0.15)
UNCERTAIN_FALSE_ALARMS = 0.22  # ... and up to this share: "uncertain" (audited, not flagged)
FOLDS = 5
C_GRID = (0.1, 0.3, 1.0, 3.0)
HALUEVAL_WEIGHTS = (0.0, 0.25, 0.5, 1.0)  # HaluEval rows' total weight relative to RAGTruth's
VERSION = "m1"
SIGN = {  # the direction each feature may move P(faithful)
    "min": 1,
    "mean": 1,
    "share": 1,
    "novel_max": -1,
    "novel_all": -1,
    "values_missing": -1,
    "names_missing": -1,
    "negation": -1,
    "rare_missing": -1,
    "names_share": -1,
    "rare_share": -1,
}


def group_of(row: dict[str, Any]) -> str:
    """The question a row belongs to: all answers to one question stay in one fold."""
    meta = row.get("meta") or {}
    extra = meta.get("extra") or {}
    if "ragtruth_source_id" in extra:
        return f"ragtruth:{extra['ragtruth_source_id']}"
    return f"{meta.get('dataset', 'x')}:{row.get('pair_id') or row['id']}"


def load(data: Path) -> list[dict[str, Any]]:
    """Every labelled faithfulness row of the fit sets, with its evidence features."""
    judge = FaithfulnessJudge()
    out = []
    for folder in FIT_SETS:
        path = data / folder / "dev.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("label_faithful") is None:
                continue
            [res] = asyncio.run(judge.evaluate(row_to_interaction(LabelledRow(**row))))
            feats = res.metadata.get("features")
            if res.label not in ("faithful", "unfaithful", "uncertain") or feats is None:
                continue  # abstained, skipped: nothing for the model to weigh
            out.append(
                {
                    "id": row["id"],
                    "set": folder.rsplit("/", 1)[-1],
                    "group": group_of(row),
                    "y": int(bool(row["label_faithful"])),
                    "x": [float(feats[f]) for f in FEATURES],
                    "cap": float(res.metadata.get("evidence", {}).get("cap", 1.0)),
                }
            )
    return out


def _folds(groups: list[str]) -> np.ndarray:
    """A fold per row from a stable hash of its group."""
    import hashlib

    return np.array([int(hashlib.sha256(g.encode()).hexdigest(), 16) % FOLDS for g in groups])


def _fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression whose weights keep the sign the evidence dictates
    (more support never lowers P(faithful); a missing value, name or word never raises it)."""
    from scipy.optimize import minimize

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ theta[:-1] + theta[-1]
        p = 1 / (1 + np.exp(-np.clip(z, -30, 30)))
        nll = -(w * (y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))).sum()
        grad = np.r_[x.T @ (w * (p - y)) + theta[:-1] / c, (w * (p - y)).sum()]
        return float(nll + 0.5 / c * (theta[:-1] ** 2).sum()), grad

    bounds = [(0.0, None) if SIGN[f] > 0 else (None, 0.0) for f in FEATURES] + [(None, None)]
    res = minimize(loss, np.zeros(len(FEATURES) + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    return res.x[:-1], float(res.x[-1])


def _weights(sets: np.ndarray, halueval: float) -> np.ndarray:
    w = np.ones(len(sets))
    n_rt, n_he = (sets == "ragtruth_qa").sum(), (sets == "halueval_qa").sum()
    if n_he:
        w[sets == "halueval_qa"] = halueval * n_rt / n_he
    return w


def _auc(y: np.ndarray, p: np.ndarray) -> float:
    return float(auc([bool(t) for t in y], [float(s) for s in p]) or 0.0)


def out_of_fold(rows: list[dict[str, Any]], c: float, halueval: float) -> np.ndarray:
    """P(faithful) for every row from a model fitted on the other folds."""
    x = np.array([r["x"] for r in rows])
    y = np.array([r["y"] for r in rows])
    sets = np.array([r["set"] for r in rows])
    fold = _folds([r["group"] for r in rows])
    w = _weights(sets, halueval)
    p = np.zeros(len(rows))
    for k in range(FOLDS):
        train = (fold != k) & (w > 0)
        coef, b = _fit(x[train], y[train], w[train], c)
        p[fold == k] = 1 / (1 + np.exp(-(x[fold == k] @ coef + b)))
    return p


def fit(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], np.ndarray]:
    """Choose C and the HaluEval weight by grouped CV; fit on everything; place the threshold.
    Returns the model and every row's out-of-fold score on the job's scale (what the judge
    would have scored it had its question not been fitted on)."""
    y = np.array([r["y"] for r in rows])
    rt = np.array([r["set"] == "ragtruth_qa" for r in rows])
    # a decisive check (a contradiction, a value not in the context) flags whatever the model
    # says: such rows score as flagged, so the operating point counts them among its flags
    capped = np.array([r["cap"] < 1.0 for r in rows])
    trials = []
    for c in C_GRID:
        for he in HALUEVAL_WEIGHTS:
            p = np.where(capped, 1e-9, out_of_fold(rows, c, he))
            cut = np.sort(p[rt & (y == 1)])[int(TARGET_FALSE_ALARMS * (rt & (y == 1)).sum())]
            recall = [float((p[m & (y == 0)] < cut).mean()) for m in (rt, ~rt)]
            mean_auc = (_auc(y[rt], p[rt]) + _auc(y[~rt], p[~rt])) / 2
            trials.append((round(mean_auc, 4), round(min(recall), 4), -c, c, he, p))
    _, _, _, c, he, p_oof = max(trials, key=lambda t: t[:3])
    rt_auc = _auc(y[rt], p_oof[rt])
    # the operating point: the share of faithful RAGTruth answers flagged is the target
    faithful = np.sort(p_oof[rt & (y == 1)])
    cut = float(faithful[int(math.floor(TARGET_FALSE_ALARMS * len(faithful)))])
    job = DEFAULT_THRESHOLDS["faithfulness"]
    shift = math.log(job / (1 - job)) - math.log(cut / (1 - cut))
    x = np.array([r["x"] for r in rows])
    sets = np.array([r["set"] for r in rows])
    w = _weights(sets, he)
    coef, b = _fit(x[w > 0], y[w > 0], w[w > 0], c)
    scaled_oof = 1 / (1 + np.exp(-(np.log(p_oof / (1 - p_oof)) + shift)))
    loose = float(faithful[int(math.floor(UNCERTAIN_FALSE_ALARMS * len(faithful)))])
    width = 1 / (1 + math.exp(-(math.log(loose / (1 - loose)) + shift))) - job
    flagged = scaled_oof[rt] < job
    band = (scaled_oof[rt] >= job) & (scaled_oof[rt] < job + width)
    oof = np.minimum(scaled_oof, np.array([r["cap"] for r in rows]))
    return {
        "version": VERSION,
        "fitted_on": [f"{k} dev ({v})" for k, v in FIT_SETS.items()],
        "features": list(FEATURES),
        "coef": {f: round(float(v), 6) for f, v in zip(FEATURES, coef, strict=True)},
        "intercept": round(b + shift, 6),
        "uncertain_width": round(width, 4),
        "threshold": job,
        "cv": {
            "folds": FOLDS,
            "grouped_by": "question",
            "C": c,
            "halueval_weight": he,
            "ragtruth_auc_out_of_fold": round(rt_auc, 4),
            "halueval_auc_out_of_fold": round(_auc(y[~rt], p_oof[~rt]), 4),
            "ragtruth_false_alarms_out_of_fold": round(float(flagged[y[rt] == 1].mean()), 4),
            "ragtruth_recall_out_of_fold": round(float(flagged[y[rt] == 0].mean()), 4),
            "ragtruth_uncertain_out_of_fold": round(float(band.mean()), 4),
            "rows": {str(s): int((sets == s).sum()) for s in sorted(set(sets))},
        },
    }, oof


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--check", action="store_true", help="compare with the shipped file only")
    args = ap.parse_args()
    model, _ = fit(load(args.data))
    text = json.dumps(model, indent=1, sort_keys=True) + "\n"
    if args.check:
        same = MODEL_FILE.read_text(encoding="utf-8") == text
        print("the shipped model matches the fit" if same else "the shipped model differs")
        return 0 if same else 1
    MODEL_FILE.write_text(text, encoding="utf-8")
    print(json.dumps(model["cv"], indent=1))
    print(json.dumps(model["coef"], indent=1), "intercept", model["intercept"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
