"""What a person's answer in review writes: a decision on a candidate, a label for
``ragsieve judges fit`` ("the judge was wrong"), and one asking split off a merged candidate.

A candidate may hold several askings of what dedup took for one failure, each with the answer its
own failure gave (``sources``). When the reviewer finds that one of them is not that failure, it
leaves the candidate with everything that was its own (its sources, trace ids, root causes, the
vector and signature dedup finds it by) and becomes a row of its own (:func:`split_off`):

- a **false alarm** (its answer was right): that row is rejected as ``false_alarm``, and each of
  its traces gets a ``pass`` label, which is what "the judge was wrong" records for a whole
  candidate; promotion writes it among the negatives;
- a **different failure**: that row is an open candidate, reviewed on its own.

The candidate keeps the rest, and records what left it and why (``split_off``); the new row
names where it came from (``split_from``). Later repeats of the split-off wording find the new
row (its normalised query), not the candidate it left.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import click

from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.merge import majority_cause
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.golden.review.keys import choose
from ragsieve.jobs.golden.review.suggest import REVIEW_CAUSES

REASONS = {"f": "false_alarm: the judge was wrong", "o": "out_of_scope", "d": "duplicate"}
FALSE_ALARM, DIFFERENT = "false_alarm", "different_failure"
# what a candidate's screen and the next row take from it, never from the asking split off
_OWN_KEYS = ("review", "relevant_chunks", "reference_answer", "prefilled_from", "split_off")
_CONVERSATION = ("chat_history", "standalone_query")  # the first asking's turn, not this one's


def decide(
    repo: CandidateRepo,
    c: Candidate,
    status: str,
    by: str,
    reason: str | None,
    *,
    verdict: str | None = None,
    via: str | None = None,
) -> None:
    """Record a person's decision on one candidate (``verdict``: an audit's pass / fail;
    ``via``: where it was given when not here, e.g. ``phoenix``; labels name it as their source)."""
    c.status = status
    c.body["review"] = {
        **c.body.get("review", {}),
        "decision": status,
        "by": by,
        "at": datetime.now(UTC).isoformat(),
        "reason": reason,
    }
    if verdict is not None:
        c.body["review"]["verdict"] = verdict
    if via is not None:
        c.body["review"]["via"] = via
    repo.save([c])


def judge_was_wrong(
    repo: CandidateRepo,
    c: Candidate,
    reviewer: str,
    verdict: str,
    traces: Sequence[str] | None = None,
) -> str:
    """Ask why, and record a label (the trace's true ``verdict``) for ``ragsieve judges fit``:
    on the candidate's first trace, or on each of ``traces``; nothing is added to or removed
    from the golden set."""
    why = ask_why()
    cause = ask_root_cause(None) if verdict == "fail" else None
    label(repo, c.source_trace_ids[:1] if traces is None else traces, verdict, reviewer, why, cause)
    return why


def ask_why() -> str:
    """The reviewer's one line on why the judge was wrong."""
    why = ""
    while not why:
        why = click.prompt("Why was the judge wrong? (one line)").strip()
    return why


def label(
    repo: CandidateRepo,
    traces: Sequence[str],
    verdict: str,
    reviewer: str,
    why: str,
    cause: str | None = None,
) -> None:
    """Record each trace's true ``verdict`` for ``ragsieve judges fit``."""
    from ragsieve.jobs.fitting.labels import Label, add_label

    for trace in traces:
        add_label(repo.store, Label(trace, verdict, "review", None, cause, why), by=reviewer)  # type: ignore[arg-type]


def ask_root_cause(current: str | None) -> str | None:
    """The reviewer's root cause (``-`` for none); an undetermined one is no choice."""
    raw = click.prompt(
        f"Root cause ({', '.join(REVIEW_CAUSES)}; '-' for none)",
        type=click.Choice([*REVIEW_CAUSES, "-"]),
        default=(current or "-") if current in (*REVIEW_CAUSES, None) else None,
        show_choices=False,
    )  # an undetermined cause is no choice: the reviewer types one (or '-')
    return None if raw == "-" else raw


def ask_reason() -> str:
    """A rejection's reason: one of :data:`REASONS` by its key, or typed."""
    while True:
        raw = click.prompt(
            "Reason: [f]alse alarm (judge wrong), [o]ut of scope, [d]uplicate, or type it"
        ).strip()
        if raw:
            return REASONS.get(raw.lower(), raw)


def other_askings(c: Candidate) -> list[str]:
    """The candidate's merged wordings besides its own question, in the order they came."""
    return [str(q) for q in c.body.get("askings") or [] if q != c.query]


def split_off(
    repo: CandidateRepo, c: Candidate, query: str, *, how: str, by: str, why: str
) -> Candidate:
    """Move the asking ``query`` (one of :func:`other_askings`) out of ``c`` into a row of its
    own, saved with ``c``: open when ``how`` is :data:`DIFFERENT`, rejected as a false alarm
    when it is :data:`FALSE_ALARM` (the caller labels its traces). Returns the new row.

    Raises:
        click.BadParameter: ``query`` is not a merged asking of ``c``, or a row of that
            question exists already.
    """
    new_id = check_split(repo, c, query)
    norm = normalize_text(query)
    b = c.body
    moved = [s for s in b.get("sources") or [] if normalize_text(str(s.get("query", ""))) == norm]
    kept_index = [
        k for k in b.get("asking_index") or [] if normalize_text(str(k.get("query", ""))) != norm
    ]
    own = [k for k in b.get("asking_index") or [] if k not in kept_index]
    row = Candidate(
        id=new_id,
        status="candidate",
        norm_query=norm,
        category=c.category,
        root_cause=majority_cause(_causes(moved), None) or c.root_cause,
        seen=max(len(moved), 1),
        body=_split_body(b, query, moved, own[0] if own else None, c.id),
    )
    _take_out(c, norm, moved, kept_index)
    at = datetime.now(UTC).isoformat()
    entry = {"query": query, "into": new_id, "as": how, "by": by, "at": at, "why": why}
    b.setdefault("split_off", []).append({**entry, "trace_ids": row.source_trace_ids})
    if how == FALSE_ALARM:
        row.status = "rejected"
        row.body["review"] = {"decision": "rejected", "by": by, "at": at, "reason": why}
    repo.save([row, c])
    return row


def check_split(repo: CandidateRepo, c: Candidate, query: str) -> str:
    """The id of the row :func:`split_off` would make of ``query``.

    Raises:
        click.BadParameter: as :func:`split_off` refuses.
    """
    norm = normalize_text(query)
    if norm == c.norm_query or query not in other_askings(c):
        raise click.BadParameter(f"not a merged asking of {c.id}: {query!r}")
    new_id = candidate_id(norm)
    if repo.get(new_id) is not None:
        raise click.BadParameter(f"{new_id} already holds {query!r}; reject or merge it there")
    return new_id


def ask_split(repo: CandidateRepo, c: Candidate, reviewer: str) -> list[str]:
    """The review's ``p``: which merged asking leaves ``c`` (its number on the screen) and as
    what, a false alarm (``w``, labelled a pass as ``w`` labels a whole candidate) or its own
    candidate (``o``, a different failure). Returns the ids of the rows made (none when the
    reviewer's choice is refused)."""
    others = other_askings(c)
    answers = {s.get("query"): s.get("answer") for s in c.body.get("sources") or []}
    for i, q in enumerate(others, 2):
        click.echo(f"  {i}. {q}" + (f"  -> answered: {answers[q]}" if answers.get(q) else ""))
    pick = 2
    if len(others) > 1:
        pick = click.prompt("Which asking leaves?", type=click.IntRange(2, len(others) + 1))
    query = others[pick - 2]
    how = choose(
        "It is: [w] no failure, the judge was wrong on it  [o]wn candidate, a different failure",
        ["w", "o"],
    )
    norm = normalize_text(query)  # every failure of this wording, however it was cased
    traces = [
        str(s["trace_id"])
        for s in c.body.get("sources") or []
        if normalize_text(str(s.get("query", ""))) == norm and s.get("trace_id")
    ]
    try:  # refused before anything is written: no label on a trace that stays a failure here
        check_split(repo, c, query)
        if how == "w":
            why = ask_why()
            row = split_off(
                repo, c, query, how=FALSE_ALARM, by=reviewer, why=f"{FALSE_ALARM}: {why}"
            )
            label(repo, traces, "pass", reviewer, why)  # once the split has moved them
        else:
            row = split_off(repo, c, query, how=DIFFERENT, by=reviewer, why=DIFFERENT)
    except click.BadParameter as exc:
        click.echo(f"  {exc.message}")
        return []
    said = "a false alarm (labelled a pass)" if how == "w" else "its own candidate"
    click.echo(f"split {query!r} off {c.id} as {said}: {row.id}")
    return [row.id]


def _causes(sources: Sequence[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in sources:
        if s.get("root_cause"):
            out[str(s["root_cause"])] = out.get(str(s["root_cause"]), 0) + 1
    return out


def _split_body(
    parent: dict[str, Any],
    query: str,
    moved: list[dict[str, Any]],
    indexed: dict[str, Any] | None,
    parent_id: str,
) -> dict[str, Any]:
    """The split-off row's body: the parent's, with this asking's own failures, answer,
    evidence and signature; chunks only those its own signature names (all when it has none)."""
    body = {
        k: copy.deepcopy(v)
        for k, v in parent.items()
        if k not in (*_OWN_KEYS, *_CONVERSATION, "asking_index", "merged_because")
    }
    first = moved[0] if moved else {}
    traces = [str(s["trace_id"]) for s in moved if s.get("trace_id")]
    body.update(
        query=query,
        askings=[query],
        answer=first.get("answer", body.get("answer")),
        evidence=first.get("evidence", body.get("evidence")),
        sources=copy.deepcopy(moved),
        source_trace_ids=traces,
        source_span_ids=[str(s["span_id"]) for s in moved if s.get("span_id")],
        root_causes=_causes(moved),
        relevant_chunks={},
        reference_answer=None,
        split_from=parent_id,
    )
    if indexed:
        body["embedding"] = indexed.get("embedding") or body.get("embedding")
        sig = indexed.get("signature") or {}
        body["signature"] = sig
        body["missed_chunk"] = sig.get("missed")
        ids = set(sig.get("chunks") or ())
        if ids:
            body["chunks"] = [ch for ch in body.get("chunks") or [] if ch.get("id") in ids]
    return body


def _take_out(
    c: Candidate, norm: str, moved: list[dict[str, Any]], kept_index: list[dict[str, Any]]
) -> None:
    """``c`` without the asking ``norm``: its wording, failures, trace ids and index entries."""
    b = c.body
    traces = {s.get("trace_id") for s in moved}
    spans = {s.get("span_id") for s in moved}
    b["askings"] = [q for q in b.get("askings") or [] if normalize_text(str(q)) != norm]
    b["sources"] = [s for s in b.get("sources") or [] if s not in moved]
    b["source_trace_ids"] = [t for t in c.source_trace_ids if t not in traces]
    b["source_span_ids"] = [s for s in b.get("source_span_ids") or [] if s not in spans]
    b["asking_index"] = kept_index
    for t in traces:
        (b.get("merged_because") or {}).pop(t, None)
    causes = dict(b.get("root_causes") or {})
    for cause, n in _causes(moved).items():
        causes[cause] = causes.get(cause, 0) - n
    b["root_causes"] = {k: v for k, v in causes.items() if v > 0}
    c.root_cause = majority_cause(b["root_causes"], c.root_cause)
    c.seen = max(c.seen - len(moved), 1)


__all__ = [
    "DIFFERENT",
    "FALSE_ALARM",
    "REASONS",
    "ask_reason",
    "ask_root_cause",
    "ask_split",
    "decide",
    "judge_was_wrong",
    "other_askings",
    "split_off",
]
