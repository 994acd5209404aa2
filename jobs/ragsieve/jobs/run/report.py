"""The report of one job pass: what was sampled, judged, decided and flagged, and at what cost.

:func:`build_report` assembles it from a :class:`RunReportInput` in named parts (window and
sample, judging, verdicts, breakdowns, judge quality, cost). The stored report is the run
history (``ragsieve runs list``, ``ragsieve report``, alerts), so it carries, beyond the totals,
the weighted failure rate per stratum, per attribute cell (``report.cells``) and per root cause
(``run.breakdown``) and turn position (first turn or follow-up, ``run.turns``) and a capped
list of the flagged cases (``report.max_flagged_cases``) with their session ids.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import ragsieve.jobs.run.estimate as estimate
from ragsieve.evaluators.judges.thresholds import calibration_id
from ragsieve.evaluators.tools.redact import redact
from ragsieve.jobs.judging.spend import Spend
from ragsieve.jobs.results.reviews import ReviewLabel, audit_stratum
from ragsieve.jobs.run import breakdown, turns
from ragsieve.jobs.run.estimate import audit_shares, failure_rate, judge_quality, pct, rate_line
from ragsieve.jobs.sampling.sampling import Pick, Selection
from ragsieve.jobs.verdicts.flagged_case import DISAGREED, FlaggedCase
from ragsieve.jobs.verdicts.verdicts import Decision

if TYPE_CHECKING:
    from ragsieve.evaluators.judges import Judge
    from ragsieve.jobs.settings import Settings

QUERY_PREVIEW_CHARS = 160


@dataclass(frozen=True)
class RunReportInput:
    """Everything one pass hands to its report."""

    run_id: str
    window: tuple[datetime, datetime]
    settled: int
    selection: Selection
    already: Sequence[Pick]
    spend: Spend
    decisions: Sequence[Decision]
    flagged: Sequence[FlaggedCase]
    audit: Sequence[FlaggedCase]
    labels: Sequence[ReviewLabel]
    settings: Settings
    dry_run: bool
    judge_set: str
    select_s: float
    judges: Sequence[Judge]
    need: Mapping[str, int]

    def decided(self) -> list[Decision]:
        """Picks of this run's sample with a pass or fail (what the failure rate counts)."""
        return [
            d
            for d in self.decisions
            if d.verdict.outcome in ("pass", "fail") and not d.pick.recovered
        ]


def build_report(inp: RunReportInput) -> dict[str, Any]:
    """The run report: window, sample, verdicts, failure rate and breakdowns, quality, cost."""
    rate = failure_rate(
        ((d.pick.stratum, d.verdict.outcome == "fail", d.pick.upstream_p) for d in inp.decided()),
        {k: v.population for k, v in inp.selection.strata.items()},
    )
    ci = (rate["ci_low"], rate["ci_high"]) if rate["estimate"] is not None else None
    shares = audit_shares(  # the audit strata's shares of the passes, weighted as the rate is
        (
            audit_stratum(
                {"uncertain": d.verdict.uncertain, "user_disagreed": d.pick.stratum == DISAGREED}
            ),
            1.0 / (d.pick.inclusion_p or 1.0),
        )
        for d in inp.decided()
        if d.verdict.outcome == "pass"
    )
    return {
        **_window_and_sample(inp),
        **_judging(inp),
        **_verdicts(inp),
        "failure_rate": rate,
        **_breakdowns(inp),
        "audit": {
            "share": inp.settings.jobs.audit_share,
            "routed": len(inp.audit),
            # passes a judge could not call: all audited, an audit stratum of their own
            "uncertain": sum(bool(c.metadata.get("uncertain")) for c in inp.audit),
            "trace_ids": [c.interaction.trace_id for c in inp.audit],
        },
        "judge_quality": judge_quality(
            rate["estimate"], ci, inp.labels, rate.get("variance"), shares
        ),
        **_cost_and_budget(inp),
        "flagged_cases": flagged_cases(inp.flagged, inp.settings),
    }


def build_run_report(
    run_id: str,
    lo: datetime,
    hi: datetime,
    settled: int,
    sel: Selection,
    already: list[Pick],
    spend: Spend,
    decisions: list[Decision],
    flagged: list[FlaggedCase],
    audit: list[FlaggedCase],
    labels: Sequence[ReviewLabel],
    settings: Settings,
    dry_run: bool,
    key: str,
    select_s: float,
    judges: Sequence[Judge],
    need: dict[str, int],
) -> dict[str, Any]:
    """Positional form of :func:`build_report` (kept for callers not yet on the typed input)."""
    return build_report(
        RunReportInput(
            run_id,
            (lo, hi),
            settled,
            sel,
            already,
            spend,
            decisions,
            flagged,
            audit,
            labels,
            settings,
            dry_run,
            key,
            select_s,
            judges,
            need,
        )  # fmt: skip
    )


def _window_and_sample(inp: RunReportInput) -> dict[str, Any]:
    sel = inp.selection
    lo, hi = inp.window
    return {
        "run_id": None if inp.dry_run else inp.run_id,
        "dry_run": inp.dry_run,
        "window": {"start": lo.isoformat(), "end": hi.isoformat()},
        "judges": [
            {"name": j.name, "version": str(j.version), "calibration": calibration_id(j.version)}
            for j in inp.judges
        ],
        "judge_set": inp.judge_set,
        "settled": inp.settled,
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
        "select_s": round(inp.select_s, 4),
    }


def _judging(inp: RunReportInput) -> dict[str, Any]:
    spend, decisions = inp.spend, inp.decisions
    error_rate = spend.errors / spend.results if spend.results else 0.0
    would = sum(inp.need.get(p.trace_id, 0) > 0 for p in inp.selection.picks)
    return {
        "already_judged": len(inp.already),
        "would_judge": would if inp.dry_run else None,
        "judged": len(spend.judged),
        "judge_calls": spend.calls,
        "judge_errors": spend.errors,
        "judge_error_rate": round(error_rate, 6),
        "skipped": spend.skipped,
        "deferred": len(spend.deferred - spend.judged),
        "unjudged": sum(d.verdict.outcome == "unjudged" for d in decisions),
        "partial": sum(bool(d.missing) and d.verdict.outcome == "unjudged" for d in decisions),
        "recovered": sum(d.pick.recovered for d in decisions),
    }


def _verdicts(inp: RunReportInput) -> dict[str, Any]:
    fails = [d for d in inp.decisions if d.verdict.outcome == "fail"]
    flagged_ids = {c.interaction.trace_id for c in inp.flagged}
    return {
        "flagged": len(inp.flagged),
        "flagged_in_sample": len(fails),
        "flagged_by_root_cause": dict(Counter(c.root_cause for c in inp.flagged)),
        "flagged_by_category": dict(Counter(str(c.metadata.get("category")) for c in inp.flagged)),
        "flagged_by_metric": dict(
            Counter(
                m for d in fails if d.pick.trace_id in flagged_ids for m in d.verdict.failed_metrics
            )
        ),
        "passed": sum(d.verdict.outcome == "pass" for d in inp.decisions),
    }


def _breakdowns(inp: RunReportInput) -> dict[str, Any]:
    """Weighted failure rates per stratum, attribute cell and root cause (``run.breakdown``)."""
    report_cfg = inp.settings.report
    picks = breakdown.weigh(
        (
            (
                d.pick.stratum,
                d.verdict.outcome == "fail",
                d.pick.upstream_p,
                d.verdict.root_cause,
                breakdown.cell_values(d.interaction.attributes, report_cfg.cells),
            )
            for d in inp.decided()
        ),
        {k: v.population for k, v in inp.selection.strata.items()},
    )
    return {
        "failure_rate_by_stratum": breakdown.by_stratum(picks),
        "failure_rate_by_cell": breakdown.by_cell(picks, max_values=report_cfg.max_cells),
        "failure_rate_by_root_cause": breakdown.by_root_cause(picks),
        "failure_rate_by_turn": turns.by_turn(
            inp.decided(), {k: v.population for k, v in inp.selection.strata.items()}
        ),
    }


def _cost_and_budget(inp: RunReportInput) -> dict[str, Any]:
    spend, jobs = inp.spend, inp.settings.jobs
    error_rate = spend.errors / spend.results if spend.results else 0.0
    return {
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
            "calls": jobs.budget_calls,
            "usd": spend.budget_usd,
            "exhausted": bool(inp.selection.budget_exhausted or spend.deferred),
        },
        "max_judge_error_rate": jobs.max_judge_error_rate,
        "error_budget_exceeded": error_rate > jobs.max_judge_error_rate,
    }


def flagged_cases(flagged: Sequence[FlaggedCase], settings: Settings) -> list[dict[str, Any]]:
    """The first ``report.max_flagged_cases`` flagged cases, query previews PII-scrubbed."""
    golden = settings.golden
    out = []
    for c in flagged[: settings.report.max_flagged_cases]:
        query = (c.interaction.query or "")[:QUERY_PREVIEW_CHARS]
        if golden.scrub_pii and query:
            query = redact(query, golden.pii_patterns)[0]
        out.append(
            {
                "trace_id": c.interaction.trace_id,
                "span_id": c.interaction.span_id,
                "session_id": c.interaction.session_id,
                "turn": turns.position(c.interaction)["turn"],
                "root_cause": c.root_cause,
                "stratum": c.stratum,
                "category": c.metadata.get("category"),
                "query": query,
            }
        )
    return out


def render_table(report: Mapping[str, Any]) -> str:
    """The human-readable run report printed on stdout."""
    rows = [*_summary_rows(report), *_quality_rows(report.get("judge_quality") or {})]
    if (report.get("misdated") or {}).get("note"):
        rows.append(("WARNING misdated", report["misdated"]["note"]))
    if report.get("dry_run"):
        rows.append(("dry run", "nothing judged or written"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _summary_rows(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    cost = report.get("cost") or {}
    by_stratum = report["sampled"]["by_stratum"]
    left = sum(v["population"] - v["sampled"] for v in by_stratum.values())
    return [
        ("run", str(report.get("run_id") or "- (dry run: not stored)")),
        ("window", f"{report['window']['start']} .. {report['window']['end']}"),
        ("discovered", str(report["discovered"])),
        ("not applicable", _kv(report["not_applicable"]["reasons"]) or "0"),
        (
            "sampled",
            (_kv({k: v["sampled"] for k, v in by_stratum.items()}) or "0")
            + (f" ({left} left out by the sampling rates; --all judges every trace)" * (left > 0)),
        ),
        ("already judged", str(report["already_judged"])),
        ("judged", str(report["judged"])),
        ("judge errors", str(report["judge_errors"])),
        ("deferred (budget)", str(report["deferred"])),
        ("flagged", str(report["flagged"])),
        ("by root cause", _kv(report["flagged_by_root_cause"]) or "-"),
        ("by category", _kv(report["flagged_by_category"]) or "-"),
        ("new categories", _new_categories(report)),
        ("failure rate", rate_line(report.get("failure_rate") or {})),
        ("by turn", turns.turn_line(report.get("failure_rate_by_turn") or {})),
        ("still settling", (report.get("settling") or {}).get("note") or "0"),
        (
            "calls / tokens / USD",
            f"{cost.get('calls', 0)} / {cost.get('tokens', 0)} / {cost.get('usd', 0.0):.4f}",
        ),
        (
            "saved by cache / cascade",
            f"{cost.get('saved_by_cache', 0)} / {cost.get('saved_by_cascade', 0)}",
        ),
        (
            "audit routed (uncertain)",
            f"{report['audit']['routed']} ({report['audit'].get('uncertain', 0)})",
        ),
    ]


_STRATA = {
    "random": "the ones the judges were sure of",
    "uncertain": "the uncertain ones",
    "disagreed": "the ones users marked as bad",
}


def _quality_rows(q: Mapping[str, Any]) -> list[tuple[str, str]]:
    c = q.get("corrected_failure_rate")
    # said once some audit was reviewed: before any, "needs reviewed flags and audits" says it all
    waiting = (q.get("unaudited_pass_share") or 0.0) if q.get("reviewed_audits") else 0.0
    which = " and ".join(_STRATA.get(s, s) for s in q.get("unaudited_strata") or ())
    why = f"; none speaks for {pct(waiting)} of passes, {which}" if waiting else ""
    ci = f"95% CI {pct(c['ci_low'])} - {pct(c['ci_high'])}" if c else ""
    corrected = (
        f"{pct(c['estimate'])} ({ci}, conservative box)"
        if c
        else f"- (needs reviewed flags and audits{why})"
    )
    return [
        (
            "reviewed",
            f"{q.get('reviewed_flagged', 0)} flagged"
            f" ({q.get('false_alarms', 0)} false alarms), {q.get('reviewed_audits', 0)}"
            f" audited passes ({q.get('missed_failures', 0)} missed failures)",
        ),
        *estimate.measure_rows(q),
        ("corrected failure rate", corrected),
        ("prediction-powered rate", _ppi_line(q.get("failure_rate_ppi"), bool(waiting))),
    ]


def _ppi_line(p: Mapping[str, Any] | None, waiting: bool = False) -> str:
    """The failure rate corrected by reviewers' labels (prediction-powered), or why it is absent."""
    if not p:
        more = " in each audit stratum" if waiting else ""
        return f"- (needs reviewed flags and audited passes{more})"
    return (
        f"{pct(p['estimate'])} (95% CI {pct(p['ci_low'])} - {pct(p['ci_high'])},"
        f" {p['labels']} labels)"
    )


def _new_categories(report: Mapping[str, Any]) -> str:
    """The failure categories this run announced as new (each is announced once), or '-'."""
    new = (report.get("golden") or {}).get("new_categories") or []
    now = [c for c in new if c.get("announced_now", True)]
    shown = "; ".join(f"{c['name']} ({c['root_cause']}, {c['failures_seen']})" for c in now)
    older = len(new) - len(now)
    return (shown or "-") + (f" (+{older} announced before, still new)" if older else "")


def _kv(d: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(d.items()))


__all__ = ["RunReportInput", "build_report", "build_run_report", "flagged_cases", "render_table"]
