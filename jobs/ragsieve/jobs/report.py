"""Run-report arithmetic: the weighted failure rate, its interval, the review correction, the table.

Failure rate. Strata partition the window and each is sampled at random, so the rate of the whole
window is the stratified estimate ``sum_h N_h/N * x_h/m_h`` (N_h traces in stratum h, m_h of them
decided by the judges, x_h failing); this is the inverse-probability-weighted mean with weights
``N_h/m_h``, so oversampling failure-prone strata does not inflate it. Strata with no decided pick
are left out of N (reported as ``coverage``). The 95% interval is Wilson's at Kish's effective
sample size ``(sum w)^2 / sum w^2``; it ignores the finite-population correction, so it is
conservative.

Review correction. Reviewers confirm or reject flagged traces (precision, PPV) and check an audit
share of passing traces (false-omission rate, FOR). The corrected rate is
``q * PPV + (1 - q) * FOR`` for the raw rate q; the judge's true-positive rate is
``q * PPV / corrected`` and its false-positive rate ``q * (1 - PPV) / (1 - corrected)``. The
corrected interval takes the extremes over the corners of the three Wilson intervals.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

Z95 = 1.959963984540054


def wilson(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p`` observed on ``n`` (possibly effective) trials."""
    if n <= 0:
        return 0.0, 1.0
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def failure_rate(
    decided: Iterable[tuple[str, bool]], populations: Mapping[str, int]
) -> dict[str, Any]:
    """Stratified (inverse-probability-weighted) failure rate from ``(stratum, failed)`` pairs."""
    m: dict[str, int] = {}
    x: dict[str, int] = {}
    for stratum, failed in decided:
        m[stratum] = m.get(stratum, 0) + 1
        x[stratum] = x.get(stratum, 0) + int(failed)
    covered = {h: populations[h] for h in m if populations.get(h)}
    total = sum(covered.values())
    all_pop = sum(populations.values())
    if not total:
        return {"estimate": None, "ci_low": None, "ci_high": None, "n": 0, "n_effective": 0.0,
                "coverage": 0.0, "raw": None}
    est = sum(covered[h] / total * x[h] / m[h] for h in covered)
    sum_w = sum(covered[h] for h in covered)  # each of m_h picks weighs N_h/m_h
    sum_w2 = sum(covered[h] ** 2 / m[h] for h in covered)
    n_eff = sum_w * sum_w / sum_w2
    lo, hi = wilson(est, n_eff)
    n = sum(m[h] for h in covered)
    return {
        "estimate": round(est, 6),
        "ci_low": round(min(lo, est), 6),
        "ci_high": round(max(hi, est), 6),
        "n": n,
        "n_effective": round(n_eff, 2),
        "coverage": round(total / all_pop, 6) if all_pop else 0.0,
        "raw": round(sum(x.values()) / n, 6),
    }


def corrected_rate(
    raw: float | None,
    raw_ci: tuple[float, float] | None,
    confirmed: int,
    rejected: int,
    audit_failed: int,
    audit_ok: int,
) -> dict[str, Any]:
    """Judge TPR/FPR and the failure rate corrected by reviewed labels (None where unknown)."""
    out: dict[str, Any] = {
        "reviewed_flagged": confirmed + rejected,
        "confirmed": confirmed,
        "rejected": rejected,
        "reviewed_audits": audit_failed + audit_ok,
        "audit_failures": audit_failed,
        "ppv": None, "false_omission_rate": None, "tpr": None, "fpr": None, "corrected": None,
    }
    if confirmed + rejected:
        out["ppv"] = round(confirmed / (confirmed + rejected), 6)
    if audit_failed + audit_ok:
        out["false_omission_rate"] = round(audit_failed / (audit_failed + audit_ok), 6)
    if raw is None or out["ppv"] is None or out["false_omission_rate"] is None:
        return out
    ppv, fomr = out["ppv"], out["false_omission_rate"]
    corr = raw * ppv + (1 - raw) * fomr
    out["tpr"] = round(raw * ppv / corr, 6) if corr > 0 else None
    out["fpr"] = round(raw * (1 - ppv) / (1 - corr), 6) if corr < 1 else None
    q_ci = raw_ci or (raw, raw)
    p_ci = wilson(ppv, confirmed + rejected)
    f_ci = wilson(fomr, audit_failed + audit_ok)
    corners = [q * p + (1 - q) * f for q, p, f in itertools.product(q_ci, p_ci, f_ci)]
    out["corrected"] = {
        "estimate": round(corr, 6),
        "ci_low": round(min(corners + [corr]), 6),
        "ci_high": round(max(corners + [corr]), 6),
    }
    return out


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
        ("sampled", _kv({k: v["sampled"] for k, v in report["sampled"]["by_stratum"].items()})
         or "0"),
        ("already judged", str(report["already_judged"])),
        ("judged", str(report["judged"])),
        ("judge errors", str(report["judge_errors"])),
        ("deferred (budget)", str(report["deferred"])),
        ("flagged", str(report["flagged"])),
        ("by root cause", _kv(report["flagged_by_root_cause"]) or "-"),
        ("by category", _kv(report["flagged_by_category"]) or "-"),
        ("failure rate", f"{_pct(fr.get('estimate'))} (95% CI {_pct(fr.get('ci_low'))}"
         f" - {_pct(fr.get('ci_high'))}, n={fr.get('n', 0)})"),
        ("calls / tokens / USD", f"{cost.get('calls', 0)} / {cost.get('tokens', 0)} /"
         f" {cost.get('usd', 0.0):.4f}"),
        ("saved by cache / cascade", f"{cost.get('saved_by_cache', 0)} /"
         f" {cost.get('saved_by_cascade', 0)}"),
        ("audit routed", str(report["audit"]["routed"])),
    ]
    review = report.get("review") or {}
    if review.get("corrected"):
        c = review["corrected"]
        rows.append(("corrected rate", f"{_pct(c['estimate'])} (95% CI {_pct(c['ci_low'])}"
                     f" - {_pct(c['ci_high'])}); TPR {_pct(review['tpr'])} FPR"
                     f" {_pct(review['fpr'])}"))
    if report.get("dry_run"):
        rows.append(("dry run", "nothing judged or written"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _kv(d: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(d.items()))


__all__ = ["corrected_rate", "failure_rate", "render_table", "wilson"]
