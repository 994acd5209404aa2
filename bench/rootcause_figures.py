"""Root-cause figures shared by ``bench/service.py`` and ``bench/e2e.py`` (issue 43).

Over the flagged planted failures of a split: how many got a stated root cause (not
``undetermined``), how many of those are right, and the root cause right counting
``undetermined`` as wrong. ``leave_one_domain_out`` refits the root-cause decision's weights
(``ragsieve.jobs.verdicts.ledger.fit_weights``, what ``judges fit`` runs) on the tune traces of
every domain but one and reads the held-out traces of that one, from the evidence the job
stored with each verdict (``samples.body.pieces``): the worst left-out domain is the figure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ragsieve.jobs.verdicts.ledger import DEFAULT_WEIGHTS, UNDETERMINED, Piece, combine, fit_weights

Pair = tuple[Any, dict[str, Any]]  # (planted trace, the job's decision)


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def stated(caught: Iterable[Pair], cause_of: Callable[[Pair], str | None] | None = None) -> dict:
    """Stated share, stated accuracy and accuracy counting ``undetermined`` wrong, over flagged
    planted failures (``cause_of``: a pair's root cause other than the job's, e.g. refitted)."""
    rows = list(caught)

    def said(p: Pair) -> str | None:
        return cause_of(p) if cause_of is not None else p[1]["root_cause"]

    told = [p for p in rows if said(p) != UNDETERMINED]
    right = sum(said(p) == p[0].expect for p in told)
    return {
        "flagged_failures": len(rows),
        "stated": len(told),
        "stated_share": _rate(len(told), len(rows)),
        "stated_right": right,
        "stated_accuracy": _rate(right, len(told)),
        "right_counting_undetermined_wrong": _rate(right, len(rows)),
    }


def _pieces(d: dict[str, Any]) -> list[Piece] | None:
    got = [Piece.from_dict(x) for x in d.get("pieces") or []]
    pieces = [p for p in got if p is not None]
    return pieces or None


def recombined(d: dict[str, Any], weights: dict[str, float]) -> str | None:
    """The job's decision recombined under ``weights`` from the pieces it stored."""
    pieces = _pieces(d)
    return d["root_cause"] if pieces is None else combine(pieces, weights).label


def rule_alone(p: Pair) -> str | None:
    """The root cause the documented rule alone gave (the first piece the job stored): what
    the job said before it weighed the other evidence."""
    pieces = _pieces(p[1])
    return p[1]["root_cause"] if pieces is None else pieces[0].cause


def leave_one_domain_out(
    caught: list[Pair], domain_of: Callable[[Any], str], tune: str = "tune", held: str = "heldout"
) -> dict[str, Any]:
    """For each domain: weights fitted on the tune split's other domains, read on the held-out
    split of that domain (and the defaults on the same traces, for comparison)."""
    domains = sorted({domain_of(t) for t, _ in caught})
    out: dict[str, Any] = {}
    for dom in domains:
        train = [
            (_pieces(d), t.expect)
            for t, d in caught
            if t.split == tune and domain_of(t) != dom and _pieces(d)
        ]
        weights = fit_weights([(p, y) for p, y in train if p is not None])
        test = [(t, d) for t, d in caught if t.split == held and domain_of(t) == dom]
        if not test:
            continue
        out[dom] = {
            "defaults": stated(test),
            "fitted": stated(test, lambda p, w=weights: recombined(p[1], w)),
            "weights_moved": {k: v for k, v in weights.items() if v != DEFAULT_WEIGHTS.get(k)},
        }
    per_domain = list(out.values())
    for kind in ("defaults", "fitted"):
        got = [v[kind] for v in per_domain if v[kind]["flagged_failures"]]
        out[f"worst_{kind}"] = {
            k: min((g[k] for g in got if g[k] is not None), default=None)
            for k in ("stated_share", "stated_accuracy", "right_counting_undetermined_wrong")
        }
    return out


__all__ = ["leave_one_domain_out", "recombined", "rule_alone", "stated"]
