"""A value the context gives for another entity than the one the claim gives it for.

Asked "How many requests per minute does the Starter plan allow?", the answer "It allows 600
requests per minute" copies the Pro plan's value when the context holds a Starter chunk (120)
and a Pro chunk (600). Every other check finds 600 in the context and passes it. A claim's value
is in conflict when:

- the subject the claim gives it for (a name the context uses, taken from the claim or, when
  the claim elides it as in "It allows ...", from the question) is in no unit that holds the
  value;
- a unit that names the subject gives another value of the same kind (Starter: 120);
- the units that hold the value name a rival the claim and the question never mention (Pro);
- and every other name the claim shares with the value's units is shared with the subject's
  units too ("plan"), so it binds nothing.

Conservative by construction: without a competing value of the same kind for the subject, or
without a rival, nothing is said.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragsieve.evaluators.judges.offline.binding.units import (
    Unit,
    content_keys,
    digit_values,
    number_kinds,
)
from ragsieve.evaluators.judges.offline.text.terms import key, tokens
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS


@dataclass(frozen=True, slots=True)
class Conflict:
    """``value`` is given for ``rival`` while the claim gives it for ``subject``."""

    value: str
    subject: str
    rival: str
    subject_values: tuple[str, ...]

    @property
    def reason(self) -> str:
        """ "600 is given for Pro, the claim is about Starter; Starter: 120"."""
        theirs = ", ".join(self.subject_values)
        return (
            f"{self.value} is given for {self.rival}, the claim is about {self.subject};"
            f" {self.subject}: {theirs}"
        )


def _context_names(units: list[Unit]) -> set[str]:
    return {k for u in units for k in u.names}


def _candidates(text: str, names: set[str]) -> list[str]:
    """Keys of ``text``'s content words that the context writes as names."""
    seen: list[str] = []
    for t in tokens(text):
        k = key(t)
        if t not in STOPWORDS and not t[0].isdigit() and k in names and k not in seen:
            seen.append(k)
    return seen


def _against(
    subjects: list[str], value: str, holding: list[Unit], units: list[Unit]
) -> tuple[str, list[Unit]] | None:
    """A subject in no unit that holds ``value``, and the units that give it another value of
    the same kind, or None."""
    kinds = frozenset().union(*(u.values[value] for u in holding))
    for s in subjects:
        if any(s in u.scope for u in holding):
            continue
        theirs = [
            u
            for u in units
            if s in u.scope
            and value not in u.values
            and any(v != value and ks & kinds for v, ks in u.values.items())
        ]
        if theirs:
            return s, theirs
    return None


def find_conflict(claim: str, question: str, units: list[Unit]) -> Conflict | None:
    """The first value of ``claim`` that the context gives for another entity than the one
    the claim gives it for (see the module's docstring), or None."""
    if not units:
        return None
    names = _context_names(units)
    q_values = digit_values(question)
    mentioned = {key(t) for t in tokens(f"{claim} {question}")}
    for value, (raw, kinds) in number_kinds(claim).items():
        if value in q_values:
            continue
        holding = [u for u in units if value in u.values]
        if not holding:
            continue  # a value the context never states: the value check's business
        if kinds:  # a value binds only where it counts what the claim's does ("30 GB" is not
            # the "30 days" the subject's own sentence gives); a bare table cell counts what
            # its row, its column or the table's heading says ("(EUR)")
            holding = [
                u for u in holding if kinds & (u.scope if _cell(u, value) else u.values[value])
            ]
        if not holding:
            continue  # the context gives it as another kind only: the kind check's business
        from_claim = _candidates(claim, names)
        found = _against(from_claim, value, holding, units)
        bound = [s for s in from_claim if any(s in u.scope for u in holding)]
        if found is None and not bound:  # the claim names no subject: the question's
            found = _against(_candidates(question, names), value, holding, units)
        if found is None:
            continue
        subject, theirs = found
        if any(all(b not in u.scope for u in theirs) for b in bound):
            continue  # the claim names what the value's units name, and the subject's do not
        # the sentence that gives both the value and the subject's own sets them side by side
        rival = _rival(_near(holding, theirs) + holding, theirs, mentioned)
        if rival is None:
            continue
        shown_by = _near(theirs, holding) or theirs
        their_values = sorted(
            {u.raw.get(v, v) for u in shown_by for v in u.values if _same(u, v, holding, value)}
        )
        shown = theirs[0].names.get(subject) or subject
        return Conflict(raw, shown, rival, tuple(their_values[:3]))
    return None


def bound_cell(claim: str, question: str, units: list[Unit]) -> str | None:
    """The table cell that gives a value of ``claim`` for the claim's entity and attribute, as
    "row label, column header: value", or None: the claim's value is the cell's, its row label
    and its column header each share a word with the claim (or, for a subject the claim
    elides, the question), and every name the claim shares with the context is the cell's.
    A table writes a cell's two halves apart (the header lines above the row): the cell is
    where they meet."""
    names = _context_names(units)
    asked = content_keys(f"{claim} {question}")
    mine = set(_candidates(claim, names))
    for value, (_raw, kinds) in number_kinds(claim).items():
        for u in units:
            if value not in u.values or not _cell(u, value) or kinds and not kinds & u.scope:
                continue
            row, column = _row_and_column(u, value)
            if asked & row and asked & column and mine <= u.scope:
                header = next((u.names[k] for k in column if k in u.names), "")
                return f"{u.text.split(' ; ')[0]}, {header}: {u.raw.get(value, value)}"
    return None


def _row_and_column(unit: Unit, value: str) -> tuple[set[str], set[str]]:
    """The keys of the words of the row label and the column header of ``unit``'s cell."""
    marks = unit.values[value]
    row = {k for m in marks if m.startswith("<row:") for k in content_keys(m[5:-1])}
    column = {k for m in marks if m.startswith("<col:") for k in content_keys(m[5:-1])}
    return row, column


def _cell(unit: Unit, value: str) -> bool:
    """Only a table cell's row and column say what ``value`` counts in ``unit``."""
    kinds = unit.values[value]
    return bool(kinds) and all(k.startswith(("<col:", "<row:")) for k in kinds)


def _near(units: list[Unit], others: list[Unit]) -> list[Unit]:
    """The clauses of ``units`` whose sentence also holds a clause of ``others``."""
    return [u for u in units if u.sentence and any(u.sentence == o.sentence for o in others)]


def _same(unit: Unit, v: str, holding: list[Unit], value: str) -> bool:
    kinds = frozenset().union(*(u.values[value] for u in holding))
    return v != value and bool(unit.values[v] & kinds)


def _rival(holding: list[Unit], theirs: list[Unit], mentioned: set[str]) -> str | None:
    """A name of the value's units that neither the claim, the question nor the subject's
    units use: what the value is given for."""
    theirs_scope = frozenset().union(*(u.scope for u in theirs))
    for u in holding:
        for k, written in u.names.items():
            if k not in mentioned and k not in theirs_scope:
                return written
    return None


__all__ = ["Conflict", "bound_cell", "find_conflict"]
