"""Values bound to what they belong to: a number the context gives for another entity.

A claim's number is supported only where the context gives it for the same entity as the claim:
asked "How many requests per minute does the Starter plan allow?", the answer "It allows 600
requests per minute" copies the Pro plan's value when the context holds a Starter chunk (120)
and a Pro chunk (600). Every other check finds 600 in the context and passes it.

The context is read in *units*, the places that bind a value to what it belongs to: a clause of
a sentence, a table row (under its header), a list item, each with the heading it sits under.
A value's *kind* is what it counts (the word after it: "requests", a currency, a unit, a year,
a table column). A claim's value is in conflict when:

- the subject the claim gives it for (a name the context uses, taken from the claim or, when
  the claim elides it as in "It allows ...", from the question) is in no unit that holds the
  value;
- a unit that names the subject gives another value of the same kind (Starter: 120);
- the units that hold the value name a rival the claim and the question never mention (Pro);
- and every other name the claim shares with the value's units is shared with the subject's
  units too ("plan"), so it binds nothing.

Conservative by construction: without a competing value of the same kind for the subject, or
without a rival, nothing is said. The conflict is decisive in the faithfulness judge.

:func:`check_whole_answer` runs this check with the others that read the whole answer once each
claim has its support: names the sources never write in one piece, short denials, comparisons
and choices. Each marks the claims it finds at fault as contradicted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ragsieve.evaluators.judges.offline.support import BROKEN_SPAN_SUPPORT, VALUE_MISSING_SUPPORT
from ragsieve.evaluators.judges.offline.support_model import SHORT_CLAIMS
from ragsieve.evaluators.judges.offline.text.choice import check_choice, check_restriction
from ragsieve.evaluators.judges.offline.text.compare import check_comparison
from ragsieve.evaluators.judges.offline.text.spans import broken_spans
from ragsieve.evaluators.judges.offline.text.terms import NUMBER_PATTERN, key, tokens, values_of
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, fold, sentences

MAX_UNITS = 600  # units of the context read (long pages: their start)
HEADING_WORDS = 8  # an unpunctuated line this short titles what follows it
_CAPITALISED = re.compile(r"(?<![\w$€£])[A-Z][\w'’-]*")
_CLAUSE_SPLIT = re.compile(r";\s+|,\s+|\s+(?:while|whereas|but|and|y|pero|mientras)\s+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_MARKER_END = re.compile(r"(?:^|\s)(?:[-*•◊▪+]|\d{1,2}[.)]|step \d+)$", re.IGNORECASE)
_LABEL = re.compile(r"^\s*([^\W\d_][^:.;]{0,40}?):\s+(?=\S)")
_YEAR = re.compile(r"(?:1[5-9]|20)\d\d")
_MONEY_BEFORE = re.compile(r"[$€£]\s*$|\b(?:usd|eur|gbp)\s*$", re.IGNORECASE)
_PCT_AFTER = re.compile(r"^\s*(?:%|percent\b|per cent\b|por ciento\b)", re.IGNORECASE)
_NEXT_WORD = re.compile(r"^[\s/-]*(?:per\s+|a\s+|an\s+)?([^\W\d_][\w'-]*)")


@dataclass(frozen=True, slots=True)
class Unit:
    """One place of the context that binds values to names: its words, names and values."""

    text: str
    scope: frozenset[str]  # keys of every content word of the unit and its heading
    names: dict[str, str]  # key -> the word as written, for the names of the unit's scope
    values: dict[str, frozenset[str]]  # canonical value -> its kinds
    raw: dict[str, str] = field(default_factory=dict)  # canonical value -> as written


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


def _kinds(text: str, start: int, end: int, column: str = "") -> frozenset[str]:
    """What the number at ``text[start:end]`` counts: a currency, a percent, the word after it
    (its unit: "requests", "month"), a table column; a year counts what its clause does
    ("joined in 2015": ``<year>:join``). Empty when nothing says (a bare number binds nothing)."""
    out: set[str] = set()
    before, after = text[max(0, start - 6) : start], text[end : end + 40]
    if _MONEY_BEFORE.search(before):
        out.add("<money>")
    if _PCT_AFTER.match(after):
        out.add("<pct>")
    nxt = _NEXT_WORD.match(after)
    if nxt and fold(nxt.group(1)) not in STOPWORDS:
        out.add(key(fold(nxt.group(1))))
    if not out and _YEAR.fullmatch(text[start:end]):
        lead = re.findall(r"(?<![\w'’])[a-z][a-z'-]+", text[:start])
        out.update(f"<year>:{key(w)}" for w in lead if w not in STOPWORDS)
    if column:
        out.add(f"<col:{column}>")
    return frozenset(out)


def number_kinds(text: str, column: str = "") -> dict[str, tuple[str, frozenset[str]]]:
    """Each value written in digits in ``text`` -> (as written, its kinds)."""
    out: dict[str, tuple[str, frozenset[str]]] = {}
    for m in NUMBER_PATTERN.finditer(text):
        kinds = _kinds(text, m.start(), m.end(), column)
        for value in values_of(m.group().strip()):
            raw, had = out.get(value, (m.group().strip(), frozenset()))
            out[value] = (raw, had | kinds)
    return out


def _names(text: str, *, heading: bool = False) -> dict[str, str]:
    """Keys of the names of ``text`` -> the word as written: capitalised words after a
    clause's first word, or a first word another capitalised word follows ("Alice Moreno");
    a heading's capitalised words all count."""
    out: dict[str, str] = {}
    for sent in [text] if heading else sentences(text):
        found = list(_CAPITALISED.finditer(sent))
        for i, m in enumerate(found):
            lead = sent[: m.start()].rstrip(" \t\"'(*#")
            opens = not lead or lead.endswith(":") or bool(_MARKER_END.search(lead))
            joined = i + 1 < len(found) and not sent[m.end() : found[i + 1].start()].strip()
            if opens and not heading and not joined:
                continue  # a clause's first word is capitalised whatever it is
            word = m.group().rstrip("'’")
            folded = fold(re.sub(r"['’]\w{1,2}$", "", word))
            if folded and folded not in STOPWORDS and len(folded) > 1:
                out.setdefault(key(folded), word)
    return out


def _unit(
    text: str,
    heading: str,
    column_of: list[tuple[str, str]] | None = None,
    before: Unit | None = None,
) -> Unit:
    """A unit of ``text`` under ``heading``; a clause that names nothing ("and 10 GB of
    storage") is about what the clause ``before`` it in its sentence names."""
    scope = {key(t) for t in tokens(f"{heading} {text}") if t not in STOPWORDS}
    values: dict[str, frozenset[str]] = {}
    raw: dict[str, str] = {}
    pieces = column_of or [(text, "")]
    for piece, column in pieces:
        for value, (written, kinds) in number_kinds(piece, column).items():
            values[value] = values.get(value, frozenset()) | kinds
            raw.setdefault(value, written)
    names = _names(heading, heading=True) | _names(text)
    if column_of:  # a table row's first cell names what the row is about
        first = column_of[0][0]
        for t in tokens(first):
            if t not in STOPWORDS and not t[0].isdigit():
                names.setdefault(key(t), first.strip())
    if before is not None and not _names(text):
        scope |= before.scope
        names = before.names | names
    return Unit(text, frozenset(scope), names, values, raw)


def _is_heading(line: str) -> bool:
    text = line.strip().lstrip("#").strip()
    n = len(text.split())
    return 0 < n <= HEADING_WORDS and (
        text.endswith(":") or not re.search(r"[.!?;,\d]\s*$", text) and text[:1].isupper()
    )


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _prose_units(line: str, heading: str) -> list[Unit]:
    out: list[Unit] = []
    for sent in sentences(line):
        clauses = [sent]
        if len(number_kinds(sent)) >= 2:  # "Starter allows 120, while Pro allows 600"
            clauses = [c for c in _CLAUSE_SPLIT.split(sent) if c.strip()]
        before: Unit | None = None
        for clause in clauses:
            before = _unit(clause, heading, before=before)
            out.append(before)
    return out


def context_units(chunks: list[str]) -> list[Unit]:
    """The context's units: clauses, table rows (with their header) and list items, each
    under the heading it sits below in its chunk."""
    units: list[Unit] = []
    for chunk in chunks:
        heading, header = "", None
        for line in chunk.replace("\r", "").split("\n"):
            if not line.strip() or _TABLE_RULE.match(line):
                continue
            if line.count("|") >= 2:
                cells = _cells(line)
                if header is None:
                    header = cells
                    continue
                cols = [
                    (c, fold(header[i]) if i < len(header) else "") for i, c in enumerate(cells)
                ]
                units.append(_unit(" ; ".join(cells), heading, cols))
                continue
            header = None
            stripped = re.sub(r"^\s*(?:[-*•+]|\d{1,2}[.)])\s+", "", line)
            if _is_heading(stripped):
                heading = stripped.strip().lstrip("#").rstrip(":").strip()
                continue
            label = _LABEL.match(stripped)  # "- Team: $29 per month": the item's name
            if label:
                units.extend(_prose_units(stripped[label.end() :], label.group(1)))
            else:
                units.extend(_prose_units(stripped, heading))
            if len(units) >= MAX_UNITS:
                return units[:MAX_UNITS]
    return units


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
    q_values = set().union(
        *(values_of(m.group().strip()) for m in NUMBER_PATTERN.finditer(question))
    )
    mentioned = {key(t) for t in tokens(f"{claim} {question}")}
    for value, (raw, _) in number_kinds(claim).items():
        if value in q_values:
            continue
        holding = [u for u in units if value in u.values]
        if not holding:
            continue  # a value the context never states: the value check's business
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
        rival = _rival(holding, theirs, mentioned)
        if rival is None:
            continue
        their_values = sorted(
            {u.raw.get(v, v) for u in theirs for v in u.values if _same(u, v, holding, value)}
        )
        shown = theirs[0].names.get(subject) or subject
        return Conflict(raw, shown, rival, tuple(their_values[:3]))
    return None


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


def mark_value_conflicts(verdicts: list[dict[str, Any]], question: str, chunks: list[str]) -> None:
    """A value the context gives for another entity than the claim's (the Pro plan's limit
    for the Starter plan's, :mod:`.binding`) makes the claim contradicted."""
    units: list[Unit] | None = None
    for v in verdicts:
        if v.get("values_missing") or not any(ch.isdigit() for ch in v["claim"]):
            continue
        units = context_units(chunks) if units is None else units
        conflict = find_conflict(v["claim"], question, units)
        if conflict is None:
            continue
        v["support"] = min(v["support"], VALUE_MISSING_SUPPORT)
        v["contradiction"] = True
        v["value_conflict"] = {"value": conflict.value, "given_for": conflict.rival}
        known = v["reason"] if v["reason"] != "content words found in the context" else ""
        v["reason"] = "; ".join(r for r in (conflict.reason, known) if r)


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
                known = v["reason"] if v["reason"] != "content words found in the context" else ""
                v["reason"] = "; ".join(r for r in (broken.reason, known) if r)


def check_whole_answer(
    verdicts: list[dict[str, Any]], question: str, answer: str, chunks: list[str]
) -> None:
    """Checks that read the whole answer: broken names, values given for another entity,
    comparisons, choices and restrictions."""
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


__all__ = [
    "Conflict",
    "SHORT_REPLY_CLAIMS",
    "Unit",
    "check_whole_answer",
    "context_units",
    "find_conflict",
    "mark_value_conflicts",
    "number_kinds",
]
