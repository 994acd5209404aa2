"""The category constants of ``golden/growth/`` derived on licence-clean questions and passages.

Usage: ``.venv/bin/python bench/categories_clean.py [--data DIR]``
-> prints a table, writes ``bench/results/categories_clean.json``.

Numbers shipped inside the product may come only from sets whose licence allows it
(``../shared/data/README.md``: RAGTruth, HaluEval, MTRAG). Those sets hold few questions per
topic (MTRAG: 8 conversations; RAGTruth QA and HaluEval QA: one question per passage set), so
no constant is fitted to how well categories form there; each is a quantile or a ratio of the
encoder's own distributions on clean text, stated in advance, computed per source (a question's
documents: its passages, each cut to ``CHUNK_HEAD`` characters, as the job reads chunks):

* ``DOC_WEIGHT`` (documents in a topic vector, ``topics.topic_vector``): question and documents
  count alike in a topic similarity when ``w² · sd(d·d') = sd(q·q')`` over pairs about different
  passages, so ``w = sqrt(sd(q·q') / sd(d·d'))``;
* ``RELATED_DOCS = (lo, hi)``: the documents of a question stop counting at the median cosine of
  a question with a passage it is not about (no closer than chance), and count in full from its
  95th percentile (closer than 19 of 20 unrelated passages);
* ``MAX_CUT`` (the widest cut of the topic tree): average linkage may not join areas whose
  failures are no closer than unrelated ones get: ``1 - q95`` of the topic cosine of two
  questions about different passages, the strictest fit source deciding (grid 0.025).

Leave-one-source-out: each value is computed on two sources and the left-out one is scored
(its unrelated passages counted in full, its own passages dropped, its unrelated topic pairs
inside the widest cut); the shipped value is computed on all three. ``MIN_CUT`` is no fit: the
tightest cut is where two queries count as a repeat of one failure (``1 - support_cosine``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from e2e_traffic import DATA  # noqa: E402
from paraphrase_clean import SOURCES  # noqa: E402

from ragsieve.evaluators.tools.embeddings import embed  # noqa: E402
from ragsieve.jobs.golden.growth.reference import CHUNK_HEAD  # noqa: E402
from ragsieve.jobs.golden.growth.topics import topic_vector  # noqa: E402

UNRELATED_Q = 95  # percentile of unrelated pairs a constant keeps out (RELATED_DOCS hi, MAX_CUT)
GRID = 0.025


def items(data: Path) -> dict[str, dict[str, Any]]:
    """source → question vectors, document vectors (unit sum of its passages), groups."""
    out: dict[str, dict[str, Any]] = {}
    for src, rel in SOURCES.items():
        seen: dict[str, tuple[tuple[str, ...], str]] = {}
        for line in (data / rel).open():
            row = json.loads(line)
            ctx = tuple(c[:CHUNK_HEAD] for c in row.get("contexts") or [] if c.strip())
            if ctx:
                q = " ".join(str(row["question"]).split())
                seen.setdefault(q, (ctx, str(row.get("conversation_id") or json.dumps(ctx))))
        qs = sorted(seen)
        chunks = sorted({c for q in qs for c in seen[q][0]})
        at = dict(zip(chunks, embed(chunks), strict=True))
        docs = np.vstack([np.sum([at[c] for c in seen[q][0]], axis=0) for q in qs])
        docs /= np.maximum(np.linalg.norm(docs, axis=1, keepdims=True), 1e-12)
        groups = np.array([seen[q][1] for q in qs])
        other = groups[:, None] != groups[None, :]
        out[src] = {"q": embed(qs), "d": docs, "other": other, "groups": len(set(groups))}
    return out


def upper(a: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The values of square ``a`` above the diagonal where ``mask`` holds."""
    return a[np.triu(mask, 1)]


def spread_weight(s: dict[str, Any]) -> float:
    q, d, other = s["q"], s["d"], s["other"]
    return math.sqrt(float(np.std(upper(q @ q.T, other)) / np.std(upper(d @ d.T, other))))


def unrelated_qd(s: dict[str, Any]) -> np.ndarray:
    return np.asarray((s["q"] @ s["d"].T)[s["other"]])


def topic_sims(s: dict[str, Any], weight: float, related: tuple[float, float]) -> np.ndarray:
    topics = np.vstack(
        [topic_vector(q, d, weight, related=related) for q, d in zip(s["q"], s["d"], strict=True)]
    )
    return upper(topics @ topics.T, s["other"])


def derive(src: dict[str, dict[str, Any]], on: list[str]) -> dict[str, Any]:
    """The constants computed on the sources ``on`` (module docstring)."""
    weight = round(float(np.mean([spread_weight(src[s]) for s in on])), 2)
    lo = float(np.mean([np.median(unrelated_qd(src[s])) for s in on]))
    hi = float(np.mean([np.percentile(unrelated_qd(src[s]), UNRELATED_Q) for s in on]))
    related = (round(lo, 2), round(hi, 2))
    q95 = max(float(np.percentile(topic_sims(src[s], weight, related), UNRELATED_Q)) for s in on)
    max_cut = round(math.floor((1 - q95) / GRID) * GRID, 3)
    return {"doc_weight": weight, "related_docs": list(related), "max_cut": max_cut}


def scored(s: dict[str, Any], f: dict[str, Any]) -> dict[str, float]:
    """The left-out source under constants ``f``."""
    lo, hi = f["related_docs"]
    own = np.sum(s["q"] * s["d"], axis=1)
    sims = topic_sims(s, f["doc_weight"], (lo, hi))
    return {
        "own_spread_weight": round(spread_weight(s), 2),
        "unrelated_docs_in_full": round(float((unrelated_qd(s) >= hi).mean()), 3),
        "own_docs_dropped": round(float((own <= lo).mean()), 3),
        "own_docs_below_full": round(float((own < hi).mean()), 3),
        "unrelated_topics_within_cut": round(float((sims >= 1 - f["max_cut"]).mean()), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "categories_clean.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    src = items(args.data)
    names = sorted(src)
    loso = {}
    for left in names:
        f = derive(src, [s for s in names if s != left])
        loso[left] = {**f, **scored(src[left], f)}
        print(f"  left out {left:9} {loso[left]}")
    keys = ("unrelated_docs_in_full", "own_docs_dropped", "unrelated_topics_within_cut")
    worst = {k: max(names, key=lambda s: loso[s][k]) for k in keys}
    shipped = derive(src, names)
    print(f"worst left-out: { {k: (s, loso[s][k]) for k, s in worst.items()} }")
    print(f"all three sources: {shipped}")
    payload = {
        "benchmark": "categories_clean",
        "data": "RAGTruth QA, HaluEval QA, MTRAG questions and passages (../shared/data, licences"
        " MIT, MIT, Apache-2.0); quantiles and spread ratios of the encoder, not fitted to a bench",
        "questions": {
            s: {"questions": len(src[s]["q"]), "groups": src[s]["groups"]} for s in names
        },
        "unrelated_percentile": UNRELATED_Q,
        "loso": loso,
        "worst_left_out": {k: {"source": s, "value": loso[s][k]} for k, s in worst.items()},
        "all_sources": shipped,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
