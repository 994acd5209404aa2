"""The one decision threshold per metric.

A judge labels a result failing when its score is below the threshold of its metric; the job
flags an interaction with the same numbers (``jobs.thresholds`` defaults to these), Phoenix
annotations carry that label, and ``bench/judges.py`` and ``bench/e2e.py`` measure at them.
They were chosen on the first half of the XQuAD articles of ``bench/e2e.py`` and the dev
splits of the judge datasets, and are reported on held-out articles (README, "Judge quality").
"""

from __future__ import annotations

import re
from types import MappingProxyType

DEFAULT_THRESHOLDS = MappingProxyType(
    {
        "faithfulness": 0.65,
        "answer_relevance": 0.5,
        "context_relevance": 0.6,
    }
)

_CAL_ID = re.compile(r"\bcal\d+-[0-9a-f]{8}\b")


def calibration_id(judge_version: str | None) -> str | None:
    """The id of the fitted calibration (``ragsieve judges fit``) a judge version carries, e.g.
    ``cal3-1a2b3c4d`` in ``offline-5:t0.65:cal3-1a2b3c4d``; None for an uncalibrated judge."""
    m = _CAL_ID.search(judge_version or "")
    return m.group(0) if m else None


__all__ = ["DEFAULT_THRESHOLDS", "calibration_id"]
