"""Checks that read the whole answer once each claim has its support.

Names the sources never write in one piece, values the context binds to another entity or
another kind (:mod:`.binding`), short denials, comparisons and choices. Each marks the claims it
finds at fault as contradicted; the contradiction is decisive in the faithfulness judge.
"""

from __future__ import annotations

import re
from typing import Any

import ragsieve.evaluators.judges.offline.binding as binding
from ragsieve.evaluators.judges.offline.support import (
    BROKEN_SPAN_SUPPORT,
    SUPPORT_THRESHOLD,
    VALUE_MISSING_SUPPORT,
)
from ragsieve.evaluators.judges.offline.support_model import SHORT_CLAIMS
from ragsieve.evaluators.judges.offline.text.choice import check_choice, check_restriction
from ragsieve.evaluators.judges.offline.text.compare import check_comparison
from ragsieve.evaluators.judges.offline.text.spans import broken_spans
from ragsieve.evaluators.judges.offline.text.text import fold


def mark_value_conflicts(verdicts: list[dict[str, Any]], question: str, chunks: list[str]) -> None:
    """A value the context gives for another entity than the claim's (the Pro plan's limit
    for the Starter plan's), as another kind (15 minutes for 15 business days), or in
    another table cell than the one where the claim's entity and attribute meet
    (:mod:`.binding`) makes the claim contradicted, the conflict named."""
    units: list[binding.Unit] | None = None
    for v in verdicts:
        valued = any(ch.isdigit() for ch in v["claim"]) or binding.nothing_price(v["claim"])
        if v.get("values_missing") or not valued:
            continue
        units = binding.context_units(chunks) if units is None else units
        said = _with_lead_in(v)
        entity = binding.find_conflict(said, question, units)
        if entity is not None:
            reason, found = entity.reason, {"value": entity.value, "given_for": entity.rival}
        else:
            context = "\n\n".join(chunks)
            kind = binding.find_kind_conflict(said, question, units, context)
            kind = kind or binding.find_attribute_conflict(said, question, units, context)
            kind = kind or binding.find_clause_conflict(said, question, units, context)
            kind = kind or binding.find_rate_conflict(said, question, context)
            cell = None if kind else binding.find_cell_conflict(said, question, chunks, units)
            if kind is not None:
                key = "given_as" if kind.as_kind else "given_for"
                reason, found = kind.reason, {"value": kind.value, key: kind.given}
            elif cell is not None:
                reason, found = cell.reason, {"value": cell.value, "given_for": cell.given}
            else:
                _mark_bound_cell(v, question, units)
                continue
        _contradict(v, reason, found)


def _contradict(verdict: dict[str, Any], reason: str, found: dict[str, Any]) -> None:
    """A claim whose value the context gives for another entity, kind or cell: contradicted,
    the conflict named first."""
    verdict["support"] = min(verdict["support"], VALUE_MISSING_SUPPORT)
    verdict["contradiction"] = True
    verdict["value_conflict"] = found
    _lead_with(verdict, reason)


def _with_lead_in(verdict: dict[str, Any]) -> str:
    """What a claim says with its list's lead-in and its item's label ("For comparison:" /
    "- **Free**: 60 requests per minute" says 60 for Free, not for the question's plan)."""
    lead_in = verdict.get("lead_in") or ""
    return f"{lead_in.replace('; ', ': ')}: {verdict['claim']}" if lead_in else verdict["claim"]


def mark_foreign_cells(verdicts: list[dict[str, Any]], question: str, chunks: list[str]) -> None:
    """A claim in another language than its table, whose number the cell its words point to
    by meaning does not give (:func:`.binding.find_cell_conflict`), contradicted."""
    units: list[binding.Unit] | None = None
    for v in verdicts:
        if v.get("values_missing") or not any(ch.isdigit() for ch in v["claim"]):
            continue
        units = binding.context_units(chunks) if units is None else units
        cell = binding.find_cell_conflict(_with_lead_in(v), question, chunks, units)
        if cell is not None:
            _contradict(v, cell.reason, {"value": cell.value, "given_for": cell.given})


def _mark_bound_cell(verdict: dict[str, Any], question: str, units: list[binding.Unit]) -> None:
    """A claim whose every word the context holds, and whose value a table cell gives for the
    claim's entity and attribute (:func:`.binding.bound_cell`), is supported there: the cell's
    row and column hold its words together, however far apart the table writes them."""
    if (
        verdict["support"] >= SUPPORT_THRESHOLD
        or verdict.get("novel")
        or verdict["reason"] != ("content words found in the context")
    ):
        return
    cell = binding.bound_cell(verdict["claim"], question, units)
    if cell is not None:
        verdict["support"] = SUPPORT_THRESHOLD
        verdict["together"] = 1.0
        verdict["reason"] = f"found in a table cell ({cell})"


def _lead_with(verdict: dict[str, Any], reason: str) -> None:
    """``reason`` first in the claim's reason, before any problem already named (the plain
    "content words found" is no problem)."""
    known = verdict["reason"] if verdict["reason"] != "content words found in the context" else ""
    verdict["reason"] = "; ".join(r for r in (reason, known) if r)


# -- the checks that read the whole answer, after each claim has its support ----------------


def _mark_broken_spans(verdicts: list[dict[str, Any]], answer: str, sources: list[str]) -> None:
    """A name the sources never write in one piece ("Amy Johnson" for "Amy Jo Johnson")
    makes the claim that states it unsupported, whatever its word-level support."""
    prose = re.sub(r"```.*?(?:```|$)|`[^`\n]*`", " ", answer, flags=re.DOTALL)  # example code
    for broken in broken_spans(prose, sources):
        for v in verdicts:
            if broken.span in v["claim"] or len(verdicts) == 1:
                v["support"] = min(v["support"], BROKEN_SPAN_SUPPORT)
                v["contradiction"] = True
                _lead_with(v, broken.reason)


def check_whole_answer(
    verdicts: list[dict[str, Any]],
    question: str,
    answer: str,
    chunks: list[str],
    *,
    translated: bool = False,
) -> None:
    """Checks that read the whole answer: broken names, values given for another entity,
    comparisons, choices and restrictions. An answer in another language than its context is
    read against table cells only (:func:`mark_foreign_cells`): the other checks read words."""
    if translated:
        mark_foreign_cells(verdicts, question, chunks)
        return
    _mark_broken_spans(verdicts, answer, [*chunks, question])
    mark_value_conflicts(verdicts, question, chunks)
    _mark_short_denials(verdicts)
    context = " ".join(chunks)
    # "X or Y, which came first?" answered against the years; "X or Y?" / "are both X and Y
    # …?" against what the context says of each option; a yes giving what the context gives
    # one entity only ("on the Enterprise plan only") to another of its kind
    clash = check_comparison(question, answer, context) or check_choice(question, answer, context)
    clash = clash or check_restriction(question, answer, context)
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


__all__ = ["SHORT_REPLY_CLAIMS", "check_whole_answer", "mark_foreign_cells", "mark_value_conflicts"]
