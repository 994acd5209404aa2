"""The one decision threshold per metric.

A judge labels a result failing when its score is below the threshold of its metric; the job
flags an interaction with the same numbers (``jobs.thresholds`` defaults to these), Phoenix
annotations carry that label, and ``bench/judges.py`` and ``bench/e2e.py`` measure at them.
They were chosen on the first half of the XQuAD articles of ``bench/e2e.py`` and the dev
splits of the judge datasets, and are reported on held-out articles (README, "Judge quality").
"""

from __future__ import annotations

from types import MappingProxyType

DEFAULT_THRESHOLDS = MappingProxyType(
    {
        "faithfulness": 0.65,
        "answer_relevance": 0.5,
        "context_relevance": 0.6,
    }
)

__all__ = ["DEFAULT_THRESHOLDS"]
