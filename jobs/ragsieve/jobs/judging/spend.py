"""What one run's judging spent: calls, tokens, USD and outcomes, against an optional budget."""

from __future__ import annotations

from collections.abc import Sequence

from ragsieve.evaluators.records import EvalResult


class Spend:
    """Calls, tokens, cost and outcomes of one run's judging, against an optional USD budget."""

    def __init__(self, budget_usd: float | None) -> None:
        self.budget_usd = budget_usd
        self.calls = 0
        self.usd = 0.0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.errors = 0
        self.skipped = 0
        self.cached = 0
        self.cascade_saved = 0
        self.results = 0
        self.deferred: set[str] = set()
        self.judged: set[str] = set()

    def over(self) -> bool:
        """True once the USD budget is spent."""
        return self.budget_usd is not None and self.usd >= self.budget_usd

    def add(self, results: Sequence[EvalResult]) -> None:
        """Count one judge call and its results."""
        self.calls += 1
        for r in results:
            self.results += 1
            self.usd += r.cost_usd
            self.prompt_tokens += r.prompt_tokens
            self.completion_tokens += r.completion_tokens
            self.errors += r.label == "error"
            self.skipped += r.label == "skipped"
            self.cached += bool(r.cached)
            # an LLM call was saved only when one would have been made: not for skipped items
            self.cascade_saved += r.metadata.get("escalated") is False and r.label != "skipped"


__all__ = ["Spend"]
