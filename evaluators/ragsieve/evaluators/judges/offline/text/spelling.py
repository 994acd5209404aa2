"""Misspellings in what a person typed: a letter dropped, doubled or swapped in a word that is
no English or Spanish word ("faud", "appply", "shold", "waht").

A word is *unknown* when pyspellchecker's English and Spanish word lists do not hold it (nor its
singular) and the encoder's vocabulary finds it as rare as a word can be; only unknown words are
read as misspellings, so a real word one letter from another ("plan" / "plane", "copay" /
"copy", "booth" / "both") never is. Names are the caller's business (never pass one).
"""

from __future__ import annotations

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


__all__ = ["MIN_LEN", "deletions", "misspells", "swaps", "unknown_word"]
