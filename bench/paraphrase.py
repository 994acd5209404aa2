"""Paraphrase benchmark: when are two flagged questions one golden case?

Usage: ``.venv/bin/python bench/paraphrase.py [--data DIR] [--per-source N]``
-> prints a table, writes ``bench/results/paraphrase.json``.

These sets' licences (CC BY-SA, or none stated) do not let a number fitted on them ship: the
shipped merge constants are chosen on licence-clean questions by ``bench/paraphrase_clean.py``,
which measures its rule on this module's pairs. The fits here are kept as a comparison (what
the re-wordings themselves would choose), not as the product's constants.

Pairs are re-wordings written by different people, against hard negatives (another question on
the same document or in the same conversation):

* ``xquad``: a question and its human translation (XQuAD en/es, same id); negatives are other
  questions on the same paragraph (then of the same article), in either language;
* ``coqar``: two of the three standalone rewrites CoQAR's annotators wrote for one turn;
  negatives are rewrites of other turns of the same story;
* ``canard``: the follow-up as the user typed it and the person's standalone rewrite; negatives
  are rewrites of other turns of the same conversation;
* ``cast2020``: the same for TREC CAsT 2020's manual rewrites.

Every pair is scored through the product's own rule (``signature.duplicate_reason`` with the
settings' ``DedupRule``), twice: once as two failures that agree strongly (the same missed
chunk: a hard negative about the same document misses the same chunk too), once as two failures
with nothing in common (only the meaning of the question can merge them). The constants of the
strong path (``cosine + share_weight * key-term share >= strong_score``) are chosen
leave-one-source-out: on the other sources, the pair with the highest mean of (paraphrases
merged - hard negatives merged), i.e. a missed merge (a second row for the reviewer) and a false
one (two questions under one candidate, both listed among its askings) cost the same; the
left-out source is then scored with them and the worst left-out source is reported. With
``--windows``, where the data has the passage (XQuAD, CAsT), the scores for two answers in the
same window of it and in different windows (the context judge's ``chunk_evidence``) are fitted
the same way: does knowing where the answer lies tell the questions apart? The final rows score
every source with the shipped constants, through ``duplicate_reason``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from e2e_traffic import DATA, _load  # noqa: E402

from ragsieve.evaluators.judges.offline.context import chunk_evidence  # noqa: E402
from ragsieve.evaluators.judges.offline.text.text import language  # noqa: E402
from ragsieve.evaluators.records import normalize_text  # noqa: E402
from ragsieve.evaluators.tools.embeddings import embed  # noqa: E402
from ragsieve.jobs.golden.growth.candidates import dedup_rule  # noqa: E402
from ragsieve.jobs.golden.growth.signature import (  # noqa: E402
    DedupRule,
    Signature,
    duplicate_reason,
    term_share,
)
from ragsieve.jobs.settings import GoldenSettings  # noqa: E402

SCORES = [round(x, 3) for x in np.arange(0.55, 3.001, 0.025)]  # cosine + weight * term share
WEIGHTS = [round(x, 2) for x in np.arange(0.0, 3.001, 0.25)]


@dataclass(frozen=True)
class Pair:
    source: str
    a: str
    b: str
    same: bool  # one question asked twice (True) or two questions on one document (False)
    passage: str | None = None  # the passage that answers ``a`` (where the data has one)


def _xquad(data: Path, rng: random.Random) -> Iterator[Pair]:
    d = _load(data)
    by_article: dict[str, list[str]] = defaultdict(list)
    by_para: dict[str, list[str]] = defaultdict(list)
    for qid, cid in d["en"]["qrels"].items():
        by_article[d["en"]["corpus"][cid]["title"]].append(qid)
        by_para[cid].append(qid)
    for qids in by_article.values():
        for qid in qids:
            first = rng.choice(("en", "es"))
            other = "es" if first == "en" else "en"
            q = d[first]["queries"][qid]["text"]
            gold = d["en"]["qrels"][qid]
            para = d[rng.choice(("en", "es"))]["corpus"][gold]["text"].lstrip("\ufeff")
            yield Pair("xquad", q, d[other]["queries"][qid]["text"], True, para)
            # other questions on the same paragraph first (they miss the same chunk), then on
            # the same article
            near = [x for x in by_para[gold] if x != qid]
            rest = near + rng.sample(wider := [x for x in qids if x not in near and x != qid],
                                     len(wider))  # fmt: skip
            for neg in rest[:2]:
                lang = rng.choice((first, other))
                yield Pair("xquad", q, d[lang]["queries"][neg]["text"], False, para)


def _multiturn(data: Path, name: str, file: str, rng: random.Random) -> Iterator[Pair]:
    rows = [json.loads(x) for x in (data / "multiturn" / name / file).open()]
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_conv[r["conversation_id"]].append(r)
    for r in rows:
        if name == "coqar":
            texts = list(dict.fromkeys(r["meta"].get("all_rewrites") or []))
            if len(texts) < 2:
                continue
            a, b = rng.sample(texts, 2)
        else:
            a, b = r["question"], r["rewrite"] or ""
        if not b or normalize_text(a) == normalize_text(b):
            continue
        passage = (r.get("passages") or [None])[0] if name == "cast2020" else None
        yield Pair(name, a, b, True, passage)
        others = [o for o in by_conv[r["conversation_id"]] if o["turn"] != r["turn"]]
        for o in rng.sample(others, min(2, len(others))):
            neg = (o["meta"].get("all_rewrites") or [o["rewrite"]])[0] if name == "coqar" else None
            neg = neg or o["rewrite"] or o["question"]
            if normalize_text(neg) != normalize_text(b):
                yield Pair(name, b, neg, False, passage)


def pairs(data: Path, per_source: int, seed: int) -> list[Pair]:
    """Up to ``per_source`` paraphrase pairs per source, with their hard negatives."""
    rng = random.Random(seed)
    out: list[Pair] = []
    gens = {
        "xquad": _xquad(data, rng),
        "coqar": _multiturn(data, "coqar", "train.jsonl", rng),
        "canard": _multiturn(data, "canard", "train.jsonl", rng),
        "cast2020": _multiturn(data, "cast2020", "dev.jsonl", rng),
    }
    for gen in gens.values():
        got = list(gen)
        pos = [p for p in got if p.same]
        keep = set(rng.sample(range(len(pos)), min(per_source, len(pos))))
        chosen = {id(p) for i, p in enumerate(pos) if i in keep}
        # a kept paraphrase brings the negatives generated right after it
        take = False
        for p in got:
            if p.same:
                take = id(p) in chosen
            if take:
                out.append(p)
    return out


def _sig(text: str, strong: bool, side: str) -> Signature:
    """A failure of ``text``: strong agreement shares the missed chunk, else nothing is shared."""
    return Signature(
        query=text,
        norm=normalize_text(text),
        root_cause="retrieval",
        chunks=frozenset({"doc#c1" if strong else f"{side}#c1"}),
        missed="doc#c0" if strong else None,
        values=frozenset(),
        lang=language(text),
    )


def answer_window(question: str, passage: str) -> str | None:
    """The two sentences of ``passage`` that answer ``question`` best (the offline context
    judge's chunk evidence), None when the passage holds no answer to it (score < 0.3)."""
    found = chunk_evidence(question, [passage])[0]
    return normalize_text(found.window) if found.score >= 0.3 and found.window else None


def features(ps: list[Pair], windows: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query cosine (the encoder), key-term share and (with ``windows``) answer windows of each
    pair: 1 when both questions' answers lie in the same window of the passage, 0 when in
    different ones, -1 when not measured, the source has no passage or an answer is not in it."""
    texts = sorted({t for p in ps for t in (p.a, p.b)})
    at = {t: i for i, t in enumerate(texts)}
    vecs = embed(texts)
    cos = np.array([float(vecs[at[p.a]] @ vecs[at[p.b]]) for p in ps])
    share = np.array([term_share(_sig(p.a, True, "a"), _sig(p.b, True, "b")) for p in ps])
    win = []
    for p in ps:
        if not (windows and p.passage):
            win.append(-1)
            continue
        wa, wb = (answer_window(q, p.passage) for q in (p.a, p.b))
        win.append(-1 if wa is None or wb is None else int(wa == wb))
    return cos, share, np.array(win)


def rates(merged: np.ndarray, same: np.ndarray) -> tuple[float, float]:
    """(share of paraphrases merged, share of hard negatives merged)."""
    rec = float(merged[same].mean()) if same.any() else float("nan")
    fmr = float(merged[~same].mean()) if (~same).any() else float("nan")
    return rec, fmr


def strong_merges(cos: np.ndarray, share: np.ndarray, score: float, weight: float) -> np.ndarray:
    """The strong path of ``duplicate_reason``: above the shortlist floor, and cosine plus
    ``weight`` times the key-term share reaching ``score``."""
    floor = DedupRule().support_cosine - DedupRule().strong_relief
    return (cos >= floor) & (cos + weight * share >= score)


def window_merges(
    cos: np.ndarray, share: np.ndarray, win: np.ndarray, rule: tuple[float, float, float, float]
) -> np.ndarray:
    """The strong path with answer windows: ``rule`` = (score, weight, same-window score,
    other-window score); pairs whose windows are unknown (-1) need the plain score."""
    k, w, k_same, k_other = rule
    need = np.where(win == 1, k_same, np.where(win == 0, k_other, k))
    floor = DedupRule().support_cosine - DedupRule().strong_relief
    return (cos >= floor) & (cos + w * share >= need)


def fit_windows(
    cos: np.ndarray,
    share: np.ndarray,
    same: np.ndarray,
    src: np.ndarray,
    win: np.ndarray,
    k: float,
    w: float,
) -> tuple[float, float, float, float]:
    """``(k, w)`` with the same-window and other-window scores fitted (the same objective) on
    the pairs whose windows are known; the plain score where no source of these knows them."""
    out = [k, w, k, k]
    for slot, value in ((2, 1), (3, 0)):
        m = win == value
        if not m.any():
            continue
        gain, pick = fit(cos[m], share[m], same[m], src[m], weights=[w])[:2]
        out[slot] = pick
    return out[0], out[1], out[2], out[3]  # fmt: skip


def fit(
    cos: np.ndarray, share: np.ndarray, same: np.ndarray, src: np.ndarray,
    weights: list[float] | None = None,
) -> tuple:  # fmt: skip
    """(objective, score, weight) of the strong path that maximises the mean over these sources
    of (paraphrases merged - hard negatives merged); ties go to the stricter rule."""
    best: tuple[float, float, float] | None = None
    for k in SCORES:
        for w in weights or WEIGHTS:
            merged = strong_merges(cos, share, k, w)
            per = [rates(merged[src == x], same[src == x]) for x in np.unique(src)]
            gain = float(np.nanmean([r - f for r, f in per]))
            if best is None or gain > best[0] + 1e-9:
                best = (gain, k, w)
    assert best is not None
    return best


def product_rates(ps: list[Pair], cos: np.ndarray, rule: DedupRule, strong: bool) -> list[bool]:
    """Which pairs ``duplicate_reason`` merges under ``rule``."""
    return [
        duplicate_reason(_sig(p.b, strong, "b"), _sig(p.a, strong, "a"), float(c), rule) is not None
        for p, c in zip(ps, cos, strict=True)
    ]


FLOORS = [round(x, 2) for x in np.arange(0.30, 0.601, 0.05)]
UNRELATED_MAX = 0.02  # questions about different documents above the floor, in every source


def both_sides_floor(ps: list[Pair], seed: int) -> dict[str, Any]:
    """The cosine floor of the both-sides path (``signature.both_sides_agree``), chosen
    leave-one-source-out: on the other sources, the lowest floor at which at most
    ``UNRELATED_MAX`` of question pairs about different documents (each re-wording against a
    question of another source) reach it in every source; the left-out source is then scored
    (its unrelated pairs above the floor, its re-wordings above it). Only the question's subject
    is asked here: both sides of the failure agreeing is what says the question is the same."""
    rng = random.Random(seed)
    pos = [p for p in ps if p.same]
    texts = sorted({t for p in pos for t in (p.a, p.b)})
    at = {t: i for i, t in enumerate(texts)}
    vecs = embed(texts)
    same_cos = np.array([float(vecs[at[p.a]] @ vecs[at[p.b]]) for p in pos])
    other = [(p, rng.choice([q for q in pos if q.source != p.source])) for p in pos]
    unrel = np.array([float(vecs[at[p.b]] @ vecs[at[q.a]]) for p, q in other])
    src = np.array([p.source for p in pos])
    sources = sorted(set(src.tolist()))

    def ok(f: float, keep: np.ndarray) -> bool:
        return all(float((unrel[keep & (src == x)] >= f).mean()) <= UNRELATED_MAX
                   for x in sources if (keep & (src == x)).any())  # fmt: skip

    loso = {}
    for left in sources:
        keep = src != left
        f = next((f for f in FLOORS if ok(f, keep)), FLOORS[-1])
        mine = src == left
        loso[left] = {
            "floor": f,
            "unrelated_above": round(float((unrel[mine] >= f).mean()), 3),
            "rewordings_above": round(float((same_cos[mine] >= f).mean()), 3),
        }
    every = next((f for f in FLOORS if ok(f, np.ones(len(pos), bool))), FLOORS[-1])
    worst = max(loso, key=lambda x: loso[x]["unrelated_above"])
    return {"loso": loso, "all_sources": every, "worst_left_out": {"source": worst, **loso[worst]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--per-source", type=int, default=300)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument(
        "--windows", action="store_true", help="Also fit scores by answer window (slow)."
    )
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "paraphrase.json")
    ap.add_argument(
        "--floor", action="store_true", help="Only fit the both-sides cosine floor (fast)."
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    ps = pairs(args.data, args.per_source, args.seed)
    if args.floor:
        floor = both_sides_floor(ps, args.seed)
        print(json.dumps(floor, indent=1))
        out = args.out.with_name("paraphrase_floor.json")
        out.write_text(json.dumps({"benchmark": "paraphrase --floor", "pairs_per_source":
                                   args.per_source, **floor}, indent=2) + "\n")  # fmt: skip
        return
    cos, share, win = features(ps, args.windows)
    same = np.array([p.same for p in ps])
    src = np.array([p.source for p in ps])
    sources = sorted(str(x) for x in set(src))
    loso = {}
    for left in sources:
        keep = src != left
        _, k, w = fit(cos[keep], share[keep], same[keep], src[keep])
        full = fit_windows(cos[keep], share[keep], same[keep], src[keep], win[keep], k, w)
        merged = window_merges(cos[~keep], share[~keep], win[~keep], full)
        rec, fmr = rates(merged, same[~keep])
        loso[left] = {"score": k, "weight": w, "same_window_score": full[2],
                      "other_window_score": full[3], "merged": round(rec, 3),
                      "false_merged": round(fmr, 3)}  # fmt: skip
    _, c_all, s_all = fit(cos, share, same, src)
    all_rule = fit_windows(cos, share, same, src, win, c_all, s_all)
    windows_known = {
        x: {k: int(((win == v) & (src == x)).sum()) for k, v in (("same", 1), ("other", 0))}
        for x in sources
    }
    rule = dedup_rule(GoldenSettings())
    shipped = {"strong_score": rule.strong_score, "share_weight": rule.share_weight,
               "floor": round(rule.support_cosine - rule.strong_relief, 3),
               "near_duplicate_cosine": rule.near_duplicate_cosine}  # fmt: skip
    product: dict[str, dict[str, Any]] = {}
    for strong in (True, False):
        merged = np.array(product_rates(ps, cos, rule, strong))
        for x in sources:
            rec, fmr = rates(merged[src == x], same[src == x])
            product.setdefault(x, {})["strong" if strong else "meaning_only"] = {
                "merged": round(rec, 3),
                "false_merged": round(fmr, 3),
            }
    counts = {
        x: {"paraphrases": int(same[src == x].sum()), "negatives": int((~same[src == x]).sum())}
        for x in sources
    }
    print(f"pairs: {counts}")
    print("leave-one-source-out fit of the strong path (same failure): left-out source scored")
    print(f"answer windows known (same / other): {windows_known}")
    print(f"  {'left out':10} {'score':>6} {'weight':>6} {'same w':>6} {'other w':>7}"
          f" {'merged':>7} {'false':>6}")  # fmt: skip
    for x, r in loso.items():
        print(
            f"  {x:10} {r['score']:6.3f} {r['weight']:6.2f} {r['same_window_score']:6.3f}"
            f" {r['other_window_score']:7.3f} {r['merged']:7.3f} {r['false_merged']:6.3f}"
        )
    worst = min(loso, key=lambda x: loso[x]["merged"])
    worst_f = max(loso, key=lambda x: loso[x]["false_merged"])
    print(f"  worst left-out: merged {loso[worst]['merged']} ({worst}),"
          f" false merges {loso[worst_f]['false_merged']} ({worst_f})")  # fmt: skip
    print(f"all sources: {[float(x) for x in all_rule]}; shipped {shipped}")
    print("shipped rule through duplicate_reason (merged / false merged):")
    for x in sources:
        st, mo = product[x]["strong"], product[x]["meaning_only"]
        print(f"  {x:10} same failure {st['merged']:.3f} / {st['false_merged']:.3f}"
              f"   meaning only {mo['merged']:.3f} / {mo['false_merged']:.3f}")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "paraphrase",
        "data": "XQuAD en/es translations; CoQAR annotators' rewrites; CANARD and TREC CAsT 2020"
        " follow-ups with a person's rewrite (../shared/data); hard negatives: other questions of"
        " the same article / conversation",
        "objective": "mean over fit sources of merged - false_merged",
        "pairs": counts,
        "loso": loso,
        "worst_left_out": {"merged": loso[worst]["merged"], "source": worst,
                           "false_merged": loso[worst_f]["false_merged"], "false_source": worst_f},
        "windows_known": windows_known,
        "fit_all_sources": dict(zip(("score", "weight", "same_window_score",
                                     "other_window_score"), map(float, all_rule), strict=True)),
        "shipped": shipped,
        "product": product,
        "seconds": round(time.perf_counter() - t0, 1),
    }  # fmt: skip
    args.out.write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
