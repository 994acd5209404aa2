"""Text in matching form: invisible format characters gone, compatibility forms and look-alike
letters folded, so that a question typed (or pasted, or crafted) with them reads as the same words.

``matching_text`` is what judges and grouping read; people are always shown the original.

- **Format characters** (Unicode category Cf: zero-width space, zero-width (non-)joiner, word
  joiner, soft hyphen, byte-order mark, bidirectional controls, tags) are removed, not turned
  into spaces: ``"empl\\u200boyees"`` is ``"employees"``.
- **NFKC** folds compatibility forms: mathematical bold/italic/script letters (``"𝐞𝐦𝐩𝐥𝐨𝐲𝐞𝐞𝐬"``),
  full-width letters, ligatures (``"ﬁ"``), circled and superscript digits.
- **Look-alike letters**: Cyrillic, Greek and Armenian letters that Unicode's confusables data
  (UTS #39 ``confusables.txt``) maps to a single Latin letter are read as that letter in a word
  that also holds a Latin letter, or in a word made only of look-alikes inside a text written
  mostly in Latin letters. Other words keep their letters (Russian ``"сор"`` is not ``"cop"``).
"""

from __future__ import annotations

import re
import unicodedata

# confusables.txt entries (UTS #39) whose prototype is one Latin letter, for the letters of the
# scripts a Latin-looking word is forged from. Left out: mappings to digits, small capitals or
# Latin letters with marks, and letters (Cyrillic soft sign, Greek upsilon) whose prototype is not
# a plain Latin letter.
_TABLE = {
    # Cyrillic small
    "а": "a", "г": "r", "е": "e", "ѕ": "s", "і": "i", "ј": "j", "о": "o", "р": "p", "с": "c",
    "у": "y", "х": "x", "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "ү": "y",
    # Cyrillic capital
    "А": "A", "В": "B", "Е": "E", "Ѕ": "S", "І": "I", "Ј": "J", "К": "K", "М": "M", "Н": "H",
    "О": "O", "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ү": "Y", "Ԛ": "Q", "Ԝ": "W",
    "Ӏ": "l",
    # Greek small
    "α": "a", "γ": "y", "ι": "i", "ν": "v", "ο": "o", "ρ": "p", "ϲ": "c", "ϳ": "j",
    # Greek capital
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C", "Ϳ": "J",
    # Armenian small
    "հ": "h", "ո": "n", "ս": "u", "օ": "o",
    # Latin letters that are themselves look-alikes of plain ones
    "ı": "i", "ɑ": "a", "ɡ": "g",
}  # fmt: skip
_FOLD = str.maketrans(_TABLE)
_LOOKALIKE = frozenset(_TABLE)
_WORD = re.compile(r"\w+")


def _is_latin(ch: str) -> bool:
    return ("a" <= ch <= "z") or ("A" <= ch <= "Z") or ("\u00c0" <= ch <= "\u024f" and ch.isalpha())


def strip_format(text: str) -> str:
    """``text`` without format characters (category Cf), which render as nothing."""
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def fold_lookalikes(text: str) -> str:
    """Look-alike letters read as the Latin letter they imitate (module docstring)."""
    if not any(ch in _LOOKALIKE for ch in text):
        return text
    letters = [ch for ch in text if ch.isalpha()]
    mostly_latin = sum(map(_is_latin, letters)) * 2 > len(letters)

    def word(m: re.Match[str]) -> str:
        w = m.group(0)
        forged = any(map(_is_latin, w)) or (
            mostly_latin and all(ch in _LOOKALIKE for ch in w if ch.isalpha())
        )
        return w.translate(_FOLD) if forged else w

    return _WORD.sub(word, text)


def matching_text(text: str) -> str:
    """``text`` as judges and grouping read it: format characters removed, then NFKC, then
    look-alike letters folded. Case is kept (callers fold it when they compare)."""
    if text.isascii():  # nothing to remove or fold: the common case
        return text
    return fold_lookalikes(unicodedata.normalize("NFKC", strip_format(text)))


__all__ = ["fold_lookalikes", "matching_text", "strip_format"]
