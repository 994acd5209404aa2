"""Prediction-powered inference of a failure rate: judge verdicts corrected by people's labels.

The judge decides every sampled trace; people label a subset. With the sample drawn by a
stratified design (trace i kept with inclusion probability ``pi_i``, weight ``w_i = 1 / pi_i``)
and people labelling flagged traces and a random audit share of passes (the labelled subset is
random within each judge verdict), the prediction-powered estimate is

    theta = q * PPV + (1 - q) * FOR

where ``q`` is the design-weighted share of traces the judge failed, ``PPV`` the weighted share
of real failures among labelled flagged traces and ``FOR`` among labelled passes. It is the PPI
estimator ``mean(judge) + mean(label - judge)`` with the rectifier stratified by the judge's
verdict (Angelopoulos et al. 2023, "Prediction-powered inference"; Fisch et al. 2024,
stratified PPI): inside a verdict stratum the judge is constant, so its rectifier is the
stratum's labelled failure share minus the verdict.

Its variance is the delta method's over three independent estimates,
``(PPV - FOR)^2 var(q) + q^2 var(PPV) + (1 - q)^2 var(FOR)``; ``var(q)`` is the stratified
design variance of the raw estimate (``ragsieve.jobs.run.estimate``), ``var(PPV)`` and
``var(FOR)`` are binomial at their Kish effective sizes, with the Wilson-consistent guard when a
share is 0 or 1. The 95% interval is ``theta +- z * sqrt(var)``, clipped to [0, 1]. It treats
the labels as independent of the sample ``q`` comes from: right for reviews of earlier runs (the
run report's case; simulated coverage ~96%), conservative when they label the same sample (use
:func:`ppi_estimate` there). Unlike the judge-only interval it covers the truth when the judge
is biased.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054
METHOD = "prediction-powered (judge on every sampled trace, rectified by labels per verdict)"


@dataclass(frozen=True, slots=True)
class Labelled:
    """A person's verdict on a sampled trace: what the judge said, what is true, its weight."""

    judge_failed: bool
    failed: bool
    weight: float = 1.0  # 1 / inclusion probability
    stratum: str = ""  # for a pass: the audit stratum it was drawn from (see pass_shares)


def _share(ws: Sequence[tuple[float, bool]], z: float) -> tuple[float, float, float] | None:
    """Weighted share of True, its variance (with the 0/1 guard) and Kish effective size."""
    total = sum(w for w, _ in ws)
    if not ws or total <= 0:
        return None
    p = sum(w for w, hit in ws if hit) / total
    n_eff = total * total / sum(w * w for w, _ in ws)
    if 0.0 < p < 1.0:
        var = p * (1 - p) / n_eff
    else:  # no variance observed: the variance whose 95% half-width is Wilson's
        half = z * z / (2 * (n_eff + z * z))
        var = half * half / (z * z)
    return p, var, n_eff


def passed_share(
    labelled: Sequence[Labelled], pass_shares: Mapping[str, float] | None, z: float = Z95
) -> tuple[float, float, float] | None:
    """The false-omission rate among passes, its variance and effective size.

    Passes are audited in strata of their own: every pass a judge was uncertain of, a random
    share of the others. ``pass_shares`` (stratum -> its share of the passes' weight) makes the
    rate the strata's rates weighed by their shares, ``sum_s pi_s FOR_s``; a stratum holding
    passes but no label leaves it unknown (None): the misses among uncertain passes say nothing
    of the passes a judge was sure of. Without ``pass_shares`` every audit is one stratum.
    """
    passes = [x for x in labelled if not x.judge_failed]
    if pass_shares is None:
        return _share([(x.weight, x.failed) for x in passes], z)
    if not pass_shares:  # no pass at all: none to miss a failure among
        return 0.0, 0.0, 0.0
    rate = var = n_eff = 0.0
    for stratum, pi in pass_shares.items():
        if pi <= 0:
            continue
        got = _share([(x.weight, x.failed) for x in passes if x.stratum == stratum], z)
        if got is None:
            return None
        rate, var, n_eff = rate + pi * got[0], var + pi * pi * got[1], n_eff + got[2]
    return (rate, var, n_eff) if n_eff else None


def ppi_failure_rate(
    raw: float,
    raw_variance: float,
    labelled: Sequence[Labelled],
    *,
    z: float = Z95,
    pass_shares: Mapping[str, float] | None = None,
) -> dict[str, Any] | None:
    """The prediction-powered failure rate and its interval; None without labels on both
    verdicts (a flagged trace and a pass), since the rectifier is then unknown, or (with
    ``pass_shares``, see :func:`passed_share`) without labels in every audit stratum."""
    flagged = _share([(x.weight, x.failed) for x in labelled if x.judge_failed], z)
    passed = passed_share(labelled, pass_shares, z)
    if flagged is None or passed is None:
        return None
    ppv, var_ppv, n_ppv = flagged
    fom, var_for, n_for = passed
    est = raw * ppv + (1 - raw) * fom
    var = (ppv - fom) ** 2 * raw_variance + raw * raw * var_ppv + (1 - raw) ** 2 * var_for
    half = z * math.sqrt(max(var, 0.0))
    return {
        "estimate": round(est, 6),
        "ci_low": round(max(0.0, est - half), 6),
        "ci_high": round(min(1.0, est + half), 6),
        "precision": round(ppv, 6),
        "false_omission_rate": round(fom, 6),
        "labels": len(labelled),
        "labels_effective": round(n_ppv + n_for, 2),
        "method": METHOD,
    }


@dataclass(frozen=True, slots=True)
class Sampled:
    """One sampled trace: its sampling stratum, design weight, the judge's verdict and, when a
    person labelled it, the true verdict."""

    stratum: str
    weight: float
    judge_failed: bool
    failed: bool | None = None


def _rectifiers(items: Sequence[Sampled]) -> dict[bool, tuple[float, float]]:
    """Per judge verdict: the labelled share ``r`` of its sampled weight and the weighted mean
    rectifier ``label - judge`` among its labelled traces."""
    out: dict[bool, tuple[float, float]] = {}
    for verdict in (True, False):
        xs = [x for x in items if x.judge_failed is verdict]
        lab = [(x.weight, float(x.failed) - verdict) for x in xs if x.failed is not None]
        w_lab = sum(w for w, _ in lab)
        w_all = sum(x.weight for x in xs)
        mean = sum(w * d for w, d in lab) / w_lab if w_lab else 0.0
        out[verdict] = (w_lab / w_all if w_all else 0.0, mean)
    return out


def _wilson_at(p: float, var: float, z: float) -> tuple[float, float]:
    """Wilson's interval at the effective size ``p (1 - p) / var`` (asymmetric near 0 and 1,
    where a rate's sampling distribution is skewed); the normal one when that is undefined."""
    if var <= 0 or not 0.0 < p < 1.0:
        half = z * math.sqrt(max(var, 0.0))
        return max(0.0, p - half), min(1.0, p + half)
    n = p * (1 - p) / var
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, min(centre - half, p)), min(1.0, max(centre + half, p))


def ppi_estimate(items: Sequence[Sampled], *, z: float = Z95) -> dict[str, Any] | None:
    """Prediction-powered failure rate over one stratified sample, labels a random subset.

    ``theta = sum_i w_i z_i / sum_i w_i`` with ``z_i = judge_i + d_v + L_i / r_v (delta_i - d_v)``
    (v the judge's verdict on i; ``r_v`` the labelled share of that verdict's weight, ``d_v``
    its mean rectifier ``delta = label - judge``, ``L_i`` 1 when labelled). Rectifiers are
    pooled over strata: per stratum and verdict, disagreements are too rare to estimate (and a
    cell with none observed would claim no variance). Its variance is the linearised
    stratified one, ``sum_h m_h / (m_h - 1) sum_{i in h} (e_i - mean_h e)^2 / (sum w)^2`` with
    ``e_i = w_i (z_i - theta)``: the two-phase design's (sample, then labels). The 95% interval
    is Wilson's at the effective size ``theta (1 - theta) / var`` (skewed near 0, as a rate's
    distribution is). None without a label on a flagged trace and on a pass.

    Simulation (``tests/evaluators/test_ppi.py``): over 1000 deployments with 300 picks per
    stratum the interval covers the truth ~94% of the time; with 100-150 picks per stratum and
    rare disagreements it dips to ~92-93%.
    """
    if not any(x.failed is not None and x.judge_failed for x in items) or not any(
        x.failed is not None and not x.judge_failed for x in items
    ):
        return None
    cells = _rectifiers(items)
    zs = []
    for x in items:
        r, d = cells[x.judge_failed]
        z_i = x.judge_failed + d
        if x.failed is not None:
            z_i += ((float(x.failed) - x.judge_failed) - d) / r
        zs.append(z_i)
    total = sum(x.weight for x in items)
    est = sum(x.weight * z_i for x, z_i in zip(items, zs, strict=True)) / total
    by_h: dict[str, list[float]] = {}
    for x, z_i in zip(items, zs, strict=True):
        by_h.setdefault(x.stratum, []).append(x.weight * (z_i - est))
    ss = 0.0
    for es in by_h.values():
        if len(es) > 1:
            mean = sum(es) / len(es)
            ss += len(es) / (len(es) - 1) * sum((e - mean) ** 2 for e in es)
    var = ss / (total * total)
    est = min(1.0, max(0.0, est))
    lo, hi = _wilson_at(est, var, z)
    return {
        "estimate": round(est, 6),
        "ci_low": round(lo, 6),
        "ci_high": round(hi, 6),
        "labels": sum(x.failed is not None for x in items),
        "n": len(items),
        "method": METHOD,
    }


def variance_from_interval(estimate: float, lo: float, hi: float, z: float = Z95) -> float:
    """The variance a symmetric 95% interval ``[lo, hi]`` around ``estimate`` implies (the
    wider side, for an asymmetric interval such as Wilson's)."""
    half = max(hi - estimate, estimate - lo)
    return (half / z) ** 2


__all__ = [
    "METHOD",
    "Labelled",
    "Sampled",
    "ppi_estimate",
    "passed_share",
    "ppi_failure_rate",
    "variance_from_interval",
]
