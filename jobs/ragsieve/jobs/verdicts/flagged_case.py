"""FlaggedCase: a judged interaction that failed, with the evidence; what golden growth consumes.

And what a run's fresh decisions emit (:func:`emit_fresh`): the flagged cases, the passes routed
to a person (audits), and one ``samples`` row per decision (:func:`sample_rows`). Every pass a
judge was uncertain of, or that the user marked as bad (the ``negative_feedback`` stratum), is
audited; the others a random share. A thumbs-down that arrives after the trace was judged puts
it in that stratum at the next run, and its pass is audited then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.results import resultstore
from ragsieve.jobs.sampling.strata import unit_hash

if TYPE_CHECKING:
    from ragsieve.jobs.verdicts.flagging import Verdict
    from ragsieve.jobs.verdicts.verdicts import Decision

DISAGREED = "negative_feedback"  # the sampling stratum of traces a user marked as bad

RootCause = str
"""retrieval | generation | both | no_answer_expected | abstained_wrongly | ambiguous_query"""


@dataclass(frozen=True)
class FlaggedCase:
    """One failing interaction as the job decided it."""

    interaction: RagInteraction
    results: Sequence[EvalResult]
    root_cause: RootCause
    evidence: str
    run_id: str
    stratum: str = "uniform"
    inclusion_p: float = 1.0
    metadata: dict[str, object] = field(default_factory=dict)


def audit_probability(verdict: Verdict, audit_share: float, stratum: str = "") -> float:
    """The chance a pass had of being audited: 1 when a judge was uncertain or the user marked
    it as bad (``stratum``), else the share."""
    return 1.0 if verdict.uncertain or stratum == DISAGREED else audit_share


def _case_meta(d: Decision) -> dict[str, object]:
    """A flagged case's metadata: category, failed metrics, the missed chunk, and the two
    competing lines of an ``undetermined`` root cause."""
    meta: dict[str, object] = {
        "category": d.category,
        "failed_metrics": list(d.verdict.failed_metrics),
    }
    if d.verdict.missed_chunk:
        meta["missed_chunk"] = d.verdict.missed_chunk
    if d.verdict.competing:
        meta["competing"] = list(d.verdict.competing)
    return meta


def emit_fresh(
    decisions: Sequence[Decision],
    before: set[str],
    run_id: str,
    *,
    seed: int,
    audit_share: float,
) -> tuple[list[FlaggedCase], list[FlaggedCase], list[Decision]]:
    """``(flagged, audit, fresh)`` from the passes and fails not in ``before``."""
    flagged: list[FlaggedCase] = []
    audit: list[FlaggedCase] = []
    fresh = [
        d
        for d in decisions
        if d.pick.trace_id not in before and d.verdict.outcome in ("pass", "fail")
    ]
    # a pass decided before that a user has since marked as bad: audited now
    disagreed = [
        d
        for d in decisions
        if d.pick.trace_id in before and d.verdict.outcome == "pass" and d.pick.stratum == DISAGREED
    ]
    for d in [*fresh, *disagreed]:
        if d.verdict.outcome == "fail":
            flagged.append(
                FlaggedCase(
                    d.interaction,
                    d.results,
                    d.verdict.root_cause or "",
                    d.verdict.evidence,
                    run_id,
                    d.pick.stratum,
                    d.pick.inclusion_p,
                    _case_meta(d),
                )
            )
            continue
        audit_p = audit_probability(d.verdict, audit_share, d.pick.stratum)
        if audit_p >= 1.0 or unit_hash(d.pick.trace_id, "audit", seed) < audit_share:
            audit.append(_audit_case(d, run_id, audit_p))
    return flagged, audit, fresh


def _audit_case(d: Decision, run_id: str, audit_p: float) -> FlaggedCase:
    """A pass routed to a person, saying why it was chosen."""
    why = "audit of a pass"
    if d.verdict.uncertain:
        why += f" the judges could not call ({', '.join(d.verdict.uncertain)} uncertain)"
    elif d.pick.stratum == DISAGREED:
        why += " the user marked as bad (negative feedback)"
    meta = {
        "audit": True,
        "audit_p": audit_p,
        "uncertain": list(d.verdict.uncertain),
        "category": d.category,
    }
    return FlaggedCase(
        d.interaction, d.results, "none", why, run_id, d.pick.stratum, d.pick.inclusion_p, meta
    )


def sample_rows(
    decisions: Sequence[Decision],
    key: str,
    versions: dict[str, str],
    audit_ids: set[str],
    audit_share: float = 1.0,
) -> list[resultstore.SampleRow]:
    """One ``samples`` row per decision, recording the verdict under the judge set ``key`` (and,
    for a pass, the probability it had of being audited: 1 when a judge was uncertain)."""
    return [
        resultstore.SampleRow(
            d.pick.trace_id,
            d.pick.stratum,
            d.pick.inclusion_p,
            d.verdict.outcome,
            d.verdict.root_cause,
            {
                "key": key,
                "complete": not d.missing,
                "missing": list(d.missing),
                "recovered": d.pick.recovered,
                "audit": d.pick.trace_id in audit_ids,
                "evidence": d.verdict.evidence,
                "failed_metrics": list(d.verdict.failed_metrics),
                "category": d.category,
                "upstream_p": d.pick.upstream_p,
                "missed_chunk": d.verdict.missed_chunk,
                "missed_holds_answer": d.verdict.missed_holds_answer,
                "uncertain": list(d.verdict.uncertain),
                "user_disagreed": d.pick.stratum == DISAGREED,
                "audit_p": audit_probability(d.verdict, audit_share, d.pick.stratum),
                "competing": list(d.verdict.competing),
                "pieces": [p.as_dict() for p in d.verdict.pieces],
            },
            versions,
        )
        for d in decisions
    ]


__all__ = [
    "DISAGREED",
    "FlaggedCase",
    "RootCause",
    "audit_probability",
    "emit_fresh",
    "sample_rows",
]
