"""People's verdicts on traces, from every place they are given: the labels a fit learns from.

Sources:
- ``candidates``: reviewed flagged candidates; accepted = the failure is real (with the
  reviewer's corrected root cause when given, else the job's), rejected as a false alarm = the
  trace passes (other rejections, duplicate or out of scope, say nothing about the judge);
- ``audits``: reviewed audits of passes; a pass confirmed, or a failure the judge missed;
- ``phoenix``: candidates decided in Phoenix and pulled back (``ragsieve golden pull``);
- ``review``: "the judge was wrong" said in the terminal review (the ``labels`` table), which
  labels the trace without touching the golden set;
- ``file``: a JSONL labels file, one ``{"trace_id", "verdict": "pass"|"fail", "metric"?,
  "root_cause"?}`` per line; a label on a trace the store does not hold is an error naming it.

When one trace (and metric) is labelled twice, the later source in that order wins: a file
overrides a review, a review a candidate's status.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.tools.jsonlines import json_lines
from ragsieve.jobs.results.reviews import says_false_alarm
from ragsieve.jobs.verdicts.rootcause import ROOT_CAUSES, UNDETERMINED

LABEL_CAUSES = tuple(c for c in ROOT_CAUSES if c != UNDETERMINED)

SOURCES = ("candidates", "audits", "phoenix", "review", "file")
METRICS = ("faithfulness", "answer_relevance", "context_relevance")


@dataclass(frozen=True, slots=True)
class Label:
    """One person's verdict on one trace (or on one metric of it)."""

    trace_id: str
    verdict: Literal["pass", "fail"]
    source: str
    metric: str | None = None
    root_cause: str | None = None
    reason: str | None = None


class LabelLine(BaseModel):
    """One line of a labels file."""

    model_config = ConfigDict(extra="forbid")
    trace_id: str
    verdict: Literal["pass", "fail"]
    metric: Literal["faithfulness", "answer_relevance", "context_relevance"] | None = None
    root_cause: str | None = None
    reason: str | None = None


def _candidate_label(
    cid: str, status: str, cause: str | None, body: dict[str, Any]
) -> Label | None:
    traces = body.get("source_trace_ids") or []
    if not traces or not isinstance(traces[0], str):
        return None
    review = body.get("review") or {}
    via_phoenix = review.get("via") == "phoenix"
    audit = cid.startswith("audit:") or body.get("audit") is True
    source = "phoenix" if via_phoenix else "audits" if audit else "candidates"
    corrected = review.get("root_cause") or None
    if audit:
        verdict = {"audit_pass": "pass", "audit_fail": "fail", "accepted": "fail"}.get(status)
        return Label(traces[0], verdict, source, root_cause=corrected) if verdict else None  # type: ignore[arg-type]
    if status == "accepted":
        return Label(traces[0], "fail", source, root_cause=corrected or cause)
    reason = str(review.get("reason") or "").strip()
    if status == "rejected" and says_false_alarm(reason):
        return Label(traces[0], "pass", source, reason=reason)
    return None


def store_labels(store: Store) -> list[Label]:
    """Labels from reviewed candidates and audits, Phoenix decisions and the ``labels`` table."""
    out: list[Label] = []
    for cid, status, cause, body in store.query(
        "SELECT id, status, root_cause, body FROM candidates"
        " WHERE status IN ('accepted', 'rejected', 'audit_pass', 'audit_fail') ORDER BY updated_at"
    ):
        try:
            data = json.loads(body)
        except ValueError:
            continue
        lab = _candidate_label(str(cid), str(status), cause, data)
        if lab is not None:
            out.append(lab)
    for tid, verdict, metric, cause, reason in store.query(
        "SELECT trace_id, verdict, metric, root_cause, reason FROM labels ORDER BY created_at, id"
    ):
        out.append(Label(tid, verdict, "review", metric, cause, reason))
    return out


def add_label(store: Store, label: Label, *, by: str, now: float | None = None) -> None:
    """Record one person's label (``review`` source) in the ``labels`` table."""
    body = json.dumps({"by": by, "source": label.source})
    store.execute(
        "INSERT INTO labels (trace_id, source, verdict, metric, root_cause, reason, created_at,"
        " body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            label.trace_id,
            label.source,
            label.verdict,
            label.metric,
            label.root_cause,
            label.reason,
            time.time() if now is None else now,
            body,
        ),
    )


def read_labels_file(path: str | Path, store: Store) -> list[Label]:
    """The labels of a JSONL file; a bad line or a trace the store does not hold is a
    ``ConfigError`` naming ``path:line``."""
    parsed: list[tuple[int, LabelLine]] = []
    for n, value in json_lines(Path(path)):  # a BOM, a bad byte, bad JSON: path:line
        try:
            line = LabelLine.model_validate(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "line"
            msg = "a JSON object per line" if err["type"] == "model_type" else err["msg"]
            raise ConfigError(f"{path}:{n}: {where}: {msg}") from None
        if line.root_cause is not None and line.root_cause not in LABEL_CAUSES:
            known = ", ".join(LABEL_CAUSES)  # "undetermined" is the job's, never a label
            raise ConfigError(f"{path}:{n}: root_cause: {line.root_cause!r} is not one of {known}")
        parsed.append((n, line))
    held = _held(store, [line.trace_id for _, line in parsed])
    for n, line in parsed:
        if line.trace_id not in held:
            raise ConfigError(f"{path}:{n}: trace_id: {line.trace_id} is not in the store")
    return [
        Label(x.trace_id, x.verdict, "file", x.metric, x.root_cause, x.reason) for _, x in parsed
    ]


def _held(store: Store, ids: Sequence[str]) -> set[str]:
    rows = store.query_in(
        "SELECT trace_id FROM interactions WHERE trace_id IN ({ids})", sorted(set(ids))
    )
    return {r[0] for r in rows}


def effective(labels: Iterable[Label]) -> list[Label]:
    """One label per (trace, metric): the last given, sources ordered as :data:`SOURCES`."""
    order = {s: i for i, s in enumerate(SOURCES)}
    ranked = sorted(enumerate(labels), key=lambda p: (order.get(p[1].source, 0), p[0]))
    latest: dict[tuple[str, str | None], Label] = {}
    for _, lab in ranked:
        latest[(lab.trace_id, lab.metric)] = lab
    return list(latest.values())


def summary(labels: Sequence[Label], usable: set[str] | None = None) -> dict[str, Any]:
    """Counts per source, per metric and per verdict, and what a fit would use."""
    eff = effective(labels)
    used = [x for x in eff if usable is None or x.trace_id in usable]
    per_metric: dict[str, Counter[str]] = {}
    for x in eff:
        per_metric.setdefault(x.metric or "trace", Counter())[x.verdict] += 1
    return {
        "labels": len(labels),
        "by_source": dict(Counter(x.source for x in labels)),
        "by_verdict": dict(Counter(x.verdict for x in eff)),
        "by_metric": {m: dict(c) for m, c in sorted(per_metric.items())},
        "with_root_cause": sum(x.root_cause is not None for x in eff if x.verdict == "fail"),
        "fit_traces": len({x.trace_id for x in used}),
        "fit_labels": len(used),
        "fit_by_verdict": dict(Counter(x.verdict for x in used)),
    }


__all__ = [
    "SOURCES",
    "Label",
    "LabelLine",
    "add_label",
    "effective",
    "read_labels_file",
    "store_labels",
    "summary",
]
