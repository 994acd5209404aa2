"""The report of one job pass: what was sampled, judged, decided and flagged, and at what cost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ragsieve.jobs.flagged import FlaggedCase
from ragsieve.jobs.judging import Spend
from ragsieve.jobs.report import ReviewLabel, failure_rate, judge_quality
from ragsieve.jobs.sampling import Pick
from ragsieve.jobs.verdicts import Decision


def build_run_report(
    run_id: str,
    lo: datetime,
    hi: datetime,
    settled: int,
    sel: Any,
    already: list[Pick],
    spend: Spend,
    decisions: list[Decision],
    flagged: list[FlaggedCase],
    audit: list[FlaggedCase],
    labels: Sequence[ReviewLabel],
    settings: Any,
    dry_run: bool,
    key: str,
    select_s: float,
    judges: Sequence[Any],
    need: dict[str, int],
) -> dict[str, Any]:
    """The run report: window, sample, verdicts, failure rate, judge quality, cost and budget."""
    rate = failure_rate(
        (
            (d.pick.stratum, d.verdict.outcome == "fail", d.pick.upstream_p)
            for d in decisions
            if d.verdict.outcome in ("pass", "fail") and not d.pick.recovered
        ),
        {k: v.population for k, v in sel.strata.items()},
    )
    ci = (rate["ci_low"], rate["ci_high"]) if rate["estimate"] is not None else None
    fails = [d for d in decisions if d.verdict.outcome == "fail"]
    flagged_ids = {c.interaction.trace_id for c in flagged}
    error_rate = spend.errors / spend.results if spend.results else 0.0
    max_rate = settings.jobs.max_judge_error_rate
    return {
        "run_id": None if dry_run else run_id,
        "dry_run": dry_run,
        "window": {"start": lo.isoformat(), "end": hi.isoformat()},
        "judges": [{"name": j.name, "version": str(j.version)} for j in judges],
        "judge_set": key,
        "settled": settled,
        "discovered": sel.discovered,
        "not_applicable": {
            "count": sum(sel.not_applicable.values()),
            "reasons": dict(sel.not_applicable),
        },
        "sampled": {
            "total": len(sel.picks),
            "by_stratum": {
                k: {
                    "population": v.population,
                    "sampled": v.sampled,
                    "inclusion_p": round(v.inclusion_p, 6),
                }
                for k, v in sel.strata.items()
            },
            "novelty_checked": sel.novelty_checked,
        },
        "upstream": {
            "keep_rule": dict(sel.upstream),
            "reweighted_picks": sum(p.upstream_p < 1 for p in sel.picks),
        },
        "select_s": round(select_s, 4),
        "already_judged": len(already),
        "would_judge": sum(need.get(p.trace_id, 0) > 0 for p in sel.picks) if dry_run else None,
        "judged": len(spend.judged),
        "judge_calls": spend.calls,
        "judge_errors": spend.errors,
        "judge_error_rate": round(error_rate, 6),
        "skipped": spend.skipped,
        "deferred": len(spend.deferred - spend.judged),
        "unjudged": sum(d.verdict.outcome == "unjudged" for d in decisions),
        "partial": sum(bool(d.missing) and d.verdict.outcome == "unjudged" for d in decisions),
        "recovered": sum(d.pick.recovered for d in decisions),
        "flagged": len(flagged),
        "flagged_in_sample": len(fails),
        "flagged_by_root_cause": dict(Counter(c.root_cause for c in flagged)),
        "flagged_by_category": dict(Counter(str(c.metadata.get("category")) for c in flagged)),
        "flagged_by_metric": dict(
            Counter(
                m for d in fails if d.pick.trace_id in flagged_ids for m in d.verdict.failed_metrics
            )
        ),
        "passed": sum(d.verdict.outcome == "pass" for d in decisions),
        "failure_rate": rate,
        "audit": {
            "share": settings.jobs.audit_share,
            "routed": len(audit),
            "trace_ids": [c.interaction.trace_id for c in audit],
        },
        "judge_quality": judge_quality(rate["estimate"], ci, labels),
        "cost": {
            "calls": spend.calls,
            "prompt_tokens": spend.prompt_tokens,
            "completion_tokens": spend.completion_tokens,
            "tokens": spend.prompt_tokens + spend.completion_tokens,
            "usd": round(spend.usd, 6),
            "saved_by_cache": spend.cached,
            "saved_by_cascade": spend.cascade_saved,
        },
        "budget": {
            "calls": settings.jobs.budget_calls,
            "usd": spend.budget_usd,
            "exhausted": bool(sel.budget_exhausted or spend.deferred),
        },
        "max_judge_error_rate": max_rate,
        "error_budget_exceeded": error_rate > max_rate,
    }


__all__ = ["build_run_report"]
