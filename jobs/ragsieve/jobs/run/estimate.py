"""The run report's statistics: the weighted failure rate, its interval, the judge's quality.

Failure rate. Strata partition the window and each is sampled at random, so pick i of stratum h
(N_h stored traces, m_h of them decided by the judges) has inclusion probability
``u_i * m_h / N_h``, where ``u_i`` is the probability that the upstream tail-sampling tier kept
the trace at all (1 without such a tier; see ``ragsieve.jobs.sampling.sampling``). The estimate
is the inverse-probability-weighted (Hajek) mean with weights ``N_h / (m_h * u_i)``; with every
``u_i = 1`` it is the stratified estimate ``sum_h N_h/N * x_h/m_h``. Oversampling failure-prone
strata, or a tier that keeps every error, does not inflate it: it estimates the full traffic.

Its variance is the stratified one, ``sum_h W_h^2 p_h (1 - p_h) / m_h`` (W_h the stratum's share
of the weight, p_h its weighted rate, m_h its Kish effective size, which is its pick count when
every ``u_i = 1``). A stratum with p_h of 0 or 1 would add no variance, so it adds
``(z^2 / (2 (m_h + z^2)))^2 / z^2`` instead: the variance whose 95% half-width is the Wilson
interval's at that p_h (a small-sample guard). The 95% interval is Wilson's at the effective size
``n_eff = p (1 - p) / var`` (at Kish's ``(sum w)^2 / sum w^2`` when p is 0 or 1). It ignores the
finite-population correction, so it is conservative.

Coverage. A stratum with no decided pick (the budget ran out) says nothing about its traffic.
With every stratum covered, ``estimate`` / ``ci_low`` / ``ci_high`` are the whole traffic's. With
coverage c < 1 (share of stored traces in covered strata) the whole-traffic rate is not
estimable: ``estimate`` is None and ``ci_low = lo * c``, ``ci_high = hi * c + (1 - c)`` are
worst-case bounds (uncovered traffic all passing / all failing) around the covered strata's 95%
interval [lo, hi]; the covered strata's own estimate is reported apart under ``covered``.

Judge quality. People review flagged traces (accepted = a real failure; rejected as a false
alarm = the judge's false positive; duplicate / out-of-scope / other rejections say nothing about
the judge and are left out) and audited passes (a real pass, or a failure the judge missed):
every pass a judge was uncertain of, and a random share of the others, two audit strata.
Weighted by ``1 / inclusion probability`` these give the judge's precision
``PPV = P(real failure | flagged)`` and false-omission rate ``FOR = P(real failure | passed)``
(the strata's rates weighed by their shares of the run's passes, unknown while a stratum
holding passes has no reviewed audit),
so with the raw weighted rate q the corrected failure rate is ``pi = q*PPV + (1-q)*FOR``, the
judge's true-positive rate (sensitivity) ``q*PPV/pi`` and false-positive rate
``q*(1-PPV)/(1-pi)``. It is the Rogan-Gladen correction ``pi = (q - FPR) / (TPR - FPR)`` with
sensitivity and specificity measured through this review design (the identity is tested). Its
interval is the box over the corners of the 95% intervals of q, PPV and FOR (Wilson at their
effective sizes): conservative, and labelled so (``ci_method``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragsieve.evaluators.quality.ppi import Labelled, ppi_failure_rate, variance_from_interval

if TYPE_CHECKING:
    from ragsieve.jobs.results.reviews import ReviewLabel

Z95 = 1.959963984540054


def wilson(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p`` observed on ``n`` (possibly effective) trials."""
    if n <= 0:
        return 0.0, 1.0
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _stratum_variance(p: float, m: float, z: float = Z95) -> float:
    """``p (1 - p) / m``, or the Wilson-consistent guard when ``p`` is 0 or 1 (module docstring)."""
    if 0.0 < p < 1.0:
        return p * (1 - p) / m
    half = z * z / (2 * (m + z * z))
    return half * half / (z * z)


def _picks(decided: Iterable[tuple[Any, ...]]) -> dict[str, list[tuple[bool, float]]]:
    """Stratum -> ``(failed, upstream_p)`` of its decided picks; a bad probability raises."""
    picks: dict[str, list[tuple[bool, float]]] = {}
    for item in decided:
        up = float(item[2]) if len(item) > 2 else 1.0
        if not 0 < up <= 1:
            raise ValueError(f"upstream keep probability must be in (0, 1], got {up}")
        picks.setdefault(str(item[0]), []).append((bool(item[1]), up))
    return picks


def _nothing_covered(populations: Mapping[str, int], uncovered: list[str]) -> dict[str, Any]:
    all_pop = sum(populations.values())
    return {
        "estimate": None,
        "ci_low": 0.0 if all_pop else None,
        "ci_high": 1.0 if all_pop else None,
        "n": 0,
        "n_effective": 0.0,
        "coverage": 0.0,
        "uncovered_strata": uncovered,
        "covered": None,
        "raw": None,
        "traffic_estimate": 0.0,
    }


def _variance(
    picks: Mapping[str, list[tuple[bool, float]]], covered: Mapping[str, int], sum_w: float
) -> float:
    """The stratified variance of the weighted rate (module docstring)."""
    var = 0.0
    for h in covered:
        inv = [1.0 / up for _, up in picks[h]]
        w_h = covered[h] / len(inv) * sum(inv) / sum_w
        p_h = sum(i for i, (failed, _) in zip(inv, picks[h], strict=True) if failed) / sum(inv)
        m_h = sum(inv) ** 2 / sum(i * i for i in inv)
        var += w_h * w_h * _stratum_variance(p_h, m_h)
    return var


def failure_rate(
    decided: Iterable[tuple[Any, ...]], populations: Mapping[str, int]
) -> dict[str, Any]:
    """IPW failure rate from ``(stratum, failed)`` or ``(stratum, failed, upstream_p)`` items."""
    picks = _picks(decided)
    covered = {h: populations[h] for h in picks if populations.get(h)}
    total = sum(covered.values())
    all_pop = sum(populations.values())
    uncovered = sorted(h for h, n in populations.items() if n and h not in covered)
    if not total:
        return _nothing_covered(populations, uncovered)
    weighted = [
        (covered[h] / len(picks[h]) / up, failed) for h in covered for failed, up in picks[h]
    ]
    sum_w = sum(w for w, _ in weighted)
    est = sum(w for w, failed in weighted if failed) / sum_w
    var = _variance(picks, covered, sum_w)
    if 0.0 < est < 1.0:
        n_eff = est * (1 - est) / var
    else:
        n_eff = sum_w * sum_w / sum(w * w for w, _ in weighted)
    lo, hi = wilson(est, n_eff)
    lo, hi = min(lo, est), max(hi, est)
    c = total / all_pop if all_pop else 0.0
    part = {
        "estimate": round(est, 6),
        "ci_low": round(lo, 6),
        "ci_high": round(hi, 6),
        "coverage": round(c, 6),
        "strata": sorted(covered),
    }
    whole = c >= 1.0
    return {
        "estimate": part["estimate"] if whole else None,
        "ci_low": part["ci_low"] if whole else round(lo * c, 6),
        "ci_high": part["ci_high"] if whole else round(hi * c + (1 - c), 6),
        "n": len(weighted),
        "n_effective": round(n_eff, 2),
        "coverage": round(c, 6),
        "uncovered_strata": uncovered,
        "covered": part,
        "raw": round(sum(failed for _, failed in weighted) / len(weighted), 6),
        "traffic_estimate": round(sum_w, 3),
        "variance": var,
    }


OUTCOMES = ("tp", "fp", "excluded", "tn", "fn")
CI_METHOD = "box over the 95% intervals of the raw rate, precision and false-omission rate"


def _share(hit: Sequence[float], miss: Sequence[float]) -> tuple[float, tuple[float, float], float]:
    """Weighted share of ``hit``, its Wilson interval and the Kish effective size."""
    ws = [*hit, *miss]
    total = sum(ws)
    p = sum(hit) / total
    n_eff = total * total / sum(w * w for w in ws)
    return p, wilson(p, n_eff), n_eff


def _clamp(v: float) -> float:
    return min(1.0, max(0.0, v))


def _pass_rate(
    labels: Sequence[ReviewLabel], pass_shares: Mapping[str, float] | None
) -> tuple[float, tuple[float, float]] | None:
    """The false-omission rate and its interval, per audit stratum weighed by its share of the
    passes (:func:`ragsieve.evaluators.quality.ppi.passed_share`): None while a stratum holding
    passes has no reviewed audit. The interval sums the strata's Wilson bounds (conservative)."""
    audits = [lab for lab in labels if lab.outcome in ("tn", "fn")]
    strata = pass_shares if pass_shares is not None else {"": 1.0}
    rate, lo, hi = 0.0, 0.0, 0.0
    for stratum, pi in strata.items():
        got = [lab for lab in audits if pass_shares is None or lab.stratum == stratum]
        if pi <= 0:
            continue
        if not got:
            return None
        p, (p_lo, p_hi), _ = _share(
            [lab.weight for lab in got if lab.outcome == "fn"],
            [lab.weight for lab in got if lab.outcome == "tn"],
        )
        rate, lo, hi = rate + pi * p, lo + pi * p_lo, hi + pi * p_hi
    return rate, (lo, hi)


def audit_shares(passes: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Each audit stratum's share of the passes' weight, from ``(stratum, 1 / inclusion)``."""
    total: dict[str, float] = {}
    for stratum, w in passes:
        total[stratum] = total.get(stratum, 0.0) + w
    whole = sum(total.values())
    return {s: round(w / whole, 6) for s, w in sorted(total.items())} if whole else {}


def unaudited(
    labels: Sequence[ReviewLabel], pass_shares: Mapping[str, float] | None
) -> dict[str, float]:
    """The audit strata holding passes that no reviewed audit speaks for, with their shares."""
    seen = {lab.stratum for lab in labels if lab.outcome in ("tn", "fn")}
    return {s: pi for s, pi in (pass_shares or {}).items() if pi > 0 and s not in seen}


def _ppi(
    raw: float | None,
    raw_ci: tuple[float, float] | None,
    raw_variance: float | None,
    labels: Sequence[ReviewLabel],
    pass_shares: Mapping[str, float] | None = None,
) -> dict[str, Any] | None:
    """The prediction-powered failure rate (``ragsieve.evaluators.quality.ppi``), from reviews."""
    if raw is None:
        return None
    if raw_variance is None:
        lo, hi = raw_ci or (raw, raw)
        raw_variance = variance_from_interval(raw, lo, hi)
    labelled = [
        Labelled(lab.outcome in ("tp", "fp"), lab.outcome in ("tp", "fn"), lab.weight, lab.stratum)
        for lab in labels
        if lab.outcome in ("tp", "fp", "tn", "fn")
    ]
    return ppi_failure_rate(raw, raw_variance, labelled, pass_shares=pass_shares)


def judge_quality(
    raw: float | None,
    raw_ci: tuple[float, float] | None,
    labels: Sequence[ReviewLabel],
    raw_variance: float | None = None,
    pass_shares: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Measured precision, TPR/FPR, false-omission rate and the corrected failure rate.

    ``failure_rate_ppi`` is the prediction-powered estimate with its 95% interval (module
    ``ragsieve.evaluators.quality.ppi``), beside ``raw_failure_rate``; ``raw_variance`` is the raw
    estimate's design variance (``failure_rate(...)["variance"]``), else read off ``raw_ci``.
    ``pass_shares`` (audit stratum -> share of the passes' weight) keeps the audits of passes a
    judge was uncertain of (all audited) from standing for the passes it was sure of (a random
    share audited): the false-omission rate, and so the corrected rates, wait for a reviewed
    audit in each stratum (``unaudited_pass_share`` says how much is waiting).
    """
    no_pass = pass_shares is not None and not pass_shares  # every decided trace failed
    waiting = unaudited(labels, pass_shares)
    w: dict[str, list[float]] = {o: [] for o in OUTCOMES}
    for lab in labels:
        if lab.outcome not in w:
            raise ValueError(f"unknown review outcome {lab.outcome!r}")
        w[lab.outcome].append(lab.weight)
    out: dict[str, Any] = {
        "reviewed_flagged": len(w["tp"]) + len(w["fp"]),
        "confirmed_failures": len(w["tp"]),
        "false_alarms": len(w["fp"]),
        "rejections_not_counted": len(w["excluded"]),
        "reviewed_audits": len(w["tn"]) + len(w["fn"]),
        "missed_failures": len(w["fn"]),
        "precision": None,
        "precision_ci": None,
        "false_omission_rate": None,
        "false_omission_rate_ci": None,
        **dict.fromkeys(("tpr", "fpr", "tpr_ci", "fpr_ci")),
        "raw_failure_rate": raw,
        "failure_rate_ppi": _ppi(raw, raw_ci, raw_variance, labels, pass_shares),
        "corrected_failure_rate": None,
        "unaudited_pass_share": round(sum(waiting.values()), 6),
        "unaudited_strata": sorted(waiting),
    }
    ppv = fomr = None
    if w["tp"] or w["fp"]:
        ppv, ppv_ci, _ = _share(w["tp"], w["fp"])
        out["precision"] = round(ppv, 6)
        out["precision_ci"] = [round(ppv_ci[0], 6), round(ppv_ci[1], 6)]
    passed = _pass_rate(labels, pass_shares)
    if passed is not None:
        fomr, f_ci = passed
        out["false_omission_rate"] = round(fomr, 6)
        out["false_omission_rate_ci"] = [round(f_ci[0], 6), round(f_ci[1], 6)]
    if no_pass:  # no pass to miss a failure among: the rate is the flags' precision alone
        out["false_omission_rate"] = out["false_omission_rate_ci"] = None
        fomr, f_ci = 0.0, (0.0, 0.0)
    if raw is not None and ppv is not None and fomr is not None:
        out.update(_corrected(raw, raw_ci or (raw, raw), (ppv, ppv_ci), (fomr, f_ci)))
    return out


def _corrected(
    raw: float,
    raw_ci: tuple[float, float],
    ppv: tuple[float, tuple[float, float]],
    fomr: tuple[float, tuple[float, float]],
) -> dict[str, Any]:
    """TPR, FPR and the corrected failure rate, each with its box interval (module docstring):
    all three are monotone in the raw rate, precision and false-omission rate, so the box's
    corners bound them. A TPR read off one audited pass says so by its width."""
    corr = _clamp(raw * ppv[0] + (1 - raw) * fomr[0])
    box = list(itertools.product(raw_ci, ppv[1], fomr[1]))
    corners = [_clamp(q * p + (1 - q) * f) for q, p, f in box]
    tprs = [_clamp(q * p / c) for (q, p, _), c in zip(box, corners, strict=True) if c > 0]
    fprs = [
        _clamp(q * (1 - p) / (1 - c)) for (q, p, _), c in zip(box, corners, strict=True) if c < 1
    ]
    return {
        "tpr": round(_clamp(raw * ppv[0] / corr), 6) if corr > 0 else None,
        "fpr": round(_clamp(raw * (1 - ppv[0]) / (1 - corr)), 6) if corr < 1 else None,
        "tpr_ci": [round(min(tprs), 6), round(max(tprs), 6)] if tprs and corr > 0 else None,
        "fpr_ci": [round(min(fprs), 6), round(max(fprs), 6)] if fprs and corr < 1 else None,
        "corrected_failure_rate": {
            "estimate": round(corr, 6),
            "ci_low": round(min(corners + [corr]), 6),
            "ci_high": round(max(corners + [corr]), 6),
            "ci_method": CI_METHOD,
        },
    }


def pct(v: float | None) -> str:
    """A share as the reports print it: ``12.5%``, or ``-`` when unknown."""
    return "-" if v is None else f"{100 * v:.1f}%"


def pct_ci(v: float | None, ci: Sequence[float] | None, n: int | None = None) -> str:
    """A measured share with its 95% interval and the labels it rests on: ``20.0% (95% CI
    3.6%-62.4%, 5 labels)``; ``-`` when unknown."""
    if v is None:
        return "-"
    if not ci:
        return pct(v)
    labels = f", {n} label{'s' if n != 1 else ''}" if n is not None else ""
    return f"{pct(v)} (95% CI {pct(ci[0])}-{pct(ci[1])}{labels})"


def rate_line(fr: Mapping[str, Any]) -> str:
    """The whole traffic's rate, or, with strata left uncovered, bounds and the covered part."""
    ci = f"{pct(fr.get('ci_low'))} - {pct(fr.get('ci_high'))}"
    if fr.get("estimate") is not None:
        return f"{pct(fr.get('estimate'))} (95% CI {ci}, n={fr.get('n', 0)})"
    part = fr.get("covered")
    if not part:
        return f"- (nothing decided; whole traffic {ci})"
    return (
        f"- (strata {', '.join(fr.get('uncovered_strata') or ())} not sampled; whole traffic"
        f" between {ci}; covered strata ({pct(part['coverage'])} of traffic):"
        f" {pct(part['estimate'])} (95% CI {pct(part['ci_low'])} - {pct(part['ci_high'])},"
        f" n={fr.get('n', 0)}))"
    )


def measure_rows(q: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The judge's measured precision, false-omission rate and TPR / FPR as report rows, each
    with its 95% interval and the labels it rests on: a TPR read off one audited pass is not a
    finding, and its interval says so."""
    both = (q.get("reviewed_flagged") or 0) + (q.get("reviewed_audits") or 0)
    tpr = pct_ci(q.get("tpr"), q.get("tpr_ci"), both)
    fpr = pct_ci(q.get("fpr"), q.get("fpr_ci"), both)
    return [
        (
            "judge precision",
            pct_ci(q.get("precision"), q.get("precision_ci"), q.get("reviewed_flagged")),
        ),
        (
            "judge false-omission rate",
            pct_ci(
                q.get("false_omission_rate"),
                q.get("false_omission_rate_ci"),
                q.get("reviewed_audits"),
            ),
        ),
        ("judge TPR / FPR", f"{tpr} / {fpr}"),
    ]


__all__ = [
    "audit_shares",
    "failure_rate",
    "judge_quality",
    "measure_rows",
    "pct",
    "pct_ci",
    "rate_line",
    "unaudited",
    "wilson",
]
