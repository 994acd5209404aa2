"""Failure categories benchmark: do repeats collapse, is an uncovered topic called new, and do
categories come at the size a reviewer thinks in?

Usage: ``.venv/bin/python bench/categories.py [--data DIR] [--seeds 13,14] [--replay DIR]``
-> prints a table, writes ``bench/results/categories.json``.

Traffic is bench/e2e_traffic.py's (XQuAD, not text we wrote; articles are the topics), thinned
so articles fail a varying number of times: per article 2-10 planted failures and 3 clean turns
(a clean turn the judge flags is a failure too). Two thirds of the failures are asked again by
another person: in the other language (XQuAD's human translation of the question, the same
chunks, the answer rebuilt with the same wrong value or claim). No repeat is generated from the
question's own wording (no lead-ins, no typos): the re-wordings are people's.
A golden set is imported for two thirds of the articles of
each half (2 of the article's about 6 questions, their gold paragraph in both languages as
relevant chunks; the failures come from its other questions); the other
articles are left out. Everything runs through the real CLI: ``collector serve`` on loopback,
``golden import``, ``jobs run --all`` (default settings), ``golden status --json`` and
``golden candidates --json``. Figures are read from those outputs only.

Goals, on held-out articles (the tune half is where constants were chosen): every planted
repeat group (a failure and its human translation) in one candidate (>= 0.9), also when the
job judged its members with different root causes; every left-out article with >= 3 failures
called new, also when its failures have mixed root causes (>= 0.9); <= 0.10 of candidates from
covered articles called new; candidates <= 0.6 x flagged traces (the floor this traffic allows
is 1 / (1 + REPEAT_SHARE) plus its flagged clean turns); no category over 40 % of candidates,
<= 10 % uncategorised; about one category per failing article, few candidates in a category of
another article.
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

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from e2e import RAGSIEVE, collect, verdicts  # noqa: E402
from e2e_traffic import CLEAN_KINDS, DATA, Trace, _load, build, translated  # noqa: E402

# share of failures asked again by another person: XQuAD's human translation of the question
# (the one re-wording of it by a different person the data has), failing the same way
REPEAT_SHARE = 2 / 3
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
    sent = collect(traces, store)
    gfile = workdir / "golden_v1.jsonl"
    gfile.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in golden))
    _cli(["golden", "import", str(gfile), "--json"], env)
    t0 = time.perf_counter()
    job = ["jobs", "run", "--since", "24h", "--settle", "0", "--all", "--json"]
    report = json.loads(_cli(job, env))
    seconds = round(time.perf_counter() - t0, 1)
    status = json.loads(_cli(["golden", "status", "--json"], env))
    cands = [json.loads(x) for x in _cli(["golden", "candidates", "--json"], env).splitlines()]
    judged = {t: v["root_cause"] for t, v in verdicts(workdir / "categories.db").items()}
    return {
        "sent": sent, "report": report, "status": status, "candidates": cands, "s": seconds,
        "judged": judged,
    }  # fmt: skip


def _located(out: dict[str, Any], split: str) -> tuple[dict[str, Trace], dict[str, dict]]:
    """Flagged traces of ``split`` that became candidates, and trace id -> its candidate
    (categorised or not)."""
    where: dict[str, dict[str, Any]] = {}
    for c in out["candidates"]:
        if c["kind"] == "failure":
            for tid in c["source_trace_ids"]:
                where[tid] = c
    mine = {tid: t for tid, t in out["sent"].items() if t.split == split and tid in where}
    return mine, where


def _repeats(mine: dict[str, Trace], where: dict[str, dict], judged: dict[str, str]) -> dict:
    """Planted repeat groups (a failure, its translation, its rewording) with >= 2 flagged
    members; how many share one candidate, overall and where the job judged them differently."""
    members: dict[str, list[str]] = defaultdict(list)
    for tid, t in mine.items():
        members[str(t.meta.get("repeat_of") or t.trace_key)].append(tid)
    planted = {str(t.meta["repeat_of"]) for t in mine.values() if t.meta.get("repeat_of")}
    multi = [g for g in planted if len(members[g]) >= 2]
    mixed = [g for g in multi if len({judged.get(t) for t in members[g]}) > 1]
    one = [g for g in multi if len({where[t]["id"] for t in members[g]}) == 1]
    return {
        "distinct": len(members),
        "groups": len(multi),
        "mixed_cause": len(mixed),
        "collapsed": len(one),
        "collapsed_mixed": len(set(one) & set(mixed)),
    }


def _novelty(
    mine: dict[str, Trace],
    where: dict[str, dict],
    cats: dict[str, dict],
    covered: set[str],
    judged: dict[str, str],
) -> dict[str, Any]:
    """Left-out articles called new (most of their candidates in categories announced as new:
    new and holding ``golden.new_category_min_cases`` failures), those among them whose
    failures the job gave two or more root causes; covered articles' candidates called new."""
    per_article: dict[str, list[dict[str, Any]]] = defaultdict(list)
    causes: dict[str, set[str]] = defaultdict(set)
    for tid, t in mine.items():
        per_article[t.article].append(where[tid])
        causes[t.article].add(str(judged.get(tid)))
    share = {
        a: sum(bool(cats.get(c["category"] or "", {}).get("new")) for c in v) / len(v)
        for a, v in per_article.items()
        if a not in covered and len(v) >= 3
    }
    mixed = {a for a in share if len(causes[a]) >= 2}
    cov = {c["id"]: c for a, v in per_article.items() if a in covered for c in v}
    return {
        "left_out_articles_ge3": len(share),
        "left_out_called_new": sum(x >= 0.5 for x in share.values()),
        "left_out_mixed_cause": len(mixed),
        "left_out_mixed_called_new": sum(share[a] >= 0.5 for a in mixed),
        "left_out_new_share": {a: round(x, 2) for a, x in sorted(share.items())},
        "covered_candidates": len(cov),
        "covered_new": sum(
            bool(cats.get(c["category"] or "", {}).get("new")) for c in cov.values()
        ),
    }


def _grouping(mine: dict[str, Trace], where: dict[str, dict], split: str) -> dict[str, int]:
    """Categories of ``split`` (most of their traces in it), candidates left uncategorised, and
    categorised candidates whose category's main article is not theirs (unrelated members)."""
    art: dict[str, str] = {}
    for tid, t in mine.items():
        art.setdefault(where[tid]["id"], t.article)
    cat_arts: dict[str, Counter[str]] = defaultdict(Counter)
    for cid, a in art.items():
        cat = next(c["category"] for c in where.values() if c["id"] == cid)
        if cat:
            cat_arts[cat][a] += 1
    stray = sum(sum(c.values()) - c.most_common(1)[0][1] for c in cat_arts.values())
    largest = max((sum(c.values()) for c in cat_arts.values()), default=0)
    return {
        "largest_category": largest,
        "largest_category_share": _ratio(largest, len(art)) or 0.0,
        "categories": len(cat_arts),
        "categorised_candidates": sum(sum(c.values()) for c in cat_arts.values()),
        "uncategorised_candidates": len(art) - sum(sum(c.values()) for c in cat_arts.values()),
        "candidates_off_their_category_article": stray,
        "failing_articles": len(set(art.values())),
    }


def score(out: dict[str, Any], covered: set[str], split: str) -> dict[str, Any]:
    """The issues' measures over the articles of ``split``."""
    mine, where = _located(out, split)
    cats = {c["category"]: c for c in out["status"]["new_categories"]}  # the announced ones
    rep = _repeats(mine, where, out["judged"])
    nov = _novelty(mine, where, cats, covered, out["judged"])
    grp = _grouping(mine, where, split)
    qids_in: dict[str, set[str]] = defaultdict(set)
    for tid, t in mine.items():
        qids_in[where[tid]["id"]].add(t.qid)
    return {
        "split": split,
        "flagged_traces": len(mine),
        "candidates": len(qids_in),
        "repeat_groups_flagged": rep["groups"],
        "repeat_groups_mixed_cause": rep["mixed_cause"],
        "repeat_groups_collapsed": rep["collapsed"],
        "repeat_groups_mixed_collapsed": rep["collapsed_mixed"],
        "repeats_collapsed": _ratio(rep["collapsed"], rep["groups"]),
        "repeats_collapsed_mixed_cause": _ratio(rep["collapsed_mixed"], rep["mixed_cause"]),
        "candidates_with_two_questions": sum(len(q) > 1 for q in qids_in.values()),
        **nov,
        "covered_called_new": _ratio(nov["covered_new"], nov["covered_candidates"]),
        **grp,
        "categories_per_100_candidates": _ratio(100 * grp["categories"], len(qids_in)),
        "candidates_per_flagged": _ratio(len(qids_in), len(mine)),
        # one candidate per planted failure: the lowest candidates per flagged trace the traffic
        # allows without putting two questions under one candidate
        "distinct_failures": rep["distinct"],
        "candidates_per_flagged_floor": _ratio(rep["distinct"], len(mine)),
        # one candidate per question: a flagged clean turn of a question that also failed is
        # the same question (the same normalised query), so it joins that failure's candidate
        "distinct_questions": len({t.qid for t in mine.values()}),
        "candidates_per_flagged_question_floor": _ratio(
            len({t.qid for t in mine.values()}), len(mine)
        ),
        "uncategorised_share": _ratio(grp["uncategorised_candidates"], len(qids_in)),
        "left_out_announced": _ratio(nov["left_out_called_new"], nov["left_out_articles_ge3"]),
    }


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


SUMMED = (
    "flagged_traces", "candidates", "repeat_groups_flagged", "repeat_groups_mixed_cause",
    "repeat_groups_collapsed", "repeat_groups_mixed_collapsed", "candidates_with_two_questions",
    "left_out_articles_ge3", "left_out_called_new", "left_out_mixed_cause",
    "left_out_mixed_called_new", "covered_candidates", "covered_new", "categories",
    "categorised_candidates", "uncategorised_candidates", "candidates_off_their_category_article",
    "failing_articles", "distinct_failures", "distinct_questions",
)  # fmt: skip


def pooled(runs: list[dict[str, Any]], split: str) -> dict[str, Any]:
    """The measures over every seed's traffic together (sums of numerators and denominators)."""
    tot = {k: sum(r["results"][split][k] for r in runs) for k in SUMMED}
    return {
        "split": split,
        **tot,
        "repeats_collapsed": _ratio(tot["repeat_groups_collapsed"], tot["repeat_groups_flagged"]),
        "repeats_collapsed_mixed_cause": _ratio(
            tot["repeat_groups_mixed_collapsed"], tot["repeat_groups_mixed_cause"]
        ),
        "covered_called_new": _ratio(tot["covered_new"], tot["covered_candidates"]),
        "categories_per_100_candidates": _ratio(100 * tot["categories"], tot["candidates"]),
        "categories_per_failing_article": _ratio(tot["categories"], tot["failing_articles"]),
        "candidates_per_flagged": _ratio(tot["candidates"], tot["flagged_traces"]),
        "candidates_per_flagged_floor": _ratio(tot["distinct_failures"], tot["flagged_traces"]),
        "candidates_per_flagged_question_floor": _ratio(
            tot["distinct_questions"], tot["flagged_traces"]
        ),
        "uncategorised_share": _ratio(tot["uncategorised_candidates"], tot["candidates"]),
        "left_out_announced": _ratio(tot["left_out_called_new"], tot["left_out_articles_ge3"]),
        # the largest category of any one seed's split, as a share of that split's candidates
        "largest_category_share": max(r["results"][split]["largest_category_share"] for r in runs),
        "stray_share": _ratio(
            tot["candidates_off_their_category_article"], tot["categorised_candidates"]
        ),
    }


def table(s: dict[str, Any]) -> str:
    ok = s["left_out_called_new"] == s["left_out_articles_ge3"]
    return "\n".join(
        [
            f"split={s['split']}  flagged traces={s['flagged_traces']}"
            f"  candidates={s['candidates']}",
            f"  repeat groups in one candidate                {s['repeat_groups_collapsed']}"
            f" / {s['repeat_groups_flagged']}   goal all",
            f"  ... of them judged with different causes      {s['repeat_groups_mixed_collapsed']}"
            f" / {s['repeat_groups_mixed_cause']}",
            f"  left-out articles (>= 3 failures) called new  {s['left_out_called_new']}"
            f" / {s['left_out_articles_ge3']}   goal all ({'ok' if ok else 'MISSED'})",
            f"  ... of them with mixed root causes            {s['left_out_mixed_called_new']}"
            f" / {s['left_out_mixed_cause']}",
            f"  covered-article candidates called new         {s['covered_new']}"
            f" / {s['covered_candidates']}   goal <= 0.10",
            f"  categories per 100 candidates                 "
            f"{_ratio(100 * s['categories'], s['candidates'])}"
            f"  ({s['categories']} for {s['failing_articles']} failing articles)",
            f"  uncategorised candidates                      {s['uncategorised_candidates']}",
            f"  categorised candidates off their category's article "
            f"{s['candidates_off_their_category_article']} / {s['categorised_candidates']}",
            f"  candidates holding two XQuAD questions        {s['candidates_with_two_questions']}",
            f"  candidates per flagged trace                  {s['candidates_per_flagged']}"
            f"   goal <= 0.6 (one per failure: {s['candidates_per_flagged_floor']},"
            f" per question: {s['candidates_per_flagged_question_floor']})",
            f"  largest category (share of candidates)        {s['largest_category_share']}"
            "   goal <= 0.40",
            f"  uncategorised share                           {s['uncategorised_share']}"
            "   goal <= 0.10",
        ]
    )


def one(data: Path, seed: int, keep: Path | None, replay: Path | None = None) -> dict[str, Any]:
    """Plan, run and score one seed's traffic (``replay``: growth alone on a kept job run, see
    ``growth_replay.py``; the run is made and kept there the first time)."""
    traces, golden, covered = plan(data, seed)
    if replay is not None:
        from growth_replay import keep_run, regrow

        kept = replay / f"seed{seed}"
        if not (kept / "flagged.pkl").exists():
            keep_run(traces, golden, covered, kept, _cli)
        out, covered = regrow(kept, _cli)
        return _result(seed, out, golden, covered, replayed=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = run(traces, golden, Path(tmp))
        if keep:  # the store and the plan, for looking into a run afterwards
            import shutil

            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(Path(tmp) / "categories.db", keep / f"seed{seed}.db")
            sent = {tid: t.__dict__ for tid, t in out["sent"].items()}
            (keep / f"seed{seed}.plan.json").write_text(
                json.dumps({"sent": sent, "covered": sorted(covered)})
            )
    return _result(seed, out, golden, covered, replayed=False)


def _result(
    seed: int, out: dict[str, Any], golden: list[dict[str, Any]], covered: set[str], replayed: bool
) -> dict[str, Any]:
    golden_report = out["report"].get("golden") or {}
    return {
        "seed": seed,
        "replayed": replayed,
        "traces": len(out["sent"]),
        "golden_cases": len(golden),
        "covered_articles": len(covered),
        "job_seconds": out["s"],
        "run_report_golden": {
            k: golden_report.get(k)
            for k in ("new_candidates", "merged_duplicates", "covered_by_golden", "categories")
        },
        "new_categories_announced": len(golden_report.get("announced_categories") or []),
        "results": {s: score(out, covered, s) for s in ("tune", "heldout")},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--seeds", default="13,14,15", help="Traffic plans, comma-separated.")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "categories.json")
    ap.add_argument("--keep", type=Path, default=None, help="Keep each seed's store in DIR.")
    ap.add_argument(
        "--replay",
        type=Path,
        default=None,
        help="Keep each seed's job run in DIR/seedN (made the first time) and re-run golden"
        " growth alone on it (growth_replay.py).",
    )
    args = ap.parse_args()
    if not (args.data / "xquad_en").exists():
        raise SystemExit(f"{args.data}/xquad_en: not found (XQuAD dev splits are needed)")
    runs = [one(args.data, int(seed), args.keep, args.replay) for seed in args.seeds.split(",")]
    for r in runs:
        print(f"== seed {r['seed']}: {r['traces']} traces, job {r['job_seconds']} s")
        for split in ("tune", "heldout"):
            print(table(r["results"][split]))
    total = {s: pooled(runs, s) for s in ("tune", "heldout")}
    print(f"== all {len(runs)} seeds pooled")
    for split in ("tune", "heldout"):
        print(table(total[split]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "categories",
        "data": "XQuAD es/en dev (../shared/data); articles as topics, split 24 tune / 24 held"
        " out; repeat groups: a failure and XQuAD's human es/en translation of its question",
        "settings": "defaults (golden.*), offline judge, jobs run --all",
        "pooled": total,
        "runs": runs,
    }
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
