"""Failure categories benchmark: do repeats collapse, is an uncovered topic called new, and do
categories come at the size a reviewer thinks in?

Usage: ``.venv/bin/python bench/categories.py [--data DIR] [--seed N]``
-> prints a table, writes ``bench/results/categories.json``.

Traffic is bench/e2e_traffic.py's (XQuAD, not text we wrote; articles are the topics), thinned
so articles fail a varying number of times: per article 2-10 planted failures and 3 clean turns
(a clean turn the judge flags is a failure too). A third of the failures get planted repeats:
the same failure asked in the other language (XQuAD's human translation of the question, the
same chunks, the answer rebuilt with the same wrong value or claim) and asked another way (a
different opening, often typos). A golden set is imported for two thirds of the articles of
each half (2 of the article's about 6 questions, their gold paragraph in both languages as
relevant chunks; the failures come from its other questions); the other
articles are left out. Everything runs through the real CLI: ``collector serve`` on loopback,
``golden import``, ``jobs run --all`` (default settings), ``golden status --json`` and
``golden candidates --json``. Figures are read from those outputs only.

Goals, on held-out articles (the tune half is where constants were chosen): repeats collapse
>= 0.90; every left-out article with >= 3 failures called new; <= 0.10 of candidates from
covered articles called new; categories within ±50% of the distinct (article, root cause)
pairs that failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from e2e import RAGSIEVE, _free_port, send  # noqa: E402
from e2e_traffic import CLEAN_KINDS, DATA, Trace, _load, build, paraphrased, translated  # noqa: E402

REPEAT_SHARE = 1 / 3
GOLDEN_PER_ARTICLE = 2  # of the about 6 questions XQuAD has per article
COVERED_SHARE = 2 / 3


def plan(data: Path, seed: int) -> tuple[list[Trace], list[dict[str, Any]], set[str]]:
    """(traces to send, golden cases, covered articles).

    A covered article keeps ``GOLDEN_PER_ARTICLE`` of its questions for the golden set; its
    failures come from its other questions.
    """
    rng = random.Random(seed)
    by_article: dict[str, list[Trace]] = defaultdict(list)
    for t in build(data):
        by_article[t.article].append(t)
    covered: set[str] = set()
    for split in ("tune", "heldout"):
        arts = sorted(a for a, ts in by_article.items() if ts[0].split == split)
        covered |= set(rng.sample(arts, round(len(arts) * COVERED_SHARE)))
    reserved: dict[str, set[str]] = {}
    for art in sorted(covered):
        qids = sorted({t.qid for t in by_article[art]})
        reserved[art] = set(rng.sample(qids, min(GOLDEN_PER_ARTICLE, len(qids) - 1)))
    traces: list[Trace] = []
    for art in sorted(by_article):
        mine = [t for t in by_article[art] if t.qid not in reserved.get(art, set())]
        fails = [t for t in mine if t.kind not in CLEAN_KINDS]
        clean = [t for t in mine if t.kind == "clean"]
        keep = rng.sample(fails, min(len(fails), rng.randint(2, 10)))
        traces += keep + rng.sample(clean, min(3, len(clean)))
        for t in keep:
            if rng.random() < REPEAT_SHARE:
                tr = translated(t, data, rng)
                traces += [tr] if tr else []
                traces.append(paraphrased(t, rng))
    return traces, _golden(data, reserved, rng), covered


def _golden(data: Path, reserved: dict[str, set[str]], rng: random.Random) -> list[dict[str, Any]]:
    d = _load(data)
    cases = []
    for art in sorted(reserved):
        for qid in sorted(reserved[art]):
            lang = rng.choice(("en", "es"))
            gold = d["en"]["qrels"][qid]
            cases.append(
                {
                    "id": f"xq-{qid}",
                    "query": d[lang]["queries"][qid]["text"],
                    # the paragraph exists in both languages of the knowledge base
                    "relevant_chunks": {f"{gold}-en": 1, f"{gold}-es": 1},
                    "reference_answer": d[lang]["queries"][qid]["answers"][0],
                }
            )
    return cases


def _cli(args: list[str], env: dict[str, str]) -> str:
    out = subprocess.run([RAGSIEVE, *args], env=env, capture_output=True, text=True, check=False)
    if out.returncode not in (0, 1):
        raise SystemExit(f"ragsieve {' '.join(args[:2])} failed: {out.stderr[-2000:]}")
    return out.stdout


def run(traces: list[Trace], golden: list[dict[str, Any]], workdir: Path) -> dict[str, Any]:
    """Collector ← traffic; golden import; jobs run --all; golden status and candidates."""
    store = f"sqlite:///{workdir / 'categories.db'}"
    env = {**os.environ, "RAGSIEVE_STORE": store}
    port = _free_port()
    server = subprocess.Popen(
        [RAGSIEVE, "collector", "serve", "--store", store, "--port", str(port), "--grpc-port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        sent = send(traces, f"http://127.0.0.1:{port}/v1/traces")
        time.sleep(1.0)
    finally:
        server.terminate()
        server.wait(30)
    gfile = workdir / "golden_v1.jsonl"
    gfile.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in golden))
    _cli(["golden", "import", str(gfile), "--json"], env)
    t0 = time.perf_counter()
    job = ["jobs", "run", "--since", "24h", "--settle", "0", "--all", "--json"]
    report = json.loads(_cli(job, env))
    seconds = round(time.perf_counter() - t0, 1)
    status = json.loads(_cli(["golden", "status", "--json"], env))
    cands = [json.loads(x) for x in _cli(["golden", "candidates", "--json"], env).splitlines()]
    return {"sent": sent, "report": report, "status": status, "candidates": cands, "s": seconds}


def score(out: dict[str, Any], covered: set[str], split: str) -> dict[str, Any]:
    """The issue's four measures (and a few more) over the articles of ``split``."""
    sent: dict[str, Trace] = out["sent"]
    cats = {c["category"]: c for c in out["status"]["categories"]}
    rows = [c for c in out["candidates"] if c["kind"] == "failure" and c["category"]]
    where: dict[str, dict[str, Any]] = {}
    for c in rows:
        for tid in c["source_trace_ids"]:
            where[tid] = c
    mine = {tid: t for tid, t in sent.items() if t.split == split and tid in where}
    groups: dict[str, set[str]] = defaultdict(set)  # repeat group -> candidate ids
    causes: dict[str, set[str]] = defaultdict(set)
    for tid, t in mine.items():
        g = str(t.meta.get("repeat_of") or t.trace_key)
        groups[g].add(where[tid]["id"])
        causes[g].add(where[tid]["root_cause"])
    planted = {
        g for g, t in ((str(t.meta.get("repeat_of")), t) for t in mine.values()) if g != "None"
    }
    multi = [
        g
        for g in planted
        if sum(1 for t in mine.values() if str(t.meta.get("repeat_of") or t.trace_key) == g) >= 2
    ]
    same_cause = [g for g in multi if len(causes[g]) == 1]
    collapsed = [g for g in same_cause if len(groups[g]) == 1]
    per_article: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for tid, t in mine.items():
        per_article[t.article].append(where[tid])
    left_out = {a: v for a, v in per_article.items() if a not in covered}
    called = {
        a: sum(cats.get(c["category"], {}).get("new", False) for c in v) / len(v)
        for a, v in left_out.items()
    }
    eligible = [a for a, v in left_out.items() if len(v) >= 3]
    cov_cands = {c["id"]: c for a, v in per_article.items() if a in covered for c in v}
    cov_new = sum(cats.get(c["category"], {}).get("new", False) for c in cov_cands.values())
    pairs = {(t.article, where[tid]["root_cause"]) for tid, t in mine.items()}
    cat_split: dict[str, Counter[str]] = defaultdict(Counter)
    for tid, t in sent.items():
        if tid in where:
            cat_split[where[tid]["category"]][t.split] += 1
    n_cats = sum(1 for c in cat_split.values() if c.most_common(1)[0][0] == split)
    qids_in: dict[str, set[str]] = defaultdict(set)
    for tid, t in mine.items():
        qids_in[where[tid]["id"]].add(t.qid)
    return {
        "split": split,
        "flagged_traces": len(mine),
        "candidates": len(
            {c["id"] for c in where.values() if c["id"] in {where[t]["id"] for t in mine}}
        ),
        "repeat_groups_flagged": len(multi),
        "repeat_groups_same_cause": len(same_cause),
        "repeats_collapsed": round(len(collapsed) / len(same_cause), 3) if same_cause else None,
        "repeats_collapsed_any_cause": round(len(collapsed) / len(multi), 3) if multi else None,
        "candidates_with_two_questions": sum(len(q) > 1 for q in qids_in.values()),
        "left_out_articles_ge3": len(eligible),
        "left_out_called_new": sum(called[a] >= 0.5 for a in eligible),
        "left_out_new_share": {a: round(called[a], 2) for a in sorted(eligible)},
        "covered_candidates": len(cov_cands),
        "covered_called_new": round(cov_new / len(cov_cands), 3) if cov_cands else None,
        "categories": n_cats,
        "article_cause_pairs": len(pairs),
        "categories_ratio": round(n_cats / len(pairs), 3) if pairs else None,
    }


def table(s: dict[str, Any]) -> str:
    ok = s["left_out_called_new"] == s["left_out_articles_ge3"]
    return "\n".join(
        [
            f"split={s['split']}  flagged traces={s['flagged_traces']}"
            f"  candidates={s['candidates']}",
            f"  repeats collapsed (groups, same root cause)   {s['repeats_collapsed']}"
            f"  of {s['repeat_groups_same_cause']}   goal >= 0.90",
            f"  repeats collapsed (any root cause)            {s['repeats_collapsed_any_cause']}"
            f"  of {s['repeat_groups_flagged']}",
            f"  left-out articles (>= 3 failures) called new  {s['left_out_called_new']}"
            f" / {s['left_out_articles_ge3']}   goal all ({'ok' if ok else 'MISSED'})",
            f"  covered-article candidates called new         {s['covered_called_new']}"
            f"  of {s['covered_candidates']}   goal <= 0.10",
            f"  categories / (article, root cause) pairs      {s['categories']} /"
            f" {s['article_cause_pairs']} = {s['categories_ratio']}   goal 0.5 - 1.5",
            f"  candidates holding two XQuAD questions        {s['candidates_with_two_questions']}",
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "categories.json")
    ap.add_argument("--keep", type=Path, default=None, help="Copy the store here after the run.")
    args = ap.parse_args()
    if not (args.data / "xquad_en").exists():
        raise SystemExit(f"{args.data}/xquad_en: not found (XQuAD dev splits are needed)")
    traces, golden, covered = plan(args.data, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        out = run(traces, golden, Path(tmp))
        if args.keep:
            import shutil

            shutil.copy(Path(tmp) / "categories.db", args.keep)
            plan_file = args.keep.with_suffix(".plan.json")
            sent = {tid: t.__dict__ for tid, t in out["sent"].items()}
            plan_file.write_text(json.dumps({"sent": sent, "covered": sorted(covered)}))
    results = {s: score(out, covered, s) for s in ("tune", "heldout")}
    for s in ("tune", "heldout"):
        print(table(results[s]))
    print(f"job: {out['s']} s for {len(out['sent'])} traces; golden cases {len(golden)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "categories",
        "data": "XQuAD es/en dev (../shared/data); articles as topics, split 24 tune / 24 held out",
        "traffic": {
            "traces": len(out["sent"]),
            "golden_cases": len(golden),
            "covered_articles": len(covered),
            "seed": args.seed,
        },
        "job_seconds": out["s"],
        "run_report_golden": {
            k: out["report"].get("golden", {}).get(k)
            for k in ("new_candidates", "merged_duplicates", "covered_by_golden", "categories")
        },
        "new_categories_announced": len(out["report"].get("golden", {}).get("new_categories", [])),
        "results": results,
    }
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
