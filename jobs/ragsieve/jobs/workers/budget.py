"""The global judge budget: calls and USD per window, reserved atomically in the ``budgets`` table.

One row per (name, window) is shared by every worker; a reservation is an atomic
``UPDATE ... WHERE spent + n <= limit RETURNING``, so the limit holds across processes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError

BUDGET_NAME = "judge"
USD_EPSILON = 1e-9  # float sums of USD amounts: 3 x 0.10 must fit a 0.30 limit


@dataclass(frozen=True, slots=True)
class BudgetLimits:
    """Most judge calls and USD per window, shared by every worker (None: unlimited).

    A USD limit needs ``usd_per_call_estimate`` > 0: concurrent batches reserve it per call before
    judging, and only that reservation keeps them under the limit (the real cost is known after
    the calls). The limit holds exactly when no call costs more than the estimate; otherwise the
    window can overrun by at most the excess of the calls in flight, and no reservation is granted
    once the spend reaches the limit.
    """

    calls: int | None = None
    usd: float | None = None
    window_s: float = 3600.0
    usd_per_call_estimate: float = 0.0

    def __post_init__(self) -> None:
        if self.usd_per_call_estimate < 0:
            raise ConfigError(
                f"workers.usd_per_call_estimate: must be >= 0 (got {self.usd_per_call_estimate})"
            )
        if self.usd is not None and self.usd_per_call_estimate <= 0:
            raise ConfigError(
                "workers.usd_per_call_estimate: must be > 0 when jobs.budget_usd is set"
                f" (got {self.usd_per_call_estimate}); set it to the most one judge call can cost"
            )

    def as_args(self) -> dict[str, Any]:
        """JSON form carried in job arguments, so every worker applies the scheduler's limits."""
        return {
            "calls": self.calls,
            "usd": self.usd,
            "window_s": self.window_s,
            "usd_per_call_estimate": self.usd_per_call_estimate,
        }


class GlobalBudget:
    """Atomic budget reservations in the ``budgets`` table (works on SQLite and Postgres)."""

    def __init__(
        self,
        store: Store,
        limits: BudgetLimits,
        *,
        name: str = BUDGET_NAME,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if limits.window_s <= 0:
            raise ConfigError(f"budget window must be > 0 s, got {limits.window_s}")
        self.store, self.limits, self.name, self.clock = store, limits, name, clock

    def window_start(self) -> float:
        """Start of the current window (windows are aligned to the epoch)."""
        return math.floor(self.clock() / self.limits.window_s) * self.limits.window_s

    def reserve(self, calls: int, *, via: Any = None) -> float | None:
        """Reserve ``calls`` judge calls; returns the USD reserved, or None when over budget.

        ``via`` is anything with the store's ``transaction()`` (e.g. a held ``SessionLock``), so
        a caller holding a pooled connection never waits for a second one.
        """
        est = calls * self.limits.usd_per_call_estimate
        start, lim = self.window_start(), self.limits
        with (via or self.store).transaction() as cur:
            cur.execute(
                self.store.sql(
                    "INSERT INTO budgets (name, window_start, calls_limit, usd_limit, updated_at)"
                    " VALUES (?,?,?,?,?) ON CONFLICT (name, window_start) DO NOTHING"
                ),
                (self.name, start, lim.calls, lim.usd, self.clock()),
            )
            fits, params = "", [calls, est, lim.calls, lim.usd, self.clock(), self.name, start]
            if lim.calls is not None:
                fits += " AND calls_spent + ? <= ?"
                params += [calls, lim.calls]
            if lim.usd is not None:  # spent can pass the limit when calls cost over the estimate
                fits += " AND usd_spent < ? AND usd_spent + ? <= ?"
                params += [lim.usd - USD_EPSILON, est, lim.usd + USD_EPSILON]
            cur.execute(
                self.store.sql(
                    "UPDATE budgets SET calls_spent = calls_spent + ?, usd_spent = usd_spent + ?,"
                    " calls_limit = ?, usd_limit = ?, updated_at = ?"
                    " WHERE name = ? AND window_start = ?" + fits + " RETURNING calls_spent"
                ),
                params,
            )
            ok = cur.fetchone() is not None
        return est if ok else None

    def settle(self, reserved_usd: float, actual_usd: float, *, via: Any = None) -> None:
        """Replace the USD estimate of a reservation with the real cost."""
        if actual_usd == reserved_usd:
            return
        with (via or self.store).transaction() as cur:
            cur.execute(
                self.store.sql(
                    "UPDATE budgets SET usd_spent = usd_spent + ? WHERE name = ?"
                    " AND window_start = ?"
                ),
                (actual_usd - reserved_usd, self.name, self.window_start()),
            )

    def spent(self) -> tuple[int, float]:
        """Calls and USD spent in the current window."""
        rows = self.store.query(
            "SELECT calls_spent, usd_spent FROM budgets WHERE name = ? AND window_start = ?",
            (self.name, self.window_start()),
        )
        return (int(rows[0][0]), float(rows[0][1])) if rows else (0, 0.0)


__all__ = ["BUDGET_NAME", "USD_EPSILON", "BudgetLimits", "GlobalBudget"]
