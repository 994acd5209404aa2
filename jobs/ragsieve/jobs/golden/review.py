"""Interactive terminal review: accept, edit the reference, reject with a reason, or skip.

Each decision is saved as soon as it is made, so quitting half-way loses nothing. Retrieved
chunks and the answer are shown as *suggestions*; the reviewer states what is relevant. Audit
items (passes drawn at random) ask "is this really a pass?" instead; see ``audit.py``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import click

from ragsieve.jobs.golden.audit import MISSED, PASSED, is_audit
from ragsieve.jobs.golden.categories import CategorySummary
from ragsieve.jobs.golden.repo import Candidate, CandidateRepo

REASONS = {
    "f": "false_alarm: the judge was wrong",
    "o": "out_of_scope",
    "d": "duplicate",
}
_WIDTH = 96


@dataclass
class ReviewReport:
    """What one review session decided."""

    accepted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    audit_passes: list[str] = field(default_factory=list)
    audit_misses: list[str] = field(default_factory=list)


def parse_chunks(text: str) -> dict[str, int]:
    """``"c1, c7=3"`` → ``{"c1": 1, "c7": 3}`` (grade 1 unless given, 0..3)."""
    out: dict[str, int] = {}
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        cid, sep, grade = part.partition("=")
        if not cid.strip():
            raise click.BadParameter(f"empty chunk id in {part!r}")
        try:
            value = int(grade) if sep else 1
        except ValueError:
            msg = f"grade of {cid.strip()!r} must be 0..3, got {grade!r}"
            raise click.BadParameter(msg) from None
        if not 0 <= value <= 3:
            raise click.BadParameter(f"grade of {cid.strip()!r} must be 0..3, got {value}")
        out[cid.strip()] = value
    return out


def format_chunks(chunks: dict[str, int]) -> str:
    """Inverse of :func:`parse_chunks`."""
    return ", ".join(cid if g == 1 else f"{cid}={g}" for cid, g in chunks.items())


def render(c: Candidate, summary: CategorySummary | None) -> str:
    """The screen for one candidate."""
    b = c.body
    wrap = textwrap.TextWrapper(width=_WIDTH, initial_indent="    ", subsequent_indent="    ")
    cat = summary.name if summary else (c.category or "-")
    flag = "  ** NEW FAILURE CATEGORY **" if summary and summary.new else ""
    head = [
        f"candidate {c.id}   seen {c.seen} times   root cause: {c.root_cause}",
        f"category: {cat} [{c.category}]{flag}",
    ]
    if is_audit(c):
        head = [
            f"AUDIT {c.id}   the judges PASSED this answer (a random check of passes)",
            "Is this really a pass? A 'no' is a failure the judges missed.",
        ]
    lines = [
        "=" * _WIDTH,
        *head,
        "",
        "QUESTION",
        wrap.fill(c.query),
        "",
        "RETRIEVED CHUNKS (suggestions)",
    ]
    for ch in b.get("chunks", []) or []:
        mark = "" if ch.get("in_prompt") is not False else " (not in prompt)"
        lines.append(f"  [{ch.get('rank')}] {ch.get('id')}{mark}")
        if ch.get("content"):
            lines.append(wrap.fill(str(ch["content"])[:300]))
    if not b.get("chunks"):
        lines.append("    (none)")
    lines += ["", "ANSWER (suggestion)", wrap.fill(b.get("answer") or "(no answer)"), ""]
    lines.append("JUDGES")
    for j in b.get("judges", []) or []:
        score = "-" if j.get("score") is None else f"{j['score']:.2f}"
        lines.append(f"  {j.get('evaluator')}: {j.get('label')} (score {score})")
        if j.get("explanation"):
            lines.append(wrap.fill(str(j["explanation"])))
    if b.get("evidence"):
        lines.append(f"  evidence: {b['evidence']}")
    lines += [
        "",
        "REFERENCE (yours)",
        f"  answer: {b.get('reference_answer') or '(none)'}",
        f"  relevant chunks: {format_chunks(b.get('relevant_chunks') or {}) or '(none)'}",
    ]
    return "\n".join(lines)


def _edit(c: Candidate) -> None:
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
            b["relevant_chunks"] = {} if raw.strip() == "-" else parse_chunks(raw)
            break
        except click.BadParameter as exc:
            click.echo(f"  {exc.message}")


def review(
    repo: CandidateRepo,
    rows: Sequence[Candidate],
    summaries: dict[str, CategorySummary],
    *,
    reviewer: str,
) -> ReviewReport:
    """Walk ``rows`` with the reviewer; every decision is saved immediately."""
    report = ReviewReport()
    for i, c in enumerate(rows, 1):
        if is_audit(c):
            if not _review_audit(repo, c, f"[{i}/{len(rows)}]", reviewer, report):
                return report
            continue
        while True:
            click.echo(render(c, summaries.get(c.category or "")))
            click.echo(f"\n[{i}/{len(rows)}]")
            action = click.prompt(
                "[a]ccept  [e]dit reference  [r]eject  [s]kip  [q]uit",
                type=click.Choice(["a", "e", "r", "s", "q"]),
                show_choices=False,
            )
            if action == "e":
                _record_edit(repo, c, reviewer, report)
                continue
            if action == "a":
                if not c.body.get("relevant_chunks") and not click.confirm(
                    "No relevant chunks: accept as a no-answer case (the system must abstain)?",
                    default=False,
                ):
                    continue
                decide(repo, c, "accepted", reviewer, None)
                report.accepted.append(c.id)
                click.echo(f"accepted {c.id}")
            elif action == "r":
                reason = _reason()
                decide(repo, c, "rejected", reviewer, reason)
                report.rejected.append(c.id)
                click.echo(f"rejected {c.id}: {reason}")
            elif action == "s":
                report.skipped.append(c.id)
            else:
                return report
            break
    return report


def _record_edit(repo: CandidateRepo, c: Candidate, reviewer: str, report: ReviewReport) -> None:
    """Let the reviewer edit the reference answer and chunks, and save who did it."""
    _edit(c)
    c.body.setdefault("review", {})["edited_by"] = reviewer
    repo.save([c])
    report.edited.append(c.id)


def _review_audit(
    repo: CandidateRepo, c: Candidate, where: str, reviewer: str, report: ReviewReport
) -> bool:
    """One audit item; False when the reviewer quits."""
    while True:
        click.echo(render(c, None))
        click.echo(f"\n{where}")
        action = click.prompt(
            "Really a pass? [y]es, a pass  [n]o, a missed failure  [e]dit reference  [s]kip"
            "  [q]uit",
            type=click.Choice(["y", "n", "e", "s", "q"]),
            show_choices=False,
        )
        if action == "e":
            _record_edit(repo, c, reviewer, report)
            continue
        if action == "y":
            decide(repo, c, PASSED, reviewer, "confirmed_pass", verdict="pass")
            report.audit_passes.append(c.id)
            click.echo(f"confirmed pass {c.id}")
        elif action == "n":
            status = MISSED
            if click.confirm("Also add it to the golden set as a case?", default=False):
                if not c.body.get("relevant_chunks") and not click.confirm(
                    "No relevant chunks: add as a no-answer case (the system must abstain)?",
                    default=False,
                ):
                    click.echo("  edit the reference first ([e]), then answer again")
                    continue
                status = "accepted"
                report.accepted.append(c.id)
            decide(repo, c, status, reviewer, "missed_failure", verdict="fail")
            report.audit_misses.append(c.id)
            click.echo(
                f"missed failure {c.id}" + (" (accepted as a case)" if status == "accepted" else "")
            )
        elif action == "s":
            report.skipped.append(c.id)
        else:
            return False
        return True


def _reason() -> str:
    while True:
        raw = click.prompt(
            "Reason: [f]alse alarm (judge wrong), [o]ut of scope, [d]uplicate, or type it"
        ).strip()
        if raw:
            return REASONS.get(raw.lower(), raw)


def decide(
    repo: CandidateRepo,
    c: Candidate,
    status: str,
    by: str,
    reason: str | None,
    *,
    verdict: str | None = None,
) -> None:
    """Record a person's decision on one candidate (``verdict``: an audit's pass / fail)."""
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
    repo.save([c])
