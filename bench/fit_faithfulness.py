"""Fit the offline faithfulness judge's evidence model on people's labels; write the shipped file.

Usage: ``.venv/bin/python bench/fit_faithfulness.py [--data DIR] [--check]``
-> writes ``evaluators/ragsieve/evaluators/judges/offline/faithfulness_model.json``
(``--check``: only compares what it would write with the shipped file, exit 1 when they differ).

What is fitted: a logistic model of P(faithful) over the per-answer evidence the judge records
(``support_model.FEATURES``), on answers real LLMs wrote from retrieved passages and people
labelled. Only sets whose licence allows shipping what is learned from them are used: RAGTruth
QA (MIT), HaluEval QA (MIT) and MTRAG (Apache-2.0; GPT-4o, Llama-3.1-405B and people's reference
answers in multi-turn conversations, judged with their earlier turns), the dev parts in
``../shared/data``. MEMERAG (CC BY-NC) and LFQA-Verification (no licence stated) are never
fitted on: ``bench/realrag.py`` measures them.

How: an L2-regularised logistic regression whose weights keep the sign the evidence dictates
(support never counts against an answer); each set weighs the same in the fit, whatever its
size. Every number is chosen **leave one source out**: for each set, the model is fitted on the
other sets, its threshold placed on them, and both applied to the left-out set; the figure that
counts is the worst left-out set. The regularisation strength is the one whose worst left-out
ROC AUC is highest (ties: the higher mean, then the stronger regularisation).

The operating point: the shipped model's threshold is the highest score at which no set flags
more than a target share of its faithful answers (every set, not the pool: a set with many easy
answers must not buy another's false alarms); the intercept is then shifted so that this point
falls on the job's faithfulness threshold (``jobs.thresholds.faithfulness``), which stays the
one decision. The target is chosen left out too: the largest share of ``TARGET_GRID`` at which
every left-out set flags at most ``GOAL_FALSE_ALARMS`` of its faithful answers (a threshold
placed on some sets lands higher on a set it never saw; the headroom is what that costs). The
uncertainty band lies just above it: the next answers a looser threshold would flag, up to
``UNCERTAIN_MARGIN`` more of every set's faithful ones. They are not flagged; the job audits
them and a cascade asks its LLM judge. The file records every left-out set's figures
(``cv.left_out``), the worst of them and the chosen target.

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
from ragsieve.evaluators.records import Message, RagInteraction  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
FIT_SETS = {  # folder -> licence (only these may ship fitted numbers)
    "realrag/ragtruth_qa": "MIT",
    "halueval_qa": "MIT",
    "realrag/mtrag": "Apache-2.0",
}
GOAL_FALSE_ALARMS = 0.15  # the goal: flagged faithful answers of any left-out set
# the share of any fitted set's faithful answers the threshold may flag: the largest of these
# whose worst left-out set stays within the goal (a threshold placed on some sets lands higher
# or lower on one it never saw; the headroom is chosen left out, like C)
TARGET_GRID = (0.15, 0.14, 0.13, 0.12, 0.11, 0.10)
TARGET_FALSE_ALARMS = TARGET_GRID[0]
UNCERTAIN_MARGIN = 0.07  # the next answers, up to this share more: "uncertain" (not flagged)
C_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
VERSION = "m6"
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
    "short_gap": -1,
    "nothing_near": -1,
    "apart": -1,
}


def interaction(row: dict[str, Any]) -> RagInteraction:
    """A labelled row as the judge sees it, with the conversation's earlier turns (MTRAG)."""
    base = row_to_interaction(LabelledRow(**row))
    turns = tuple(
        Message(role=str(m.get("role") or "user"), content=str(m.get("content") or ""))
        for m in row.get("history") or ()
    )
    return base.model_copy(update={"chat_history": turns}) if turns else base


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
            [res] = asyncio.run(judge.evaluate(interaction(row)))
            feats = res.metadata.get("features")
            if res.label not in ("faithful", "unfaithful", "uncertain") or feats is None:
                continue  # abstained, skipped: nothing for the model to weigh
            out.append(
                {
                    "id": row["id"],
                    "set": folder.rsplit("/", 1)[-1],
                    "model": str((row.get("meta") or {}).get("model") or "unknown"),
                    "y": int(bool(row["label_faithful"])),
                    "x": [float(feats[f]) for f in FEATURES],
                    "cap": float(res.metadata.get("evidence", {}).get("cap", 1.0)),
                }
            )
    return out


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


def _balanced(sets: np.ndarray) -> np.ndarray:
    """Row weights under which every set weighs the same (the mean set size in total)."""
    names = sorted(set(sets))
    w = np.ones(len(sets))
    for name in names:
        w[sets == name] = len(sets) / len(names) / (sets == name).sum()
    return w


def _auc(y: np.ndarray, p: np.ndarray) -> float:
    return float(auc([bool(t) for t in y], [float(s) for s in p]) or 0.0)


def _cut(p: np.ndarray, y: np.ndarray, sets: np.ndarray, share: float) -> float:
    """The highest score at which no set flags more than ``share`` of its faithful answers
    (a score below the cut is flagged)."""
    cuts = []
    for name in sorted(set(sets)):
        faithful = np.sort(p[(sets == name) & (y == 1)])
        cuts.append(float(faithful[int(math.floor(share * len(faithful)))]))
    return min(cuts)


def _scores(x: np.ndarray, coef: np.ndarray, b: float, capped: np.ndarray) -> np.ndarray:
    """P(faithful); a row a decisive check capped scores as flagged whatever the model says."""
    p = 1 / (1 + np.exp(-np.clip(x @ coef + b, -30, 30)))
    return np.where(capped, 1e-9, p)


def _on_job_scale(p: np.ndarray, cut: float) -> np.ndarray:
    """``p`` shifted in log-odds so that ``cut`` falls on the job's faithfulness threshold."""
    job = DEFAULT_THRESHOLDS["faithfulness"]
    shift = math.log(job / (1 - job)) - math.log(cut / (1 - cut))
    q = np.clip(p, 1e-12, 1 - 1e-12)
    return 1 / (1 + np.exp(-(np.log(q / (1 - q)) + shift)))


def _arrays(rows: list[dict[str, Any]]) -> tuple[np.ndarray, ...]:
    x = np.array([r["x"] for r in rows])
    y = np.array([r["y"] for r in rows])
    sets = np.array([r["set"] for r in rows])
    capped = np.array([r["cap"] < 1.0 for r in rows])
    return x, y, sets, capped


def fit_scaled(
    x: np.ndarray, y: np.ndarray, sets: np.ndarray, capped: np.ndarray, c: float
) -> tuple[np.ndarray, float, float]:
    """The regularised fit's weights, stretched to calibrated log-odds on the same rows (a
    strongly regularised fit ranks well and is timid: its direction is kept, its scale is
    fitted), and the stretch."""
    coef, b = _fit(x, y, _balanced(sets), c)
    keep = ~capped
    a, b2 = _scale(x[keep] @ coef, y[keep], _balanced(sets[keep]))
    return coef * a, b2, a


def left_out(
    rows: list[dict[str, Any]], c: float, target: float = TARGET_FALSE_ALARMS
) -> tuple[np.ndarray, dict[str, Any]]:
    """Every row's score on the job's scale from the model fitted, and thresholded (at
    ``target``), on the other sets; and each left-out set's figures at the job's threshold."""
    x, y, sets, capped = _arrays(rows)
    job = DEFAULT_THRESHOLDS["faithfulness"]
    scores = np.zeros(len(rows))
    figures: dict[str, Any] = {}
    for name in sorted(set(sets)):
        train, test = sets != name, sets == name
        coef, b, _ = fit_scaled(x[train], y[train], sets[train], capped[train], c)
        p_train = _scores(x[train], coef, b, capped[train])
        cut = _cut(p_train, y[train], sets[train], target)
        loose = _cut(p_train, y[train], sets[train], target + UNCERTAIN_MARGIN)
        width = float(_on_job_scale(np.array([loose]), cut)[0]) - job
        s = _on_job_scale(_scores(x[test], coef, b, capped[test]), cut)
        scores[test] = s
        yt = y[test]
        band = (s >= job) & (s < job + width)
        figures[str(name)] = {
            "rows": int(test.sum()),
            "auc": round(_auc(yt, s), 4),
            "false_alarms": round(float((s[yt == 1] < job).mean()), 4),
            "recall": round(float((s[yt == 0] < job).mean()), 4),
            "uncertain": round(float(band.mean()), 4),
        }
    return scores, figures


GENERATOR_MIN_FAITHFUL = 30  # a generator with this many faithful answers in a set counts alone


def _worst_false_alarms(rows: list[dict[str, Any]], scores: np.ndarray) -> float:
    """The largest share of faithful answers flagged at the job's threshold over every set
    and every generator of a set with at least ``GENERATOR_MIN_FAITHFUL`` faithful answers
    (the goal holds for GPT-4o's answers as for the set's)."""
    job = DEFAULT_THRESHOLDS["faithfulness"]
    groups: dict[str, list[bool]] = {}
    for r, s in zip(rows, scores, strict=True):
        if r["y"]:
            for g in (r["set"], f"{r['set']}:{r.get('model', 'unknown')}"):
                groups.setdefault(g, []).append(bool(s < job))
    sized = [v for g, v in groups.items() if ":" not in g or len(v) >= GENERATOR_MIN_FAITHFUL]
    return max(sum(v) / len(v) for v in sized)


def _scale(z: np.ndarray, t: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """``(a, b)`` of the calibrated logistic ``sigmoid(a * z + b)`` of ``t`` on ``z``."""
    from scipy.optimize import minimize

    def loss(theta: np.ndarray) -> float:
        p = 1 / (1 + np.exp(-np.clip(theta[0] * z + theta[1], -30, 30)))
        return float(-(w * (t * np.log(p + 1e-12) + (1 - t) * np.log(1 - p + 1e-12))).sum())

    res = minimize(
        loss, np.array([1.0, 0.0]), method="L-BFGS-B", bounds=[(0.0, None), (None, None)]
    )
    return float(res.x[0]), float(res.x[1])


def fit(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], np.ndarray]:
    """Choose C leave one source out; fit on every set; place the threshold. Returns the model
    and every row's left-out score on the job's scale (what the judge would have scored it had
    its set not been fitted on), at most its decisive cap."""
    trials = []
    for c in C_GRID:
        scores, figures = left_out(rows, c)
        aucs = [f["auc"] for f in figures.values()]
        trials.append((min(aucs), round(sum(aucs) / len(aucs), 4), -c, c, scores, figures))
    _, _, _, c, loso, figures = max(trials, key=lambda t: t[:3])
    target = TARGET_GRID[0]
    for target in TARGET_GRID:  # the largest share whose worst left-out group meets the goal
        loso, figures = left_out(rows, c, target)
        if _worst_false_alarms(rows, loso) <= GOAL_FALSE_ALARMS:
            break
    x, y, sets, capped = _arrays(rows)
    coef, b, scale = fit_scaled(x, y, sets, capped, c)
    p = _scores(x, coef, b, capped)
    cut = _cut(p, y, sets, target)
    loose = _cut(p, y, sets, target + UNCERTAIN_MARGIN)
    job = DEFAULT_THRESHOLDS["faithfulness"]
    shift = math.log(job / (1 - job)) - math.log(cut / (1 - cut))
    width = float(_on_job_scale(np.array([loose]), cut)[0]) - job
    worst = {
        "auc": min(f["auc"] for f in figures.values()),
        "false_alarms": max(f["false_alarms"] for f in figures.values()),
        "recall": min(f["recall"] for f in figures.values()),
    }
    oof = np.minimum(loso, np.array([r["cap"] for r in rows]))
    return {
        "version": VERSION,
        "fitted_on": [f"{k} dev ({v})" for k, v in FIT_SETS.items()],
        "features": list(FEATURES),
        "coef": {f: round(float(v), 6) for f, v in zip(FEATURES, coef, strict=True)},
        "intercept": round(b + shift, 6),
        "uncertain_width": round(width, 4),
        "threshold": job,
        "cv": {
            "scheme": "leave one source out (fit and threshold on the other sets)",
            "C": c,
            "target_false_alarms": target,
            "calibration_scale": round(scale, 4),
            "sets_weighted": "equally",
            "left_out": figures,
            "worst_left_out": worst,
            "rows": {str(s): int((sets == s).sum()) for s in sorted(set(sets))},
        },
    }, oof


CHECK_TOLERANCE = 1e-4  # the fit's optimiser and float sums agree to ~1e-6 across machines


def _differences(shipped: Any, fitted: Any, where: str = "model") -> list[str]:
    """Where the shipped model and a refit disagree: structure and text exactly, numbers beyond
    ``CHECK_TOLERANCE`` (a refit on another machine moves the sixth digit, not the model)."""
    if isinstance(shipped, dict) and isinstance(fitted, dict):
        if shipped.keys() != fitted.keys():
            return [f"{where}: keys {sorted(shipped)} != {sorted(fitted)}"]
        return [d for k in shipped for d in _differences(shipped[k], fitted[k], f"{where}.{k}")]
    if isinstance(shipped, list) and isinstance(fitted, list) and len(shipped) == len(fitted):
        pairs = zip(shipped, fitted, strict=True)
        return [d for i, (a, b) in enumerate(pairs) for d in _differences(a, b, f"{where}[{i}]")]
    numbers = (int, float)
    if isinstance(shipped, numbers) and isinstance(fitted, numbers):
        if isinstance(shipped, bool) or isinstance(fitted, bool):
            return [] if shipped == fitted else [f"{where}: {shipped} != {fitted}"]
        close = abs(shipped - fitted) <= CHECK_TOLERANCE * max(1.0, abs(shipped))
        return [] if close else [f"{where}: shipped {shipped}, fit {fitted}"]
    return [] if shipped == fitted else [f"{where}: shipped {shipped!r}, fit {fitted!r}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--check", action="store_true", help="compare with the shipped file only")
    args = ap.parse_args()
    missing = [str(args.data / f / "dev.jsonl") for f in FIT_SETS]
    missing = [m for m in missing if not Path(m).is_file()]
    if missing:
        print(f"fit_faithfulness: no labelled set at {', '.join(missing)}", file=sys.stderr)
        return 2
    model, _ = fit(load(args.data))
    text = json.dumps(model, indent=1, sort_keys=True) + "\n"
    if args.check:
        shipped = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
        differ = _differences(shipped, json.loads(text))
        print("the shipped model matches the fit" if not differ else "the shipped model differs:")
        for where in differ[:20]:
            print(f"  {where}")
        return 0 if not differ else 1
    MODEL_FILE.write_text(text, encoding="utf-8")
    print(json.dumps(model["cv"], indent=1))
    print(json.dumps(model["coef"], indent=1), "intercept", model["intercept"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
