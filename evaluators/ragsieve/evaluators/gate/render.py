"""The gate's report for people: a terminal table, a PR-comment markdown table, or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ragsieve.evaluators.gate.experiments import describe_changes
from ragsieve.evaluators.gate.report import GateReport

_OK = ("pass", "improved")
_HEAD_CATEGORY = ["category", "n", "metric", "baseline", "candidate", "Δ", "status"]


def _summary(report: GateReport) -> str:
    reg = sum(c.status.startswith("regression") for c in report.checks)
    flo = sum(c.status.endswith("floor") for c in report.checks)
    cat = sum(c.failed for c in report.categories)
    parts = [
        f"{reg} regression(s)" if reg else "",
        f"{flo} floor breach(es)" if flo else "",
        f"{cat} protected-category drop(s)" if cat else "",
    ]
    return "passed" if report.passed else "failed: " + ", ".join(p for p in parts if p)


def _fmt(x: float, signed: bool = False) -> str:
    return "—" if x != x else (f"{x:+.4f}" if signed else f"{x:.4f}")


def _intro(report: GateReport) -> str:
    pct = f"{report.confidence:.0%}"
    part = f"the {report.role} part"
    if report.method == "unpaired normal":
        return f"Unpaired normal interval over {report.n_paired} queries of {part} ({pct} CI)."
    return (
        f"Paired bootstrap over {report.n_paired} queries of {part} "
        f"({report.resamples:,} resamples, {pct} CI)."
    )


def _metric_rows(report: GateReport) -> tuple[list[str], list[list[str]]]:
    head = [
        "metric",
        "baseline",
        "candidate",
        "Δ",
        f"{report.confidence:.0%} CI",
        "floor",
        "status",
    ]
    rows = [
        [
            c.metric,
            _fmt(c.baseline),
            _fmt(c.candidate),
            _fmt(c.delta, True),
            "—" if c.ci_low != c.ci_low else f"[{c.ci_low:+.4f}, {c.ci_high:+.4f}]",
            "—" if c.floor is None else f"≥ {c.floor:.2f}",
            c.status,
        ]
        for c in report.checks
    ]
    return head, rows


def _category_rows(report: GateReport) -> list[list[str]]:
    return [
        [
            c.category,
            str(c.n),
            c.metric,
            _fmt(c.baseline),
            _fmt(c.candidate),
            _fmt(c.delta, True),
            "drop" if c.failed else "ok",
        ]
        for c in report.categories
    ]


def _experiment_lines(report: GateReport) -> list[str]:
    return [
        f"changed: {describe_changes(report.changes)}",
        *(f"warning: {w}" for w in report.warnings),
        f"log: {report.log_line}",
    ]


def _markdown(report: GateReport) -> str:
    head, rows = _metric_rows(report)
    icon = "✅" if report.passed else "❌"
    out = [f"### {icon} ragsieve gate {_summary(report)}", "", _intro(report), ""]
    out += ["| " + " | ".join(head) + " |", "|---|---:|---:|---:|---|---:|---|"]
    for r in rows:
        mark = "" if r[-1] in _OK else "❌ "
        out.append("| " + " | ".join([*r[:-1], mark + r[-1]]) + " |")
    crow = _category_rows(report)
    if crow:
        out += ["", "**Protected categories**", ""]
        out += ["| " + " | ".join(_HEAD_CATEGORY) + " |", "|---|---:|---|---:|---:|---:|---|"]
        out += ["| " + " | ".join(r) + " |" for r in crow]
    out += [""] + [f"> {line}" for line in _experiment_lines(report)]
    out += [f"> note: {n}" for n in report.notes]
    return "\n".join(out).rstrip() + "\n"


def _table(head: list[str], body: Sequence[list[str]]) -> list[str]:
    w = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    return ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in [head, *body]]


def _text(report: GateReport) -> str:
    head, rows = _metric_rows(report)
    out = [f"gate {_summary(report)}", _intro(report), "", *_table(head, rows)]
    crow = _category_rows(report)
    if crow:
        out += ["", "protected categories:", *_table(_HEAD_CATEGORY, crow)]
    out += ["", *_experiment_lines(report)]
    out += [f"note: {n}" for n in report.notes]
    return "\n".join(out) + "\n"


def render(report: GateReport, fmt: str = "table") -> str:
    """Render as ``table`` (terminal), ``markdown`` (PR comment) or ``json``."""
    if fmt == "json":
        return json.dumps(report.to_json(), indent=2, default=lambda x: None)
    if fmt == "markdown":
        return _markdown(report)
    if fmt == "table":
        return _text(report)
    raise ValueError(f"unknown format {fmt!r}; expected table, markdown or json")
