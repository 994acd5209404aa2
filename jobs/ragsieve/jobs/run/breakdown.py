"""Weighted failure rates of parts of the traffic: per stratum, per attribute cell, per root cause.

A decided pick i of stratum h carries the weight ``w_i = N_h / (m_h * u_i)`` of the run's
failure rate (``ragsieve.jobs.run.estimate``). The rate of a domain D (a stratum, the traces
whose ``http.route`` is ``/chat``, ...) is the Hajek ratio ``sum_{i in D} w_i y_i / sum_{i in D}
w_i``; a root cause's rate is the same ratio over every pick with ``y_i`` = "failed with that
cause", so the causes' rates add up to the whole rate. Its 95% interval is Wilson's at the
domain's Kish effective size ``(sum w)^2 / sum w^2``: it ignores the stratification's variance
reduction, so it is wider than the whole-traffic interval would be for the same picks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragsieve.jobs.run.estimate import wilson


@dataclass(frozen=True, slots=True)
class WeightedPick:
    """One decided pick with its estimation weight."""

    stratum: str
    failed: bool
    weight: float
    root_cause: str | None = None
    cells: Mapping[str, str] = field(default_factory=dict)


def weigh(
    decided: Iterable[tuple[str, bool, float, str | None, Mapping[str, str]]],
    populations: Mapping[str, int],
) -> list[WeightedPick]:
    """``(stratum, failed, upstream_p, root_cause, cells)`` items as weighted picks.

    A stratum with no population (nothing stored) gets no weight and is dropped.
    """
    items = list(decided)
    sampled = Counter(s for s, *_ in items)
    out = []
    for stratum, failed, up, cause, cells in items:
        n_h = populations.get(stratum, 0)
        if not n_h:
            continue
        if not 0 < up <= 1:
            raise ValueError(f"upstream keep probability must be in (0, 1], got {up}")
        out.append(WeightedPick(stratum, failed, n_h / sampled[stratum] / up, cause, cells))
    return out


def domain_rate(
    picks: Sequence[WeightedPick], hit: Callable[[WeightedPick], bool] = lambda p: p.failed
) -> dict[str, Any] | None:
    """Weighted share of ``picks`` for which ``hit`` holds, with its interval; None if empty."""
    if not picks:
        return None
    sum_w = sum(p.weight for p in picks)
    est = sum(p.weight for p in picks if hit(p)) / sum_w
    n_eff = sum_w * sum_w / sum(p.weight * p.weight for p in picks)
    lo, hi = wilson(est, n_eff)
    return {
        "estimate": round(est, 6),
        "ci_low": round(min(lo, est), 6),
        "ci_high": round(max(hi, est), 6),
        "n": len(picks),
        "failed": sum(hit(p) for p in picks),
        "n_effective": round(n_eff, 2),
        "traffic": round(sum_w, 3),
    }


def by_stratum(picks: Sequence[WeightedPick]) -> dict[str, dict[str, Any]]:
    """The failure rate within each stratum."""
    groups: dict[str, list[WeightedPick]] = {}
    for p in picks:
        groups.setdefault(p.stratum, []).append(p)
    return {k: r for k, v in sorted(groups.items()) if (r := domain_rate(v)) is not None}


def by_cell(picks: Sequence[WeightedPick], *, max_values: int = 20) -> dict[str, dict[str, Any]]:
    """The failure rate per ``name=value`` attribute cell, the ``max_values`` largest per name."""
    groups: dict[tuple[str, str], list[WeightedPick]] = {}
    for p in picks:
        for name, value in p.cells.items():
            groups.setdefault((name, value), []).append(p)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted({n for n, _ in groups}):
        cells = sorted(
            ((v, ps) for (n, v), ps in groups.items() if n == name),
            key=lambda c: (-sum(p.weight for p in c[1]), c[0]),
        )
        for value, ps in cells[:max_values]:
            rate = domain_rate(ps)
            if rate is not None:
                rate["cause_share"] = cause_share(ps)
                out[f"{name}={value}"] = rate
    return out


def by_root_cause(picks: Sequence[WeightedPick]) -> dict[str, dict[str, Any]]:
    """Each root cause's part of the whole failure rate (the parts add up to it)."""
    causes = sorted({str(p.root_cause) for p in picks if p.failed})
    out: dict[str, dict[str, Any]] = {}
    for cause in causes:

        def hit(p: WeightedPick, c: str = cause) -> bool:
            return p.failed and str(p.root_cause) == c

        rate = domain_rate(picks, hit)
        if rate is not None:
            out[cause] = rate
    return out


def cause_share(picks: Sequence[WeightedPick]) -> dict[str, float]:
    """Each root cause's weighted share of the failures among ``picks`` (sums to 1)."""
    fails = [p for p in picks if p.failed]
    total = sum(p.weight for p in fails)
    shares: dict[str, float] = {}
    for p in fails:
        shares[str(p.root_cause)] = shares.get(str(p.root_cause), 0.0) + p.weight / total
    return {k: round(v, 6) for k, v in sorted(shares.items())}


def cell_values(attributes: Mapping[str, Any], cells: Mapping[str, str]) -> dict[str, str]:
    """``{cell name: value}`` of one interaction, for the cells whose attribute it carries."""
    out = {}
    for name, key in cells.items():
        value = attributes.get(key)
        if value is not None and value != "":
            out[name] = str(value)[:120]
    return out


__all__ = [
    "WeightedPick",
    "by_cell",
    "by_root_cause",
    "by_stratum",
    "cause_share",
    "cell_values",
    "domain_rate",
    "weigh",
]
