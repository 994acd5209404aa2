"""Sessions: the turns of one conversation in order, and each turn's latest verdict.

A session is every interaction whose record carries the same ``session_id`` (OpenInference
``session.id``, Langfuse / Traceloop session ids, or a ``conversation_id`` / ``thread_id``
metadata key; see ``extract.identity``). The store keeps it beside the record's body, indexed
with the start time (migration ``015_interactions_session``, which filled it in for records
stored before), so a session is one index lookup.

A turn's position is read from the conversation its generation step was given: turn 1 is a
prompt with no earlier user turn, turn n has n - 1 of them (``turn_number``). An app whose final
LLM call sees only a rewritten question (a condense-question engine) has turn 1 everywhere; its
turns still line up in ``session_turns`` by start time.

Verdicts are the job's (the ``samples`` and ``runs`` tables, created with the store like every
table) and the reviewers' (``labels``); this module only reads them, so the collector's CLI can
mark the flagged turns without importing the job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragsieve.collector.store.protocol import Store
from ragsieve.evaluators.records import RagInteraction

_USER_ROLES = ("user", "human")


def turn_number(rec: RagInteraction) -> int:
    """1 + the user turns before this one in the conversation the generation step was given."""
    return 1 + sum(m.role in _USER_ROLES for m in rec.chat_history)


def session_turns(store: Store, session_id: str) -> list[RagInteraction]:
    """Every interaction of ``session_id`` in start order (ties by trace id)."""
    rows = store.query(
        "SELECT body FROM interactions WHERE session_id = ? ORDER BY started_at, trace_id",
        (session_id,),
    )
    return [RagInteraction.model_validate_json(body) for (body,) in rows]


@dataclass(frozen=True, slots=True)
class TurnVerdict:
    """The latest verdict the job took on one trace, and a person's, when one reviewed it."""

    verdict: str
    root_cause: str | None
    run_id: str
    reviewed: str | None = None  # "pass" / "fail": the latest whole-trace label a person gave


def latest_verdicts(store: Store, trace_ids: Sequence[str]) -> dict[str, TurnVerdict]:
    """Trace id -> its verdict in the latest run that decided it (traces never decided: absent)."""
    if not trace_ids:
        return {}
    out: dict[str, TurnVerdict] = {}
    rows = store.query_in(
        "SELECT s.trace_id, s.verdict, s.root_cause, s.run_id FROM samples s"
        " JOIN runs r ON r.run_id = s.run_id WHERE s.trace_id IN ({ids})"
        " AND s.verdict IN ('pass', 'fail') ORDER BY r.started_at",
        list(trace_ids),
    )
    for tid, verdict, cause, run_id in rows:  # each slice holds whole traces, in run order
        out[str(tid)] = TurnVerdict(str(verdict), cause, str(run_id))
    labelled = store.query_in(  # a reviewer's word ("the judge was wrong") beside the job's
        "SELECT trace_id, verdict FROM labels WHERE trace_id IN ({ids}) AND metric IS NULL"
        " ORDER BY created_at, id",
        list(out),
    )
    for tid, person in labelled:
        v = out[str(tid)]
        out[str(tid)] = TurnVerdict(v.verdict, v.root_cause, v.run_id, str(person))
    return out


__all__ = ["TurnVerdict", "latest_verdicts", "session_turns", "turn_number"]
