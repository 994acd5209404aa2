"""The merge constants of ``golden/growth/signature.py``, chosen on licence-clean questions.

Usage: ``.venv/bin/python bench/paraphrase_clean.py [--data DIR]``
-> prints a table, writes ``bench/results/paraphrase_clean.json``.

Numbers shipped inside the product may be fitted only on sets whose licence allows it
(``../shared/data/README.md``: RAGTruth, HaluEval, MTRAG). Those sets hold no re-wordings of a
question by different people, so only the *false-merge* side of each constant is chosen here,
on their questions; how many re-wordings the chosen rule merges is measured on
``bench/paraphrase.py``'s pairs (XQuAD translations, CoQAR, CANARD, CAsT rewrites), never fitted.

Clean question pairs, per source (RAGTruth QA, HaluEval QA, MTRAG):

* *unrelated*: every pair of two different questions whose passages share none (MTRAG: from
  different conversations);
* *near*: two different questions about the same documents (MTRAG: two turns of one
  conversation) and, in every source, each question with its nearest other question (by the
  encoder's cosine) about other passages: the pairs most likely to be merged by mistake.

Each constant is the lowest (most merging) value at which, in every fit source, at most the
stated share of the pairs it guards against merges; chosen leave-one-source-out (fit on two
sources, the left-out one scored) and on all three for the shipped value:

* ``both_sides_floor`` (the same missed chunk and the same made-up value): unrelated pairs
  reaching the cosine floor, at most ``UNRELATED_MAX``;
* ``strong_score`` (the same missed chunk, value or chunks:
  ``cosine + share_weight * key-term share >= strong_score``): near pairs merged, at most
  ``NEAR_MAX``. ``share_weight`` is not a fit: it puts key-term share on the scale of the
  cosine (the ratio of their spreads over the clean near pairs above the shortlist floor);
* ``term_share`` (mostly the same chunks, cosine ``support_cosine``): near pairs merged, at
  most ``NEAR_MAX``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from e2e_traffic import DATA  # noqa: E402
from paraphrase import _sig, pairs  # noqa: E402

from ragsieve.evaluators.tools.embeddings import embed  # noqa: E402
from ragsieve.jobs.golden.growth.candidates import dedup_rule  # noqa: E402
from ragsieve.jobs.golden.growth.signature import duplicate_reason, term_share  # noqa: E402
from ragsieve.jobs.settings import GoldenSettings  # noqa: E402

SOURCES = {
    "ragtruth": "realrag/ragtruth_qa/dev.jsonl",
    "halueval": "halueval_qa/dev.jsonl",
    "mtrag": "realrag/mtrag/dev.jsonl",
}
UNRELATED_MAX = 0.02  # questions about different passages merged when both sides agree
NEAR_MAX = 0.02  # different questions about the same or the nearest passages merged
FLOORS = [round(x, 3) for x in np.arange(0.20, 0.801, 0.025)]
SCORES = [round(x, 3) for x in np.arange(0.55, 3.001, 0.025)]
SHARES = [round(x, 2) for x in np.arange(0.0, 1.001, 0.05)]


def questions(data: Path) -> dict[str, list[tuple[str, str]]]:
    """source → distinct (question, group): the group is what the question is about (its
    passages; MTRAG: its conversation, whose turns share the documents)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for src, rel in SOURCES.items():
        seen: dict[str, str] = {}
        for line in (data / rel).open():
            row = json.loads(line)
            q = " ".join(str(row["question"]).split())
            group = row.get("conversation_id") or json.dumps(row.get("contexts") or [])
            seen.setdefault(q, str(group))
        out[src] = sorted(seen.items())
    return out


def clean_pairs(data: Path) -> dict[str, dict[str, Any]]:
    """source → unrelated pair cosines, and near pairs (cosine, key-term share)."""
    qs = questions(data)
    out: dict[str, dict[str, Any]] = {}
    for src, items in qs.items():
        texts = [q for q, _ in items]
        groups = np.array([g for _, g in items])
        vecs = embed(texts)
        sims = vecs @ vecs.T
        same = groups[:, None] == groups[None, :]
        iu = np.triu_indices(len(texts), k=1)
        unrelated = sims[iu][~same[iu]]
        near: set[tuple[int, int]] = {(int(i), int(j)) for i, j in zip(*iu, strict=True)
                                      if same[i, j]}  # fmt: skip
        other = np.where(same, -np.inf, sims)
        for i in range(len(texts)):
            j = int(np.argmax(other[i]))
            near.add((min(i, j), max(i, j)))
        cos = np.array([float(sims[i, j]) for i, j in sorted(near)])
        share = np.array(
            [
                term_share(_sig(texts[i], True, "a"), _sig(texts[j], True, "b"))
                for i, j in sorted(near)
            ]
        )
        out[src] = {"questions": len(texts), "unrelated": unrelated, "near_cos": cos,
                    "near_share": share, "same_document_pairs": int(same[iu].sum())}  # fmt: skip
    return out


def lowest(values: list[float], ok: Any) -> float:
    """The first (most merging) value of ``values`` that ``ok`` accepts; the last otherwise."""
    return float(next((v for v in values if ok(v)), values[-1]))


def fit(clean: dict[str, dict[str, Any]], fit_on: list[str], rule: Any) -> dict[str, float]:
    """The three constants chosen on the sources ``fit_on`` (module docstring)."""
    low = rule.support_cosine - rule.strong_relief
    cos = np.concatenate([clean[s]["near_cos"] for s in fit_on])
    share = np.concatenate([clean[s]["near_share"] for s in fit_on])
    top = cos >= low
    weight = round(float(np.std(cos[top]) / max(np.std(share[top]), 1e-9)), 2) if top.any() else 1.0

    def floor_ok(f: float) -> bool:
        return all(float((clean[s]["unrelated"] >= f).mean()) <= UNRELATED_MAX for s in fit_on)

    def strong_ok(k: float) -> bool:
        return all(float(strong(clean[s], k, weight, low).mean()) <= NEAR_MAX for s in fit_on)

    def weak_ok(t: float) -> bool:
        return all(float(weak(clean[s], t, rule.support_cosine).mean()) <= NEAR_MAX for s in fit_on)

    return {
        "both_sides_floor": lowest(FLOORS, floor_ok),
        "share_weight": weight,
        "strong_score": lowest(SCORES, strong_ok),
        "term_share": lowest(SHARES, weak_ok),
    }


def strong(c: dict[str, Any], k: float, w: float, low: float) -> np.ndarray:
    return (c["near_cos"] >= low) & (c["near_cos"] + w * c["near_share"] >= k)


def weak(c: dict[str, Any], t: float, support: float) -> np.ndarray:
    return (c["near_cos"] >= support) & (c["near_share"] >= t)


def scored(c: dict[str, Any], f: dict[str, float], rule: Any) -> dict[str, float]:
    """The left-out source's false merges under constants ``f``."""
    low = rule.support_cosine - rule.strong_relief
    return {
        "unrelated_above_floor": round(float((c["unrelated"] >= f["both_sides_floor"]).mean()), 4),
        "near_merged_strong": round(
            float(strong(c, f["strong_score"], f["share_weight"], low).mean()), 3
        ),
        "near_merged_weak": round(float(weak(c, f["term_share"], rule.support_cosine).mean()), 3),
    }


def recall(data: Path, f: dict[str, float], per_source: int, seed: int) -> dict[str, Any]:
    """Re-wordings by other people (and their hard negatives) through ``duplicate_reason`` with
    the constants ``f``: measured, not fitted."""
    from dataclasses import replace

    rule = replace(dedup_rule(GoldenSettings()), **f)
    ps = pairs(data, per_source, seed)
    texts = sorted({t for p in ps for t in (p.a, p.b)})
    at = {t: i for i, t in enumerate(texts)}
    vecs = embed(texts)
    out: dict[str, Any] = defaultdict(dict)
    for path in ("both_sides", "strong", "meaning_only"):
        hits: dict[tuple[str, bool], list[bool]] = defaultdict(list)
        for p in ps:
            a, b = _sig(p.a, path != "meaning_only", "a"), _sig(p.b, path != "meaning_only", "b")
            if path == "both_sides":
                a, b = replace(a, values=frozenset({"v"})), replace(b, values=frozenset({"v"}))
            cos = float(vecs[at[p.a]] @ vecs[at[p.b]])
            hits[(p.source, p.same)].append(duplicate_reason(b, a, cos, rule) is not None)
        for (src, same), h in hits.items():
            if same or path != "both_sides":  # another question makes up another value
                key = "rewordings_merged" if same else "same_document_merged"
                out[src].setdefault(path, {})[key] = round(float(np.mean(h)), 3)
    return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--per-source", type=int, default=300)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "paraphrase_clean.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rule = dedup_rule(GoldenSettings())
    clean = clean_pairs(args.data)
    srcs = sorted(clean)
    loso = {}
    for left in srcs:
        f = fit(clean, [s for s in srcs if s != left], rule)
        loso[left] = {**f, **scored(clean[left], f, rule)}
    shipped = fit(clean, srcs, rule)
    keys = ("unrelated_above_floor", "near_merged_strong", "near_merged_weak")
    worst = {k: max(srcs, key=lambda s: loso[s][k]) for k in keys}
    counts = {
        s: {
            "questions": c["questions"],
            "unrelated_pairs": len(c["unrelated"]),
            "near_pairs": len(c["near_cos"]),
            "same_document_pairs": c["same_document_pairs"],
        }
        for s, c in clean.items()
    }
    print(f"clean pairs: {counts}")
    print("leave-one-source-out (fit on two clean sources, the left-out one scored):")
    for s, r in loso.items():
        print(f"  {s:9} {r}")
    print(f"worst left-out: { {k: (s, loso[s][k]) for k, s in worst.items()} }")
    print(f"all three sources: {shipped}")
    measured = recall(args.data, shipped, args.per_source, args.seed)
    print("re-wordings merged / other questions on the same document merged (measured only):")
    for s, r in sorted(measured.items()):
        print(f"  {s:9} {r}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "paraphrase_clean",
        "data": "fitted on RAGTruth QA, HaluEval QA, MTRAG questions (../shared/data, licences"
        " MIT, MIT, Apache-2.0); measured on bench/paraphrase.py's pairs (XQuAD, CoQAR, CANARD,"
        " CAsT 2020), never fitted",
        "bounds": {"unrelated_max": UNRELATED_MAX, "near_max": NEAR_MAX},
        "pairs": counts,
        "loso": loso,
        "worst_left_out": {k: {"source": s, "value": loso[s][k]} for k, s in worst.items()},
        "all_sources": shipped,
        "measured": measured,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    args.out.write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
