"""The job's verdict table: each labelled trace's verdict under every pass/fail combination.

For each labelled trace the job's verdict rule (``verdicts.flagging.decide``, with the
observed-corpus chunk the job found for the trace, if any) is evaluated once for each of the 8
pass/fail combinations of the three metrics, so a candidate calibration only changes which
combination a trace lands in. An :class:`Example` holds that table; an :class:`Item` is one label
to agree with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ragsieve.evaluators.judges.combined.calibrated import (
    LABELS,
    UNKNOWN,
)
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.verdicts.corpus import CorpusHit
from ragsieve.jobs.verdicts.flagging import CorpusAnswer, decide

METRICS = ("faithfulness", "answer_relevance", "context_relevance")


@dataclass
class Example:
    """One labelled trace: its default results and the verdict for each metric combination."""

    trace_id: str
    results: dict[str, EvalResult]
    fail: np.ndarray  # (8,) bool: the job fails the trace when bit k says metric k failed
    cause: list[str | None]  # (8,) the root cause it assigns
    group: str = ""  # its conversation or question: cross-validation keeps a group in one fold


@dataclass(frozen=True, slots=True)
class Item:
    """One label to agree with: a trace's verdict (``metric`` None) or one metric's."""

    example: int
    metric: str | None
    failed: bool
    root_cause: str | None = None


def verdict_table(
    interaction: RagInteraction,
    results: Mapping[str, EvalResult],
    missed_chunk: str | None = None,
    thresholds: Mapping[str, float] | None = None,
    *,
    holds_answer: bool = False,
) -> tuple[np.ndarray, list[str | None]]:
    """The job's verdict and root cause for each of the 8 pass/fail combinations of the
    metrics (bit k of the index = metric k failed); unknown results stay as they are.
    ``missed_chunk``: the observed-corpus chunk the job found for this question, if any
    (``holds_answer``: it also holds what the answer says, the job's search for where an
    unfaithful answer came from).
    ``thresholds``: the job's (a forced score of 0 or 1 decides alike under any threshold, and
    what the rule reads of the chunks' own scores, such as a refusal's nearly relevant chunk,
    is read on the job's scale); 0.5 each when not given."""
    at = {m: 0.5 for m in METRICS} | dict(thresholds or {})
    corpus = None
    if missed_chunk:
        corpus = CorpusAnswer(CorpusHit(missed_chunk, 1.0, 0, "", holds_answer), 0)
    fail = np.zeros(8, bool)
    causes: list[str | None] = []
    for combo in range(8):
        synth = [
            _forced(r, bool(combo >> k & 1)) for k, m in enumerate(METRICS) if (r := results.get(m))
        ]
        v = decide(interaction, synth, at, corpus=corpus)
        fail[combo] = v.outcome == "fail"
        causes.append(v.root_cause)
    return fail, causes


def _forced(r: EvalResult, failed: bool) -> EvalResult:
    """``r`` with its decision forced to ``failed`` (score 0 or 1 against a 0.5 threshold)."""
    if r.label in UNKNOWN or r.score is None or r.evaluator not in LABELS:
        return r
    meta = dict(r.metadata)
    chunks = meta.get("chunks")
    if isinstance(chunks, list) and chunks:
        best = max(range(len(chunks)), key=lambda i: float(chunks[i].get("score") or 0.0))
        meta["chunks"] = [
            {**c, "relevant": (i == best and not failed)} for i, c in enumerate(chunks)
        ]
    ok, bad = LABELS[r.evaluator]
    update = {"score": 0.0 if failed else 1.0, "label": bad if failed else ok, "metadata": meta}
    return r.model_copy(update=update)


__all__ = ["METRICS", "Example", "Item", "verdict_table"]
