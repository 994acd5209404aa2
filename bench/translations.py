"""Translations of one failure in a bilingual knowledge base: does dedup make them one candidate?

Usage: ``.venv/bin/python bench/translations.py [--data DIR]``
-> prints a table, writes ``bench/results/translations.json``.

A bilingual deployment keeps each paragraph once per language, under its own chunk id, and each
language's question retrieves its own language's chunks: the "same chunks" evidence of
``signature.failure_agrees`` never holds across languages. Pairs from XQuAD en/es (parallel
paragraphs and questions; CC BY-SA: measured here, nothing fitted):

* *translated repeat*: a question and its human translation, each retrieving its own language's
  copy of the gold paragraph and of two other paragraphs of the article, each answered with the
  gold answer of its own language (one failure: the same answer, translated);
* *same paragraph*: that question and another question on the same paragraph, in the other
  language, the same retrieval, the other question's answer;
* *same article*: that question and a question on another paragraph of the article.

Scored through ``signature.duplicate_reason`` with the shipped rule, three ways:

* ``ids`` (the product today): chunk ids of each language, nothing in the failure agrees;
* ``chunks``: the chunks read as one set when each chunk's nearest chunk of the other language's
  set (the encoder's cosine on the chunk's head) is its own counterpart (no threshold: a
  paragraph and its translation are each other's nearest), i.e. "the same chunks";
* ``chunks+values``: that, and the numbers and names both answers state (a made-up value
  repeated), which is what a translated repeat of one wrong answer shares;
* ``twins`` (the product since golden22c): each side's chunk ids read through the chunk twins
  ``grow`` builds (``reference.nearest_chunks`` and ``mutual_twins`` over every chunk of the
  bench, both languages, languages read from the text; ``matching.as_one``): the whole
  article is not in the corpus, only the paragraphs some pair retrieves;
* ``twins+values``: that, and the shared numbers and names when the sets read as one.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from e2e_traffic import DATA, _load  # noqa: E402

from ragsieve.evaluators.judges.offline.text.terms import all_values  # noqa: E402
from ragsieve.evaluators.judges.offline.text.text import entities, fold, language  # noqa: E402
from ragsieve.evaluators.records import normalize_text  # noqa: E402
from ragsieve.evaluators.tools.embeddings import embed  # noqa: E402
from ragsieve.jobs.golden.growth.matching import as_one  # noqa: E402
from ragsieve.jobs.golden.growth.reference import mutual_twins, nearest_chunks  # noqa: E402
from ragsieve.jobs.golden.growth.signature import (  # noqa: E402
    DedupRule,
    Signature,
    duplicate_reason,
)

CHUNK_HEAD = 600


def _values(answer: str) -> frozenset[str]:
    return frozenset(all_values(answer) | {fold(e) for e in entities(" x " + answer)})


def _pairs(data: Path, seed: int) -> list[dict[str, Any]]:
    d = _load(data)
    rng = random.Random(seed)
    by_article: dict[str, list[str]] = defaultdict(list)
    by_para: dict[str, list[str]] = defaultdict(list)
    for qid, cid in d["en"]["qrels"].items():
        by_article[d["en"]["corpus"][cid]["title"]].append(qid)
        by_para[cid].append(qid)
    paras: dict[str, list[str]] = defaultdict(list)
    for cid, doc in d["en"]["corpus"].items():
        paras[doc["title"]].append(cid)
    out = []
    for title, qids in by_article.items():
        for qid in qids:
            gold = d["en"]["qrels"][qid]
            others = [p for p in paras[title] if p != gold]
            ret = [gold, *rng.sample(others, min(2, len(others)))]
            a_lang = rng.choice(("en", "es"))
            b_lang = "es" if a_lang == "en" else "en"
            same_para = [x for x in by_para[gold] if x != qid]
            same_art = [x for x in qids if d["en"]["qrels"][x] != gold]
            cases = [("translated repeat", qid, ret)]
            if same_para:
                cases.append(("same paragraph", rng.choice(same_para), ret))
            if same_art:
                neg = rng.choice(same_art)
                g2 = d["en"]["qrels"][neg]
                rest = [p for p in paras[title] if p != g2]
                ret2 = [g2, *rng.sample(rest, min(2, len(rest)))]
                cases.append(("same article", neg, ret2))
            for kind, other, ret_b in cases:
                out.append(
                    {
                        "kind": kind,
                        "article": title,
                        "a": (d[a_lang]["queries"][qid]["text"], a_lang, ret,
                              d[a_lang]["queries"][qid]["answers"][0]),
                        "b": (d[b_lang]["queries"][other]["text"], b_lang, ret_b,
                              d[b_lang]["queries"][other]["answers"][0]),
                    }
                )  # fmt: skip
    return out


def _corresponds(a_ids: list[str], b_ids: list[str], vec: dict[str, np.ndarray]) -> bool:
    """Each chunk's nearest chunk of the other set is its own translation (mutually)."""
    for one, other in ((a_ids, b_ids), (b_ids, a_ids)):
        for cid in one:
            sims = [float(vec[cid] @ vec[o]) for o in other]
            best = other[int(np.argmax(sims))]
            if best.rsplit("-", 1)[0] != cid.rsplit("-", 1)[0]:
                return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "translations.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    d = _load(args.data)
    pairs = _pairs(args.data, args.seed)
    chunk_ids = sorted(
        {f"{c}-{lang}" for p in pairs for side in ("a", "b") for lang in ("en", "es")
         for c in p[side][2]}
    )  # fmt: skip
    texts = [
        d[c.rsplit("-", 1)[1]]["corpus"][c.rsplit("-", 1)[0]]["text"][:CHUNK_HEAD]
        for c in chunk_ids
    ]
    vecs = embed(texts)
    vec = dict(zip(chunk_ids, vecs, strict=True))
    langs = dict(zip(chunk_ids, (language(t) for t in texts), strict=True))
    twins = mutual_twins(nearest_chunks(chunk_ids, np.asarray(vecs), chunk_ids), langs)
    qs = sorted({p[s][0] for p in pairs for s in ("a", "b")})
    qv = dict(zip(qs, embed(qs), strict=True))
    rule = DedupRule()
    table: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for p in pairs:
        (qa, la, ra, aa), (qb, lb, rb, ab) = p["a"], p["b"]
        ids_a, ids_b = [f"{c}-{la}" for c in ra], [f"{c}-{lb}" for c in rb]
        cos = float(qv[qa] @ qv[qb])
        one = _corresponds(ids_a, ids_b, vec)
        shared = _values(aa) & _values(ab)
        table["chunks correspond"][p["kind"]].append(one)
        for how in ("ids", "chunks", "chunks+values", "twins", "twins+values"):
            ca, cb = frozenset(ids_a), frozenset(ids_b)
            va = vb = frozenset()
            if how.startswith("chunks") and one:
                ca = cb = frozenset(ra)
            if how == "chunks+values" and one:
                va = vb = frozenset(shared)
            sa = Signature(qa, normalize_text(qa), "generation", ca, None, va, language(qa))
            sb = Signature(qb, normalize_text(qb), "generation", cb, None, vb, language(qb))
            if how.startswith("twins"):
                sa, sb = as_one(sa, sb, twins)
                if how == "twins+values" and sa.chunks == sb.chunks:
                    sa = replace(sa, values=frozenset(shared))
                    sb = replace(sb, values=frozenset(shared))
            table[how][p["kind"]].append(duplicate_reason(sb, sa, cos, rule) is not None)
    result = {
        how: {k: {"n": len(v), "merged": round(sum(v) / len(v), 3)} for k, v in kinds.items()}
        for how, kinds in table.items()
    }
    for how, kinds in result.items():
        print(f"{how:14s}", "  ".join(f"{k}: {v['merged']} (n {v['n']})" for k, v in kinds.items()))
    pairs_found = sum(1 for c, t in twins.items() if c < t)
    print(f"twins: {pairs_found} pairs among {len(chunk_ids)} chunks")
    out = {"benchmark": "translations", "seed": args.seed, "results": result,
           "twin_pairs": pairs_found, "chunks": len(chunk_ids),
           "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
    args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
