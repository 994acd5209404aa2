"""The model tier's benchmark page quotes bench/results/model_tier.json: its tables are the
bench's own rendering of the committed results, and each figure in its prose is read from them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "benchmarks" / "model-tier.md"
RESULTS = json.loads((ROOT / "bench" / "results" / "model_tier.json").read_text())


def _bench():
    spec = importlib.util.spec_from_file_location("model_tier", ROOT / "bench" / "model_tier.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pages_tables_are_the_committed_results() -> None:
    page = PAGE.read_text(encoding="utf-8")
    over, route = _bench().table(RESULTS["overhead"], RESULTS["routing"]).split("\n\n")
    assert over in page and route in page, "rerun bench/model_tier.py and paste its tables"


def test_the_prose_figures_are_read_from_the_results() -> None:
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    over = {(o["model"], o["batch_size"]): o for o in RESULTS["overhead"]}
    sized1, sized8 = over[("encoder-sized", 1)], over[("encoder-sized", 8)]
    route = {(r["escalate"], r["metric"]): r for r in RESULTS["routing"]}
    faith, ctx = route[("uncertain", "faithfulness")], route[("uncertain", "context_relevance")]
    every = route[("all", "faithfulness")]
    n = RESULTS["rows"]
    quoted = [
        f"{over[('tiny', 1)]['ms_per_pair']} ms per pair of its own",
        f"{sized8['ms_per_pair']:.1f} ms per pair in batches of 8",
        f"({sized1['ms_per_pair']} ms one at a time)",
        f"{round(sized8['ms_per_claim'])} ms per claim",
        f"{round(sized8['faithfulness_ms_per_interaction'])} ms per interaction",
        f"p95 of {round(sized8['faithfulness_ms_p95'])} ms",
        f"{sized1['claims']} claims, {sized1['pairs']} (window, claim) pairs",
        f"pass {faith['asked']['model']} of {n} faithfulness results",
        f"{ctx['asked']['model']} of {n} context-relevance results",
        f"all {faith['decided'].get('llm', 0)} go on to the LLM",
        f"{every['decided'].get('model', 0)} of {n} are decided by the model and"
        f" {every['decided'].get('llm', 0)} by the LLM",
        f"peaks at {sized8['peak_rss_mb']} MB",
    ]
    missing = [q for q in quoted if q not in page]
    assert missing == [], missing
    assert RESULTS["threads"] == 1 and RESULTS["cores"] == 1
