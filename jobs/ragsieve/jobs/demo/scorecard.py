"""The planted-failure scorecard: which planted failures the job caught, with which root cause.

The floors speak of the true rates, not of one run's counts: 40 queries plant 12 failures, and
9 of 12 caught (0.75) is what a detector with recall 0.85 shows one time in six. So a floor is
missed only beyond noise: when the 95% Wilson interval of the observed rate lies wholly on the
wrong side of it (recall 9/12 is within noise of 0.85; 2/12 is not). With the default 300
queries the intervals are a few points wide and the floors bite as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragsieve.jobs.demo.tallyfox.app import PlantedRecord
from ragsieve.jobs.run.estimate import wilson


class Floors(BaseModel):
    """Minimum scorecard the demo must reach (``ragsieve demo`` exits 1 below any of them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    planted_recall: float = Field(
        0.85, ge=0, le=1, description="Share of planted failures flagged."
    )
    root_cause_accuracy: float = Field(
        0.80,
        ge=0,
        le=1,
        description="Share of flagged planted failures with the expected root cause.",
    )
    false_positive_rate: float = Field(
        0.10, ge=0, le=1, description="Highest allowed flagged share of clean traffic."
    )


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


@dataclass(frozen=True, slots=True)
class Scorecard:
    """Detection quality of one demo run. Ratios are None when their denominator is empty."""

    planted_recall: float | None
    root_cause_accuracy: float | None
    false_positive_rate: float | None
    n_queries: int
    n_flagged: int
    n_planted: int
    n_detected: int
    n_clean: int
    n_false_positives: int
    n_organic_failures: int
    n_organic_flagged: int
    n_right_cause: int = 0  # flagged planted failures with the expected root cause
    per_kind_recall: dict[str, float | None] = field(default_factory=dict)
    root_cause_confusion: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The scorecard as one JSON-ready object (the ``--json`` output of ``ragsieve demo``)."""
        return asdict(self)

    def intervals(self) -> dict[str, tuple[float, float] | None]:
        """The 95% Wilson interval of each ratio (None where its denominator is empty)."""
        counts = {
            "planted_recall": (self.n_detected, self.n_planted),
            "root_cause_accuracy": (self.n_right_cause, self.n_detected),
            "false_positive_rate": (self.n_false_positives, self.n_clean),
        }
        out: dict[str, tuple[float, float] | None] = {}
        for name, (k, n) in counts.items():
            lo, hi = wilson(k / n, n) if n else (0.0, 1.0)
            out[name] = (round(lo, 4), round(hi, 4)) if n else None
        return out

    def failures(self, floors: Floors) -> list[str]:
        """One line per floor missed beyond noise (empty when all pass; None ratios are skipped).

        A floor is missed when the whole 95% interval of its rate is below it (a ceiling: above
        it), so a small run is not failed for its sample size alone.
        """
        out = []
        ci = self.intervals()
        rows = [
            ("planted_recall", self.planted_recall, floors.planted_recall, "<"),
            ("root_cause_accuracy", self.root_cause_accuracy, floors.root_cause_accuracy, "<"),
            ("false_positive_rate", self.false_positive_rate, floors.false_positive_rate, ">"),
        ]
        for name, value, bound, side in rows:
            interval = ci[name]
            if value is None or interval is None:
                continue
            lo, hi = interval
            if (hi < bound) if side == "<" else (lo > bound):
                out.append(
                    f"{name} {value:.3f} {side} {bound} (95% CI {lo:.3f}-{hi:.3f}: beyond noise)"
                )
        return out


def score(planted: Sequence[PlantedRecord], flagged: Mapping[str, str | None]) -> Scorecard:
    """Score the job's flags against the app's log.

    ``flagged`` maps trace_id -> root cause for every trace the job flagged (absent = passed).
    recall = flagged planted / planted; root-cause accuracy = flagged planted whose root cause
    equals the expected one / flagged planted;
    false-positive rate = flagged clean / clean, where clean
    excludes organic failures (real misses of the clean pipeline, reported on their own).
    """
    kinds: Counter[str] = Counter()
    caught: Counter[str] = Counter()
    confusion: dict[str, Counter[str]] = {}
    n_right = n_clean = n_fp = n_organic = n_organic_flagged = 0
    for rec in planted:
        hit = rec.trace_id in flagged
        if rec.kind is not None:
            kinds[rec.kind] += 1
            if hit:
                caught[rec.kind] += 1
                said = flagged[rec.trace_id] or "none"
                confusion.setdefault(rec.expected_root_cause or "none", Counter())[said] += 1
                n_right += said == rec.expected_root_cause
        elif rec.organic_failure is not None:
            n_organic += 1
            n_organic_flagged += hit
        else:
            n_clean += 1
            n_fp += hit
    n_planted, n_detected = sum(kinds.values()), sum(caught.values())
    return Scorecard(
        planted_recall=_ratio(n_detected, n_planted),
        root_cause_accuracy=_ratio(n_right, n_detected),
        false_positive_rate=_ratio(n_fp, n_clean),
        n_queries=len(planted),
        n_flagged=sum(rec.trace_id in flagged for rec in planted),
        n_planted=n_planted,
        n_detected=n_detected,
        n_clean=n_clean,
        n_false_positives=n_fp,
        n_organic_failures=n_organic,
        n_organic_flagged=n_organic_flagged,
        n_right_cause=n_right,
        per_kind_recall={k: _ratio(caught[k], kinds[k]) for k in sorted(kinds)},
        root_cause_confusion={k: dict(v) for k, v in sorted(confusion.items())},
    )
