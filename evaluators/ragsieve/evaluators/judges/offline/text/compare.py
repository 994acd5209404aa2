"""Which-came-first questions ("X or Y, which came out first?") checked against context years."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragsieve.evaluators.judges.offline.text.text import fold, sentences

_YEAR = re.compile(r"(?<![\d.,])(1[5-9]\d\d|20\d\d)(?![\d,])")
_EARLIEST = re.compile(r"\b(first|earlier|earliest|older|oldest|before|sooner|primero|antes)\b")
_LATEST = re.compile(
    r"\b(second|later|latest|last|younger|youngest|after|more recent(?:ly)?|newer|newest"
    r"|despues|ultimo)\b"
)
_TEMPORAL = re.compile(
    r"\b(born|released|started|founded|established|formed|published|produced|created|built"
    r"|opened|launched|came out|made|died|nacio|fundad[oa]|publicad[oa]|lanzad[oa])\b"
)
# the option before "or": capitalised words with short joiners ("Charley and the Angel")
_LEFT = re.compile(
    r"((?:[A-Z0-9][\w'’.&-]*)(?:\s+(?:(?:of|the|and|de|la|el|for|a)\s+)*[A-Z0-9][\w'’.&-]*)*)$"
)


@dataclass(frozen=True, slots=True)
class Contradiction:
    """The answer picks ``picked`` while the context's years point at ``expected``."""

    picked: str
    expected: str
    reason: str


def options_or(question: str) -> tuple[str, str] | None:
    """The two options of an "X or Y?" question (capitalised names), or None."""
    q = question.strip().rstrip("?").strip()
    if q.count(" or ") != 1:
        return None
    left, right = q.split(" or ")
    right = re.sub(r"^(?:the|a|an|el|la|los|las)\s+", "", re.split(r"[,;]", right)[0].strip())
    m = _LEFT.search(left.split(",")[-1].strip())
    if not m or not right or not (right[:1].isupper() or right[:1].isdigit()):
        return None
    return m.group(1), right


def _direction(question: str, options: tuple[str, str]) -> str | None:
    q = question
    for opt in options:
        q = q.replace(opt, " ")
    q = fold(q)
    if not _TEMPORAL.search(q):
        return None
    early, late = bool(_EARLIEST.search(q)), bool(_LATEST.search(q))
    if early == late:
        return None
    return "earliest" if early else "latest"


def _year(option: str, other: str, sents: list[str]) -> int | None:
    """The earliest year of the first passage about ``option``: its sentence, or the next two
    sentences while they do not turn to ``other``."""
    for key in (fold(option), fold(option.split()[-1])):
        for i, sent in enumerate(sents):
            if key not in fold(sent):
                continue
            for nxt in sents[i : i + 3]:
                if nxt is not sent and fold(other.split()[-1]) in fold(nxt):
                    break
                years = [int(y) for y in _YEAR.findall(nxt)]
                if years:
                    return min(years)
            return None
    return None


def picked_option(answer: str, options: tuple[str, str]) -> str | None:
    """The option the answer names first (full name, else last word), or None."""
    text = fold(answer)
    found = [(text.find(fold(o)), o) for o in options if fold(o) in text]
    if not found:  # answers often shorten names: "Davis was born first"
        found = [
            (text.find(fold(o.split()[-1])), o) for o in options if fold(o.split()[-1]) in text
        ]
    return min(found)[1] if found else None


def check_comparison(question: str, answer: str, context: str) -> Contradiction | None:
    """A contradiction when the answer picks the option the context's years rule out."""
    options = options_or(question)
    if options is None:
        return None
    direction = _direction(question, options)
    if direction is None:
        return None
    sents = sentences(context)
    years = [_year(options[0], options[1], sents), _year(options[1], options[0], sents)]
    if years[0] is None or years[1] is None or years[0] == years[1]:
        return None
    pick = picked_option(answer, options)
    if pick is None:
        return None
    first = options[0] if years[0] < years[1] else options[1]
    expected = first if direction == "earliest" else options[1 - options.index(first)]
    if pick == expected:
        return None
    y = dict(zip(options, years, strict=True))
    reason = f"the context dates {expected} ({y[expected]}) and {pick} ({y[pick]})"
    return Contradiction(pick, expected, reason)
