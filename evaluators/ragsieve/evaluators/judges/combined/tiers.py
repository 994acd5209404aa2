"""Tiers: heuristics, then a local model, then an LLM, each asked only where the one before is
unsure, and every result saying which tier decided and what each tier cost.

A tier passes a result on when its label is ``uncertain`` or ``error`` or its score falls inside
the tier's band (``escalate_all``: every scored result); ``skipped`` and ``abstained`` results
are final (no later tier has more to read). A later tier that errors passes the trace on to the
next tier; when none decides, the earlier verdict stands, with ``escalation_error`` saying why.
The final result carries ``tier`` (the deciding tier's name), ``tiers`` (per tier asked: label,
score, latency, cost), the tokens and cost of every tier asked, and ``escalated`` (a tier past
the first was asked), as :mod:`.cascade`'s results do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragsieve.evaluators.records import EvalResult, RagInteraction

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Tier:
    """One tier: its name (``offline``, ``model``, ``llm``), its judge, and which of its results
    go on to the next tier (the last tier's band is never read)."""

    name: str
    judge: Any
    band: tuple[float, float] = (0.0, 0.0)
    escalate_all: bool = False

    def unsure(self, r: EvalResult) -> bool:
        """Whether ``r`` goes on to the next tier."""
        if r.label in ("error", "uncertain"):
            return True
        if r.label in ("skipped", "abstained") or r.score is None:
            return False
        return self.escalate_all or self.band[0] <= r.score <= self.band[1]


@dataclass(slots=True)
class TierStats:
    """Per tier name: interactions it was asked about, and it decided."""

    asked: dict[str, int] = field(default_factory=dict)
    decided: dict[str, int] = field(default_factory=dict)


class TieredJudge:
    """Judge with the first tier; pass what it is unsure of down the tiers (module docstring)."""

    def __init__(self, tiers: Sequence[Tier]) -> None:
        if not tiers:
            raise ValueError("a tiered judge needs at least one tier")
        self.tiers = tuple(tiers)
        self.name: str = tiers[0].judge.name
        inner = "|".join(f"{t.name}={t.judge.version}" for t in tiers)
        bands = ",".join(
            "all" if t.escalate_all else f"{t.band[0]}-{t.band[1]}" for t in tiers[:-1]
        )
        self.version = f"tiers-1:{inner}|{bands}"
        self.stats = TierStats()

    async def evaluate(self, interaction: RagInteraction) -> list[EvalResult]:
        """Walk the tiers (module docstring); never raises."""
        history: list[dict[str, Any]] = []
        asked: list[EvalResult] = []
        decided: tuple[Tier, list[EvalResult], EvalResult] | None = None
        failure = None
        for i, tier in enumerate(self.tiers):
            self.stats.asked[tier.name] = self.stats.asked.get(tier.name, 0) + 1
            t0 = time.perf_counter()
            results = await self._ask(tier, interaction)
            ms = round((time.perf_counter() - t0) * 1000, 3)
            mine = next((r for r in results if r.evaluator == self.name), results[0])
            asked.append(mine)
            history.append(
                {
                    "tier": tier.name,
                    "label": mine.label,
                    "score": mine.score,
                    "latency_ms": ms,
                    "cost_usd": mine.cost_usd,
                }
            )
            if mine.label == "error" and decided is not None:  # the next tier may decide
                failure = mine.explanation or f"the {tier.name} tier failed"
                continue
            decided, failure = (tier, results, mine), None
            if i == len(self.tiers) - 1 or not tier.unsure(mine):
                break
        assert decided is not None  # the first tier always decides something
        tier, results, mine = decided
        self.stats.decided[tier.name] = self.stats.decided.get(tier.name, 0) + 1
        return [self._final(r, r is mine, tier.name, history, asked, failure) for r in results]

    async def _ask(self, tier: Tier, interaction: RagInteraction) -> list[EvalResult]:
        """The tier's results; one that raises or returns nothing gives one error result."""
        try:
            results = list(await tier.judge.evaluate(interaction))
        except Exception as exc:  # the protocol says never raise; a tier that does is an error
            log.warning("%s tier raised on %s: %r", tier.name, interaction.trace_id, exc)
            why = f"the {tier.name} tier raised {type(exc).__name__}: {exc}"
        else:
            if results:
                return results
            why = f"the {tier.name} tier returned no result"
        error = EvalResult(
            trace_id=interaction.trace_id,
            span_id=interaction.span_id,
            evaluator=self.name,
            label="error",
            explanation=why,
            judge_version=str(tier.judge.version),
        )
        return [error]

    def _final(
        self,
        r: EvalResult,
        is_mine: bool,
        tier: str,
        history: list[dict[str, Any]],
        asked: list[EvalResult],
        failure: str | None,
    ) -> EvalResult:
        meta: dict[str, Any] = {**r.metadata, "tier": tier, "escalated": len(history) > 1}
        update: dict[str, Any] = {"metadata": meta, "judge_version": self.version}
        if is_mine:
            meta["tiers"] = history
            if failure is not None:
                meta["escalation_error"] = failure
            first = asked[0]
            if tier != self.tiers[0].name:
                meta.update(offline_label=first.label, offline_score=first.score)
            update.update(
                prompt_tokens=sum(a.prompt_tokens for a in asked),
                completion_tokens=sum(a.completion_tokens for a in asked),
                cost_usd=sum(a.cost_usd for a in asked),
            )
        return r.model_copy(update=update)


__all__ = ["Tier", "TierStats", "TieredJudge"]
