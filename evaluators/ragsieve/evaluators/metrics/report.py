"""The offline evaluation report: means, per query, per category, worst and no-answer cases."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from ragsieve.evaluators.golden.sets import GoldenSet
from ragsieve.evaluators.metrics import MetricSpec, build_relevance, score_relevance
from ragsieve.evaluators.records import GoldenCase

UNCATEGORIZED = "uncategorized"


SMALL_CATEGORY = 3
"""Below this many cases a category's mean is close to a single query's value: in an
aggregate-only report such categories are pooled (and the pool's mean shown only from this size)."""
POOLED = f"(categories under {SMALL_CATEGORY} cases)"
PER_QUERY_KEYS = ("per_query", "query_category", "query_role", "worst", "no_answer")
"""Keys of the JSON form that name single queries; an aggregate-only (holdout) report has none."""


class QueryRows(Mapping[str, dict[str, float]]):
    """``per_query`` of a report: query id → metric → value, held as one float matrix.

    200,000 queries × a dozen metrics as a dict of dicts of floats are about 190 MB; as a
    matrix 19 MB. A row read is a new dict; :func:`dumps` writes the rows one at a time
    (:meth:`to_raw`), so the dicts never all exist at once.
    """

    def __init__(self, ids: Sequence[str], names: Sequence[str], values: np.ndarray) -> None:
        self._index = {q: i for i, q in enumerate(ids)}
        self._names, self._values = list(names), values

    def __getitem__(self, qid: str) -> dict[str, float]:
        return dict(zip(self._names, self._values[self._index[qid]].tolist(), strict=True))

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def to_raw(self) -> msgspec.Raw:
        """The JSON object, as ``json.dumps`` of the dict of dicts writes it, built row by row."""
        out = bytearray(b"{")
        for i, qid in enumerate(self._index):
            out += b"," if i else b""
            out += msgspec.json.encode(qid) + b":"
            out += msgspec.json.encode(self[qid])
        out += b"}"
        return msgspec.Raw(out)


def _encodable(obj: Any) -> Any:
    if isinstance(obj, QueryRows):
        return obj.to_raw()
    raise TypeError(f"cannot encode {type(obj).__name__}")


@dataclass
class EvalReport:
    """Everything ``ragsieve eval`` prints; :meth:`to_json` is the ``--json`` object."""

    golden: str
    golden_version: int | None
    metrics: dict[str, float]
    per_query: Mapping[str, Mapping[str, float]]
    n_queries: int
    n_no_answer: int
    n_missing: int
    by_category: dict[str, dict[str, Any]]
    query_category: dict[str, str]
    worst_by: str
    worst: list[dict[str, Any]]
    no_answer: list[dict[str, Any]]
    spread: dict[str, dict[str, float]] = field(default_factory=dict)
    retriever_errors: dict[str, str] = field(default_factory=dict)
    generation: dict[str, Any] | None = None
    roles: list[str] | None = None
    query_role: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    retriever: str | None = None
    created_at: str | None = None
    warnings: list[str] = field(default_factory=list)
    aggregate_only: bool = False
    n_retriever_errors: int = 0

    def seal(self) -> None:
        """Drop everything that names a single query (the holdout is never shown case by case).

        Counts stay: how many queries, missing, retriever and answerer errors.
        """
        self.aggregate_only = True
        self.by_category = pool_small_categories(self.by_category)
        self.per_query, self.query_category, self.query_role = {}, {}, {}
        self.worst, self.no_answer = [], []
        self.n_retriever_errors = len(self.retriever_errors)
        self.retriever_errors = {}
        if self.generation is not None:
            gen = dict(self.generation)
            gen.pop("cases", None)
            gen["answerer_errors"] = len(gen.get("answerer_errors") or {})
            self.generation = gen

    def to_json(self, *, rows: bool = True) -> dict[str, Any]:
        """The stable machine-readable form (also the gate's input).

        ``rows=False`` leaves ``per_query`` as the report holds it (:class:`QueryRows`, which
        :func:`dumps` writes row by row) instead of a dict of dicts: what ``eval`` writes.
        """
        data: dict[str, Any] = {
            "golden": self.golden,
            "golden_version": self.golden_version,
            "roles": self.roles,
            "aggregate_only": self.aggregate_only,
            "config": self.config,
            "retriever": self.retriever,
            "created_at": self.created_at,
            "n_queries": self.n_queries,
            "n_no_answer": self.n_no_answer,
            "n_missing": self.n_missing,
            # no answerable case scored: no figure (null), rather than zeros that read as measured
            "metrics": self.metrics if self.n_queries else dict.fromkeys(self.metrics),
            "spread": self.spread,
            "by_category": self.by_category,
            "worst_by": self.worst_by,
            "worst": self.worst,
            "no_answer": self.no_answer,
            "retriever_errors": self.retriever_errors,
            "n_retriever_errors": max(self.n_retriever_errors, len(self.retriever_errors)),
            "generation": self.generation,
            "warnings": self.warnings,
            "query_category": self.query_category,
            "query_role": self.query_role,
            "per_query": dict(self.per_query) if rows else self.per_query,
        }
        if self.aggregate_only:
            for key in PER_QUERY_KEYS:
                data.pop(key)
        return data


def pool_small_categories(
    by_category: Mapping[str, dict[str, Any]], min_n: int = SMALL_CATEGORY
) -> dict[str, dict[str, Any]]:
    """Categories of ``min_n`` cases or more as they are; the others pooled into one row whose
    metrics (means weighted by cases) appear only when the pool itself has ``min_n`` cases."""
    kept = {c: row for c, row in by_category.items() if row["n"] >= min_n}
    small = [row for row in by_category.values() if row["n"] < min_n]
    n = sum(int(row["n"]) for row in small)
    if not n:
        return kept
    pooled: dict[str, Any] = {"n": n, "categories": len(small)}
    if n >= min_n:
        names = small[0]["metrics"]
        pooled["metrics"] = {
            m: sum(row["metrics"][m] * row["n"] for row in small) / n for m in names
        }
    return {**kept, POOLED: pooled}


def dumps(data: Mapping[str, Any], *, indent: int = 0) -> bytes:
    """UTF-8 JSON of a report (msgspec: 100,000 queries in a fifth of a second, not ten).

    Values are those ``json.dumps`` writes, floats in shortest round-trip form; ``indent > 0``
    puts one member per line.
    """
    try:
        out = msgspec.json.encode(data, enc_hook=_encodable)
    except TypeError:  # a key msgspec refuses (None, a bool): the stdlib writes it as before
        out = json.dumps(data, ensure_ascii=False, default=dict).encode()
    return msgspec.json.format(out, indent=indent) if indent else out


def _ranked(ids: Sequence[str] | None, depth: int) -> list[str]:
    return list(dict.fromkeys(ids or ()))[:depth]


def _default_worst_by(metrics: Sequence[MetricSpec], names: Sequence[str]) -> str:
    ndcgs = [m for m in metrics if m.name == "ndcg"]
    return str(max(ndcgs, key=lambda m: m.k or 0)) if ndcgs else names[0]


def _by_category(
    cases: Sequence[GoldenCase], values: Mapping[str, np.ndarray], names: Sequence[str]
) -> dict[str, dict[str, Any]]:
    code_of: dict[str, int] = {}
    codes = np.fromiter(
        (code_of.setdefault(c.category or UNCATEGORIZED, len(code_of)) for c in cases),
        dtype=np.int64,
        count=len(cases),
    )
    out: dict[str, dict[str, Any]] = {}
    for cat in sorted(code_of):
        mask = codes == code_of[cat]
        out[cat] = {
            "n": int(mask.sum()),
            "metrics": {m: float(values[m][mask].mean()) for m in names},
        }
    return out


def _spread(values: Mapping[str, np.ndarray], names: Sequence[str]) -> dict[str, dict[str, float]]:
    """``metric → {n, sd}`` (sample standard deviation over queries): enough for an unpaired
    interval on a difference of means when the per-query values may not be shown."""
    out: dict[str, dict[str, float]] = {}
    for m in names:
        v = values[m]
        sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
        out[m] = {"n": float(v.size), "sd": sd}
    return out


def _worst_rows(
    cases: Sequence[GoldenCase],
    run: Mapping[str, Sequence[str]],
    scores: np.ndarray,
    worst: int,
    depth: int,
) -> list[dict[str, Any]]:
    order: list[int] = np.argsort(scores, kind="stable")[: max(worst, 0)].tolist()
    return [
        {
            "id": cases[i].id,
            "query": cases[i].query,
            "category": cases[i].category,
            "value": float(scores[i]),
            "relevant": dict(cases[i].relevant_chunks),
            "missing_from_run": cases[i].id not in run,
            "retrieved": [
                {"id": cid, "grade": cases[i].relevant_chunks.get(cid, 0)}
                for cid in _ranked(run.get(cases[i].id), depth)
            ],
        }
        for i in order
    ]


def _no_answer_rows(
    cases: Sequence[GoldenCase], run: Mapping[str, Sequence[str]]
) -> list[dict[str, Any]]:
    return [
        {
            "id": c.id,
            "query": c.query,
            "category": c.category,
            "retrieved": _ranked(run.get(c.id), 5),
        }
        for c in cases
    ]


def build_report(
    golden: GoldenSet,
    run: Mapping[str, Sequence[str]],
    metrics: Sequence[MetricSpec],
    *,
    worst: int = 10,
    worst_by: str | None = None,
    source: str | None = None,
) -> EvalReport:
    """Score ``run`` against ``golden`` and assemble the report.

    ``worst_by`` defaults to the nDCG with the largest cutoff, else the first metric.
    """
    cases = golden.answerable
    # one ranking at a time: a run file decodes each when read (see runs.RunFile)
    rel = build_relevance([c.relevant_chunks for c in cases], (run.get(c.id) for c in cases))
    values = score_relevance(rel, metrics)
    names = [str(m) for m in metrics]
    if worst_by is None:
        worst_by = _default_worst_by(metrics, names)
    elif worst_by not in values:
        raise ValueError(f"worst_by {worst_by!r} is not among the metrics: {', '.join(names)}")
    ids = [c.id for c in cases]
    matrix = np.column_stack([values[m] for m in names]) if cases else np.empty((0, len(names)))
    depth = max((m.k or 10 for m in metrics), default=10)
    no_answer = _no_answer_rows(golden.no_answer, run)
    return EvalReport(
        golden=source or str(golden.path),
        golden_version=golden.version,
        metrics={m: float(values[m].mean()) if len(cases) else 0.0 for m in names},
        per_query=QueryRows(ids, names, matrix),
        n_queries=len(cases),
        n_no_answer=len(no_answer),
        n_missing=sum(1 for q in ids if q not in run),
        by_category=_by_category(cases, values, names),
        query_category={c.id: c.category or UNCATEGORIZED for c in cases},
        worst_by=worst_by,
        worst=_worst_rows(cases, run, values[worst_by], worst, depth),
        no_answer=no_answer,
        spread=_spread(values, names),
        query_role={c.id: c.role for c in golden.cases if c.role is not None},
    )


def render_text(report: EvalReport) -> str:
    """A human-readable report: metrics, per category, worst queries with what was retrieved."""
    lines = _head_lines(report)
    names = list(report.metrics)
    width = max((len(n) for n in names), default=6)
    if report.n_queries:
        lines += [f"  {n:<{width}}  {report.metrics[n]:.4f}" for n in names]
    else:  # nothing answerable to rank: no figure, rather than zeros that read as measured
        lines += [f"  {n:<{width}}  -  (no answerable case: n=0)" for n in names]
    if report.by_category and (
        len(report.by_category) > 1 or UNCATEGORIZED not in report.by_category
    ):
        lines += _category_lines(report, names[:6])
    lines += _worst_lines(report)
    n_errors = max(report.n_retriever_errors, len(report.retriever_errors))
    if n_errors:
        lines += ["", f"retriever errors: {n_errors} queries (scored 0)"]
    if report.generation:
        lines += _generation_lines(report.generation)
    lines += [f"warning: {w}" for w in report.warnings]
    return "\n".join(lines)


def _head_lines(report: EvalReport) -> list[str]:
    version = "" if report.golden_version is None else f" (v{report.golden_version})"
    roles = f", roles {'+'.join(report.roles)}" if report.roles else ""
    lines = [f"golden: {report.golden}{version}{roles}"]
    if report.config:
        lines.append("config: " + ", ".join(f"{k}={v}" for k, v in report.config.items()))
    if report.aggregate_only:
        lines.append("holdout: aggregates and per-category figures only")
    lines += [
        f"queries: {report.n_queries} scored, {report.n_no_answer} no-answer (excluded), "
        f"{report.n_missing} missing from the run (scored 0)",
        "",
    ]
    return lines


def _category_lines(report: EvalReport, shown: Sequence[str]) -> list[str]:
    head = ["category".ljust(20), "n".rjust(5)] + [s.rjust(max(len(s), 6)) for s in shown]
    lines = ["", "per category:", "  " + "  ".join(head)]
    for cat, row in report.by_category.items():
        values = row.get("metrics")
        cells = [(f"{values[s]:.4f}" if values else "—").rjust(max(len(s), 6)) for s in shown]
        lines.append("  " + "  ".join([cat[:20].ljust(20), str(row["n"]).rjust(5), *cells]))
    return lines


def _worst_lines(report: EvalReport) -> list[str]:
    if not report.worst:
        return []
    lines = ["", f"worst {len(report.worst)} by {report.worst_by} (* relevant, grade in []):"]
    for row in report.worst:
        cat = f" [{row['category']}]" if row["category"] else ""
        lines.append(f"  {row['id']}{cat}  {report.worst_by}={row['value']:.4f}")
        lines.append(f"    query:    {row['query'][:160]}")
        lines.append(f"    relevant: {', '.join(f'{c}[{g}]' for c, g in row['relevant'].items())}")
        got = [f"*{r['id']}[{r['grade']}]" if r["grade"] else r["id"] for r in row["retrieved"]]
        lines.append(f"    got:      {', '.join(got) or '(nothing)'}")
    return lines


def _generation_lines(gen: Mapping[str, Any]) -> list[str]:
    lines = ["", f"generation (sample {gen['sample']} per group, seed {gen['seed']}):"]
    for name, row in gen["judges"].items():
        labels = ", ".join(f"{k}={v}" for k, v in sorted(row["labels"].items()))
        mean = "—" if row["mean_score"] is None else f"{row['mean_score']:.3f}"
        lines.append(f"  {name} (v{row['version']}): n={row['n']} mean={mean} {labels}")
    rate = gen["abstention_rate_no_answer"]
    lines.append(
        f"  abstention on no-answer cases: "
        f"{'—' if rate is None else f'{rate:.0%}'} of {gen['n_no_answer_judged']}"
    )
    errors = gen["answerer_errors"]
    n_errors = errors if isinstance(errors, int) else len(errors)
    if n_errors:
        lines.append(f"  answerer errors: {n_errors}")
    return lines
