"""Faithfulness on answers real LLMs wrote from retrieved passages, against people's labels.

Usage: ``.venv/bin/python bench/realrag.py [--data DIR] [--readme]``
-> prints a table, writes ``bench/results/realrag.json`` (``--readme``: only rewrites the README
table between the ``<!-- realrag-table -->`` markers from the committed results).

Two measures, both of what the product decides (default settings, ``jobs.thresholds``):

1. **The judge** on every dev row of RAGTruth QA, MTRAG (multi-turn, judged with the
   conversation's earlier turns), MEMERAG (en, es) and LFQA-Verification, per dataset,
   language and generating model, and per dataset x generating model (the leave-one-source-out
   table): faithful answers labelled ``unfaithful`` (false alarms), hallucinated answers labelled
   ``unfaithful`` (recall), ``uncertain`` shares, F1 (hallucinated = positive), the ROC AUC of
   the score and the recall at 0.15 false alarms. RAGTruth QA and MTRAG are what
   ``bench/fit_faithfulness.py`` fits the judge's model on (with HaluEval QA), so their rows are
   scored left out: by the model fitted, and thresholded, on the other sets; MEMERAG and LFQA are
   never fitted on.
2. **The job**: the same rows as traces through the real OpenTelemetry exporter to ``ragsieve
   collector serve`` (SQLite, loopback) and ``ragsieve jobs run --all``; a trace is flagged when
   the job's verdict is ``fail`` (any judge: faithfulness, answer or context relevance). RAGTruth
   and MTRAG traces are judged by the shipped model, which saw them: their job figures are marked
   fitted (and the traces carry no earlier turns).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import fit_faithfulness  # noqa: E402
from e2e import collect, verdicts  # noqa: E402
from e2e_traffic import Trace  # noqa: E402

from ragsieve.evaluators.judges import build_judges  # noqa: E402
from ragsieve.evaluators.quality.calibration import auc  # noqa: E402
from ragsieve.jobs.settings import load_settings  # noqa: E402

DATA = ROOT.parent.parent / "shared" / "data" / "realrag"
RESULTS = ROOT / "results" / "realrag.json"
README = ROOT.parent / "docs" / "benchmarks" / "realrag.md"  # the page with its table
SETS = ("ragtruth_qa", "mtrag", "memerag_en_es", "lfqa_verification")
FITTED = ("ragtruth_qa", "mtrag")
RAGSIEVE = str(Path(sys.executable).with_name("ragsieve"))
ANCHORS = {  # RAGTruth, all three tasks, answer-level F1 (published; not our dev subset)
    "GPT-4 zero-shot": 0.634,
    "Luna": 0.654,
    "fine-tuned Llama-2-13B": 0.787,
    "LettuceDetect-large (395M encoder)": 0.792,
    "RAG-HAT (Llama-3-8B)": 0.839,
}


def read(data: Path) -> list[dict[str, Any]]:
    """Every labelled dev row of the three sets."""
    missing = [str(data / name / "dev.jsonl") for name in SETS]
    missing = [m for m in missing if not Path(m).is_file()]
    if missing:
        print(f"realrag: no labelled set at {', '.join(missing)}", file=sys.stderr)
        raise SystemExit(2)
    rows = []
    for name in SETS:
        for line in (data / name / "dev.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("label_faithful") is not None:
                rows.append({**row, "_set": name})
    return rows


def judge_rows(rows: list[dict[str, Any]], data: Path) -> list[dict[str, Any]]:
    """Each row's label and score from the judge as the job builds it; the fitted sets' rows
    left out (scored by the model fitted without their set)."""
    thresholds = dict(load_settings().jobs.thresholds)
    [judge] = build_judges(["faithfulness"], thresholds=thresholds)
    fitted_rows = fit_faithfulness.load(data.parent)
    _, oof = fit_faithfulness.fit(fitted_rows)
    oof_by_id = {r["id"]: float(s) for r, s in zip(fitted_rows, oof, strict=True)}
    out = []
    for row in rows:
        [res] = asyncio.run(judge.evaluate(fit_faithfulness.interaction(row)))
        label, score = res.label, res.score
        if row["id"] in oof_by_id and label in ("faithful", "uncertain", "unfaithful"):
            score = oof_by_id[row["id"]]
            label = judge.label(score)  # type: ignore[attr-defined]
        meta = row.get("meta") or {}
        out.append(
            {
                "id": row["id"],
                "set": row["_set"],
                "lang": meta.get("lang") or "en",
                "model": meta.get("model") or "unknown",
                "truth": bool(row["label_faithful"]),
                "label": label,
                "score": score,
            }
        )
    return out


def stats(items: list[dict[str, Any]], flag: str = "label") -> dict[str, Any]:
    """False alarms, recall, uncertain shares, F1 (hallucinated = positive), AUC, recall at 0.15."""
    faithful = [r for r in items if r["truth"]]
    halluc = [r for r in items if not r["truth"]]
    flagged = (lambda r: r[flag] == "unfaithful") if flag == "label" else (lambda r: r[flag])
    tp = sum(map(flagged, halluc))
    fp = sum(map(flagged, faithful))
    out: dict[str, Any] = {
        "n": len(items),
        "faithful": len(faithful),
        "hallucinated": len(halluc),
        "false_alarms": _div(fp, len(faithful)),
        "recall": _div(tp, len(halluc)),
        "f1": _div(2 * tp, 2 * tp + fp + (len(halluc) - tp)),
    }
    if flag != "label":
        return out
    out["uncertain_faithful"] = _div(
        sum(r["label"] == "uncertain" for r in faithful), len(faithful)
    )
    out["uncertain_hallucinated"] = _div(
        sum(r["label"] == "uncertain" for r in halluc), len(halluc)
    )
    out["uncertain"] = _div(sum(r["label"] == "uncertain" for r in items), len(items))
    scored = [r for r in items if r["score"] is not None]
    out["auc"] = auc([r["truth"] for r in scored], [r["score"] for r in scored])
    out["recall_at_015"] = _recall_at(scored, 0.15)
    return out


def _div(a: float, b: float) -> float | None:
    return round(a / b, 4) if b else None


def _recall_at(scored: list[dict[str, Any]], false_alarms: float) -> float | None:
    """Recall with the threshold placed where ``false_alarms`` of the faithful rows fall below."""
    faithful = sorted(r["score"] for r in scored if r["truth"])
    halluc = [r["score"] for r in scored if not r["truth"]]
    if not faithful or not halluc:
        return None
    cut = faithful[int(false_alarms * len(faithful))]
    return round(sum(s < cut for s in halluc) / len(halluc), 4)


def groups(items: list[dict[str, Any]], flag: str = "label") -> dict[str, Any]:
    """The figures per dataset, per dataset × language, per generating model, and over all."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in items:
        by[f"set:{r['set']}"].append(r)
        by[f"lang:{r['set']}:{r['lang']}"].append(r)
        by[f"model:{r['model']}"].append(r)
        by[f"source:{r['set']}:{r['model']}"].append(r)
        if r["set"] not in FITTED:  # the sets no fit ever saw, pooled
            by["never_fitted"].append(r)
        by["all"].append(r)
    return {k: stats(v, flag) for k, v in sorted(by.items())}


def as_trace(row: dict[str, Any]) -> Trace:
    """A dev row as one planned RAG turn (its passages are the retrieved chunks)."""
    chunks = [{"id": f"{row['id']}#{i}", "content": c} for i, c in enumerate(row["contexts"])]
    lang = (row.get("meta") or {}).get("lang") or "en"
    return Trace(
        row["id"], "realrag", "", "dev", row["id"], row["id"], row["question"] or "",
        row["answer"] or "", lang, lang, chunks, None,
    )  # fmt: skip


def job_rows(rows: list[dict[str, Any]], judged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every row as a trace through the collector and ``ragsieve jobs run --all``."""
    by_id = {r["id"]: r for r in judged}
    with tempfile.TemporaryDirectory() as tmp:
        store = f"sqlite:///{Path(tmp) / 'realrag.db'}"
        sent = collect([as_trace(r) for r in rows], store)
        args = [RAGSIEVE, "jobs", "run", "--store", store, "--since", "24h", "--settle", "0"]
        out = subprocess.run([*args, "--all", "--json"], capture_output=True, text=True)
        if out.returncode not in (0, 1):
            raise SystemExit(f"jobs run failed ({out.returncode}): {out.stderr[-2000:]}")
        decided = verdicts(Path(tmp) / "realrag.db")
    result = []
    for tid, trace in sent.items():
        d = decided.get(tid, {"verdict": "missing", "root_cause": None})
        result.append(
            {
                **by_id[trace.trace_key],
                "flagged": d["verdict"] == "fail",
                "verdict": d["verdict"],
                "root_cause": d["root_cause"],
            }
        )
    return result


def realrag_table(data: dict[str, Any]) -> str:
    """The README table: the judge and the job per dataset, beside the published anchors."""
    judge, job = data["judge"], data["job"]
    out = [
        "| dev rows (people's labels) | n | faithful flagged | hallucinated flagged"
        " | uncertain (faithful / halluc.) | F1 | AUC | job: faithful / halluc. flagged |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    names = [
        ("set:ragtruth_qa", "RAGTruth QA (left out)"),
        ("set:mtrag", "MTRAG (left out; multi-turn)"),
        ("lang:memerag_en_es:en", "MEMERAG en"),
        ("lang:memerag_en_es:es", "MEMERAG es"),
        ("set:lfqa_verification", "LFQA-Verification"),
        ("never_fitted", "never fitted (MEMERAG, LFQA) pooled"),
        ("all", "all"),
    ]
    for key, name in names:
        j, b = judge[key], job.get(key, {})
        unc = f"{_f(j['uncertain_faithful'])} / {_f(j['uncertain_hallucinated'])}"
        fitted = " (fitted)" if key in {f"set:{f}" for f in FITTED} else ""
        out.append(
            f"| {name} | {j['n']} | {_f(j['false_alarms'])} | {_f(j['recall'])} | {unc}"
            f" | {_f(j['f1'])} | {_f(j['auc'])}"
            f" | {_f(b.get('false_alarms'))} / {_f(b.get('recall'))}{fitted} |"
        )
    anchors = ", ".join(f"{k} {v:.3f}" for k, v in ANCHORS.items())
    out.append("")
    out.append(
        f"{worst_generator(judge)} Published RAGTruth answer-level F1 (all three"
        f" tasks, full test set): {anchors}."
    )
    out.append("")
    out.append(source_table(judge))
    return "\n".join(out)


def worst_generator(judge: dict[str, Any]) -> str:
    """The generator whose faithful answers are flagged most, counted as the fit counts one:
    only with at least ``GENERATOR_MIN_FAITHFUL`` faithful answers in a set (fewer say little;
    they are listed apart with their size)."""
    least = fit_faithfulness.GENERATOR_MIN_FAITHFUL
    sources = sorted(k for k in judge if k.startswith("source:") and not k.endswith(":unknown"))
    counted = [k for k in sources if judge[k]["faithful"] >= least]
    small = [k for k in sources if 0 < judge[k]["faithful"] < least]
    line = "Worst generating model for false alarms"
    if counted:
        worst = max(counted, key=lambda k: judge[k]["false_alarms"] or 0.0)
        line += (
            f" (of those with at least {least} faithful answers in a set, the fit's rule):"
            f" {worst.split(':', 2)[2]} ({_f(judge[worst]['false_alarms'])})."
        )
    else:
        line += f": none has {least} faithful answers in a set."
    if small:
        listed = ", ".join(
            f"{k.split(':', 2)[2]} {_f(judge[k]['false_alarms'])} of {judge[k]['faithful']}"
            for k in small
        )
        line += f" Fewer faithful answers, not counted: {listed}."
    return line


def source_table(judge: dict[str, Any]) -> str:
    """Per source and generating model: the fitted sets' rows left out (model and threshold
    fitted on the other sets), the others never fitted on."""
    out = [
        "| source | generator | n | faithful flagged | hallucinated flagged | uncertain | AUC |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for key in sorted(k for k in judge if k.startswith("source:")):
        _, name, model = key.split(":", 2)
        j = judge[key]
        left = " (left out)" if name in FITTED else ""
        out.append(
            f"| {name}{left} | {model} | {j['n']} | {_f(j['false_alarms'])} | {_f(j['recall'])}"
            f" | {_f(j['uncertain'])} | {_f(j['auc'])} |"
        )
    return "\n".join(out)


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def write_readme(data: dict[str, Any]) -> None:
    """Rewrite the README table between the ``<!-- realrag-table -->`` markers."""
    text = README.read_text(encoding="utf-8")
    start, end = "<!-- realrag-table -->", "<!-- /realrag-table -->"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    README.write_text(f"{head}{start}\n{realrag_table(data)}\n{end}{tail}", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--readme", action="store_true", help="rewrite the README table only")
    args = ap.parse_args()
    if args.readme:
        write_readme(json.loads(RESULTS.read_text(encoding="utf-8")))
        return 0
    rows = read(args.data)
    judged = judge_rows(rows, args.data)
    on_job = job_rows(rows, judged)
    data = {
        "benchmark": "realrag",
        "judge_model": "offline heuristic (deterministic, no LLM), default settings",
        "data": "realrag dev parts in ../shared/data (RAGTruth QA, MTRAG, MEMERAG en/es, LFQA)",
        "fitted_on": fit_faithfulness.FIT_SETS,
        "judge": groups(judged),
        "job": groups(on_job, flag="flagged"),
    }
    RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    write_readme(data)
    print(realrag_table(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
