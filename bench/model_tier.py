"""The local-model tier's cost per interaction on one core, and the cascade's routing.

Usage: nice -n 10 .venv/bin/python bench/model_tier.py [--rows 20] [--data DIR]
    -> bench/results/model_tier.json, tables on stdout

1. Overhead: the model judges (faithfulness per claim and window, context relevance by a
   reranker) on real RAG interactions (RAGTruth QA dev answers: MS MARCO questions, three
   passages, real model answers), one core, ``threads=1``, batch sizes 1 and 8. Two stand-in
   models: ``tiny`` (a lookup and a linear head: what the tier itself costs - tokenising,
   windowing, batching, onnxruntime calls) and ``encoder-sized`` (384-wide tokens through six
   residual 384x1536 ReLU layers, the per-token matrix work of a MiniLM-L6 encoder without its
   attention, max length 512). Neither is a trained model: the times bound the tier's overhead
   and give the order of a small encoder's; a 100-400M DeBERTa/ModernBERT costs several times
   the encoder-sized figure per pair (not measured here: no such model is on this machine).
   Memory: the process's resident set before and after loading, and its peak (VmHWM).
2. Routing: heuristics -> stand-in model -> a loopback OpenAI-compatible LLM (the real openai
   client; ``FakeOpenAIServer`` answers "supported" at a set price) on the same interactions,
   ``escalate = uncertain`` (the heuristics' uncertain label or score in ``model.band``) and
   ``all``: which tier decided, LLM calls and cost, latency per tier. The stand-in's verdicts
   mean nothing, so no quality figure is given; what the heuristics pass on under
   ``uncertain`` is the real offline judge's decision on real answers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evaluators"))
sys.path.insert(0, str(ROOT / "collector"))
sys.path.insert(0, str(ROOT / "jobs"))
if __name__ == "__main__":  # one core (not when a test imports the tables)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import numpy as np  # noqa: E402

from ragsieve.evaluators.judges import LLMConfig, get_judge  # noqa: E402
from ragsieve.evaluators.judges.model import ModelConfig, tiered  # noqa: E402
from ragsieve.evaluators.judges.model.context import ModelContextRelevanceJudge  # noqa: E402
from ragsieve.evaluators.judges.model.faithfulness import ModelFaithfulnessJudge  # noqa: E402
from ragsieve.evaluators.judges.model.runtime import load_model  # noqa: E402
from ragsieve.evaluators.judges.model.standin import write_standin  # noqa: E402
from ragsieve.evaluators.judges.offline.context import ContextRelevanceJudge  # noqa: E402
from ragsieve.evaluators.judges.offline.faithfulness import FaithfulnessJudge  # noqa: E402
from ragsieve.evaluators.testing import FakeOpenAIServer, make_interaction  # noqa: E402
from ragsieve.jobs.settings import load_settings  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "bench" / "results" / "model_tier.json"
SETTINGS = load_settings().model  # the [model] defaults: bands, windows per claim, time limit
LLM_YES = {
    "reasoning": "stated",
    "abstained": False,
    "claims": [{"claim": "x", "supported": True, "evidence": "x", "reason": "stated"}],
}


def rss_mb(field: str = "VmRSS") -> float:
    """The process's resident set (or its peak, ``VmHWM``) in MB, from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rows(data: Path, n: int) -> list[dict]:
    path = data / "realrag" / "ragtruth_qa" / "dev.jsonl"
    out = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r for r in out if r.get("answer") and r.get("contexts")][:n]


def interactions(data: list[dict]) -> list:
    return [
        make_interaction(query=r["question"], context=tuple(r["contexts"]), answer=r["answer"])
        for r in data
    ]


def split(text: str) -> list[str]:
    """Words as the stand-in tokenizer cuts them (lower case, punctuation apart)."""
    return re.findall(r"\w+|[^\w\s]+", text.lower())


def vocabulary(data: list[dict], limit: int = 30000) -> list[str]:
    words = Counter(
        w
        for r in data
        for text in [r["question"], r["answer"], *r["contexts"]]
        for w in split(text)
    )
    return [w for w, _ in words.most_common(limit)]


def standin(folder: Path, task: str, words: list[str], *, sized: bool) -> Path:
    """A stand-in of ``task``: words get seeded random features; ``sized`` adds the encoder-sized
    layers (module docstring)."""
    rng = np.random.default_rng(1)
    dim = 384 if sized else 8
    feats = {w: list(rng.uniform(0, 1, dim)) for w in words}
    n_out = {"pair": 3, "relevance": 1}[task]
    head = rng.normal(0, 1, (dim, n_out)).tolist()
    manifest: dict = {"name": f"standin-{task}-{'sized' if sized else 'tiny'}", "max_length": 512}
    if task == "pair":
        manifest["labels"] = ["entailment", "neutral", "contradiction"]
    return write_standin(
        folder,
        task=task,
        features=feats,
        head=head,
        bias=[0.0] * n_out,
        manifest=manifest,
        depth=6 if sized else 0,
        width=1536,
    )


async def overhead(its: list, words: list[str], tmp: Path) -> list[dict]:
    out = []
    for sized in (False, True):
        name = "encoder-sized" if sized else "tiny"
        before = rss_mb()
        pair = load_model(standin(tmp / f"pair-{name}", "pair", words, sized=sized), threads=1)
        rel = load_model(standin(tmp / f"rel-{name}", "relevance", words, sized=sized), threads=1)
        loaded = rss_mb()
        for batch in (1, 8):
            opts = dict(batch_size=batch, time_limit_s=600.0)
            faith = ModelFaithfulnessJudge(
                pair, windows_per_claim=SETTINGS.windows_per_claim, **opts
            )
            ctx = ModelContextRelevanceJudge(rel, **opts)
            per_it, claims, pairs, windows, ctx_ms = [], 0, 0, 0, []
            for it in its:
                t0 = time.perf_counter()
                [r] = await faith.evaluate(it)
                per_it.append((time.perf_counter() - t0) * 1000)
                claims += int(r.metadata.get("total", 0))
                pairs += int(r.metadata.get("pairs", 0))
                windows += int(r.metadata.get("windows", 0))
                t0 = time.perf_counter()
                await ctx.evaluate(it)
                ctx_ms.append((time.perf_counter() - t0) * 1000)
            out.append(
                {
                    "model": name,
                    "batch_size": batch,
                    "interactions": len(its),
                    "claims": claims,
                    "pairs": pairs,
                    "windows": windows,
                    "faithfulness_ms_per_interaction": round(statistics.mean(per_it), 2),
                    "faithfulness_ms_p95": round(sorted(per_it)[int(0.95 * (len(per_it) - 1))], 2),
                    "ms_per_claim": round(sum(per_it) / max(claims, 1), 2),
                    "ms_per_pair": round(sum(per_it) / max(pairs, 1), 2),
                    "context_relevance_ms_per_interaction": round(statistics.mean(ctx_ms), 2),
                    "rss_mb_before_load": round(before, 1),
                    "rss_mb_after_load": round(loaded, 1),
                    "rss_mb_after_run": round(rss_mb(), 1),
                    "peak_rss_mb": round(rss_mb("VmHWM"), 1),
                    "model_file_mb": round(pair.manifest.model_path.stat().st_size / 2**20, 1),
                }
            )
    return out


def novelty_standin(folder: Path, data: list[dict]) -> Path:
    """A pair stand-in that reads novelty: a word of some context backs, an answer word of seven
    letters or more that no context holds weakens that. A pair without a novel word scores
    P(entailment) ~0.91 (the model decides), one with a novel word ~0.63 (inside the default
    uncertainty band: the LLM is asked). Crude on purpose: it routes, it does not judge."""
    seen = {w for r in data for c in r["contexts"] for w in split(c)}
    novel = {w for r in data for w in split(r["answer"]) if len(w) > 6 and w not in seen}
    feats = {w: [1.0, 0.0] for w in seen} | {w: [0.0, 1.0] for w in novel}
    return write_standin(
        folder,
        task="pair",
        features=feats,
        head=[[4.0, 0.0, 0.0], [-1.5, 0.0, 1.0]],
        bias=[0.0, 1.5, 0.0],
        manifest={
            "name": "standin-novelty",
            "max_length": 512,
            "labels": ["entailment", "neutral", "contradiction"],
        },
    )


async def routing(its: list, data: list[dict], words: list[str], tmp: Path) -> list[dict]:
    folders = {
        "faithfulness": str(novelty_standin(tmp / "route-pair", data)),
        "context_relevance": str(standin(tmp / "route-rel", "relevance", words, sized=False)),
    }
    out = []
    with FakeOpenAIServer(default=lambda body: LLM_YES) as server:
        llm = LLMConfig(
            base_url=server.base_url,
            model="loopback-judge",
            price_per_1k_prompt=0.00015,
            price_per_1k_completion=0.0006,
        )
        for escalate in ("uncertain", "all"):
            cfg = ModelConfig(
                **folders,
                escalate=escalate,
                band=SETTINGS.band,
                uncertainty_band=SETTINGS.uncertainty_band,
            )
            for metric, heuristic in (
                ("faithfulness", FaithfulnessJudge()),
                ("context_relevance", ContextRelevanceJudge()),
            ):
                top = get_judge(f"llm_{metric}", llm=llm)
                judge = tiered(metric, cfg, heuristic, top)
                sent = len(server.requests)
                decided: Counter = Counter()
                cost, lat = 0.0, {"offline": [], "model": [], "llm": []}
                scores: list[float] = []
                for it in its:
                    [r] = await judge.evaluate(it)
                    decided[r.metadata["tier"]] += 1
                    cost += r.cost_usd
                    for t in r.metadata["tiers"]:
                        lat[t["tier"]].append(t["latency_ms"])
                        if t["tier"] == "model" and t["score"] is not None:
                            scores.append(t["score"])
                out.append(
                    {
                        "escalate": escalate,
                        "metric": metric,
                        "interactions": len(its),
                        "decided": dict(decided),
                        "asked": dict(judge.stats.asked),
                        "llm_calls": len(server.requests) - sent,
                        "cost_usd": round(cost, 6),
                        "model_score_quartiles": [
                            round(float(q), 4) for q in np.quantile(scores, [0, 0.25, 0.5, 0.75, 1])
                        ]
                        if scores
                        else None,
                        "ms_per_tier_asked": {
                            k: round(statistics.mean(v), 2) for k, v in lat.items() if v
                        },
                    }
                )
    return out


def table(over: list[dict], route: list[dict]) -> str:
    """The two Markdown tables of ``docs/benchmarks/model-tier.md`` from the results."""
    lines = [
        "| model | batch | ms / interaction (p95) | ms / claim | ms / pair | pairs / claim"
        " | context ms / interaction | RSS load +MB | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for o in over:
        lines.append(
            f"| {o['model']} | {o['batch_size']} | {o['faithfulness_ms_per_interaction']}"
            f" ({o['faithfulness_ms_p95']}) | {o['ms_per_claim']} | {o['ms_per_pair']}"
            f" | {o['pairs'] / max(o['claims'], 1):.2f}"
            f" | {o['context_relevance_ms_per_interaction']}"
            f" | {o['rss_mb_after_load'] - o['rss_mb_before_load']:.1f} | {o['peak_rss_mb']} |"
        )
    lines += [
        "",
        "| escalate | metric | asked offline / model / llm | decided offline / model / llm"
        " | LLM calls | cost USD |",
        "|---|---|---|---|---|---|",
    ]
    for r in route:
        a, d = r["asked"], r["decided"]
        lines.append(
            f"| {r['escalate']} | {r['metric']} | {a.get('offline', 0)} / {a.get('model', 0)}"
            f" / {a.get('llm', 0)} | {d.get('offline', 0)} / {d.get('model', 0)}"
            f" / {d.get('llm', 0)} | {r['llm_calls']} | {r['cost_usd']} |"
        )
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    data = rows(args.data, args.rows)
    its = interactions(data)
    words = vocabulary(data)
    with tempfile.TemporaryDirectory() as tmp:
        over = await overhead(its, words, Path(tmp))
        route = await routing(its, data, words, Path(tmp))
    result = {
        "source": "realrag/ragtruth_qa/dev.jsonl",
        "rows": len(its),
        "cores": 1,
        "threads": 1,
        "settings": {
            "band": list(SETTINGS.band),
            "uncertainty_band": list(SETTINGS.uncertainty_band),
            "windows_per_claim": SETTINGS.windows_per_claim,
        },
        "overhead": over,
        "routing": route,
        "note": "stand-in models, not trained ones: times bound the tier's overhead; routing"
        " counts show the mechanics, not quality",
    }
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(table(over, route))
    print(f"\n-> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    asyncio.run(main())
