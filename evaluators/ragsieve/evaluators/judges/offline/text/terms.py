"""Finding one text's terms in another: exact stems, misspellings, values written the Spanish or
the English way, and content words across the two languages.

Every offline judge asks the same question many times: "does this word of the claim (or of the
question) occur in that text?". :class:`TermIndex` answers it for one text, split in sentences:

1. the word's *key* (its canonical form: a month, weekday, unit or currency name in either
   language becomes one token; otherwise its crude stem) is in the text → strength 1;
2. a misspelling: the key is within a small edit distance of a key of the text (rapidfuzz's
   normalised Indel similarity, words of five letters or more) → strength 0.9;
3. across languages, when the caller asks for it: the embedded multilingual encoder places the
   word within ``XLING_COSINE`` of a word of the text → strength from the cosine.

Numbers are compared by value (:func:`number_values`): "711,988", "711 988" and "711.988" are one
number, "56,2 %" and "56.2%" another, "seis" and "six" are 6.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from rapidfuzz import fuzz, process

from ragsieve.evaluators.judges.offline.text.spelling import MIN_LEN, deletions, swaps, unknown_word
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, fold, stem, words
from ragsieve.evaluators.tools.embeddings import embed

FUZZY_MIN_LEN = 5  # shorter words are too easy to confuse ("cat"/"car")
FUZZY_CUTOFF = 84.0  # normalised Indel similarity (0-100) that counts as a misspelling
FUZZY_STRENGTH = 0.9
XLING_COSINE = 0.55  # word-to-word cosine that counts as a translation
XLING_FULL = 0.8  # ... and at or above this, a full match

# one canonical token per month, weekday, unit and currency, whatever the language
_CANON_GROUPS = {
    "<m01>": "january jan enero ene",
    "<m02>": "february feb febrero",
    "<m03>": "march mar marzo",
    "<m04>": "april apr abril abr",
    "<m05>": "may mayo",
    "<m06>": "june jun junio",
    "<m07>": "july jul julio",
    "<m08>": "august aug agosto ago",
    "<m09>": "september sep sept septiembre setiembre",
    "<m10>": "october oct octubre",
    "<m11>": "november nov noviembre",
    "<m12>": "december dec diciembre dic",
    "<d1>": "monday mondays lunes",
    "<d2>": "tuesday tuesdays martes",
    "<d3>": "wednesday wednesdays miercoles",
    "<d4>": "thursday thursdays jueves",
    "<d5>": "friday fridays viernes",
    "<d6>": "saturday saturdays sabado sabados",
    "<d7>": "sunday sundays domingo domingos",
    "<km>": "km kms kilometre kilometres kilometer kilometers kilometro kilometros",
    "<m>": "metre metres meter meters metro metros",
    "<cm>": "cm centimetre centimetres centimeter centimeters centimetro centimetros",
    "<mi>": "mile miles milla millas",
    "<kg>": "kg kilogram kilograms kilogramo kilogramos kilo kilos",
    "<g>": "gram grams gramo gramos",
    "<t>": "tonne tonnes ton tons tonelada toneladas",
    "<l>": "litre litres liter liters litro litros",
    "<ha>": "hectare hectares hectarea hectareas",
    "<pct>": "percent per_cent porcentaje porciento",
    "<usd>": "dollar dollars dolar dolares usd",
    "<eur>": "euro euros eur",
    "<gbp>": "pound pounds libra libras gbp sterling",
    "<s>": "second seconds segundo segundos",
    "<min>": "minute minutes minuto minutos",
    "<h>": "hour hours hora horas",
    "<day>": "day days dia dias",
    "<wk>": "week weeks semana semanas",
    "<mo>": "month months mes meses",
    "<yr>": "year years ano anos",
    "<century>": "century centuries siglo siglos",
}
CANON = {w: tok for tok, ws in _CANON_GROUPS.items() for w in ws.split()}
_SYMBOLS = {"%": " percent ", "$": " dollar ", "€": " euro ", "£": " pound "}
_NUMBER_WORDS = {
    **dict.fromkeys(("zero", "cero"), 0),
    **dict.fromkeys(("two", "dos"), 2),
    **dict.fromkeys(("three", "tres"), 3),
    **dict.fromkeys(("four", "cuatro"), 4),
    **dict.fromkeys(("five", "cinco"), 5),
    **dict.fromkeys(("six", "seis"), 6),
    **dict.fromkeys(("seven", "siete"), 7),
    **dict.fromkeys(("eight", "ocho"), 8),
    **dict.fromkeys(("nine", "nueve"), 9),
    **dict.fromkeys(("ten", "diez"), 10),
    **dict.fromkeys(("eleven", "once"), 11),
    **dict.fromkeys(("twelve", "doce"), 12),
    **dict.fromkeys(("thirteen", "trece"), 13),
    **dict.fromkeys(("fourteen", "catorce"), 14),
    **dict.fromkeys(("fifteen", "quince"), 15),
    **dict.fromkeys(("sixteen", "dieciseis"), 16),
    **dict.fromkeys(("seventeen", "diecisiete"), 17),
    **dict.fromkeys(("eighteen", "dieciocho"), 18),
    **dict.fromkeys(("nineteen", "diecinueve"), 19),
    **dict.fromkeys(("twenty", "veinte"), 20),
    **dict.fromkeys(("thirty", "treinta"), 30),
    **dict.fromkeys(("forty", "cuarenta"), 40),
    **dict.fromkeys(("fifty", "cincuenta"), 50),
    **dict.fromkeys(("sixty", "sesenta"), 60),
    **dict.fromkeys(("seventy", "setenta"), 70),
    **dict.fromkeys(("eighty", "ochenta"), 80),
    **dict.fromkeys(("ninety", "noventa"), 90),
    **dict.fromkeys(("hundred", "cien", "ciento"), 100),
    **dict.fromkeys(("thousand", "mil"), 1000),
    **dict.fromkeys(("million", "millions", "millon", "millones"), 1_000_000),
    **dict.fromkeys(("billion", "billions"), 1_000_000_000),
    **dict.fromkeys(("first", "primero", "primera", "primer"), 1),
    **dict.fromkeys(("second", "segundo", "segunda"), 2),
    **dict.fromkeys(("third", "tercero", "tercera", "tercer"), 3),
    **dict.fromkeys(("twice", "double", "doble"), 2),
}
# ordinals that open a step or a point ("First, preheat …", "Third, …") are discourse as often as
# values; "once" and "mil" are words in English and Spanish
_AMBIGUOUS_NUMBER_WORDS = frozenset(
    {"first", "primero", "primera", "primer", "second", "segundo", "segunda"}
    | {"third", "tercero", "tercera", "tercer", "once", "mil"}
)
# digits with group separators (comma, dot, space, thin space) and an optional decimal part;
# "24/7", "24x7" and "24/7/365" say all day, every day: the 24 hours a day a context writes, not
# a 7 (only those exact tokens: "24/7/2023" is a date, "24x36" a size)
_ALL_DAY = r"(?<=(?<!\d)24/)7(?![\d/])|(?<=(?<!\d)24/)7(?=/365(?!\d))|(?<=(?<!\d)24/7/)365(?!\d)"
_NUM = re.compile(
    r"(?<![\w.,])\d{1,3}(?:[ \u00a0\u202f.,]\d{3})+(?:[.,]\d+)?(?![\w])"
    rf"|(?<!\d)(?!{_ALL_DAY}|(?<=(?<!\d)24x)7(?!\d))\d+(?:[.,]\d+)?"
)


def _values(raw: str) -> set[str]:
    """The numbers ``raw`` may mean, as canonical strings: '1,500' -> {'1500', '1.5'}."""
    raw = re.sub(r"[ \u00a0\u202f]", "", raw)  # a space only ever groups thousands
    m = re.fullmatch(r"(\d{1,3}(?:([.,])\d{3})+)(?:([.,])(\d+))?", raw)
    if m is None:
        out = {_norm(raw.replace(",", "."))}
        short = re.fullmatch(r"(\d{1,2}),(\d{1,2})", raw)
        if short:  # "0,1" is a decimal in Spanish and a list in "{0,1}"
            out.update(_norm(g) for g in short.groups())
        return {v for v in out if v}
    whole, sep, dec_sep, dec = m.groups()
    digits = re.sub(r"[.,]", "", whole)
    if dec is None:  # "711,988" / "711.988": thousands; a single group may be a decimal
        out = {_norm(digits)}
        if whole.count(sep) == 1:
            out.add(_norm(whole.replace(",", ".")))
        return {v for v in out if v}
    return {v for v in (_norm(f"{digits}.{dec}" if dec_sep != sep else digits + dec),) if v}


def _norm(num: str) -> str:
    try:
        value = float(num)
    except ValueError:
        return ""
    if value.is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


NUMBER_PATTERN = _NUM  # a number written in digits, with its group separators
values_of = _values  # the canonical values one written number may mean


def number_values(text: str) -> dict[str, set[str]]:
    """Each number written in ``text`` (as written) → the values it may mean.

    Number words count in both languages ("seis", "six-time"); "one"/"a" and words that are
    also ordinary words ("second", "once", "mil") do not, so that prose is not read as values.
    """
    out: dict[str, set[str]] = {}
    for m in _NUM.finditer(text):
        out[m.group().strip()] = _values(m.group().strip())
    _years(text, out)
    for w in words(text):
        if w in _NUMBER_WORDS and w not in _AMBIGUOUS_NUMBER_WORDS:
            out[w] = {str(_NUMBER_WORDS[w])}
    for part in re.findall(r"\b([a-z]+)-(?:time|fold|veces)\b", fold(text)):
        if part in _NUMBER_WORDS:
            out[part] = {str(_NUMBER_WORDS[part])}
    return out


# "1788–92": the second year written short; "the 1940s": a decade, not the year 1940
_YEAR_RANGE = re.compile(r"(?<![\d.,])(1[5-9]|20)(\d\d)\s*[–-]\s*(\d\d)(?![\d.,]?\d)")
_DECADE = re.compile(r"(?<![\d.,])((?:1[5-9]|20)\d0)['’]?s\b")
_YEAR = re.compile(r"(?:1[5-9]|20)\d\d")


def _years(text: str, out: dict[str, set[str]]) -> None:
    """A short second year of a range means its century's year; a decade is read whole."""
    for m in _YEAR_RANGE.finditer(text):
        if int(m.group(3)) > int(m.group(2)):
            out.setdefault(m.group(3), set()).add(m.group(1) + m.group(3))
    for m in _DECADE.finditer(text):
        out[m.group()] = {m.group(1) + "s"}
        if not re.search(rf"(?<![\d.,]){m.group(1)}(?![\d'’s])", text):
            out.pop(m.group(1), None)


def decades(values: set[str]) -> set[str]:
    """The decade of every year among ``values`` ("1946" -> "1940s"): a context that gives a
    year supports a claim of its decade (not the other way round)."""
    return {v[:3] + "0s" for v in values if _YEAR.fullmatch(v)}


def all_values(text: str) -> set[str]:
    """Every value any number of ``text`` may mean."""
    return set().union(*number_values(text).values()) if text else set()


def key(word: str) -> str:
    """The comparison key of a folded word: its canonical token or its stem."""
    return CANON.get(word) or stem(word)


def tokens(text: str) -> list[str]:
    """Folded words with currency and percent signs spelt out ('$5' -> 'dollar', '5')."""
    for sym, name in _SYMBOLS.items():
        if sym in text:
            text = text.replace(sym, name)
    return words(text)


# how a people's (or a language's) name is made from its place's: China / Chinese, Japan /
# Japanese, Italy / Italian, Korea / Korean, Perú / peruano, México / mexicano, España / español
# (not "-ana", "-ina": "Indiana", "Paulina", "Carolina" are names of their own)
_PEOPLE_ENDINGS = ("ese", "ian", "ean", "an", "ano", "anos", "ol")
_PLACE_ENDINGS = ("ia", "a", "o", "y", "e")
KIN_ROOT_MIN = 4  # a shorter root ("rom" of "Roman") names nothing for sure
KIN_STRENGTH = 0.8  # a place for its people is a near word, not the word itself


@lru_cache(maxsize=50_000)
def _kin_roots(word: str) -> tuple[frozenset[str], frozenset[str]]:
    """``(as a people, as a place)``: a folded word's root read as a people's name (without its
    ending) and as a place's (with and without its final vowel)."""
    people = {word[: -len(e)] for e in _PEOPLE_ENDINGS if word.endswith(e)}
    place = {word, *(word[: -len(e)] for e in _PLACE_ENDINGS if word.endswith(e))}
    return (
        frozenset(r for r in people if len(r) >= KIN_ROOT_MIN),
        frozenset(r for r in place if len(r) >= KIN_ROOT_MIN),
    )


def kin(a: str, b: str) -> bool:
    """Two folded words name a place and its people ("chinese" / "china", "mexico" /
    "mexicano"); two places or two peoples are never kin ("romania" / "roman")."""
    a_people, a_place = _kin_roots(a)
    b_people, b_place = _kin_roots(b)
    return a != b and bool(a_people & b_place or a_place & b_people)


@dataclass(frozen=True, slots=True)
class Match:
    """How strongly a word was found, where, and how."""

    strength: float
    sentences: frozenset[int]
    via: str  # exact | typo | translation | near (a same-language near word) | none
    found: str = ""


NO_MATCH = Match(0.0, frozenset(), "none")


@lru_cache(maxsize=100_000)
def _is_content(word: str) -> bool:
    return word not in STOPWORDS and (len(word) > 1 or word.isdigit())


def _swap_match(k: str, keys: Mapping[str, object]) -> str | None:
    """A key of ``keys`` that ``k`` becomes with two neighbouring letters swapped."""
    return next((swapped for swapped in swaps(k) if swapped in keys), None)


class TermIndex:
    """The words of a text (in sentences), searchable by exact key, misspelling or translation."""

    def __init__(self, sentences: list[str], *, cross_lingual: bool = False) -> None:
        self.sentences = sentences
        self.cross_lingual = cross_lingual
        self.where: dict[str, set[int]] = {}
        self.example: dict[str, str] = {}  # key -> one word of the text with that key
        for i, sent in enumerate(sentences):
            for w in tokens(sent):
                if not _is_content(w):
                    continue
                k = key(w)
                self.where.setdefault(k, set()).add(i)
                self.example.setdefault(k, w)
        self._fuzzy_keys = [k for k in self.where if len(k) >= FUZZY_MIN_LEN and k.isalpha()]
        self._dropped: dict[str, str] | None = None  # a word less one letter -> its key
        self._xling: tuple[list[str], np.ndarray] | None = None

    def __contains__(self, word: str) -> bool:
        return key(word) in self.where

    def keys(self) -> set[str]:
        """Every key of the text."""
        return set(self.where)

    def find(
        self,
        word: str,
        *,
        translate: bool | None = None,
        transposed: bool = False,
        indel: bool | None = None,
    ) -> Match:
        """Where ``word`` (folded) occurs in the text, exactly, misspelt or translated;
        ``transposed`` also reads two swapped neighbouring letters as a misspelling ("Heniz",
        "paltes"), which the similarity ratio scores too low in short words: for a person's
        question, not for a claim to check (real words differ so: "trial" / "trail"); and,
        unless ``indel`` is False (a name: "Lugo" is not "luego"), a letter dropped or doubled
        in an unknown word ("faud", "appply")."""
        k = key(word)
        if k in self.where:
            return Match(1.0, frozenset(self.where[k]), "exact", self.example[k])
        if len(word) >= FUZZY_MIN_LEN and word.isalpha() and self._fuzzy_keys:
            best = process.extractOne(
                k, self._fuzzy_keys, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF
            )
            if best is not None:
                return Match(FUZZY_STRENGTH, frozenset(self.where[best[0]]), "typo", best[0])
            swapped = _swap_match(k, self.where) if transposed else None
            if swapped is not None:
                return Match(FUZZY_STRENGTH, frozenset(self.where[swapped]), "typo", swapped)
        if (transposed if indel is None else indel) and (near := self._indel_match(word)):
            return Match(FUZZY_STRENGTH, frozenset(self.where[near]), "typo", near)
        if (self.cross_lingual if translate is None else translate) and word.isalpha():
            return self._translated(word)
        return NO_MATCH

    def _indel_match(self, word: str) -> str | None:
        """The key of a word of the text that ``word`` misspells by one letter dropped or
        doubled, for an unknown word (:func:`unknown_word`)."""
        if not unknown_word(word):
            return None
        if self._dropped is None:
            self._dropped = {
                d: k
                for k, w in self.example.items()
                if len(w) > MIN_LEN and w.isalpha()
                for d in deletions(w)
            }
        if word in self._dropped:  # "faud" for "fraud"
            return self._dropped[word]
        if len(word) > MIN_LEN:  # "appply" for "apply"
            for d in deletions(word):
                if key(d) in self.where:
                    return key(d)
        return None

    def find_kin(self, word: str) -> Match:
        """``word`` (folded) found as its place or its people: "Chinese" where the text writes
        "China", "Mexico" where it writes "mexicano" (:func:`kin`)."""
        for k, example in self.example.items():
            if kin(word, example):
                return Match(KIN_STRENGTH, frozenset(self.where[k]), "kin", example)
        return NO_MATCH

    def _translated(self, word: str) -> Match:
        if self._xling is None:
            ks = [k for k in self.where if k.isalpha() or k.startswith("<")]
            vecs = embed([self.example[k] for k in ks]) if ks else np.zeros((0, 512))
            self._xling = (ks, vecs)
        ks, vecs = self._xling
        if not ks:
            return NO_MATCH
        sims = vecs @ embed([word])[0]
        j = int(np.argmax(sims))
        cos = float(sims[j])
        if cos < XLING_COSINE:
            return NO_MATCH
        strength = min(1.0, 0.6 + 0.4 * (cos - XLING_COSINE) / (XLING_FULL - XLING_COSINE))
        return Match(round(strength, 4), frozenset(self.where[ks[j]]), "translation", ks[j])


__all__ = [
    "CANON",
    "Match",
    "NO_MATCH",
    "NUMBER_PATTERN",
    "TermIndex",
    "all_values",
    "decades",
    "key",
    "number_values",
    "tokens",
    "values_of",
]
