"""Cascade: the offline judge first, the LLM judge only for results inside an uncertainty band."""

from __future__ import annotations

from dataclasses import dataclass

from ragsieve.evaluators.records import EvalResult, RagInteraction


@dataclass(slots=True)
class CascadeStats:
    """How many interactions the cascade judged, escalated and therefore saved from the LLM."""

    evaluated: int = 0
    escalated: int = 0

    @property
    def saved(self) -> int:
        """LLM calls avoided compared with judging everything with the LLM."""
        return self.evaluated - self.escalated


class CascadeJudge:
    """Offline verdict unless its score is in ``band`` (or it errored): then ask the LLM judge."""

    def __init__(self, offline: object, llm: object, band: tuple[float, float]) -> None:
        self.offline, self.llm, self.band = offline, llm, band
        self.name: str = offline.name  # type: ignore[attr-defined]
        self.version = f"cascade-1:{offline.version}|{llm.version}|{band[0]}-{band[1]}"  # type: ignore[attr-defined]
        self.stats = CascadeStats()

    def _uncertain(self, r: EvalResult) -> bool:
        if r.label == "error":
            return True
        if r.label in ("skipped", "abstained") or r.score is None:
            return False
        return self.band[0] <= r.score <= self.band[1]

    async def evaluate(self, interaction: RagInteraction) -> list[EvalResult]:
        """Judge offline; escalate uncertain results. Metadata says which path was taken."""
        first = list(await self.offline.evaluate(interaction))  # type: ignore[attr-defined]
        self.stats.evaluated += 1
        mine = next((r for r in first if r.evaluator == self.name), None)
        if mine is None or not self._uncertain(mine):
            return [
                r.model_copy(
                    update={
                        "metadata": {**r.metadata, "escalated": False},
                        "judge_version": self.version,
                    }
                )
                for r in first
            ]
        self.stats.escalated += 1
        second = list(await self.llm.evaluate(interaction))  # type: ignore[attr-defined]
        extra = {"escalated": True, "offline_label": mine.label, "offline_score": mine.score}
        return [
            r.model_copy(
                update={"metadata": {**r.metadata, **extra}, "judge_version": self.version}
            )
            for r in second
        ]
