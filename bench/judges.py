"""Run every offline judge on every labelled dev set in ../shared/data, plus speed; print a table.

Usage: .venv/bin/python bench/judges.py [--data DIR]   -> bench/results/judges.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evaluators"))

from ragsieve.evaluators.calibration import (  # noqa: E402
    agreement,
    binary_stats,
    judge_rows,
    pairwise_accuracy,
    read_rows,
)
from ragsieve.evaluators.judges import LLMConfig, get_judge  # noqa: E402
from ragsieve.evaluators.testing import FakeOpenAIServer, make_interaction  # noqa: E402

SETS = {"wikieval": None, "halueval_qa": None, "faithbench": None, "wikiqa_context_relevance": None}
TASK_METRIC = {
    "faithfulness": "faithfulness",
    "faithfulness_summarization": "faithfulness",
    "answer_relevance": "answer_relevance",
    "context_relevance": "context_relevance",
}


def quality(data: Path) -> list[dict]:
    out = []
    for name in SETS:
        path = data / name / "dev.jsonl"
        if not path.exists():
            continue
        rows = read_rows(path)
        for task in sorted({r.task for r in rows}):
            metric = TASK_METRIC[task]
            judge = get_judge(metric)
            sub = [r for r in rows if r.task == task]
            t0 = time.perf_counter()
            scored = asyncio.run(judge_rows(judge, sub))
            ms = (time.perf_counter() - t0) * 1000 / max(1, len(sub))
            a = agreement(scored, sweep=False)
            row = {
                "set": name,
                "task": task,
                "judge": metric,
                "n": a["n"],
                "balanced_accuracy": a["balanced_accuracy"],
                "f1_failure": a["f1"],
                "kappa": a["kappa"],
                "auc": a["auc"],
                "pairwise": a.get("pairwise_accuracy"),
                "ms_per_row": round(ms, 2),
            }
            decided = [s for s in scored if s.failure is not None]
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


def _speed_inputs(n: int) -> list:
    base = [
        "The {i}th tower of Velmora was built in {y} by the engineer Adaline Brook.",
        "It rises {h} metres above the river and hosts a museum of clocks.",
        "Visitors reach it by tram line {i} from the central station.",
    ]
    xs = []
    for i in range(n):
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


def speed(n: int = 200) -> dict:
    out = {}
    xs = _speed_inputs(n + 20)
    for name in ("faithfulness", "answer_relevance", "context_relevance"):
        judge = get_judge(name)
        for x in xs[:20]:
            asyncio.run(judge.evaluate(x))  # warm-up: encoder, rarity table
        times = []
        for x in xs[20:]:
            t0 = time.perf_counter()
            asyncio.run(judge.evaluate(x))
            times.append((time.perf_counter() - t0) * 1000)
        out[f"offline_{name}_ms_median"] = round(statistics.median(times), 3)
        out[f"offline_{name}_ms_p95"] = round(sorted(times)[int(0.95 * len(times))], 3)
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
            for x in xs[:120]:
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
    args = ap.parse_args()
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
    sp = speed()
    print("speed (ms per interaction: 5 chunks, 3-sentence answer, after warm-up)")
    for k, v in sp.items():
        print(f"  {k:45} {v}")
    res = ROOT / "bench" / "results"
    res.mkdir(parents=True, exist_ok=True)
    (res / "judges.json").write_text(json.dumps({"quality": rows, "speed": sp}, indent=2))


if __name__ == "__main__":
    main()
