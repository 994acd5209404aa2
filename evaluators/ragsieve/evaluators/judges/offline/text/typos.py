"""Is a word a slip of the keyboard? For naming things after the words people typed.

:mod:`~ragsieve.evaluators.judges.offline.text.spelling` asks whether a word misspells one of a
given set (the words of the chunks); naming a failure category asks it without such a set: is the
word one slip (two letters swapped, one dropped, one added) away from an English or Spanish word?
Only a word no word list holds is asked, so a name or a domain word ("tallyfox", "webhook") that
is no slip from a word stays a word; :func:`misspelt_among` also reads a slip of a name typed
more often ("tlalyfox") as a typo.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from functools import lru_cache

from ragsieve.evaluators.judges.offline.text.spelling import MIN_LEN, deletions, swaps, unknown_word
from ragsieve.evaluators.judges.offline.text.text import known_word


def _near(word: str) -> set[str]:
    """Every word one slip from ``word``: two neighbours swapped, one letter dropped or added."""
    near = set(swaps(word)) | {d for d in deletions(word) if len(d) >= MIN_LEN}
    near |= {
        word[:i] + ch + word[i:] for i in range(len(word) + 1) for ch in string.ascii_lowercase
    }
    return near


@lru_cache(maxsize=4096)
def misspelt(word: str) -> bool:
    """True for a folded ``word`` that is a slip of a known word: "aplciacion", "clve"."""
    return unknown_word(word) and any(known_word(w) for w in _near(word))


def misspelt_among(word: str, typed: Mapping[str, int]) -> bool:
    """:func:`misspelt`, or a slip of a word typed more often in ``typed`` (word -> times): a
    name no word list holds, "tlalyfox" where "tallyfox" is typed more."""
    if misspelt(word):
        return True
    if not unknown_word(word):
        return False
    times = typed.get(word, 0)
    return any(typed.get(w, 0) > times for w in _near(word))


__all__ = ["misspelt", "misspelt_among"]
