"""Promotion: accepted candidates → the next golden version, a changelog entry, negative labels.

Only candidates a person accepted are promoted. The next version is a new file (an existing one
is never replaced); rejected candidates are written beside it as negative labels in the
calibration format, and the promoted cases join the store's golden rows so novelty sees them.
In a set split into roles (``ragsieve golden split``) promoted cases get roles by the set's rule,
except that cases of a new failure category go to ``regression`` first: they exist to stop that
failure coming back, which is what the CI gate checks.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.golden.roles import ROLES, UNCATEGORIZED, assign_roles, read_rule
from ragsieve.evaluators.golden.sets import (
    GoldenSet,
    append_changelog,
    load_golden,
    next_version_path,
    parse_version,
    write_golden,
)
from ragsieve.evaluators.quality.calibration import LABEL_FIELD
from ragsieve.evaluators.records import GoldenCase, GoldenRole, normalize_text
from ragsieve.jobs.golden.growth.categories import CategorySummary
from ragsieve.jobs.golden.growth.reference import versions
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.results.reviews import says_false_alarm

_VERSION = re.compile(r"_v\d+$")


@dataclass
class PromoteResult:
    """What a promotion wrote (or, with ``dry_run``, would write)."""

    source: Path
    path: Path
    added: list[GoldenCase] = field(default_factory=list)
    already_in_golden: list[str] = field(default_factory=list)
    by_category: dict[str, int] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    negatives_path: Path | None = None
    negatives: int = 0
    changelog: Path | None = None
    dry_run: bool = False
    start: bool = False
    # case id -> the wordings merged into its promoted candidate since (:func:`grown_variants`)
    variants_added: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Stable JSON for ``golden promote --json``."""
        return {
            "source": str(self.source),
            "path": str(self.path) if self.added or self.variants_added else None,
            "added": [c.id for c in self.added],
            "already_in_golden": self.already_in_golden,
            "by_category": self.by_category,
            "roles": self.roles,
            "negatives_path": str(self.negatives_path) if self.negatives_path else None,
            "negatives": self.negatives,
            "changelog": str(self.changelog) if self.changelog else None,
            "dry_run": self.dry_run,
            "start": self.start,
            "variants_added": self.variants_added,
        }


def target(src: Path, *, start: bool = False) -> Path:
    """The version a promotion from ``src`` writes: the next one (``golden_v3`` → ``golden_v4``,
    ``golden_v0`` → ``golden_v1``), or with ``start`` the first one (``src`` itself when it is
    ``_v0`` or ``_v1``, ``<stem>_v1`` for an unversioned name).

    Raises:
        ConfigError: the version would skip or shadow another one: ``src`` is not the newest
            version of its set, or a set to start already has a version.
    """
    have = versions(src)
    version = parse_version(src)
    first = src.with_name(f"{_VERSION.sub('', src.stem)}_v1{src.suffix or '.jsonl'}")
    if start:
        if version is not None and version > 1:
            raise ConfigError(f"{src}: a new set starts at version 1 (or 0): --start {first}")
        out = src if version is not None else first
        taken = [p for p in (src, out) if p.exists()] + [have[v] for v in sorted(have)]
        if taken:
            newest = taken[-1]
            raise ConfigError(
                f"{out}: the set already has {newest.name}; promote from the newest version with"
                f" --golden {newest}"
            )
        return out
    if not src.exists():
        hint = f"; to start a set from nothing: ragsieve golden promote --start {first}"
        raise ConfigError(f"{src}: no such golden file{'' if have else hint}")
    newer = {v: p for v, p in have.items() if v >= (1 if version is None else version) and p != src}
    out = next_version_path(src)
    if newer or out.exists():
        newest = newer[max(newer)] if newer else out
        raise ConfigError(
            f"{src}: {newest.name} exists, so {out.name} would skip or shadow it (golden files"
            f" are never overwritten); promote from the newest version, {newest.name}"
        )
    return out


def negatives_path(golden_path: Path) -> Path:
    """``golden_v4.jsonl`` → ``golden_v4.rejected.jsonl``."""
    return golden_path.with_name(f"{golden_path.stem}.rejected{golden_path.suffix or '.jsonl'}")


def to_case(c: Candidate, summary: CategorySummary | None, now: datetime) -> GoldenCase:
    """The golden case a person accepted, with its production provenance in ``metadata``."""
    review = c.body.get("review", {})
    category = (summary.golden_category or summary.name) if summary else c.category
    return GoldenCase(
        id=c.id,
        query=c.query,
        relevant_chunks=dict(c.body.get("relevant_chunks") or {}),
        reference_answer=c.body.get("reference_answer"),
        category=category,
        source="production",
        reviewed=True,
        created_at=now,
        chat_history=tuple(c.body.get("chat_history") or ()),  # a follow-up's conversation
        standalone_query=c.body.get("standalone_query"),
        metadata={
            "candidate_id": c.id,
            "category_id": c.category,
            "new_category": bool(summary and summary.new),
            # the reviewer's correction, when there is one, over the job's reading; a cause the
            # job left undetermined and nobody named stays unknown (None) in the golden case
            "root_cause": review.get("root_cause")
            or (None if c.root_cause == "undetermined" else c.root_cause),
            "judged_root_cause": c.root_cause,
            "seen": c.seen,
            "source_trace_ids": c.source_trace_ids,
            "source_span_ids": list(c.body.get("source_span_ids", [])),
            # the other wordings of this question merged into the candidate (issue 46)
            "variants": [q for q in c.body.get("askings") or [] if q != c.query],
            "reviewed_by": review.get("by"),
            "reviewed_at": review.get("at"),
        },
    )


def negative_label(c: Candidate) -> dict[str, Any]:
    """A rejected candidate as a calibration row; a false alarm marks each failing judge wrong."""
    review = c.body.get("review", {})
    reason = str(review.get("reason") or "")
    row: dict[str, Any] = {
        "id": c.id,
        "question": c.query,
        "contexts": [ch["content"] for ch in c.body.get("chunks", []) if ch.get("content")],
        "answer": c.body.get("answer"),
        "task": "golden_rejected",
        "reason": reason,
        "rejected_by": review.get("by"),
        "rejected_at": review.get("at"),
        "source_trace_ids": c.source_trace_ids,
        "judges": c.body.get("judges", []),
    }
    if says_false_alarm(reason):
        for j in c.body.get("judges", []):
            fld = LABEL_FIELD.get(str(j.get("evaluator")))
            if fld:
                row[fld] = True  # a person says this output was fine: the judge's failure was wrong
    return row


def promote(
    repo: CandidateRepo,
    golden: str | Path,
    summaries: Mapping[str, CategorySummary],
    *,
    by: str,
    dry_run: bool = False,
    start: bool = False,
    now: datetime | None = None,
) -> PromoteResult:
    """Write the next version of ``golden`` with every accepted, not yet promoted candidate;
    with ``start``, ``golden`` is the first version of a new set (see :func:`target`)."""
    stamp = now or datetime.now(UTC)
    src = Path(golden)
    out = target(src, start=start)
    current = GoldenSet(out, parse_version(out), []) if start else load_golden(src)
    result = PromoteResult(source=src, path=out, dry_run=dry_run, start=start)
    ids = {c.id for c in current.cases}
    norms = {normalize_text(c.query) for c in current.cases}
    accepted = [c for c in repo.select(["accepted"]) if not c.body.get("promoted_in")]
    fresh: list[tuple[Candidate, GoldenCase]] = []
    for c in accepted:
        if c.id in ids or c.norm_query in norms:
            result.already_in_golden.append(c.id)
            continue
        fresh.append((c, to_case(c, summaries.get(c.category or ""), stamp)))
    fresh = _with_roles(src, current.cases, fresh)
    result.added = [case for _, case in fresh]
    result.roles = {case.id: case.role for case in result.added if case.role is not None}
    result.by_category = dict(Counter(case.category or UNCATEGORIZED for case in result.added))
    rejected = repo.select(["rejected"])
    result.negatives = len(rejected)
    result.variants_added = grown_variants(repo, current.cases)
    if not fresh and not result.variants_added:
        return result
    result.negatives_path = negatives_path(out) if rejected else None
    if dry_run:
        return result
    out.parent.mkdir(parents=True, exist_ok=True)  # a set started from nothing
    if result.negatives_path is not None and result.negatives_path.exists():
        # Checked before anything is written: a refusal leaves no half-made version behind.
        raise ConfigError(f"{result.negatives_path}: exists; never overwritten")
    if result.negatives_path is not None:
        try:
            with result.negatives_path.open("x", encoding="utf-8") as fh:
                for c in rejected:
                    fh.write(json.dumps(negative_label(c), ensure_ascii=False) + "\n")
        except FileExistsError:
            raise ConfigError(f"{result.negatives_path}: exists; never overwritten") from None
    try:
        write_golden(out, [*_with_variants(current.cases, result.variants_added), *result.added])
    except BaseException:
        if result.negatives_path is not None:
            result.negatives_path.unlink(missing_ok=True)  # ours: written just above
        raise
    result.changelog = append_changelog(
        out, _entry(result, fresh, summaries, by, len(current.cases))
    )
    _mark(repo, fresh, out, by, stamp)
    return result


def grown_variants(repo: CandidateRepo, cases: Sequence[GoldenCase]) -> dict[str, list[str]]:
    """Case id -> the wordings merged into its promoted candidate (a repeat dedup merged, a
    ``[d]uplicate`` a reviewer named) that the case's ``metadata.variants`` lacks: the next
    version carries them, and its changelog says so."""
    rows = {c.id: c for c in repo.select(["accepted"]) if c.body.get("promoted_in")}
    out: dict[str, list[str]] = {}
    for case in cases:
        row = rows.get(str(case.metadata.get("candidate_id") or case.id))
        have = {case.query, *(case.metadata.get("variants") or ())}
        new = [q for q in (row.body.get("askings") or []) if q not in have] if row else []
        if new:
            out[case.id] = new
    return out


def _with_variants(cases: Sequence[GoldenCase], added: Mapping[str, list[str]]) -> list[GoldenCase]:
    return [
        c.model_copy(
            update={"metadata": {**c.metadata, "variants": [*c.metadata.get("variants", ()), *new]}}
        )
        if (new := added.get(c.id))
        else c
        for c in cases
    ]


def _with_roles(
    src: Path, cases: Sequence[GoldenCase], fresh: list[tuple[Candidate, GoldenCase]]
) -> list[tuple[Candidate, GoldenCase]]:
    """Promoted cases with roles by the set's rule; a new failure category's go to regression."""
    rule = read_rule(src)
    if rule is None or not fresh:
        return fresh  # a set never split stays without roles
    pins: dict[str, GoldenRole] = {
        case.id: "regression" for _, case in fresh if case.metadata.get("new_category")
    }
    placed = assign_roles([*cases, *(case for _, case in fresh)], rule, forced=pins)
    return [(c, case) for (c, _), case in zip(fresh, placed[len(cases) :], strict=True)]


def _entry(
    result: PromoteResult,
    fresh: list[tuple[Candidate, GoldenCase]],
    summaries: Mapping[str, CategorySummary],
    by: str,
    n_before: int,
) -> str:
    reviewers = sorted({str(c.body.get("review", {}).get("by") or "?") for c, _ in fresh})
    n = len(fresh)
    cases = f"{n} production case{'s' if n != 1 else ''}"
    what = (
        f"Started the set with {cases}."
        if result.start
        else f"Added {cases} from {result.source.name} ({n_before} → {n_before + n} cases)."
    )
    lines = [
        f"{what} Promoted by {by}; reviewed by {', '.join(reviewers) or 'nobody new'}.",
        *_variant_lines(result.variants_added),
        *(["", "By category:"] if fresh else []),
    ]
    groups: dict[str, list[tuple[Candidate, GoldenCase]]] = {}
    for c, case in fresh:
        groups.setdefault(case.category or UNCATEGORIZED, []).append((c, case))
    for name, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        s = summaries.get(members[0][0].category or "")
        tag = ", NEW failure category" if s and s.new else ""
        causes = Counter(c.cause or "no root cause" for c, _ in members)
        cause = ", ".join(f"{k} {n}" for k, n in sorted(causes.items()))
        cause = cause if len(causes) > 1 else next(iter(causes))  # mixed: each case says its own
        each = [f" ({c.cause or 'no root cause'})" if len(causes) > 1 else "" for c, _ in members]
        ids = ", ".join(f"{case.id}{own}" for (_, case), own in zip(members, each, strict=True))
        lines.append(f"- {name} ({cause}{tag}): {len(members)} — {ids}")
    if result.roles:
        per_role = Counter(result.roles.values())
        lines += [
            "",
            "Roles (by the split's rule; new failure categories to regression first): "
            + ", ".join(f"{r} {per_role[r]}" for r in ROLES if per_role[r]),
        ]
    if result.negatives_path is not None:
        lines += [
            "",
            f"Rejected candidates kept as negative labels: {result.negatives}"
            f" ({result.negatives_path.name}).",
        ]
    return "\n".join(lines)


def _variant_lines(added: Mapping[str, list[str]]) -> list[str]:
    """The changelog's lines for wordings merged into cases promoted before."""
    if not added:
        return []
    n = sum(len(v) for v in added.values())
    head = f"Variants added ({n}, merged into {len(added)} promoted case(s) since):"
    return ["", head, *(f"- {cid}: " + "; ".join(map(repr, qs)) for cid, qs in added.items())]


def _mark(
    repo: CandidateRepo,
    fresh: list[tuple[Candidate, GoldenCase]],
    out: Path,
    by: str,
    stamp: datetime,
) -> None:
    rows: list[Candidate] = []
    for c, case in fresh:
        c.body["promoted_in"] = out.name
        c.body["promoted_by"] = by
        c.body["promoted_at"] = stamp.isoformat()
        rows.append(c)
        rows.append(golden_row(case, c.body.get("embedding"), origin=out.name))
    repo.save(rows)


def golden_row(case: GoldenCase, embedding: str | None, *, origin: str) -> Candidate:
    """A ``golden`` reference row for one case (what dedup and novelty compare against)."""
    body: dict[str, Any] = {
        "case_id": case.id,
        "query": case.query,
        "origin": origin,
        "case": case.model_dump(mode="json"),
    }
    if embedding:
        body["embedding"] = embedding
    return Candidate(
        id=f"golden:{case.id}",
        status="golden",
        norm_query=normalize_text(case.query),
        category=case.category,
        body=body,
    )
