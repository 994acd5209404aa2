"""A value the context gives as another kind than the claim gives it.

"You are refunded within 15 business days", where the context says "Refunds arrive within 5
business days" and writes 15 only in "replies within 15 minutes": every check that looks for 15
finds it. A number is bound to what it counts as well as to what it belongs to. A claim's value
is in conflict with its kind when:

- the claim says what its number counts (the words after it, a currency, a percent);
- every unit of the context that gives the number says what it counts, and none says what the
  claim says (15 is given only as minutes);
- a unit gives the claim's kind with another number (5 business days), and that unit is about
  the claim's attribute: it holds a content word of the claim that no unit giving the number
  holds ("refund"); or, with no such unit, the claim counts the number in one unit of a
  dimension and the context only in another unit of it (15 days where it says 15 minutes:
  another duration, whatever it is about).

A number is bound to the words around it too (:func:`find_clause_conflict`): given as the
claim's kind only in clauses that share none of the claim's words, while a clause sharing most
of them gives another amount ("report a burglary to the police within 30 days" where 30 days is
when theft cover starts and the police must hear within 30 hours).

Conservative by construction: a number the context also gives bare (a table cell among them: its
kind is its column, which the entity rule reads), in words or as a year, or a kind the context
never gives with another number for the claim's attribute, says nothing here; the other checks
judge the claim.
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
from ragsieve.evaluators.judges.offline.text.terms import (
    NUMBER_PATTERN,
    key,
    number_values,
    values_of,
)
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, fold, sentences

KIND_WORDS = 2  # "15 business days": the words after a number that say what it counts
# units of one dimension (keys as ``key`` gives them, abbreviations mapped): "15 days" where the
# context gives 15 only as minutes is another duration, whatever it is about
_UNIT = {
    **{k: k for k in ("<s>", "<min>", "<h>", "<day>", "<wk>", "<mo>", "<yr>")},
    **{"sec": "<s>", "secs": "<s>", "min": "<min>", "mins": "<min>", "h": "<h>", "hr": "<h>"},
    **{"hrs": "<h>", "d": "<day>", "wk": "<wk>", "wks": "<wk>", "mo": "<mo>", "yr": "<yr>"},
    **{"yrs": "<yr>", "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb"},
}
_DIMENSION = {u: "time" for u in ("<s>", "<min>", "<h>", "<day>", "<wk>", "<mo>", "<yr>")} | {
    u: "data" for u in ("kb", "mb", "gb", "tb")
}
_AFTER = re.compile(r"[\s/-]*(?:per\s+|a\s+|an\s+)?([^\W\d_][\w'-]*)")
_SIGNS = ("<money>", "<pct>")


@dataclass(frozen=True, slots=True)
class KindConflict:
    """``value`` is given as ``given`` (another kind) or for ``given`` (another attribute) while
    the claim gives it as or for ``claimed``; the context gives ``claimed`` ``claimed_values``."""

    value: str
    given: str
    claimed: str
    claimed_values: tuple[str, ...]
    as_kind: bool = True  # False: the same kind, given for another attribute

    @property
    def reason(self) -> str:
        """ "15 is given as minutes, the claim gives business days; business days: 5", or "1 is
        given for unlocking, the claim gives it for parking; parking: 5"."""
        theirs = (
            f"; {self.claimed}: {', '.join(self.claimed_values)}" if self.claimed_values else ""
        )
        if self.as_kind:
            said = f"is given as {self.given}, the claim gives {self.claimed}"
        else:
            said = f"is given for {self.given}, the claim gives it for {self.claimed}"
        return f"{self.value} {said}{theirs}"


def _words_after(text: str, end: int) -> list[str]:
    """Up to ``KIND_WORDS`` content words right after a number, as written."""
    out: list[str] = []
    pos = end
    while len(out) < KIND_WORDS:
        m = _AFTER.match(text, pos)
        if m is None or fold(m.group(1)) in STOPWORDS:
            break
        out.append(m.group(1))
        pos = m.end()
    return out


def _kinds_of(text: str) -> dict[str, tuple[set[str], str]]:
    """Each digit value of ``text`` -> (the keys of what it counts, the kind as written); a year
    or a bare number holds the marker ``""`` (nothing says what it counts)."""
    out: dict[str, tuple[set[str], str]] = {}
    signs = number_kinds(text)
    for m in NUMBER_PATTERN.finditer(text):
        after = _words_after(text, m.end())
        for value in values_of(m.group().strip()):
            had, shown = out.get(value, (set(), ""))
            marks = {k for k in signs.get(value, ("", frozenset()))[1] if k in _SIGNS}
            found = {key(fold(w)) for w in after} | marks
            if not found or any(k.startswith("<year>") for k in signs.get(value, ("", ()))[1]):
                found = {""}
            written = " ".join(after) or {"<pct>": "%", "<money>": "money"}.get(
                min(marks, default=""), ""
            )
            out[value] = (had | found, shown or written)
    return out


def _same_kind(a: set[str], b: set[str]) -> bool:
    """Two kinds agree when a word of one is a word of the other or its abbreviation ("min")."""
    return any(x == y or min(len(x), len(y)) >= 3 and (x.startswith(y) or y.startswith(x))
               for x in a for y in b if x and y)  # fmt: skip


def find_kind_conflict(
    claim: str, question: str, units: list[Unit], context: str
) -> KindConflict | None:
    """The first value of ``claim`` the context gives only as another kind, while it gives the
    claim's kind with another number for the claim's attribute (the module's docstring)."""
    asked = digit_values(question)
    skipped = _skipped(context)
    per_unit = [(u, _kinds_of(u.text)) for u in units]
    content = content_keys(claim)
    for value, (kinds, shown) in _kinds_of(claim).items():
        if "" in kinds or value in asked | skipped:
            continue
        holding = [(u, ks[value]) for u, ks in per_unit if value in ks]
        if not holding or any("" in k or _same_kind(k, kinds) for _, (k, _s) in holding):
            continue  # not given, given bare, or given as the claim's kind somewhere
        attribute = content - kinds - frozenset().union(*(u.scope for u, _ in holding))
        rivals = sorted(
            {
                u.raw.get(v, v)
                for u, ks in per_unit
                if attribute & u.scope
                for v, (k, _s) in ks.items()
                if v != value and "" not in k and _same_kind(k, kinds)
            }
        )
        if rivals or _other_unit(kinds, [k for _, (k, _s) in holding]):
            raw = _claim_raw(claim, value)
            return KindConflict(raw, holding[0][1][1], shown, tuple(rivals[:3]))
    return None


def _other_unit(claimed: set[str], given: list[set[str]]) -> bool:
    """The claim counts its number in one unit of a dimension (days) and every place that gives
    the number counts it in another unit of that dimension (minutes): another quantity."""
    mine = {_UNIT[k] for k in claimed if k in _UNIT}
    if len(mine) != 1:
        return False
    dim = _DIMENSION[next(iter(mine))]
    theirs = [{_UNIT[k] for k in ks if k in _UNIT} for ks in given]
    return all(t and not t & mine and {_DIMENSION[u] for u in t} == {dim} for t in theirs)


def find_attribute_conflict(
    claim: str, question: str, units: list[Unit], context: str
) -> KindConflict | None:
    """The claim's one number, given as the claim's kind but for another attribute in a sentence
    that gives the claim's attribute another number of that kind ("Unlocking costs 1 EUR and
    parking costs a 5 EUR fee": "a 1 EUR fee for parking"), or None.

    The sentence itself tells the two attributes apart, so it binds each number to its own; a
    claim with more numbers, or whose attribute the value's clause names too, says nothing."""
    claimed = _kinds_of(claim)
    if len(claimed) != 1:
        return None
    [(value, (kinds, _))] = claimed.items()
    asked = digit_values(question)
    if "" in kinds or value in asked or value in _skipped(context):
        return None
    per_unit = [(u, _kinds_of(u.text)) for u in units]
    holding = [u for u, ks in per_unit if value in ks]
    if not holding or not all(
        _same_kind(ks[value][0], kinds) for u, ks in per_unit if u in holding
    ):
        return None
    content = content_keys(claim)
    attribute = content - kinds - frozenset().union(*(u.scope for u in holding))
    if not attribute:
        return None
    sents = sentences(context)
    for rival, ks in per_unit:
        theirs = sorted(
            rival.raw.get(v, v)
            for v, (k, _s) in ks.items()
            if v != value and "" not in k and _same_kind(k, kinds)
        )
        if rival in holding or not theirs or not attribute <= rival.scope:
            continue
        for unit in holding:
            own = {k for k in unit.scope - rival.scope - content - kinds if k[:1].isalpha()}
            if own and any(unit.text in s and rival.text in s for s in sents):
                given = _written(unit.text, content | kinds | rival.scope)
                shown = _written(claim, set(), attribute)
                return KindConflict(_claim_raw(claim, value), given, shown, tuple(theirs), False)
    return None


def find_clause_conflict(
    claim: str, question: str, units: list[Unit], context: str
) -> KindConflict | None:
    """The claim's one number, given as the claim's kind only in clauses that share none of the
    claim's words, while a clause that shares most of them, and the word the number depends on,
    gives that quantity another amount ("You must report a burglary to the police within 30
    days": 30 days only in "theft cover starts 30 days after the policy start date", and "a
    burglary must be reported to the police within 30 hours"), or None.

    The words a claim wraps around its number say what the number is about; a number found
    only where none of them are (not in its clause, its sentence or its heading), beside a
    clause about them that gives another amount, is the other clause's number moved, however
    the kinds compare. A clause that shares a word of the claim may be a paraphrase of it, and
    one that lacks the claim's word before the number ("paid" in "claims are paid within 30
    days") may be about another step: nothing is said then. One number as written ("1,000":
    1 or 1000) is one number."""
    found = list(NUMBER_PATTERN.finditer(claim))
    claimed = _kinds_of(claim)
    if len(found) != 1 or not claimed:
        return None
    readings = set(claimed)
    kinds, shown = next(iter(claimed.values()))
    skipped = _skipped(context) | digit_values(question)
    if "" in kinds or readings & skipped:
        return None
    content = content_keys(claim) - kinds
    depends = _depends(claim[: found[0].start()], kinds)
    per_unit = [(u, _kinds_of(u.text)) for u in units]
    holding = [
        u for u, ks in per_unit if any(v in ks and _same_kind(ks[v][0], kinds) for v in readings)
    ]
    if len(content) < 2 or not depends or not holding or any(content & _around(u) for u in holding):
        return None
    by_share = sorted(per_unit, key=lambda uk: -len(content & content_keys(uk[0].text)))
    for rival, ks in by_share:  # the clause about most of the claim first
        shared = content & content_keys(rival.text)
        amounts = [
            rival.raw.get(v, v) + " " + s
            for v, (k, s) in ks.items()
            if _amount(v, k, readings, kinds)
        ]
        if 2 * len(shared) > len(content) and depends in _around(rival) and amounts:
            given = _attribute(holding[0].text, readings, content | kinds)
            said = _written(claim, set(), shared)
            raw = found[0].group().strip()
            unit = (
                shown.split()[:1]
                if key(fold(shown.split()[0] if shown else "x"))[:1] == "<"
                else shown.split()
            )
            return KindConflict(
                " ".join([raw, *unit]), given, said, tuple(dict.fromkeys(amounts))[:3], False
            )
    return None


def _attribute(text: str, readings: set[str], skip: set[str]) -> str:
    """Up to two content words of ``text`` nearest before its number that reads as one of
    ``readings``, as written: what the clause gives the number for ("points expire")."""
    for m in NUMBER_PATTERN.finditer(text):
        if readings & set(values_of(m.group().strip())):
            words = [w for w in re.findall(r"[^\W\d_][\w'-]*", text[: m.start()])
                     if fold(w) not in STOPWORDS and key(fold(w)) not in skip]  # fmt: skip
            return " ".join(words[-2:]) or _written(text, skip)
    return _written(text, skip)


def _around(unit: Unit) -> set[str]:
    """The content keys of a unit, its heading and its sentence: the words a number sits in."""
    return sentence_keys(unit) | content_keys(unit.text)


def _depends(before: str, kinds: set[str]) -> str:
    """The key of the content word nearest before a claim's number: the word it depends on
    ("paid" in "claims are paid within 30 days"), or ""."""
    for w in reversed(re.findall(r"[^\W\d_][\w'-]*", before)):
        k = key(fold(w))
        if fold(w) not in STOPWORDS and k not in kinds:
            return k
    return ""


def _amount(v: str, kinds: set[str], readings: set[str], claimed: set[str]) -> bool:
    """``v`` counted as ``kinds`` is another amount of the quantity ``value`` counted as
    ``claimed`` is: another number of the same kind, or a number of another unit of its
    dimension (30 hours beside 30 days)."""
    if "" in kinds:
        return False
    if _same_kind(kinds, claimed):
        return v not in readings
    return _other_unit(claimed, [kinds])


def _skipped(context: str) -> set[str]:
    """Values the context also writes in words or bare: nothing binds them."""
    in_words = {
        v for written, vs in number_values(context).items() if not written[0].isdigit() for v in vs
    }
    return in_words | {v for v, (kinds, _) in _kinds_of(context).items() if "" in kinds}


def _written(text: str, skip: set[str], only: set[str] | None = None) -> str:
    """Up to two content words of ``text`` as written: those whose key is not in ``skip`` (and
    is in ``only``, when given)."""
    out: list[str] = []
    for w in re.findall(r"[^\W\d_][\w'-]*", text):
        k, f = key(fold(w)), fold(w)
        if f in STOPWORDS or k in skip or (only is not None and k not in only) or w in out:
            continue
        out.append(w)
    return " ".join(out[:2])


def _claim_raw(claim: str, value: str) -> str:
    """``value`` as the claim writes it."""
    for m in NUMBER_PATTERN.finditer(claim):
        if value in values_of(m.group().strip()):
            return m.group().strip()
    return value


__all__ = [
    "KindConflict",
    "find_attribute_conflict",
    "find_clause_conflict",
    "find_kind_conflict",
]
