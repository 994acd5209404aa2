"""A value the context gives for another entity than the one the claim gives it for.

Asked "How many requests per minute does the Starter plan allow?", the answer "It allows 600
requests per minute" copies the Pro plan's value when the context holds a Starter chunk (120)
and a Pro chunk (600). Every other check finds 600 in the context and passes it. A claim's value
is in conflict when:

- the subject the claim gives it for (a name the context uses, taken from the claim or, when
  the claim elides it as in "It allows ...", from the question) is in no unit that holds the
  value;
- a unit that names the subject gives another value where the claim's would stand
  (:func:`_competes`: of the same kind; a table cell in the value's column under the subject's
  row or in its row under the subject's column; a sentence holding the words that bind the
  claim's value, naming the subject itself, not within a longer name: Starter: 120), a value
  the claim does not state too;
- the units that hold the value name a rival the claim and the question never mention (Pro);
- and every other name the claim shares with the value's units is shared with the subject's
  units too ("plan"), so it binds nothing.

Conservative by construction: without a competing value of the same kind for the subject, or
without a rival, nothing is said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragsieve.evaluators.judges.offline.binding.units import (
    Unit,
    content_keys,
    digit_values,
    number_kinds,
    sentence_keys,
)
from ragsieve.evaluators.judges.offline.text.terms import key, tokens
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS

_RUN = re.compile(
    r"[A-ZÀ-ÖØ-Þ][\w'’-]*(?:\s+[A-ZÀ-ÖØ-Þ][\w'’-]*)*"
)  # capitalised words written as one name


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
    """The names the context uses; a currency, a unit or a month (a ``<...>`` key) is none."""
    return {k for u in units for k in u.names if k[:1] != "<"}


def _candidates(text: str, names: set[str]) -> list[str]:
    """Keys of ``text``'s content words that the context writes as names."""
    seen: list[str] = []
    for t in tokens(text):
        k = key(t)
        if t not in STOPWORDS and not t[0].isdigit() and k in names and k not in seen:
            seen.append(k)
    return seen


@dataclass(frozen=True, slots=True)
class _Claim:
    """What a claim says around one value: its content keys, its values, the names the claim
    and the question mention, and the words that bind the value in the context."""

    keys: set[str]
    values: set[str]
    mentioned: set[str]
    attribute: set[str]


def _plain(kinds: frozenset[str]) -> frozenset[str]:
    """A value's kinds without a table cell's row and column marks (not what it counts)."""
    return frozenset(k for k in kinds if not k.startswith(("<row:", "<col:")))


def _binds(unit: Unit, value: str, s: str, claim: _Claim) -> bool:
    """``unit`` gives ``value`` for ``s``: ``s`` is in its scope; for a table cell, ``s`` is
    its row label or column header and the other one shares a word with the claim (Plus's
    theft limit does not give Plus a water-damage limit)."""
    if not _in_table(unit, value):
        return s in unit.scope
    row, column = _row_and_column(unit, value)
    return s in row and bool(column & claim.keys) or s in column and bool(row & claim.keys)


def _competes(
    u: Unit,
    s: str,
    value: str,
    holding: list[Unit],
    claim: _Claim,
    units: list[Unit],
    elided: bool = False,
) -> bool:
    """``u`` gives the subject ``s`` another value where the claim's value would stand: a
    value of the same kind; for a table cell, one in a holding cell's column under the
    subject's row, or in its row under the subject's column; for a sentence, one that holds
    a word binding the claim's value (its attribute) and names ``s`` itself (a subject taken
    from the sentence before is a reading, not a name). A value the claim itself states is no
    rival (the claim gives it for its own name). A claim with no word binding its value
    beyond names and kinds ("It is $79 per month.") needs every kind of the value. A subject
    the claim elides (``elided``: taken from the question) is an entity, not a column: the
    question's "joining fee" does not make the claim's monthly fee, in the same row, rival."""
    if s not in u.scope or value in u.values or s in u.inherited:
        return False
    if _longer(u, s, holding, claim, units):
        return False
    kinds = _plain(frozenset().union(*(h.values[value] for h in holding)))
    for v, ks in u.values.items():
        if v == value or v in claim.values or _plain(ks) and kinds and not _plain(ks) & kinds:
            continue
        if _in_table(u, v):
            row, column = _row_and_column(u, v)
            by_column = s in column and not elided
            if any(_aligned(h, value, u, v, s in row, by_column) for h in holding):
                return True
        elif _plain(ks) & kinds and (
            claim.attribute & sentence_keys(u) if claim.attribute else kinds <= _plain(ks)
        ):
            return True
    return False


def _aligned(h: Unit, value: str, u: Unit, v: str, by_row: bool, by_column: bool) -> bool:
    """Cell ``u`` (its subject in its row label, or in its column header) sits in holding
    cell ``h``'s column, or in its row."""
    if not _in_table(h, value):
        return False
    h_marks, u_marks = h.values[value], u.values[v]
    col = {m for m in h_marks if m.startswith("<col:")} & u_marks
    row = {m for m in h_marks if m.startswith("<row:")} & u_marks
    return by_row and bool(col) or by_column and bool(row)


def _longer(u: Unit, s: str, holding: list[Unit], claim: _Claim, units: list[Unit]) -> bool:
    """``u`` names ``s`` within a longer name of another entity ("Home Plus" beside "the
    Home policy"): written with ``s`` as one run of capitalised words, a name the claim and
    the question never mention, the value's units do not name, and the context leaves out
    elsewhere where it names ``s``."""
    held = {k for h in holding for k in h.names}
    runs = [{key(t) for t in tokens(m.group())} for m in _RUN.finditer(u.text)]
    others = {k for run in runs if s in run for k in run if k in u.names and k != s}
    apart = {k for k in others if any(s in w.names and k not in w.names for w in units)}
    return any(k not in claim.mentioned and k not in held for k in apart)


def _against(
    subjects: list[str],
    value: str,
    holding: list[Unit],
    units: list[Unit],
    claim: _Claim,
    elided: bool = False,
) -> tuple[str, list[Unit]] | None:
    """A subject no unit that holds ``value`` gives it for, and the units that give it
    another value where the claim's would stand (:func:`_competes`), or None."""
    for s in subjects:
        if any(_binds(u, value, s, claim) for u in holding):
            continue
        theirs = [u for u in units if _competes(u, s, value, holding, claim, units, elided)]
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
    claimed = number_kinds(claim)
    keys = content_keys(claim)
    for value, (raw, kinds) in claimed.items():
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
        held = set().union(*(sentence_keys(u) for u in holding))
        about = _Claim(
            keys, set(claimed), mentioned, {k for k in keys & held - names if k[:1] != "<"}
        )
        from_claim = _candidates(claim, names)
        found = _against(from_claim, value, holding, units, about)
        bound = [s for s in from_claim if any(s in u.scope for u in holding)]
        if found is None and not bound:  # the claim names no subject: the question's
            found = _against(_candidates(question, names), value, holding, units, about, True)
        if found is None:
            continue
        subject, theirs = found
        if any(all(b not in sentence_keys(u) for u in theirs) for b in bound):
            continue  # the claim names what the value's units name, and the subject's do not
            # (a clause that leaves its sentence's words out says them: "6 EUR per user on
            # Plus and 4 EUR on Pro")
        # the sentence that gives both the value and the subject's own sets them side by side
        rival = _rival(
            _near(holding, theirs) + _facing(holding, value, theirs, subject), theirs, mentioned
        )
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


def _facing(holding: list[Unit], value: str, theirs: list[Unit], s: str) -> list[Unit]:
    """``holding`` with the cells that face a competing cell first (in its row when the
    subject heads its column, in its column when the subject labels its row)."""

    def faces(h: Unit) -> bool:
        for u in theirs:
            for v in u.values:
                row, column = _row_and_column(u, v) if _in_table(u, v) else (set(), set())
                if (row or column) and _aligned(h, value, u, v, s in row, s in column):
                    return True
        return False

    return sorted(holding, key=lambda h: not faces(h))


def _in_table(unit: Unit, value: str) -> bool:
    """``value`` is a table cell's in ``unit`` (it has a row and a column)."""
    return any(k.startswith("<row:") for k in unit.values[value])


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
