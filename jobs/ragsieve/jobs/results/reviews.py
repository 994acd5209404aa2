"""Reading back: stored results as ``results list`` prints them, reviewed labels, open audits.

Reviewed labels are read from the golden package's ``candidates`` rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragsieve.collector.store import Store


@dataclass(frozen=True, slots=True)
class ReviewLabel:
    """One reviewed verdict: a flagged trace (tp / fp / excluded) or an audited pass (tn / fn)."""

    trace_id: str
    outcome: str
    weight: float = 1.0
    stratum: str = ""  # an audit's: "uncertain" (a judge could not call it) or "random"


def list_results(
    store: Store,
    *,
    since: float | None = None,
    flagged: bool = False,
    limit: int | None = None,
    trace_ids: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Stored results, newest first, as the flat dicts ``results list`` prints.

    ``trace_ids`` (a session's turns, say) keeps only the results of those traces.
    """
    sql = (
        "SELECT trace_id, evaluator, judge_version, run_id, label, score, flagged, root_cause,"
        " created_at, body FROM results WHERE "
        + ("trace_id IN ({ids}) AND " if trace_ids is not None else "")
        + "created_at >= ?"  # query_in puts the ids before the other parameters
    )
    params: list[Any] = [since if since is not None else -1e18]
    if flagged:
        sql += " AND flagged = 1"
    sql += " ORDER BY created_at DESC, trace_id, evaluator"
    if trace_ids is not None:  # sliced IN lists: order and limit are applied to the union below
        found = store.query_in(sql, trace_ids, params) if trace_ids else []
        found.sort(key=lambda r: (-float(r[8]), r[0], r[1]))
        rows = found[:limit] if limit is not None else found
    else:
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        rows = store.query(sql, params)
    return [_result_row(row) for row in rows]


def _result_row(row: Sequence[Any]) -> dict[str, Any]:
    tid, ev, ver, run, label, score, flag, cause, created, body = row
    data = json.loads(body)
    return {
        "trace_id": tid,
        "span_id": data.get("span_id"),
        "evaluator": ev,
        "label": label,
        "score": score,
        "explanation": data.get("explanation"),
        "flagged": bool(flag),
        "root_cause": cause,
        "judge_version": ver,
        "judge_model": data.get("judge_model"),
        "annotator_kind": data.get("annotator_kind"),
        "run_id": run,
        "created_at": created,
        # what the judge read and found (judged_question, claims, chunks, ...), as it stored it
        "metadata": data.get("metadata") or {},
    }


AUDIT_PREFIX = "audit:"
FALSE_ALARM = ("false_alarm", "false alarm")


def says_false_alarm(reason: object) -> bool:
    """True when a rejection's reason says "not a failure at all" (the judge was wrong), however
    it was typed: ``false_alarm: ...`` from the terminal, "False alarm" from Phoenix."""
    return str(reason or "").strip().lower().startswith(FALSE_ALARM)


def _outcome(cid: str, status: str, body: Mapping[str, Any]) -> str | None:
    """A reviewed row's label: tp / fp / excluded for flagged candidates, tn / fn for audits."""
    if cid.startswith(AUDIT_PREFIX) or body.get("audit") is True:
        return {"audit_pass": "tn", "audit_fail": "fn", "accepted": "fn"}.get(status)
    if status == "accepted":
        return "tp"
    if status == "rejected":
        return "fp" if says_false_alarm((body.get("review") or {}).get("reason")) else "excluded"
    return None


def review_labels(store: Store, key: str) -> list[ReviewLabel]:
    """People's verdicts on the current judge set's decisions (``key``), weighted for the report.

    A reviewed candidate labels the trace its screen showed (its first source trace); it counts
    only while that trace's latest verdict under ``key`` is the one reviewed (``fail`` for a
    flagged candidate, ``pass`` for an audit), and weighs ``1 / inclusion probability`` (an audit
    also ``1 / audit probability``: passes a judge was uncertain of are all audited).
    """
    wanted: dict[str, tuple[str, str]] = {}
    for cid, status, body in store.query(
        "SELECT id, status, body FROM candidates"
        " WHERE status IN ('accepted', 'rejected', 'audit_pass', 'audit_fail')"
    ):
        try:
            data = json.loads(body)
        except ValueError:
            continue
        outcome = _outcome(str(cid), str(status), data)
        traces = data.get("source_trace_ids") or []
        if outcome is not None and traces and isinstance(traces[0], str):
            kind = "pass" if outcome in ("tn", "fn") else "fail"
            wanted[traces[0]] = (outcome, kind)
    latest: dict[str, tuple[str, float, str]] = {}
    # All rows of one trace fall in the same slice, so each slice's order is the trace's order.
    for tid, verdict, p, body in store.query_in(
        "SELECT s.trace_id, s.verdict, s.inclusion_p, s.body FROM samples s"
        " JOIN runs r ON r.run_id = s.run_id WHERE s.trace_id IN ({ids})"
        " AND s.verdict IN ('pass', 'fail') ORDER BY r.started_at",
        sorted(wanted),
    ):
        data = json.loads(body)
        if data.get("key") == key:
            # an audited pass weighs 1 / (inclusion x audit probability): uncertain passes are
            # all audited, the others a share, so each audit stands for its part of the passes
            audit_p = float(data.get("audit_p") or 1.0) if verdict == "pass" else 1.0
            stratum = audit_stratum(data) if verdict == "pass" else ""
            latest[tid] = (verdict, float(p or 0.0) * audit_p, stratum)
    out: list[ReviewLabel] = []
    for tid, (outcome, kind) in sorted(wanted.items()):
        verdict, p, stratum = latest.get(tid, ("", 0.0, ""))
        if verdict == kind:
            out.append(ReviewLabel(tid, outcome, 1.0 / p if p > 0 else 1.0, stratum))
    return out


def audit_stratum(sample: Mapping[str, Any]) -> str:
    """The audit stratum of a pass (its ``samples`` body): every pass a judge was uncertain of,
    or the user marked as bad, is audited, the others at random."""
    if sample.get("uncertain"):
        return "uncertain"
    return "disagreed" if sample.get("user_disagreed") else "random"


def open_audits(store: Store) -> int:
    """Audited passes still waiting for a person."""
    return int(store.query("SELECT COUNT(*) FROM candidates WHERE status = 'audit'")[0][0])


__all__ = [
    "AUDIT_PREFIX",
    "FALSE_ALARM",
    "ReviewLabel",
    "audit_stratum",
    "list_results",
    "open_audits",
    "review_labels",
    "says_false_alarm",
]
