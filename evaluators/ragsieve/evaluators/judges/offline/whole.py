"""Checks that read the whole answer, after each claim has its support: names the sources never
write in one piece, values given for another entity, short denials, comparisons and choices.
Each marks the claims it finds at fault as contradicted (decisive in the judge's score)."""

from __future__ import annotations

import re
from typing import Any

from ragsieve.evaluators.judges.offline.binding import mark_value_conflicts
from ragsieve.evaluators.judges.offline.support import BROKEN_SPAN_SUPPORT
from ragsieve.evaluators.judges.offline.support_model import SHORT_CLAIMS
from ragsieve.evaluators.judges.offline.text.choice import check_choice
from ragsieve.evaluators.judges.offline.text.compare import check_comparison
from ragsieve.evaluators.judges.offline.text.spans import broken_spans
from ragsieve.evaluators.judges.offline.text.text import fold


def _mark_broken_spans(verdicts: list[dict[str, Any]], answer: str, sources: list[str]) -> None:
    """A name the sources never write in one piece ("Amy Johnson" for "Amy Jo Johnson")
    makes the claim that states it unsupported, whatever its word-level support."""
    prose = re.sub(r"```.*?(?:```|$)|`[^`\n]*`", " ", answer, flags=re.DOTALL)  # example code
    for broken in broken_spans(prose, sources):
        for v in verdicts:
            if broken.span in v["claim"] or len(verdicts) == 1:
                v["support"] = min(v["support"], BROKEN_SPAN_SUPPORT)
                v["contradiction"] = True
                known = v["reason"] if v["reason"] != "content words found in the context" else ""
                v["reason"] = "; ".join(r for r in (broken.reason, known) if r)


def check_whole_answer(
    verdicts: list[dict[str, Any]], question: str, answer: str, chunks: list[str]
) -> None:
    """Checks that read the whole answer: broken names, values given for another entity,
    comparisons and choices."""
    _mark_broken_spans(verdicts, answer, [*chunks, question])
    mark_value_conflicts(verdicts, question, chunks)
    _mark_short_denials(verdicts)
    context = " ".join(chunks)
    # "X or Y, which came first?" answered against the years; "X or Y?" / "are both
    # X and Y …?" answered against what the context says about each option
    clash = check_comparison(question, answer, context) or check_choice(question, answer, context)
    if clash is None:
        return
    for v in verdicts:
        if fold(clash.picked) in fold(v["claim"]) or len(verdicts) == 1:
            v["support"] = min(v["support"], 0.25)
            v["reason"] = clash.reason
            v["contradiction"] = True


SHORT_REPLY_CLAIMS = SHORT_CLAIMS  # a reply of at most this many claims stands on each of them


def _mark_short_denials(verdicts: list[dict[str, Any]]) -> None:
    """A short reply negated against the context sentence it restates ("No, there is no data
    limit." where the context gives one) contradicts the context: in a long answer a negated
    clause is often a true detail beside a positive sentence, in one or two claims it is the
    answer."""
    if len(verdicts) > SHORT_REPLY_CLAIMS:
        return
    for v in verdicts:
        if v.get("negation") and not v.get("translated") and not v.get("contradiction"):
            v["support"] = min(v["support"], BROKEN_SPAN_SUPPORT)
            v["contradiction"] = True
            v["reason"] = "a short reply that denies what the context states: " + v["reason"]


__all__ = ["SHORT_REPLY_CLAIMS", "check_whole_answer"]
