"""Run every offline judge on every labelled dev set in ../shared/data, plus speed; print a table.

Usage: .venv/bin/python bench/judges.py [--data DIR]   -> bench/results/judges.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evaluators"))
sys.path.insert(0, str(ROOT / "collector"))
sys.path.insert(0, str(ROOT / "jobs"))
# one core: BLAS single-threaded (set before numpy loads) and the process pinned to one CPU
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

from ragsieve.evaluators.judges import LLMConfig, build_judges, get_judge  # noqa: E402
from ragsieve.evaluators.quality.calibration import (  # noqa: E402
    agreement,
    binary_stats,
    judge_rows,
    pairwise_accuracy,
    read_rows,
)
from ragsieve.evaluators.tools import embeddings  # noqa: E402
from ragsieve.jobs.settings import load_settings  # noqa: E402

THRESHOLDS = dict(load_settings().jobs.thresholds)  # the job's decision thresholds (defaults)
from ragsieve.evaluators.judges.offline.text.text import content_words, rarity  # noqa: E402
from ragsieve.evaluators.testing import FakeOpenAIServer, make_interaction  # noqa: E402

SETS = {"wikieval": None, "halueval_qa": None, "faithbench": None, "wikiqa_context_relevance": None}
TASK_METRIC = {
    "faithfulness": "faithfulness",
    "faithfulness_summarization": "faithfulness",
    "answer_relevance": "answer_relevance",
    "context_relevance": "context_relevance",
}


CI_SLICE_ROWS = 40  # per set and task: WikiEval (36 a task) whole, the first 40 of the others
_TIMING = ("ms_per_row",)


def quality(data: Path, limit: int | None = None) -> list[dict]:
    """Agreement of every judge on every dev set at ``jobs.thresholds``; with ``limit``, on the
    first ``limit`` rows of each set and task, with each row's decision (``ci_slice``)."""
    out = []
    for name in SETS:
        path = data / name / "dev.jsonl"
        if not path.exists():
            continue
        rows = read_rows(path)
        for task in sorted({r.task for r in rows}):
            metric = TASK_METRIC[task]
            # the judge exactly as the job builds it: labels at jobs.thresholds
            [judge] = build_judges([metric], thresholds=THRESHOLDS)
            sub = [r for r in rows if r.task == task][:limit]
            t0 = time.perf_counter()
            scored = asyncio.run(judge_rows(judge, sub))
            ms = (time.perf_counter() - t0) * 1000 / max(1, len(sub))
            a = agreement(scored, sweep=False)
            row = {
                "set": name,
                "task": task,
                "judge": metric,
                "n": a["n"],
                "threshold": THRESHOLDS[metric],
                "balanced_accuracy": a["balanced_accuracy"],
                "precision_failure": a.get("precision"),
                "recall_failure": a.get("recall"),
                "f1_failure": a["f1"],
                "kappa": a["kappa"],
                "auc": a["auc"],
                "pairwise": a.get("pairwise_accuracy"),
                "ms_per_row": round(ms, 2),
            }
            decided = [s for s in scored if s.failure is not None]
            if limit is not None:  # F = called a failure, P = a pass, - = undecided
                row["decisions"] = "".join(
                    "-" if s.failure is None else "F" if s.failure else "P" for s in scored
                )
            # relevant = positive F1 (the WikiQA convention)
            pos = binary_stats([not s.truth for s in decided], [not s.failure for s in decided])
            row["f1_positive"] = round(pos["f1"], 4)
            if (
                name == "halueval_qa"
            ):  # length control: only pairs whose answers both have >= 4 words
                short = {s.row.pair_id for s in scored if len((s.row.answer or "").split()) < 4}
                pw, n = pairwise_accuracy([s for s in scored if s.row.pair_id not in short])
                row["pairwise_both_ge4_words"], row["pairs_ge4"] = round(pw or 0, 4), n
                ratio = [s for s in scored]
                lens = {}
                for s in ratio:
                    lens.setdefault(s.row.pair_id, []).append(len((s.row.answer or "").split()))
                matched = {p for p, ls in lens.items() if len(ls) == 2 and max(ls) <= 1.5 * min(ls)}
                pw2, n2 = pairwise_accuracy([s for s in scored if s.row.pair_id in matched])
                row["pairwise_length_matched_1.5x"], row["pairs_matched"] = (
                    (None if pw2 is None else round(pw2, 4)),
                    n2,
                )
            out.append(row)
    return out


def ci_slice(data: Path) -> dict:
    """The CI-sized rerun (``--ci-slice``, about 10 s): ``quality`` itself on the first
    ``CI_SLICE_ROWS`` rows of each set and task, timings left out. A full run stores it in
    ``judges.json``; ``tests/test_bench_slices.py`` reruns it and must find the same figures,
    so a judge changed without rerunning this benchmark fails the test suite."""
    rows = quality(data, limit=CI_SLICE_ROWS)
    return {
        "rows_per_task": CI_SLICE_ROWS,
        "thresholds": THRESHOLDS,
        "quality": [{k: v for k, v in r.items() if k not in _TIMING} for r in rows],
    }


def _synthetic_inputs(n: int, offset: int = 0) -> list:
    """Five 3-sentence chunks that share the question's words (lexical evidence decides)."""
    base = [
        "The {i}th tower of Velmora was built in {y} by the engineer Adaline Brook.",
        "It rises {h} metres above the river and hosts a museum of clocks.",
        "Visitors reach it by tram line {i} from the central station.",
    ]
    xs = []
    for i in range(offset, offset + n):
        chunks = [
            " ".join(s.format(i=i + k, y=1800 + i + k, h=40 + k) for s in base) for k in range(5)
        ]
        xs.append(
            make_interaction(
                query=f"When was the {i}th tower of Velmora built and how tall is it?",
                context=chunks,
                answer=(
                    f"The {i}th tower of Velmora was built in {1800 + i} by Adaline Brook. "
                    f"It is {40} metres tall. It hosts a museum of clocks."
                ),
            )
        )
    return xs


def _wikipedia_inputs(data: Path, n: int) -> list:
    """Real questions and Wikipedia text (WikiQA): the chunk holding the answer plus four
    3-sentence chunks of other articles that share a question word, as a lexical retriever
    would return them, so most chunks need the encoder to be judged."""
    folder = data / "wikiqa_retrieval"
    if not (folder / "corpus.jsonl").exists():
        return []
    articles: dict[str, list[str]] = {}
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        articles.setdefault(doc["id"].rsplit("-", 1)[0], []).append(doc["text"])
    queries = {}
    for line in (folder / "queries_dev.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        queries[q["id"]] = q["text"]
    answers: dict[str, str] = {}
    for line in (folder / "qrels_dev.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, cid, rel = line.split("\t")
        if int(rel) > 0 and qid in queries:
            answers.setdefault(qid, cid)
    windows = [
        (a, " ".join(ss[k : k + 3]))
        for a, ss in sorted(articles.items())
        for k in range(len(ss) - 2)
    ]
    index: dict[str, list[int]] = {}
    for i, (_, text) in enumerate(windows):
        for w in set(content_words(text)):
            index.setdefault(w, []).append(i)
    rng = random.Random(7)
    xs = []
    for qid, cid in sorted(answers.items())[:n]:
        art, j = cid.rsplit("-", 1)
        sents = articles[art]
        lo = max(0, min(int(j) - 1, len(sents) - 3))
        hits = sorted(
            {i for w in content_words(queries[qid]) for i in index.get(w, [])[:2000]}
            - {i for i, (a, _) in enumerate(windows) if a == art}
        )
        noise = rng.sample(hits, 4) if len(hits) >= 4 else rng.sample(range(len(windows)), 4)
        chunks = [" ".join(sents[lo : lo + 3]), *(windows[i][1] for i in noise)]
        rest = [s for i, s in enumerate(sents) if i != int(j)]
        answer = " ".join([sents[int(j)], *rest[:2]])
        xs.append(make_interaction(query=queries[qid], context=chunks, answer=answer))
    return xs


def _forget_texts() -> None:
    """Empty every text-keyed cache: sentence vectors, word tokenisation, word rarity."""
    embeddings.clear_cache()
    tok = getattr(embeddings._model(), "_sp", None)
    if hasattr(tok, "_segment"):
        tok._segment.cache_clear()
    rarity.cache_clear()


def _time(judge, xs: list) -> list[float]:
    times = []
    for x in xs:
        t0 = time.perf_counter()
        asyncio.run(judge.evaluate(x))
        times.append((time.perf_counter() - t0) * 1000)
    return times


def _summary(times: list[float]) -> dict:
    times = sorted(times)
    return {
        "median": round(statistics.median(times), 3),
        "p95": round(times[int(0.95 * (len(times) - 1))], 3),
    }


def speed(data: Path, n: int = 100) -> dict:
    """Cold (texts never seen, all text caches emptied first) and warm (same texts again)."""
    families = {
        "synthetic": (_synthetic_inputs(20, 10_000), _synthetic_inputs(n)),
        "wikipedia": ([], _wikipedia_inputs(data, n)),
    }
    judges = [get_judge(m) for m in ("faithfulness", "answer_relevance", "context_relevance")]
    for x in families["synthetic"][0]:  # warm-up: encoder weights, tokenizer, rarity table
        for judge in judges:
            asyncio.run(judge.evaluate(x))
    out: dict = {}
    for family, (_, xs) in families.items():
        if not xs:
            continue
        for phase in ("cold", "warm"):
            if phase == "cold":
                _forget_texts()
            total = [0.0] * len(xs)
            for judge in judges:
                times = _time(judge, xs)
                total = [a + b for a, b in zip(total, times, strict=True)]
                key = f"offline_{judge.name}_{family}_{phase}_ms"
                out.update({f"{key}_{k}": v for k, v in _summary(times).items()})
            key = f"offline_all3_{family}_{phase}_ms"
            out.update({f"{key}_{k}": v for k, v in _summary(total).items()})
        out[f"{family}_interactions"] = len(xs)
    out["encoder_cache"] = embeddings.cache_info()
    xs = _synthetic_inputs(120, 20_000)
    reply = {
        "reasoning": "ok",
        "claims": [{"claim": "c", "supported": True, "evidence": None, "reason": "r"}],
    }
    with FakeOpenAIServer(default=lambda body: reply) as server:
        judge = get_judge(
            "llm_faithfulness",
            llm=LLMConfig(base_url=server.base_url, model="bench", max_retries=0),
        )

        async def run() -> list[float]:
            over = []
            for x in xs:
                t0 = time.perf_counter()
                [r] = await judge.evaluate(x)
                total = (time.perf_counter() - t0) * 1000
                over.append(total - r.metadata["llm_latency_ms"])
            return over[20:]

        over = asyncio.run(run())
    out["llm_faithfulness_overhead_ms_median"] = round(statistics.median(over), 3)
    out["llm_faithfulness_overhead_ms_p95"] = round(sorted(over)[int(0.95 * len(over))], 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument(
        "--ci-slice", action="store_true", help="Print the CI slice as JSON; write nothing."
    )
    args = ap.parse_args()
    if args.ci_slice:
        print(json.dumps(ci_slice(Path(args.data)), indent=2))
        return
    rows = quality(Path(args.data))
    cols = [
        "set",
        "task",
        "n",
        "balanced_accuracy",
        "f1_failure",
        "f1_positive",
        "kappa",
        "auc",
        "pairwise",
        "ms_per_row",
    ]
    print("offline judges on dev splits (failure = positive for f1_failure)")
    print(" | ".join(f"{c:>18}" for c in cols))
    for r in rows:
        print(" | ".join(f"{'-' if r.get(c) is None else r[c]!s:>18}"[:19] for c in cols))
    for r in rows:
        extra = {k: v for k, v in r.items() if k.startswith(("pairwise_", "pairs_"))}
        if extra:
            print(r["set"], extra)
    load_before = os.getloadavg()
    sp = speed(Path(args.data))
    # the machine may be shared: the speed figures hold only beside the load they ran under
    sp["load_avg_1m_before_after"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
    sp["cpus"] = os.cpu_count()
    print(
        "speed (ms per interaction: 5 chunks of 3 sentences, 3-sentence answer, one core, after"
        " warm-up; cold = texts never seen with every text cache emptied, warm = same texts again)"
    )
    for k, v in sp.items():
        print(f"  {k:45} {v}")
    res = ROOT / "bench" / "results"
    res.mkdir(parents=True, exist_ok=True)
    payload = {
        "judge": "offline heuristic (deterministic, no LLM)",
        "thresholds": THRESHOLDS,
        "quality": rows,
        "speed": sp,
        "ci_slice": ci_slice(Path(args.data)),
    }
    (res / "judges.json").write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
