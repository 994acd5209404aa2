"""How a word may be written: misspelt in what a person typed (a letter dropped, doubled or
swapped in a word that is no English or Spanish word: "faud", "appply", "shold", "waht"), or
shortened to its initials (an acronym: "US" for "United States", "SSO" for "single sign-on").

A word is *unknown* when pyspellchecker's English and Spanish word lists do not hold it (nor its
singular) and the encoder's vocabulary finds it as rare as a word can be; only unknown words are
read as misspellings, so a real word one letter from another ("plan" / "plane", "copay" /
"copy", "booth" / "both") never is. Names are the caller's business (never pass one).
"""

from __future__ import annotations

import re
from functools import lru_cache

from ragsieve.evaluators.judges.offline.text.text import known_word, rarity

# a letter dropped or doubled ("faud", "appply", "aply") is a misspelling only in a word that
# is no English or Spanish word (a real word that differs so, "plan" / "plane", "copay" / "copy",
# "booth" / "both", is not) and as rare as an unknown word, four letters or more; never in a name
MIN_RARITY = 2.9
MIN_LEN = 4
ADDED_LETTER_MIN_LEN = 6  # a word misspelt with a letter added: only of a word this long


def unknown_word(word: str) -> bool:
    """True for a folded word no word list or vocabulary knows: likely a misspelling."""
    return (
        len(word) >= MIN_LEN
        and word.isalpha()
        and rarity(word) >= MIN_RARITY
        and not known_word(word)
    )


def deletions(word: str) -> set[str]:
    """``word`` with one letter left out, each way."""
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def swaps(word: str) -> list[str]:
    """``word`` with two different neighbouring letters swapped, each way, left to right."""
    return [
        word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        for i in range(len(word) - 1)
        if word[i] != word[i + 1]
    ]


@lru_cache(maxsize=8)
def _dropped_from(known: frozenset[str]) -> frozenset[str]:
    return frozenset(d for w in known if len(w) > MIN_LEN for d in deletions(w))


def misspells(word: str, known: frozenset[str]) -> bool:
    """``word``, an unknown word (:func:`unknown_word`), is a word of ``known`` with a letter
    dropped, two neighbours swapped, or a letter added to a word of six letters or more:
    "shold", "waht", "myeslf", "shouuld"."""
    if not unknown_word(word):
        return False
    added = {d for d in deletions(word) if len(d) >= ADDED_LETTER_MIN_LEN}
    return bool((added | set(swaps(word))) & known) or word in _dropped_from(known)


# -- acronyms ---------------------------------------------------------------------------------

# "United States" -> US, "Department of Education" -> DE and DOE, "Seguridad Social" -> SS
_NAME_RUN = re.compile(
    r"[A-ZÁÉÍÓÚÑ][\w'-]*(?:\s+(?:(?:of|the|for|and|de|del|la|las|los|y)\s+)*[A-ZÁÉÍÓÚÑ][\w'-]*)+"
)
_LINK_WORDS = frozenset("of the for and de del la las los y".split())
_DOTTED = re.compile(r"\b(?:[A-Z]\.){2,}")  # "U.S.", "E.E.U.U."
# a term of lower-case words ("single sign-on", "multi-factor authentication"): its words run
# without punctuation between them; a hyphenated word gives each part's initial
_TERM_RUN = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*(?:[ \t]+[^\W\d_]+(?:-[^\W\d_]+)*)*")
_WRITTEN = re.compile(r"\b([A-Z]{3,7})s?\b")  # "SSO", "APIs": an acronym as a text writes it
# initials of lower-case words are read from three letters on: two common words side by side
# spell a two-letter acronym too easily ("is the" -> IT, "unlimited storage" -> US)
TERM_ACRONYM_MIN = 3
TERM_ACRONYM_MAX = 7


def _initials(span: list[str]) -> str:
    return "".join(part[0] for w in span for part in w.split("-") if part).upper()


def _term_spans(text: str, stopwords: frozenset[str]) -> list[list[str]]:
    """Every run of two or more words of ``text`` that could be a term: it starts and ends on a
    content word, and only linking words ("of", "and", "de") among its words are stopwords."""
    out: list[list[str]] = []
    for run in _TERM_RUN.findall(text):
        words_ = run.split()
        for start, first in enumerate(words_):
            if first.lower() in stopwords:
                continue
            for end in range(start + 1, min(len(words_), start + TERM_ACRONYM_MAX)):
                last = words_[end].lower()
                if last in stopwords and last not in _LINK_WORDS:
                    break
                if last not in _LINK_WORDS:
                    out.append(words_[start : end + 1])
    return out


def acronyms(text: str) -> frozenset[str]:
    """The acronyms ``text``'s multi-word names may be written as (with and without the
    initials of linking words): an answer's "US" or "DOE" is then a name the text does write
    ("United States", "Department of Education"). Terms of lower-case words are
    :func:`expands`' business."""
    out: set[str] = set()
    for run in _NAME_RUN.findall(text):
        words_ = run.split()
        caps = [i for i, w in enumerate(words_) if w.lower() not in _LINK_WORDS]
        for a, start in enumerate(caps):  # every span that starts and ends on a name word
            for end in caps[a + 1 :]:
                span = words_[start : end + 1]
                out.add("".join(w[0] for w in span if w.lower() not in _LINK_WORDS).upper())
                out.add("".join(w[0] for w in span).upper())
    out.update(m.replace(".", "") for m in _DOTTED.findall(text))  # "U.S." is "US"
    return frozenset(a for a in out if len(a) >= 2)


_LINKS = "|".join(sorted(_LINK_WORDS))


@lru_cache(maxsize=256)
def _expansion(acronym: str) -> re.Pattern[str]:
    """Words whose initials spell ``acronym`` (hyphen parts each give one; a linking word
    between two words may give none): "single sign-on", "terms of service"."""
    sep = rf"(?:-|[ \t]+(?:(?:{_LINKS})[ \t]+)?)"
    body = sep.join(rf"{re.escape(letter)}[^\W\d_]*" for letter in acronym.lower())
    return re.compile(rf"(?<![\w-])(?=({body})(?![\w-]))", re.IGNORECASE)


def expands(acronym: str, text: str, stopwords: frozenset[str]) -> bool:
    """True when ``text`` writes a term of three letters or more whose initials spell
    ``acronym`` ("SSO": "single sign-on"): its words are content words (a hyphen part or a
    linking word aside), so "so she obviously" spells nothing."""
    if not TERM_ACRONYM_MIN <= len(acronym) <= TERM_ACRONYM_MAX or not acronym.isalpha():
        return False
    for m in _expansion(acronym).finditer(text):
        spaced = m.group(1).lower().split()
        if not any(w in stopwords and w not in _LINK_WORDS for w in spaced):
            return True
    return False


def written_acronyms(text: str) -> frozenset[str]:
    """The acronyms ``text`` writes ("SSO", "MFA"; "APIs" as "API"), three letters or more."""
    return frozenset(_WRITTEN.findall(text))


@lru_cache(maxsize=64)
def spelled_out(text: str, written: frozenset[str], stopwords: frozenset[str]) -> frozenset[str]:
    """The words (lower-case, hyphenated words split) of ``text``'s terms whose initials spell
    an acronym of ``written``: "single sign-on" when the context writes "SSO"."""
    if not written:
        return frozenset()
    out: set[str] = set()
    for span in _term_spans(text, stopwords):
        content = [w for w in span if w.lower() not in _LINK_WORDS]
        if _initials(content) in written or _initials(span) in written:
            out.update(p.lower() for w in span for p in w.split("-") if p)
    return frozenset(out)


__all__ = [
    "MIN_LEN",
    "acronyms",
    "deletions",
    "expands",
    "misspells",
    "spelled_out",
    "swaps",
    "unknown_word",
    "written_acronyms",
]
