"""A rate bound to what it is per.

"€8 per visit" and "€8 per month" are the same amount of money and different prices: a rate is
bound to its period and to what it counts by ("per user", "por bolsa"). A claim's number is in
conflict with its rate when:

- the claim gives its number per something ("per month", "al mes", "monthly", "a night");
- every place the context writes that number with the claim's sign (money, percent, or
  neither and the same word after it) gives it per something too, never bare;
- and every such place gives it per another period of time ("per week" where the claim says
  "per month"; "al día" where it says "al mes"), or per something the claim's divisors do not
  name at all, one of the two being a period ("per wash" where the claim says "per month").

A table's row label or column header that says what its numbers are per ("Requests per minute
| 60 | 600") gives each bare number under it that rate: "60 requests per minute".

A claim that leaves out a divisor ("€8 per month" for "€8 per user per month"), adds one
("$12 per user per month" for "$12 per month, per user"), orders them otherwise ("al mes por
usuario" for "por usuario y mes") or words them otherwise ("per seat" for "per user", "/mo"
for "per month") says nothing here: the divisors a sentence gives are not always read whole
(a comma, "y", "and" end them), so a divisor shared is enough to stay silent (an independent
review found each of these flagged when divisors were compared as sets).
"""

from __future__ import annotations

import re

from ragsieve.evaluators.judges.offline.binding.kind import KindConflict
from ragsieve.evaluators.judges.offline.binding.tables import grids
from ragsieve.evaluators.judges.offline.binding.units import digit_values
from ragsieve.evaluators.judges.offline.text.terms import NUMBER_PATTERN, key, values_of
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, fold

MAX_DIVISORS = 3
_MONEY = re.compile(
    r"\s*(?:[$€£]|(?:usd|eur|euros?|gbp|dollars?|d[oó]lares|pounds?|libras?)\b)", re.IGNORECASE
)
_MONEY_BEFORE = re.compile(r"(?:[$€£]|\b(?:usd|eur|gbp))\s*$", re.IGNORECASE)
_PCT = re.compile(r"\s*(?:%|percent\b|per cent\b|por ciento\b)", re.IGNORECASE)
_PER_WORDS = r"(?:per|each|every|for each|por|al|a la|cada|an?)"  # what a divisor follows
_PER = re.compile(rf"\s*(?:/\s*|{_PER_WORDS}\s+)([^\W\d_][\w'-]*)", re.IGNORECASE)
_WORD = re.compile(r"\s+([^\W\d_][\w'-]*)")
# a period written as an adjective after the number ("€8 monthly", "12 € mensuales")
_PERIODIC = {
    **dict.fromkeys(("monthly", "mensual", "mensuales"), "<mo>"),
    **dict.fromkeys(("yearly", "annual", "annually", "anual", "anuales", "annum"), "<yr>"),
    **dict.fromkeys(("weekly", "semanal", "semanales"), "<wk>"),
    **dict.fromkeys(("daily", "diario", "diaria", "diarios", "diarias"), "<day>"),
}
# abbreviated periods after a slash or "per" ("$12/mo", "100 requests/min")
_SHORT = {"mo": "<mo>", "mos": "<mo>", "yr": "<yr>", "yrs": "<yr>", "wk": "<wk>", "hr": "<h>"}
_SHORT |= {"h": "<h>", "min": "<min>", "mins": "<min>", "sec": "<s>", "secs": "<s>"}


def _rate(text: str, start: int, end: int) -> tuple[str, frozenset[str]]:
    """The number at ``text[start:end]``: its sign (``<money>``, ``<pct>``, or the key of the
    word after it) and the keys of what it is per (empty: given bare)."""
    sign, pos = "", end
    if _MONEY_BEFORE.search(text[max(0, start - 5) : start]):
        sign = "<money>"
    if m := _MONEY.match(text, pos):
        sign, pos = "<money>", m.end()
    elif m := _PCT.match(text, pos):
        sign, pos = "<pct>", m.end()
    elif not sign and (m := _WORD.match(text, pos)) and fold(m.group(1)) not in STOPWORDS:
        sign, pos = key(fold(m.group(1))), m.end()
    divisors: set[str] = set()
    while len(divisors) < MAX_DIVISORS:
        m = _PER.match(text, pos)
        word = fold(m.group(1)) if m else ""
        article = m is not None and m.group().strip().lower().split()[0] in ("a", "an")
        if m is None or word in STOPWORDS or article and not key(word).startswith("<"):
            adjective = _WORD.match(text, pos)
            if adjective and fold(adjective.group(1)) in _PERIODIC:
                divisors.add(_PERIODIC[fold(adjective.group(1))])
            break
        divisors.add(_PERIODIC.get(word) or _SHORT.get(word) or key(word))
        pos = m.end()
    return sign, frozenset(divisors)


def _period(divisors: frozenset[str]) -> frozenset[str]:
    return frozenset(d for d in divisors if d[:1] == "<")


def _differs(claimed: frozenset[str], given: frozenset[str]) -> bool:
    """Both name a period of time, and another one; or they share no divisor at all and one
    of them names a period ("per wash" / "per month")."""
    mine, theirs = _period(claimed), _period(given)
    if mine and theirs:
        return mine != theirs
    return not claimed & given and bool(mine or theirs)


def find_rate_conflict(claim: str, question: str, context: str) -> KindConflict | None:
    """The claim's one number, given per something the context never gives it per (the
    module's docstring), or None."""
    found = list(NUMBER_PATTERN.finditer(claim))
    if len(found) != 1:
        return None
    readings = set(values_of(found[0].group().strip()))
    if readings & digit_values(question):
        return None
    sign, claimed = _rate(claim, found[0].start(), found[0].end())
    if not claimed or not sign:
        return None
    given: list[tuple[frozenset[str], str]] = []
    context = "\n".join([context, *_cell_rates(context)])
    for m in NUMBER_PATTERN.finditer(context):
        if not readings & set(values_of(m.group().strip())):
            continue
        theirs, divisors = _rate(context, m.start(), m.end())
        if theirs != sign:
            continue
        if not divisors or not _differs(claimed, divisors):
            return None
        given.append((divisors, _written(context, m.end())))
    if not given:
        return None
    return KindConflict(found[0].group().strip(), given[0][1], _written(claim, found[0].end()), ())


def _cell_rates(context: str) -> list[str]:
    """Each bare number of a table cell whose row label or column header says what it is per,
    written with that label as the rate it gives ("60 Requests per minute.")."""
    out: list[str] = []
    for grid in grids([context]):
        width = len(grid[0])
        for row in grid[1:]:
            if len(row) != width:
                continue
            for cell, header in zip(row[1:], grid[0][1:], strict=True):
                found = NUMBER_PATTERN.fullmatch(cell.strip())
                if found is None:
                    continue  # not bare: the cell's own words say what it counts
                out += [f"{cell} {label}." for label in (row[0], header) if _per(label)]
    return out


def _per(label: str) -> bool:
    """``label`` names what it counts and the period it counts per ("Requests per minute")."""
    sign, divisors = _rate(" " + label, 0, 0)
    return bool(sign) and any(d[:1] == "<" for d in divisors)


# where the words saying what a number is per begin ("/", "per ...", "monthly")
_WRITTEN = re.compile(
    rf"(?:/|\b(?:{_PER_WORDS}|{'|'.join(sorted(_PERIODIC, key=len, reverse=True))})\b)[^.;,|\n]*",
    re.IGNORECASE,
)


def _written(text: str, end: int) -> str:
    """What a number is per, as written after it ("per visit", "al mes")."""
    rest = text[end : end + 60]
    m = _WRITTEN.search(rest)
    return m.group().strip() if m else rest.strip()


__all__ = ["find_rate_conflict"]
