"""The context read in units, the places that bind a value to what it belongs to.

A unit is a clause of a sentence, a table cell (under its row's label and its column's header)
or a list item, each with the heading it sits under. A sentence that names no entity of its own
and opens with a pronoun ("Its deductible is 1,000 EUR per claim.") is about the subject of the
nearest sentence before it that names one; any other nameless sentence ("The setup fee is 15
EUR.", "Roaming is included in every plan.") is about nothing named. A value's *kind* is what
it counts: the word after it ("requests", a unit, "month"), a currency, a percent, a table
cell's row and column, or for a year what its clause does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import ragsieve.evaluators.judges.offline.binding.tables as tables
from ragsieve.evaluators.judges.offline.text.question import NOTHING_PRICE
from ragsieve.evaluators.judges.offline.text.terms import NUMBER_PATTERN, key, tokens, values_of
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, fold, sentences

MAX_UNITS = 600  # units of the context read (long pages: their start)
HEADING_WORDS = 8  # an unpunctuated line this short titles what follows it
_CAPITALISED = re.compile(
    r"(?<![\w$€£])[A-ZÀ-ÖØ-Þ][\w'’-]*"
)  # any Latin capital: "Águila", "Ñandú"
_CLAUSE_SPLIT = re.compile(r";\s+|,\s+|\s+(?:while|whereas|but|and|y|pero|mientras)\s+")
_MARKER_END = re.compile(r"(?:^|\s)(?:[-*•◊▪+]|\d{1,2}[.)]|step \d+)$", re.IGNORECASE)
_LABEL = re.compile(r"^\s*([^\W\d_][^:.;]{0,40}?):\s+(?=\S)")
_YEAR = re.compile(r"(?:1[5-9]|20)\d\d")
_MONEY_BEFORE = re.compile(r"[$€£]\s*$|\b(?:usd|eur|gbp)\s*$", re.IGNORECASE)
# a currency after the number ("20 EUR", "20 €", "20 dollars") is money as one before it is
_MONEY_AFTER = re.compile(
    r"^\s*(?:[$€£]|(?:usd|eur|euros?|gbp|dollars?|d[oó]lares|pounds?|libras?)\b)", re.IGNORECASE
)
_PCT_AFTER = re.compile(r"^\s*(?:%|percent\b|per cent\b|por ciento\b)", re.IGNORECASE)
_NEXT_WORD = re.compile(r"^[\s/-]*(?:per\s+|a\s+|an\s+)?([^\W\d_][\w'-]*)")
# a price of nothing is a value of the money kind, 0: "included at no extra cost", "is free",
# "sin coste", "es gratis" (:data:`question.NOTHING_PRICE`), or "included" / "incluido" as the
# predicate of a clause that writes no number ("5 GB are included" counts the gigabytes)
_INCLUDED = re.compile(
    r"\b(?:is|are|be|comes|esta|estan|va|van|viene|vienen)\s+(?:\w+\s+)?(?:included|incluid[oa]s?)\b"
)
_NEGATED = re.compile(r"\b(?:not|no|never|nunca)\s+(?:\w+\s+)?(?:included|incluid[oa]s?)$")
# a pronoun that opens a sentence points back at the subject of the sentence before it
_PRONOUN = re.compile(
    r"^\W*(?:it|its|they|their|this|that|these|those|su|sus|este|esta|estos|estas|dicho|dicha)\b",
    re.IGNORECASE,
)
_PREDICATE = re.compile(r"^(?:is|are|it'?s|be|comes?|for|es|son|sale|salen|resulta|esta|estan"
                        r"|has|have|there'?s|there is|hay)\s+")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Unit:
    """One place of the context that binds values to names: its words, names and values."""

    text: str
    scope: frozenset[str]  # keys of every content word of the unit and its heading
    names: dict[str, str]  # key -> the word as written, for the names of the unit's scope
    values: dict[str, frozenset[str]]  # canonical value -> its kinds
    raw: dict[str, str] = field(default_factory=dict)  # canonical value -> as written
    sentence: str = ""  # the sentence a clause is part of ("" for a row or an item)
    inherited: frozenset[str] = frozenset()  # name keys taken from the sentence before


def _kinds(text: str, start: int, end: int, column: str = "") -> frozenset[str]:
    """What the number at ``text[start:end]`` counts: a currency, a percent, the word after it
    (its unit: "requests", "month"), a table column; a year counts what its clause does
    ("joined in 2015": ``<year>:join``). Empty when nothing says (a bare number binds nothing)."""
    out: set[str] = set()
    before, after = text[max(0, start - 6) : start], text[end : end + 40]
    if _MONEY_BEFORE.search(before) or _MONEY_AFTER.match(after):
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


def digit_values(text: str) -> set[str]:
    """Every value a number ``text`` writes in digits may mean (a question's: its subject)."""
    return {v for m in NUMBER_PATTERN.finditer(text) for v in values_of(m.group().strip())}


def content_keys(text: str) -> set[str]:
    """Keys of ``text``'s words, past stop words and numbers: what a claim is about."""
    return {key(t) for t in tokens(text) if t not in STOPWORDS and not t[0].isdigit()}


def sentence_keys(unit: Unit) -> set[str]:
    """The keys of a unit's scope and of its whole sentence: the words a value sits among (a
    clause says what its sentence is about: "... costs 6 EUR on Plus and is free on Pro")."""
    return set(unit.scope) | content_keys(unit.sentence)


def nothing_price(text: str) -> str:
    """The price of nothing ``text`` states, as written ("no extra cost", "gratis"), or ""."""
    folded = fold(text)
    m = NOTHING_PRICE.search(folded)
    if m is None and not any(ch.isdigit() for ch in text):
        m = _INCLUDED.search(folded)
        if m is not None and _NEGATED.search(folded[: m.end()]):
            m = None  # "is not included", "no esta incluido": a price is not nothing
    if m is None:
        return ""
    written = text[m.start() : m.end()] if len(folded) == len(text) else m.group()
    return _PREDICATE.sub("", written.strip(), count=1) if m.re is not _INCLUDED else "included"


def nothing_words(text: str) -> set[str]:
    """The words of every price of nothing ``text`` states, however the phrases overlap
    ("is free of charge": "free", "of", "charge")."""
    folded = fold(text)
    out: set[str] = set()
    for start in (m.start() for m in re.finditer(r"\b\w", folded)):
        m = NOTHING_PRICE.match(folded, start)
        if m is not None:
            out.update(tokens(_PREDICATE.sub("", m.group(), count=1)))
    return out


def nothing_keys(claim: str, asked: set[str], stated: tuple[frozenset[str], ...]) -> set[str]:
    """Keys of the claim's price of nothing, when a context sentence (``stated``: the keys of
    each that states one) is about the claim's subject or the question's (``asked``: "It costs
    nothing"): one wording supports another ("free" for "sin coste"); whose price it is, is
    the binding's check."""
    nothing = {key(t) for t in nothing_words(claim)}
    about = (content_keys(claim) | asked) - nothing
    return nothing if nothing and any(about & keys for keys in stated) else set()


def number_kinds(text: str, column: str = "") -> dict[str, tuple[str, frozenset[str]]]:
    """Each value written in digits in ``text`` -> (as written, its kinds); a price of nothing
    (:func:`nothing_price`) is 0 of the money kind."""
    out: dict[str, tuple[str, frozenset[str]]] = {}
    for m in NUMBER_PATTERN.finditer(text):
        kinds = _kinds(text, m.start(), m.end(), column)
        for value in values_of(m.group().strip()):
            raw, had = out.get(value, (m.group().strip(), frozenset()))
            out[value] = (raw, had | kinds)
    nothing = "0" not in out and nothing_price(text)
    if nothing:
        out["0"] = (nothing, frozenset({"<money>", *([f"<col:{column}>"] if column else [])}))
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
    sentence: str = "",
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
    return Unit(text, frozenset(scope), names, values, raw, sentence)


def _row_units(cells: list[str], header: list[str], heading: str) -> list[Unit]:
    """A table row's units: one a cell that holds a value, bound to both the row's label (its
    first cell) and its column's header, and counting what either says (a column of plans and
    a row of limits: the Plus column's theft limit is neither Plus's water limit nor Basic's
    theft limit); a row without a value is one unit."""
    text = " ; ".join(cells)
    label = cells[0] if cells else ""
    out: list[Unit] = []
    for i, cell in enumerate(cells):
        column = header[i] if i < len(header) else ""
        if not number_kinds(cell):
            continue
        unit = _unit(text, heading, [(cell, fold(column))])
        names = _names(heading, heading=True) | _names(cell)
        names |= {k: label.strip() for k in content_keys(label) if k[:1] != "<"}
        # a column header names as a heading does: its capitalised words ("Plus", not the
        # "extra" of "1 GB extra")
        names |= {k: column.strip() for k in _names(column, heading=True) if k[:1] != "<"}
        row = f"<row:{fold(label)}>"
        values = {v: ks | {row} for v, ks in unit.values.items()}
        scope = unit.scope | content_keys(column)
        out.append(replace(unit, scope=scope, names=names, values=values))
    return out or [_unit(text, heading, [(c, "") for c in cells])]


def _is_heading(line: str) -> bool:
    """A short unpunctuated line: a title; a labelled value ("- Oro: 129 €") is an item."""
    text = line.strip().lstrip("#").strip()
    label = _LABEL.match(text)
    if label and any(ch.isdigit() for ch in text[label.end() :]):
        return False
    n = len(text.split())
    return 0 < n <= HEADING_WORDS and (
        text.endswith(":") or not re.search(r"[.!?;,\d]\s*$", text) and text[:1].isupper()
    )


def _prose_units(line: str, heading: str) -> list[Unit]:
    out: list[Unit] = []
    for sent in sentences(line):
        clauses = [sent]
        if len(number_kinds(sent)) >= 2:  # "Starter allows 120, while Pro allows 600"
            clauses = [c for c in _CLAUSE_SPLIT.split(sent) if c.strip()]
        before: Unit | None = None
        for clause in clauses:
            before = _unit(clause, heading, before=before, sentence=sent)
            out.append(before)
    return out


def context_units(chunks: list[str]) -> list[Unit]:
    """The context's units: clauses, table rows (with their header) and list items, each
    under the heading it sits below in its chunk."""
    units: list[Unit] = []
    for chunk in chunks:
        units.extend(_about(_chunk_units(chunk)))
        if len(units) >= MAX_UNITS:
            return units[:MAX_UNITS]
    return units


def _subject(sentence: str) -> dict[str, str]:
    """The subject a sentence names: its first name, with the capitalised words that run on
    from it ("The Basic policy covers ...": Basic; "Alice Moreno joined ...": Alice Moreno)."""
    names = {k: w for k, w in _names(sentence).items() if k[:1] != "<"}
    if not names:
        return {}
    first = next(iter(names.values()))
    run = re.search(rf"(?<![\w]){re.escape(first)}(?:\s+[A-ZÀ-ÖØ-Þ][\w'’-]*)*", sentence)
    words = run.group().split() if run else [first]
    return {k: w for k, w in names.items() if w in words}


def _about(units: list[Unit]) -> list[Unit]:
    """A sentence that names no entity of its own and opens with a pronoun ("Its deductible is
    1,000 EUR per claim.") speaks of the subject of the nearest sentence before it that names
    one. The names it takes are marked ``inherited`` (a reading, not the context's words),
    unless the reading is sure: that sentence names nothing but its subject, and every
    sentence between them points back too ("The Gold card is for frequent flyers. Its annual
    fee is $129."). A sentence that opens with a pronoun speaks of the subject even when it
    names something else ("Its API limit is ...": the API is no new subject). A nameless
    sentence that opens otherwise ("The setup fee is 15 EUR.") takes nothing (a chunk under a
    heading already gives each unit the heading's names)."""
    out: list[Unit] = []
    topic: dict[str, str] = {}
    sure, last = False, ""
    for u in units:
        pointing = bool(_PRONOUN.match(u.sentence))
        if _nameless(u):
            if topic and pointing:
                keys = frozenset(topic)
                inherited = frozenset() if sure else keys
                u = replace(u, names=u.names | topic, scope=u.scope | keys, inherited=inherited)
            elif u.sentence != last:
                sure = False
        elif u.sentence and not pointing and (subject := _subject(u.sentence)):
            named = {k for k in _names(u.sentence) if k[:1] != "<"}
            topic, sure = subject, named == set(subject)
        last = u.sentence or last
        out.append(u)
    return out


def _nameless(unit: Unit) -> bool:
    """A clause of a sentence that names nothing (a currency, a unit or a month is no entity:
    "EUR", "Apr"), under no heading that does."""
    return bool(unit.sentence) and all(k[:1] == "<" for k in (*unit.names, *_names(unit.sentence)))


def _chunk_units(chunk: str) -> list[Unit]:
    """One chunk's units (:func:`context_units`)."""
    units: list[Unit] = []
    heading, header = "", None
    for line in tables.lines(chunk):
        if not line.strip() or tables.TABLE_RULE.match(line):
            continue
        if line.count("|") >= 2:
            cells = tables.cells(line)
            if header is None:
                header = cells
                continue
            units.extend(_row_units(cells, header, heading))
            continue
        header = None
        stripped = re.sub(r"^\s*(?:[-*•+]|\d{1,2}[.)])\s+", "", line)
        if _is_heading(stripped):
            heading = stripped.strip().lstrip("#").rstrip(":").strip()
            continue
        label = _LABEL.match(stripped)  # "- Team: $29 per month": the item's name
        if label:  # under its list's heading too ("Gold card:" / "- Annual fee: $129")
            rest = stripped[label.end() :]
            item = rest if any(ch.isalpha() for ch in rest) else stripped
            units.extend(_prose_units(item, f"{heading} {label.group(1)}".strip()))
        else:
            units.extend(_prose_units(stripped, heading))
        if len(units) >= MAX_UNITS:
            break
    return units


__all__ = [
    "Unit",
    "content_keys",
    "context_units",
    "digit_values",
    "nothing_keys",
    "nothing_price",
    "nothing_words",
    "number_kinds",
    "sentence_keys",
]
