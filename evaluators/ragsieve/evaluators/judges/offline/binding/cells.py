"""The cell where a claim's entity and attribute meet.

A table gives each value for exactly one row and one column: the Plus column's group classes
are 8, whatever else the table or the prose writes 2 for. :func:`find_cell_conflict` reads a
claim's number against the one cell the claim's own words point to.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragsieve.evaluators.judges.offline.binding.tables import grids
from ragsieve.evaluators.judges.offline.binding.units import (
    Unit,
    content_keys,
    digit_values,
    number_kinds,
    sentence_keys,
)
from ragsieve.evaluators.judges.offline.text.terms import NUMBER_PATTERN, TermIndex, values_of
from ragsieve.evaluators.judges.offline.text.text import content_words, language

_SIGNS = ("<money>", "<pct>")
_TIME = frozenset(("<s>", "<min>", "<h>", "<day>", "<wk>", "<mo>", "<yr>"))
SURE_MEANING = 1.5  # two words met in meaning, or one in full and another in part


@dataclass(frozen=True, slots=True)
class CellConflict:
    """The claim's ``value`` where the table gives ``cell`` for the claim's ``subject`` (its row
    label and column header); the value itself is given for ``given``."""

    value: str
    given: str
    subject: str
    cell: str

    @property
    def reason(self) -> str:
        """ "2 is given for Guest passes per month, Plus; the claim is about Group classes per
        month, Plus: 8"."""
        return (
            f"{self.value} is given for {self.given}, the claim is about {self.subject};"
            f" {self.subject}: {self.cell}"
        )


def _pick(labels: list[str], keys: set[str]) -> int | None:
    """The one label whose words ``keys`` cover the largest share of, or None (no label, or a
    tie)."""
    scores = []
    for label in labels:
        own = _own(label)
        scores.append(len(own & keys) / len(own) if own else 0.0)
    best = max(scores, default=0.0)
    if best == 0.0 or scores.count(best) != 1:
        return None
    return scores.index(best)


def _kind(marks: frozenset[str]) -> str:
    """What a number is, by its marks: money, a percent, a length of time, or a count."""
    if sign := _sign(marks):
        return sign
    return "<time>" if marks & _TIME else ""


def _fits(line: list[str], kind: str) -> bool:
    """A row (or column) of ``line``'s cells holds numbers of the claim's ``kind`` (30 days is a
    length of time: "Log retention | 7 days", not "Requests per minute | 60")."""
    return any(_kind(ks) == kind for cell in line for _, ks in number_kinds(cell).values())


def _clear(
    labels: list[str], lines: list[list[str]], keys: set[str], asked: set[str], kind: str
) -> tuple[int | None, bool]:
    """The label the claim's words point to, and whether they point unclearly. Words that touch
    one label at most pick as :func:`_pick`; words that touch several ("request logs": the
    "Requests per minute" and the "Log retention" rows) pick the label they cover most only
    when its line holds numbers of the claim's kind (:func:`_kind`), else the label the
    question's words pick when its line does; else none, unclearly (the cell rule then says
    nothing)."""
    touched = [i for i, label in enumerate(labels) if _own(label) & keys]
    best = _pick(labels, keys)
    if len(touched) < 2:
        return best, False
    for pick in (best, _pick(labels, asked)):
        if pick is not None and pick in touched and _fits(lines[pick], kind):
            return pick, False
    return None, True


def _in_meaning(labels: list[str], words: list[str]) -> int | None:
    """The label a claim in another language than the table speaks of, read by meaning (the
    embedded encoder's word translations: "peticiones por minuto" for "Requests per minute"),
    only when it is sure: the claim's words meet it by at least :data:`SURE_MEANING` together
    and no other label by half as much; else None."""
    if not words:
        return None
    index = TermIndex(labels, cross_lingual=True)
    totals = [0.0] * len(labels)
    for word in words:
        m = index.find(word)
        if m.strength and len(m.sentences) == 1:
            totals[next(iter(m.sentences))] += m.strength
    ranked = sorted(range(len(labels)), key=totals.__getitem__, reverse=True)
    best = ranked[0]
    rival = totals[ranked[1]] if len(ranked) > 1 else 0.0
    return best if totals[best] >= SURE_MEANING and rival <= totals[best] / 2 else None


def _foreign_words(claim: str, chunks: list[str]) -> list[str]:
    """The claim's words when the claim and the context are in two languages, else none."""
    mine, theirs = language(claim), language("\n\n".join(chunks))
    if "unknown" in (mine, theirs) or mine == theirs:
        return []
    return [w for w in content_words(claim) if w.isalpha()]


def _own(label: str) -> set[str]:
    return {k for k in content_keys(label) if k[:1] != "<"}


def _sign(kinds: frozenset[str]) -> str:
    return next((s for s in _SIGNS if s in kinds), "")


def _meeting(
    grid: list[list[str]], claim_keys: set[str], asked: set[str], kind: str, foreign: list[str]
) -> tuple[int, int] | None:
    """The row and the column (past the label column) whose label and header the claim's words
    point to, each in one way only; a part the claim leaves out ("It costs €42") is the
    question's, when the claim's other words say nothing the question does not (a claim that
    says "costs" where the question asks the joining fee speaks of another column)."""
    width = len(grid[0])
    body = grid[1:]  # rows of the header's width (:func:`find_cell_conflict`)
    rows, headers = [r[0] for r in body], grid[0][1:]
    row, unclear = _clear(rows, [r[1:] for r in body], claim_keys, asked, kind)
    columns = [[r[i] for r in body] for i in range(1, width)]
    column, unclear_column = _clear(headers, columns, claim_keys, asked, kind)
    if unclear or unclear_column:
        return None
    if row is None and (row := _in_meaning(rows, foreign)) is not None:
        row = row if _fits(body[row][1:], kind) else None
    used = content_keys(" ".join([rows[row] if row is not None else "",
                                  headers[column] if column is not None else ""]))  # fmt: skip
    if not claim_keys - used <= asked:
        return None if row is None or column is None else (row, column + 1)
    row = _pick(rows, asked) if row is None else row
    column = _pick(headers, asked) if column is None else column
    if row is None or column is None:
        return None
    return row, column + 1


def find_cell_conflict(
    claim: str, question: str, chunks: list[str], units: list[Unit]
) -> CellConflict | None:
    """The claim's one number, where the table cell its row and column words point to (the
    claim's entity and attribute, one of them the question's when the claim leaves it out)
    gives another number of its sign (money, percent or neither), no such cell gives the
    claim's, and the context gives the claim's number only elsewhere: in another cell, or in
    a sentence that does not hold the words of that row and that column together. Such a
    value is another entity's or another attribute's, copied (the table gives each value for
    one row and one column)."""
    found = list(NUMBER_PATTERN.finditer(claim))
    claimed = number_kinds(claim)
    if len(found) != 1 or not claimed:
        return None
    readings = set(values_of(found[0].group().strip()))
    if readings & digit_values(question):
        return None
    sign = _sign(frozenset().union(*(claimed[v][1] for v in readings if v in claimed)))
    claim_keys = {k for k in content_keys(claim) if k[:1] != "<"}
    asked = {k for k in content_keys(question) if k[:1] != "<"}
    kind = _kind(frozenset().union(*(claimed[v][1] for v in readings if v in claimed)))
    foreign = _foreign_words(claim, chunks)
    met: list[tuple[list[list[str]], int, int]] = []
    # rows of the header's width only: a note or section row ("| Prices exclude VAT |") is
    # no entity, and the row found is counted among the same rows it is read from
    full = [[g[0], *(r for r in g[1:] if len(r) == len(g[0]))] for g in grids(chunks)]
    for grid in full:
        at = _meeting(grid, claim_keys, asked, kind, foreign)
        if at is None:
            continue
        row, column = at
        cell = grid[1:][row][column]
        theirs = number_kinds(cell)
        if readings & set(theirs):
            return None  # a cell where the claim's entity and attribute meet gives it
        if theirs and all(_sign(ks) == sign for _, ks in theirs.values()):
            met.append((grid, row, column))
    if not met:
        return None
    grid, row, column = met[0]
    label, header = grid[1:][row][0], grid[0][column]
    meet = {k for k in content_keys(f"{label} {header}") if k[:1] != "<"}
    given = _given(readings, grids(chunks), units, meet)
    if given is None:
        return None
    return CellConflict(
        found[0].group().strip(), given, f"{label}, {header}", grid[1:][row][column]
    )


def _pairs(unit: Unit, readings: set[str], meet: set[str]) -> bool:
    """``unit`` may give the claim's row and column the claim's number: its clause holds the
    words of both, or its sentence does and the number counts nothing else there (not "2 guest
    passes" in a sentence that gives "8 group classes" too)."""
    if meet <= content_keys(unit.text):
        return True
    if not meet <= sentence_keys(unit):
        return False
    counts = {k for v in readings & set(unit.values) for k in unit.values[v] if k[:1] != "<"}
    return not counts or bool(counts & meet)


def _given(
    readings: set[str], tables: list[list[list[str]]], units: list[Unit], meet: set[str]
) -> str | None:
    """What the context gives the claim's number for: a cell's row label and column header, or
    the sentence that gives it; None when it is nowhere, or where a sentence may give the
    claim's row and column that value (:func:`_pairs`)."""
    where = ""
    for unit in units:
        if not readings & set(unit.values):
            continue
        if not unit.sentence:
            continue  # a table cell: named from its grid below
        if _pairs(unit, readings, meet):
            return None
        where = where or unit.text.strip()
    for grid in tables:
        for r in grid[1:]:
            for i, cell in enumerate(r[1:], 1):
                if i < len(grid[0]) and readings & set(number_kinds(cell)):
                    return f"{r[0]}, {grid[0][i]}"
    return where or None


__all__ = ["CellConflict", "find_cell_conflict"]
