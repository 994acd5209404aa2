"""Two-option questions ("X or Y?", "are both X and Y …?") checked against what the context says
about each option."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragsieve.evaluators.judges.offline.text.compare import options_or, picked_option
from ragsieve.evaluators.judges.offline.text.spans import name_spans
from ragsieve.evaluators.judges.offline.text.text import (
    NEGATIONS,
    content_words,
    fold,
    rarity,
    sentences,
    stem,
    words,
)

LINKED = 0.9  # share of the asked property's weight an option's passage must hold to count
UNLINKED = 0.5  # ... and at most this much for the other option in a which-question
# comparisons need values, not words: "higher ranking", "more books", "older" are left alone
_COMPARATIVE = re.compile(
    r"\b(more|less|fewer|most|least|first|last|earlier|later|before|after|same|different"
    r"|\w+er than|higher|lower|larger|smaller|bigger|longer|shorter|older|younger|best|worst"
    r"|largest|biggest|smallest|oldest|youngest|longest|shortest|highest|lowest|greatest)\b"
)
_AUX = re.compile(r"^(are|is|were|was|do|does|did|have|has|can|could)\b")
_NEGATIVE = re.compile(
    r"^(no|nope)\b|\b(only one|not both|neither|only (?:the )?(?:first|second))\b"
)


@dataclass(frozen=True, slots=True)
class ChoiceClash:
    """The answer's choice disagrees with which option the context links to the property."""

    picked: str
    reason: str


def _options_and(question: str, context: str) -> tuple[str, str] | None:
    """Two names joined by "and" in the question ("are both X and Y …", "X and Y are both …").

    A name may run into a capitalised word of the property ("Spike Slawson American punk"),
    so each is cut back to the longest piece the context writes in one piece."""
    m = re.search(r"([^,?]+?)\s+and\s+([^,?]+)", question)
    if m is None:
        return None
    left, right = name_spans(m.group(1)), name_spans(m.group(2))
    if not left or not right:
        return None
    ctx = f" {' '.join(words(context))} "

    def trim(toks: list[str], from_end: bool) -> str | None:
        while len(toks) >= 1:
            if f" {' '.join(words(' '.join(toks)))} " in ctx:
                return " ".join(toks)
            toks = toks[:-1] if from_end else toks[1:]
        return None

    a, b = trim(left[-1].split(), False), trim(right[0].split(), True)
    return (a, b) if a and b and fold(a) != fold(b) else None


def _passage(option: str, other: str, sents: list[str]) -> list[str]:
    """The sentences about ``option``: the first that names it (or its last word) and the
    next two while they do not turn to ``other``."""
    for key in (fold(option), fold(option.split()[-1])):
        for i, sent in enumerate(sents):
            if key not in fold(sent):
                continue
            out = [sent]
            for nxt in sents[i + 1 : i + 3]:
                if fold(other.split()[-1]) in fold(nxt):
                    break
                out.append(nxt)
            return out
    return []


def _coverage(prop: dict[str, float], passage: list[str]) -> float:
    found = {stem(w) for s in passage for w in words(s)}
    return sum(w for s, w in prop.items() if s in found) / sum(prop.values())


def check_choice(question: str, answer: str, context: str) -> ChoiceClash | None:
    """A clash when the answer picks the option the context does not link to the asked
    property while it links the other one, or denies that both options have a property the
    context states for each."""
    q = question.strip()
    yes_no = bool(_AUX.match(fold(q)))
    options = None if yes_no else options_or(q)
    if options is None:
        options = _options_and(q, context)
    if options is None:
        return None
    rest = q
    for opt in options:
        rest = rest.replace(opt, " ")
    if _COMPARATIVE.search(fold(rest)):
        return None
    opt_stems = {stem(w) for o in options for w in words(o)}
    prop = {stem(w): rarity(w) for w in content_words(rest) if stem(w) not in opt_stems}
    if not prop:
        return None
    sents = sentences(context)
    passages = [_passage(options[0], options[1], sents), _passage(options[1], options[0], sents)]
    if not passages[0] or not passages[1]:
        return None
    cov = [_coverage(prop, p) for p in passages]
    negated = [any(w in NEGATIONS for s in p for w in words(s)) for p in passages]
    if yes_no:
        denies = bool(_NEGATIVE.search(fold(answer.strip())))
        if denies and min(cov) >= LINKED and not any(negated):
            return ChoiceClash(
                options[0], f"the context states what is asked for both {' and '.join(options)}"
            )
        return None
    pick = picked_option(answer, options)
    if pick is None:
        return None
    other = options[1 - options.index(pick)]
    c_pick, c_other = cov[options.index(pick)], cov[options.index(other)]
    if c_other >= LINKED and c_pick <= UNLINKED and not negated[options.index(other)]:
        return ChoiceClash(pick, f"the context links the question's terms to {other}, not {pick}")
    return None
