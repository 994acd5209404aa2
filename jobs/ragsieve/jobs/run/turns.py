"""Failure rates by turn position: first turns against follow-ups, and by how deep the turn is.

A turn's position is read from the conversation its generation step was given
(``ragsieve.collector.derive.sessions.turn_number``): turn 1 has no earlier user turn in its prompt.
Each decided pick keeps its weight ``N_h / (m_h * u_i)`` from the run's failure rate, so the
rate of a position is the same Hajek ratio as any other domain (``run.breakdown``): a team sees
whether long conversations degrade on the whole traffic, not on the sample's mix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ragsieve.collector.derive.sessions import turn_number
from ragsieve.evaluators.records import RagInteraction
from ragsieve.jobs.run import breakdown

if TYPE_CHECKING:
    from ragsieve.jobs.verdicts.verdicts import Decision

DEPTHS = ((2, "2"), (3, "3"), (4, "4-5"), (6, "6+"))  # (first turn number, label) of each band


def position(rec: RagInteraction) -> dict[str, str]:
    """``{"position": first | follow_up, "turn": 1 | 2 | 3 | 4-5 | 6+}`` of one interaction."""
    n = turn_number(rec)
    band = "1"
    for start, label in DEPTHS:
        if n >= start:
            band = label
    return {"position": "first" if n == 1 else "follow_up", "turn": band}


def by_turn(
    decided: Iterable[Decision], populations: Mapping[str, int]
) -> dict[str, dict[str, Any]]:
    """Weighted failure rate of first turns, follow-ups and each depth band, with cause shares.

    ``decided`` are the run's decided picks; keys are ``position=first``, ``position=follow_up``,
    ``turn=1``, ``turn=2`` ... (a key is absent when no pick has it).
    """
    picks = breakdown.weigh(
        (
            (
                d.pick.stratum,
                d.verdict.outcome == "fail",
                d.pick.upstream_p,
                d.verdict.root_cause,
                position(d.interaction),
            )
            for d in decided
        ),
        populations,
    )
    return breakdown.by_cell(picks, max_values=len(DEPTHS) + 1)


def turn_line(rates: Mapping[str, Mapping[str, Any]]) -> str:
    """The run table's line: ``first 5.0% (n=40), follow-up 21.0% (n=60)``, or ``-``."""
    parts = []
    for key, name in (("position=first", "first"), ("position=follow_up", "follow-up")):
        r = rates.get(key)
        if r:
            parts.append(f"{name} {100 * r['estimate']:.1f}% (n={r['n']})")
    return ", ".join(parts) or "-"


__all__ = ["DEPTHS", "by_turn", "position", "turn_line"]
