"""Golden-set growth: flagged traces → candidates → human review → the next golden version.

Takes: a run's flagged cases and audited passes (from ``verdicts``), the store's ``candidates``
table and the golden files. Gives: candidates with categories (``growth``), people's decisions
and the next golden version with its changelog (``review``).

Two rooms, lower first: ``growth/`` turns flagged failures into deduplicated, categorised
candidates (the job calls :func:`grow` after each run); ``review/`` is where people decide (in the
terminal, or in Phoenix through ``push``/``pull``) and ``promote`` writes the next version. The
top level holds the command group only: ``cli`` (``ragsieve golden …``), ``promote_cli`` and
``split_cli``.
"""

from __future__ import annotations

from ragsieve.jobs.golden.growth.candidates import grow

__all__ = ["grow"]
