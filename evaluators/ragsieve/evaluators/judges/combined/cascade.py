"""Cascade: the offline judge first, the LLM judge only for results it labels ``uncertain`` or
whose score falls inside the configured uncertainty band."""

from __future__ import annotations

from dataclasses import dataclass

from ragsieve.evaluators.records import EvalResult, RagInteraction


@dataclass(slots=True)
class CascadeStats:
    """How many interactions the cascade judged, escalated and therefore saved from the LLM."""

    evaluated: int = 0
    escalated: int = 0
    skipped: int = 0  # nothing to judge (no answer, no context): no LLM call would be made either
    escalation_failed: int = 0  # the LLM errored; the offline verdict was kept

    @property
    def saved(self) -> int:
        """LLM calls avoided compared with judging everything with the LLM."""
        return self.evaluated - self.escalated - self.skipped


class CascadeJudge:
    """Offline verdict unless its score is in ``band`` (or it errored): then ask the LLM judge."""

    def __init__(self, offline: object, llm: object, band: tuple[float, float]) -> None:
        self.offline, self.llm, self.band = offline, llm, band
        self.name: str = offline.name  # type: ignore[attr-defined]
        self.version = f"cascade-1:{offline.version}|{llm.version}|{band[0]}-{band[1]}"  # type: ignore[attr-defined]
        self.stats = CascadeStats()

    def _uncertain(self, r: EvalResult) -> bool:
        if r.label in ("error", "uncertain"):  # the offline judge could not call it
            return True
        if r.label in ("skipped", "abstained") or r.score is None:
            return False
        return self.band[0] <= r.score <= self.band[1]

    async def evaluate(self, interaction: RagInteraction) -> list[EvalResult]:
        """Judge offline; escalate uncertain results. Metadata says which path was taken.

        A failed escalation keeps the offline results (``escalated=True`` plus
        ``escalation_error``), carrying the tokens and cost the failed LLM call consumed.
        """
        first = list(await self.offline.evaluate(interaction))  # type: ignore[attr-defined]
        self.stats.evaluated += 1
        mine = next((r for r in first if r.evaluator == self.name), None)
        if mine is None or not self._uncertain(mine):
            if mine is None or mine.label == "skipped":
                self.stats.skipped += 1
            return [self._tag(r, {"escalated": False}) for r in first]
        self.stats.escalated += 1
        second = list(await self.llm.evaluate(interaction))  # type: ignore[attr-defined]
        theirs = next((r for r in second if r.evaluator == self.name), None)
        if theirs is None or theirs.label == "error":
            self.stats.escalation_failed += 1
            why = theirs.explanation if theirs is not None else "the LLM judge returned nothing"
            kept = []
            for orig in first:
                r = self._tag(orig, {"escalated": True, "escalation_error": why})
                if orig is mine and theirs is not None:
                    r = r.model_copy(
                        update={
                            "prompt_tokens": r.prompt_tokens + theirs.prompt_tokens,
                            "completion_tokens": r.completion_tokens + theirs.completion_tokens,
                            "cost_usd": r.cost_usd + theirs.cost_usd,
                        }
                    )
                kept.append(r)
            return kept
        extra = {"escalated": True, "offline_label": mine.label, "offline_score": mine.score}
        return [self._tag(r, extra) for r in second]

    def _tag(self, r: EvalResult, extra: dict[str, object]) -> EvalResult:
        return r.model_copy(
            update={"metadata": {**r.metadata, **extra}, "judge_version": self.version}
        )
