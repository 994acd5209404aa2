"""The docs' judge-quality and verdict tables and the README's figures, from ``bench/results/``.

Usage: ``.venv/bin/python bench/readme_tables.py`` rewrites the tables between the
``<!-- judges-table -->`` marker of ``docs/benchmarks/judges.md`` and the ``<!-- e2e-table -->``
marker of ``docs/benchmarks/e2e.md`` from ``bench/results/judges.json`` (``bench/judges.py``)
and ``bench/results/e2e.json`` (``bench/e2e.py``), and the ``<!-- front-page-figures -->``
block of README.md from those and ``bench/results/realrag.json`` (``bench/realrag.py``).
``tests/test_readme_figures.py`` checks that each page holds exactly what these functions make
of the committed results, so a figure on a page is always one the benchmarks measured at the
job's thresholds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _row(rows: list[dict[str, Any]], name: str, task: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["set"] == name and r["task"] == task), None)


PAIRWISE = "pairwise accuracy: the better of each pair scores higher (no threshold)"


def _pairwise(r: dict[str, Any]) -> str:
    """WikiEval ranks pairs; the thresholded figure goes beside it, since a judge can rank
    every pair right and still give one label to all (balanced accuracy 0.50)."""
    ba = _f(r["balanced_accuracy"])
    return f"**{_f(r['pairwise'])}** (at the job's threshold: balanced accuracy {ba})"


def judges_table(data: dict[str, Any]) -> str:
    """Agreement of the offline judges with people, at the job's thresholds."""
    rows = data["quality"]
    th = data["thresholds"]
    out = [
        "| dev set (labels by people or by construction) | measure"
        " | offline judge | published anchor |",
        "|---|---|---:|---|",
    ]
    spec = [
        (
            "wikieval",
            "faithfulness",
            "WikiEval faithfulness",
            PAIRWISE,
            _pairwise,
            "RAGAS + GPT-3.5: 0.95",
        ),
        (
            "wikieval",
            "answer_relevance",
            "WikiEval answer relevance",
            PAIRWISE,
            _pairwise,
            "RAGAS: 0.78",
        ),
        (
            "wikieval",
            "context_relevance",
            "WikiEval context relevance",
            PAIRWISE,
            _pairwise,
            "RAGAS: 0.70",
        ),
        (
            "halueval_qa",
            "faithfulness",
            "HaluEval QA",
            "F1 at the job's threshold, hallucinated = positive (P / R)",
            lambda r: (
                f"**{_f(r['f1_failure'])} ({_f(r['precision_failure'])}"
                f" / {_f(r['recall_failure'])})**"
            ),
            "Phoenix + GPT-4: 0.82",
        ),
        (
            "halueval_qa",
            "faithfulness",
            "HaluEval QA",
            "balanced accuracy at the job's threshold",
            lambda r: f"**{_f(r['balanced_accuracy'])}**",
            "ChatGPT: 0.63 accuracy",
        ),
        (
            "faithbench",
            "faithfulness_summarization",
            "FaithBench",
            "balanced accuracy at the job's threshold",
            lambda r: f"**{_f(r['balanced_accuracy'])}**",
            "GPT-4o ≈ 0.5 (paper)",
        ),
        (
            "wikiqa_context_relevance",
            "context_relevance",
            "WikiQA context relevance",
            "F1 at the job's threshold, relevant = positive / AUC",
            lambda r: f"**{_f(r['f1_positive'])} / {_f(r['auc'])}**",
            "Phoenix + GPT-4: F1 0.78",
        ),
    ]
    for name, task, label, measure, cell, anchor in spec:
        r = _row(rows, name, task)
        if r is None:
            continue
        out.append(f"| {label} ({r['n']}) | {measure} | {cell(r)} | {anchor} |")
    out.append("")
    out.append(
        "Thresholds (`jobs.thresholds`, the judges' labels and the job's flags): "
        + ", ".join(f"{k} {v}" for k, v in th.items())
        + "."
    )
    return "\n".join(out)


def e2e_table(data: dict[str, Any]) -> str:
    """The job's verdicts on XQuAD traffic: held-out articles beside the tuning half."""
    held, tune = data["results"]["heldout"], data["results"]["tune"]
    rows = [
        ("clean traces flagged (false-positive rate)", "fpr", "≤ 0.10"),
        ("planted failures flagged (recall)", "recall", "≥ 0.85"),
        ("root cause right, among flagged planted failures", "root_cause_accuracy", "≥ 0.80"),
        ("clean cross-lingual traces flagged", "fpr_cross_lingual", "≤ 0.15"),
        ("clean traces with typos in the question flagged", "fpr_typo", "≤ 0.15"),
        ("wrong abstentions flagged", "wrong_abstentions_flagged", "≥ 0.85"),
    ]
    demo = data.get("demo") or {}
    demo_key = {
        "fpr": "false_positive_rate",
        "recall": "planted_recall",
        "root_cause_accuracy": "root_cause_accuracy",
    }
    out = [
        "| measure (the job's own decisions) | held-out articles | tuning articles"
        " | `ragsieve demo` | goal |",
        "|---|---:|---:|---:|---|",
    ]
    for label, key, goal in rows:
        d = demo.get(demo_key.get(key, ""))
        out.append(f"| {label} | **{_f(held[key])}** | {_f(tune[key])} | {_f(d)} | {goal} |")
    for cause in sorted(held["per_root_cause"]):
        h, t = held["per_root_cause"][cause], tune["per_root_cause"].get(cause, {})
        out.append(
            f"| planted `{cause}` failures named `{cause}` (n = {h['n']}) |"
            f" **{_f(h['right'])}** | {_f(t.get('right'))} | – | ≥ 0.70 |"
        )
    for kind, h in held["per_kind"].items():  # each way a retrieval miss is planted, apart
        if h["expect"] == "retrieval":
            t = tune["per_kind"].get(kind, {})
            out.append(
                f"| … of them `{kind}` named `retrieval` (n = {h['n']}) |"
                f" **{_f(h['right'])}** | {_f(t.get('right'))} | – | – |"
            )
    out.append("")
    out.append(
        f"{held['traces']} held-out and {tune['traces']} tuning traces; offline judge, default"
        " settings, `ragsieve collector serve` + `ragsieve jobs run --all`."
        + (f" The demo: {demo['n_queries']} queries, same job." if demo else "")
    )
    return "\n".join(out)


def render(readme: str, marker: str, table: str) -> str:
    """``readme`` with the block between ``<!-- marker -->`` and ``<!-- /marker -->`` replaced."""
    pattern = re.compile(rf"(<!-- {marker} -->\n)(?:.*?\n)?(<!-- /{marker} -->)", re.DOTALL)
    if not pattern.search(readme):
        raise SystemExit(f"marker <!-- {marker} --> not found")
    return pattern.sub(lambda m: m.group(1) + table + "\n" + m.group(2), readme)


def load(name: str) -> dict[str, Any]:
    """One committed result file of ``bench/results/``."""
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def front_page_figures(e2e: dict[str, Any], judges: dict[str, Any], realrag: dict[str, Any]) -> str:
    """The README's few figures of the offline judge, each from the benchmark that measured it."""
    held = e2e["results"]["heldout"]
    halueval = _row(judges["quality"], "halueval_qa", "faithfulness")
    llm = realrag["judge"]["all"]
    lines = [
        "- On held-out XQuAD traffic (real Wikipedia paragraphs and questions, es/en,"
        f" {held['traces']} traces through the collector and `jobs run`), the job flags"
        f" **{_f(held['fpr'])}** of clean traces, catches **{_f(held['recall'])}** of planted"
        f" failures and names the right root cause for **{_f(held['root_cause_accuracy'])}** of"
        " those it flags ([end to end](docs/benchmarks/e2e.md)).",
    ]
    if halueval is not None:
        lines.append(
            f"- HaluEval QA ({halueval['n']} rows): F1 **{_f(halueval['f1_failure'])}** at the"
            f" job's threshold, balanced accuracy {_f(halueval['balanced_accuracy'])}"
            " ([judges](docs/benchmarks/judges.md))."
        )
    lines.append(
        f"- On {llm['n']} answers real LLMs wrote (RAGTruth, MTRAG, MEMERAG, LFQA-Verification;"
        f" people's labels), it flags {_f(llm['false_alarms'])} of the faithful answers and"
        f" {_f(llm['recall'])} of the hallucinated ones, F1 {_f(llm['f1'])}, AUC {_f(llm['auc'])}"
        " ([real LLM answers](docs/benchmarks/realrag.md)): a cheap, honest first pass, not an LLM"
        " judge."
    )
    return "\n".join(lines)


# (file under the repository root, marker, table from the committed results)
PAGES = (
    ("docs/benchmarks/judges.md", "judges-table", lambda: judges_table(load("judges.json"))),
    ("docs/benchmarks/e2e.md", "e2e-table", lambda: e2e_table(load("e2e.json"))),
    (
        "README.md",
        "front-page-figures",
        lambda: front_page_figures(load("e2e.json"), load("judges.json"), load("realrag.json")),
    ),
)


def main() -> None:
    for name, marker, table in PAGES:
        path = ROOT / name
        path.write_text(render(path.read_text(encoding="utf-8"), marker, table()), encoding="utf-8")


if __name__ == "__main__":
    main()
