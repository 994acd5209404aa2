"""The report of one job pass: what was sampled, judged, decided and flagged, and at what cost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ragsieve.jobs.judging.spend import Spend
from ragsieve.jobs.results.reviews import ReviewLabel
from ragsieve.jobs.run.estimate import failure_rate, judge_quality
from ragsieve.jobs.sampling.sampling import Pick
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase
from ragsieve.jobs.verdicts.verdicts import Decision


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


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def render_table(report: Mapping[str, Any]) -> str:
    """The human-readable run report printed on stdout."""
    fr = report.get("failure_rate") or {}
    cost = report.get("cost") or {}
    rows: list[tuple[str, str]] = [
        ("run", str(report.get("run_id"))),
        ("window", f"{report['window']['start']} .. {report['window']['end']}"),
        ("discovered", str(report["discovered"])),
        ("not applicable", _kv(report["not_applicable"]["reasons"]) or "0"),
        (
            "sampled",
            _kv({k: v["sampled"] for k, v in report["sampled"]["by_stratum"].items()}) or "0",
        ),
        ("already judged", str(report["already_judged"])),
        ("judged", str(report["judged"])),
        ("judge errors", str(report["judge_errors"])),
        ("deferred (budget)", str(report["deferred"])),
        ("flagged", str(report["flagged"])),
        ("by root cause", _kv(report["flagged_by_root_cause"]) or "-"),
        ("by category", _kv(report["flagged_by_category"]) or "-"),
        ("failure rate", _rate_line(fr)),
        ("still settling", (report.get("settling") or {}).get("note") or "0"),
        (
            "calls / tokens / USD",
            f"{cost.get('calls', 0)} / {cost.get('tokens', 0)} / {cost.get('usd', 0.0):.4f}",
        ),
        (
            "saved by cache / cascade",
            f"{cost.get('saved_by_cache', 0)} / {cost.get('saved_by_cascade', 0)}",
        ),
        ("audit routed", str(report["audit"]["routed"])),
    ]
    q = report.get("judge_quality") or {}
    rows.append(
        (
            "reviewed",
            f"{q.get('reviewed_flagged', 0)} flagged"
            f" ({q.get('false_alarms', 0)} false alarms), {q.get('reviewed_audits', 0)}"
            f" audited passes ({q.get('missed_failures', 0)} missed failures)",
        )
    )
    rows.append(
        (
            "judge precision / FOR",
            f"{_pct(q.get('precision'))} / {_pct(q.get('false_omission_rate'))}",
        )
    )
    rows.append(("judge TPR / FPR", f"{_pct(q.get('tpr'))} / {_pct(q.get('fpr'))}"))
    c = q.get("corrected_failure_rate")
    rows.append(
        (
            "corrected failure rate",
            "- (needs reviewed flags and audits)"
            if not c
            else f"{_pct(c['estimate'])} (95% CI {_pct(c['ci_low'])} - {_pct(c['ci_high'])},"
            " conservative box)",
        )
    )
    if report.get("dry_run"):
        rows.append(("dry run", "nothing judged or written"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _rate_line(fr: Mapping[str, Any]) -> str:
    """The whole traffic's rate, or, with strata left uncovered, bounds and the covered part."""
    ci = f"{_pct(fr.get('ci_low'))} - {_pct(fr.get('ci_high'))}"
    if fr.get("estimate") is not None:
        return f"{_pct(fr.get('estimate'))} (95% CI {ci}, n={fr.get('n', 0)})"
    part = fr.get("covered")
    if not part:
        return f"- (nothing decided; whole traffic {ci})"
    return (
        f"- (strata {', '.join(fr.get('uncovered_strata') or ())} not sampled; whole traffic"
        f" between {ci}; covered strata ({_pct(part['coverage'])} of traffic):"
        f" {_pct(part['estimate'])} (95% CI {_pct(part['ci_low'])} - {_pct(part['ci_high'])},"
        f" n={fr.get('n', 0)}))"
    )


def _kv(d: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(d.items()))


__all__ = ["build_run_report", "render_table"]
