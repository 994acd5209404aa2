"""FlaggedCase: a judged interaction that failed, with the evidence; what golden growth consumes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ragsieve.evaluators.records import EvalResult, RagInteraction

RootCause = str
"""retrieval | generation | both | no_answer_expected | abstained_wrongly | ambiguous_query"""


@dataclass(frozen=True)
class FlaggedCase:
    """One failing interaction as the job decided it."""

    interaction: RagInteraction
    results: Sequence[EvalResult]
    root_cause: RootCause
    evidence: str
    run_id: str
    stratum: str = "uniform"
    inclusion_p: float = 1.0
    metadata: dict[str, object] = field(default_factory=dict)
