"""Interactive terminal review: accept, edit the reference, reject with a reason, or skip.

Each decision is saved as soon as it is made, so quitting half-way loses nothing. The relevant
chunks start as what the failure's evidence names (``suggest.py``: the chunk that reached the
prompt, or the missed chunk the job found); the reviewer confirms or changes them. The system's
answer is shown for what it is, the answer that failed, and never offered as the reference.
Audit items (passes drawn at random) ask "is this really a pass?" instead; see ``audit.py``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from ragsieve.jobs.golden.growth.candidates import asked_as
from ragsieve.jobs.golden.growth.categories import CategorySummary
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.golden.review import keys, suggest
from ragsieve.jobs.golden.review.audit import MISSED, PASSED, is_audit
from ragsieve.jobs.golden.review.decisions import (
    REASONS,
    ask_reason,
    ask_root_cause,
    ask_split,
    decide,
    judge_was_wrong,
    other_askings,
)
from ragsieve.jobs.golden.review.duplicates import MERGED, ask_duplicate
from ragsieve.jobs.golden.review.keys import choose, confirm, format_chunks, parse_chunks
from ragsieve.jobs.golden.review.suggest import (
    acceptance_gap,
    asks_root_cause,
    evidence_chunks,
)

_WIDTH = 96


@dataclass
class ReviewReport:
    """What one review session decided."""

    accepted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)  # rejected: the judge was wrong
    skipped: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    audit_passes: list[str] = field(default_factory=list)
    audit_misses: list[str] = field(default_factory=list)
    split_off: list[str] = field(default_factory=list)  # rows split off a merged candidate
    merged: list[str] = field(default_factory=list)  # duplicates folded into another candidate


def _conversation(b: dict[str, Any], wrap: textwrap.TextWrapper) -> list[str]:
    """The turns before a follow-up (its last four), so the question reads as it was meant."""
    turns = b.get("chat_history") or []
    if not turns:
        return []
    lines = [f"CONVERSATION (last {min(4, len(turns))} of {len(turns)} turns before the question)"]
    for t in turns[-4:]:
        lines += [f"  {t.get('role')}:", wrap.fill(str(t.get("content") or "")[:300])]
    return [*lines, ""]


def render(c: Candidate, summary: CategorySummary | None) -> str:
    """The screen for one candidate."""
    b = c.body
    wrap = textwrap.TextWrapper(width=_WIDTH, initial_indent="    ", subsequent_indent="    ")
    alone = "none: uncategorised (no other failure shares its topic)"
    cat = f"{summary.name} [{c.category}]" if summary else (c.category or alone)
    flag = "  ** NEW FAILURE CATEGORY **" if summary and summary.new else ""
    head = [
        f"candidate {c.id}   seen {c.seen} times   root cause: {_root_cause(c)}",
        f"category: {cat}{flag}",
    ]
    if is_audit(c):
        head = [
            f"AUDIT {c.id}   the judges PASSED this answer (a random check of passes)",
            "Is this really a pass? A 'no' is a failure the judges missed.",
        ]
    lines = ["=" * _WIDTH, *head, "", *_conversation(b, wrap), "QUESTION", wrap.fill(c.query)]
    if b.get("standalone_query"):  # the app's own rewrite of a follow-up: what it searched for
        lines += ["  as the app rewrote it:", wrap.fill(str(b["standalone_query"]))]
    if others := asked_as(b):  # the same failure asked in other words, merged (issue 46)
        lines += [f"  also asked as ({len(others)}):  ([p] splits one off)"]
        lines += [wrap.fill(f"{i}. {q}") for i, q in enumerate(others[:5], 2)]
    for m in b.get("merged") or ():  # duplicates a reviewer folded in
        lines.append(wrap.fill(f"merged in: {m['query']} ({m['id']}, by {m['by']})"))
    for gone in b.get("split_off") or ():  # what a reviewer split off, and into which row
        lines.append(wrap.fill(f"split off: {gone['query']} ({gone['as']}, {gone['into']})"))
    lines += ["", "RETRIEVED CHUNKS"]
    for ch in b.get("chunks", []) or []:
        mark = "" if ch.get("in_prompt") is not False else ", not in prompt"
        lines.append(f"  {ch.get('id')}  (rank {ch.get('rank')}{mark})")
        if ch.get("content"):
            lines.append(wrap.fill(str(ch["content"])[:300]))
    if not b.get("chunks"):
        lines.append("    (none)")
    said = "the system's answer (judged a pass)" if is_audit(c) else "the failing answer"
    lines += ["", f"ANSWER ({said}; not a reference)", wrap.fill(b.get("answer") or "-"), ""]
    lines.append("JUDGES")
    for j in b.get("judges", []) or []:
        score = "-" if j.get("score") is None else f"{j['score']:.2f}"
        lines.append(f"  {j.get('evaluator')}: {j.get('label')} (score {score})")
        if j.get("explanation"):
            lines.append(wrap.fill(str(j["explanation"])))
    lines += suggest.evidence_lines(c.root_cause, b)
    lines += [
        "",
        "REFERENCE (yours)",
        f"  answer: {b.get('reference_answer') or '(none)'}",
        f"  relevant chunks: {format_chunks(b.get('relevant_chunks') or {}) or '(none)'}",
    ]
    if b.get("prefilled_from") and b.get("relevant_chunks"):
        lines.append(f"    (pre-filled from {b['prefilled_from']}; [e] to change)")
    return "\n".join(lines)


def prefill(c: Candidate) -> None:
    """An unreviewed candidate's chunks as its evidence names them (saved with a decision)."""
    b = c.body
    if b.get("relevant_chunks") or (b.get("review") or {}).get("edited_by"):
        return
    chunks, source = evidence_chunks(b)
    if chunks:
        b["relevant_chunks"] = chunks
        b["prefilled_from"] = source


def unknown_chunks(repo: CandidateRepo, c: Candidate, ids: Sequence[str]) -> list[str]:
    """The ``ids`` that are neither among the trace's retrieved chunks nor in the observed
    corpus (chunks any trace retrieved): a typo, or a list position typed for an id."""
    known = {str(ch.get("id")) for ch in c.body.get("chunks", []) or []}
    rest = sorted(set(ids) - known)
    if not rest:
        return []
    seen = {
        r[0]
        for r in repo.store.query_in(
            "SELECT chunk_id FROM corpus_chunks WHERE chunk_id IN ({ids})", rest
        )
    }
    return [i for i in rest if i not in seen]


def _edit(c: Candidate, repo: CandidateRepo) -> None:
    b = c.body
    # the default is the reviewer's own answer so far, never the (failing) system answer
    answer = click.prompt(
        "Reference answer ('-' for none)", default=b.get("reference_answer") or "-"
    ).strip()
    b["reference_answer"] = None if answer in ("", "-") else answer
    chunks_default = format_chunks(b.get("relevant_chunks") or {})
    while True:
        raw = click.prompt(
            "Relevant chunk ids, comma-separated, id=grade for 0..3 ('-' for none)",
            default=chunks_default or "-",
        )
        try:
            chunks = {} if raw.strip() == "-" else parse_chunks(raw)
        except click.BadParameter as exc:
            click.echo(f"  {exc.message}")
            continue
        unknown = unknown_chunks(repo, c, list(chunks))
        if unknown:
            click.echo(
                f"  not a chunk of this trace nor of the observed corpus: {', '.join(unknown)}"
                " (give chunk ids, not positions)"
            )
            continue
        b["relevant_chunks"] = chunks
        b.pop("prefilled_from", None)
        break


_AGAIN, _NEXT, _QUIT = "again", "next", "quit"


def review(
    repo: CandidateRepo,
    rows: Sequence[Candidate],
    summaries: dict[str, CategorySummary],
    *,
    reviewer: str,
) -> ReviewReport:
    """Walk ``rows`` with the reviewer; every decision is saved immediately (so piped answers
    that run out at a question with no default end the review as a quit does)."""
    report = ReviewReport()
    try:
        _walk(repo, rows, summaries, reviewer, report)
    except click.Abort as exc:
        if keys.at_terminal() or not keys.ended(exc):
            raise
        click.echo("\n(end of input: review stopped; every answer given is saved)")
    return report


def _walk(
    repo: CandidateRepo,
    rows: Sequence[Candidate],
    sums: dict[str, CategorySummary],
    reviewer: str,
    report: ReviewReport,
) -> None:
    for i, c in enumerate(rows, 1):
        where = f"[{i}/{len(rows)}]"
        if is_audit(c):
            if not _review_audit(repo, c, where, reviewer, report):
                return
            continue
        c = repo.get(c.id) or c  # as stored now: a duplicate merged into it earlier shows
        if c.status == MERGED:  # merged into another candidate earlier in this review
            continue
        prefill(c)
        step = _AGAIN
        while step == _AGAIN:
            click.echo(render(c, sums.get(c.category or "")))
            click.echo(f"\n{where}")
            step = _flagged_step(repo, c, reviewer, report)
        if step == _QUIT:
            return


def _flagged_step(repo: CandidateRepo, c: Candidate, reviewer: str, report: ReviewReport) -> str:
    """One answer on a flagged candidate: show it again, go to the next, or quit."""
    split = ["p"] if other_askings(c) else []  # only a merged candidate has askings to split
    action = choose(
        "[a]ccept  [e]dit reference  [c]orrect root cause  [r]eject  [w] the judge was wrong"
        "  [d]uplicate of another candidate"
        + ("  s[p]lit an asking off" if split else "")
        + "  [s]kip  [q]uit",
        ["a", "e", "c", "r", "w", "d", *split, "s", "q"],
    )
    if action == "d":
        return _duplicate(repo, c, reviewer, report)
    if action == "p":
        report.split_off += ask_split(repo, c, reviewer)
        return _AGAIN
    if action == "e":
        _record_edit(repo, c, reviewer, report)
        return _AGAIN
    if action == "c":
        _correct_root_cause(repo, c)
        return _AGAIN
    if action == "w":
        why = judge_was_wrong(repo, c, reviewer, "pass")
        decide(repo, c, "rejected", reviewer, f"false_alarm: the judge was wrong: {why}")
        report.false_alarms.append(c.id)
        click.echo(f"labelled {c.id} a pass (the judge was wrong); golden set untouched")
        return _NEXT
    if action == "a":
        if asks_root_cause(c.root_cause, c.body):  # undetermined: the reviewer decides
            _correct_root_cause(repo, c)
        if acceptance_gap(c.root_cause, c.body) == "chunk":
            click.echo(
                f"  root cause {c.cause}: the question has an answer; [e]dit names its chunk"
                " (or [c]orrect the root cause if it has none)"
            )
            return _AGAIN
        if not c.body.get("relevant_chunks") and not confirm(
            "No relevant chunks: accept as a no-answer case (the system must abstain)?",
            default=False,
        ):
            return _AGAIN
        decide(repo, c, "accepted", reviewer, None)
        report.accepted.append(c.id)
        click.echo(f"accepted {c.id}")
        return _NEXT
    if action == "r":
        reason = ask_reason()
        if reason == REASONS["d"]:  # a duplicate says of which candidate
            return _duplicate(repo, c, reviewer, report)
        decide(repo, c, "rejected", reviewer, reason)
        report.rejected.append(c.id)
        click.echo(f"rejected {c.id}: {reason}")
        return _NEXT
    if action == "s":
        report.skipped.append(c.id)
        return _NEXT
    return _QUIT


def _duplicate(repo: CandidateRepo, c: Candidate, reviewer: str, report: ReviewReport) -> str:
    """``c`` is a duplicate: of which candidate (``duplicates.ask_duplicate``); back to its
    screen when the reviewer names none."""
    if ask_duplicate(repo, c, reviewer) is None:
        return _AGAIN
    report.merged.append(c.id)
    return _NEXT


def _record_edit(repo: CandidateRepo, c: Candidate, reviewer: str, report: ReviewReport) -> None:
    """Let the reviewer edit the reference answer and chunks, and save who did it."""
    _edit(c, repo)
    c.body.setdefault("review", {})["edited_by"] = reviewer
    repo.save([c])
    report.edited.append(c.id)


def _review_audit(
    repo: CandidateRepo, c: Candidate, where: str, reviewer: str, report: ReviewReport
) -> bool:
    """One audit item; False when the reviewer quits."""
    step = _AGAIN
    while step == _AGAIN:
        click.echo(render(c, None))
        click.echo(f"\n{where}")
        step = _audit_step(repo, c, reviewer, report)
    return step != _QUIT


def _audit_step(repo: CandidateRepo, c: Candidate, reviewer: str, report: ReviewReport) -> str:
    """One answer on an audit item: show it again, go to the next, or quit."""
    action = choose(
        "Really a pass? [y]es, a pass  [n]o, a missed failure  [w] the judge was wrong"
        "  [e]dit reference  [s]kip  [q]uit",
        ["y", "n", "w", "e", "s", "q"],
    )
    if action == "e":
        _record_edit(repo, c, reviewer, report)
        return _AGAIN
    if action == "w":
        why = judge_was_wrong(repo, c, reviewer, "fail")
        decide(repo, c, MISSED, reviewer, f"missed_failure: {why}", verdict="fail")
        report.audit_misses.append(c.id)
        click.echo(f"labelled {c.id} a failure (the judge was wrong); golden set untouched")
        return _NEXT
    if action == "y":
        decide(repo, c, PASSED, reviewer, "confirmed_pass", verdict="pass")
        report.audit_passes.append(c.id)
        click.echo(f"confirmed pass {c.id}")
        return _NEXT
    if action == "n":
        return _missed(repo, c, reviewer, report)
    if action == "s":
        report.skipped.append(c.id)
        return _NEXT
    return _QUIT


def _missed(repo: CandidateRepo, c: Candidate, reviewer: str, report: ReviewReport) -> str:
    """A failure the judges missed, optionally also accepted as a golden case."""
    status = MISSED
    if confirm("Also add it to the golden set as a case?", default=False):
        if not c.body.get("relevant_chunks") and not confirm(
            "No relevant chunks: add as a no-answer case (the system must abstain)?",
            default=False,
        ):
            click.echo("  edit the reference first ([e]), then answer again")
            return _AGAIN
        status = "accepted"
        report.accepted.append(c.id)
    decide(repo, c, status, reviewer, "missed_failure", verdict="fail")
    report.audit_misses.append(c.id)
    click.echo(f"missed failure {c.id}" + (" (accepted as a case)" if status == "accepted" else ""))
    return _NEXT


def _root_cause(c: Candidate) -> str | None:  # the reviewer's, with the job's beside it
    return c.cause if c.cause == c.root_cause else f"{c.cause} (the job said {c.root_cause})"


def _correct_root_cause(repo: CandidateRepo, c: Candidate) -> None:
    """The reviewer's root cause, kept beside the job's (a fit learns from both)."""
    review = c.body.setdefault("review", {})
    review["root_cause"] = ask_root_cause(review.get("root_cause") or c.root_cause)
    repo.save([c])
    click.echo(f"  root cause: {review['root_cause'] or '-'} (the job said {c.root_cause})")
