"""Golden-set growth: flagged traces → candidates → human review → the next golden version.

The job calls :func:`grow` after each run; people review with ``ragsieve golden review`` (or in
Phoenix through ``push``/``pull``) and ``ragsieve golden promote`` writes the next version.
"""

from __future__ import annotations

from ragsieve.jobs.golden.candidates import grow

__all__ = ["grow"]
