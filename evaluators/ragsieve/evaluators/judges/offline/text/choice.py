"""Which entity the context links a property to: two-option questions ("X or Y?", "are both X and
Y …?") checked against what the context says about each option, and a claim giving what the
context restricts to one entity ("on the Enterprise plan only") to another of its kind."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ragsieve.evaluators.judges.offline.text.compare import options_or, picked_option
from ragsieve.evaluators.judges.offline.text.spans import name_spans
from ragsieve.evaluators.judges.offline.text.spelling import (
    expands,
    spelled_out,
    written_acronyms,
)
from ragsieve.evaluators.judges.offline.text.text import (
    NEGATIONS,
    STOPWORDS,
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


# -- a feature the context gives to one entity only -------------------------------------------

_ONLY = r"(?i:only|exclusively|solely|s[oó]lo|solamente|[uú]nicamente|exclusivamente)"
_PREP = r"(?:on|in|for|to|at|with|by|under|through|via|en|para|a|al|con|de|del|por|bajo)"
_ART = r"(?:the|a|an|our|your|their|el|la|los|las|un|una|nuestro|nuestra|su|sus)"
_NAME = r"[A-ZÁÉÍÓÚÑ][\w'’-]*(?:\s+[A-ZÁÉÍÓÚÑ][\w'’-]*)*"
_KIND = r"[a-záéíóúñ][\w-]+"
# "only on the Enterprise plan", "exclusively to Gold members", "únicamente en el plan Empresa"
_ONLY_FIRST = re.compile(
    rf"\b{_ONLY}\s+(?:(?P<prep>{_PREP})\s+)?(?:{_ART}\s+)?(?:(?P<kind_before>{_KIND})\s+)?"
    rf"(?P<name>{_NAME})(?:\s+(?P<kind>{_KIND}))?"
)
# "on the Enterprise plan only", "en el plan Empresa solamente"
_ONLY_AFTER = re.compile(
    rf"\b(?P<prep>{_PREP})\s+(?:{_ART}\s+)?(?:(?P<kind_before>{_KIND})\s+)?(?P<name>{_NAME})"
    rf"(?:\s+(?P<kind>{_KIND}))?\s+{_ONLY}\b"
)
RESTATED = 0.5  # share of the restricted sentence's rarity-weighted words a claim must restate


@dataclass(frozen=True, slots=True)
class Restriction:
    """A context sentence that gives what it states to ``name`` only (its ``kind``: "plan")."""

    sentence: str
    name: str
    kind: str
    prep: str
    written: str  # the entity as the sentence writes it: "Enterprise plan", "plan Empresa"


@lru_cache(maxsize=16)
def restrictions(context: str) -> tuple[Restriction, ...]:
    """The context's sentences that restrict what they state to one named entity ("SAML single
    sign-on is available on the Enterprise plan only.")."""
    if _ONLY_WORD.search(context) is None:
        return ()
    out = []
    for sent in sentences(context):
        for pattern in (_ONLY_FIRST, _ONLY_AFTER):
            m = pattern.search(sent)
            if m is None:
                continue
            after, before = _is_kind(m["kind"]), _is_kind(m["kind_before"])
            kind = m["kind"] if after else m["kind_before"] if before else ""
            name = m["name"]
            written = f"{name} {kind}" if after else f"{kind} {name}" if before else name
            out.append(Restriction(sent, name, kind, fold(m["prep"] or ""), written))
            break
    return tuple(out)


def _is_kind(word: str | None) -> bool:
    return bool(word) and fold(word or "") not in STOPWORDS and not _ONLY_WORD.fullmatch(word or "")


_ONLY_WORD = re.compile(_ONLY, re.IGNORECASE)


def _rival(claim: str, r: Restriction) -> str | None:
    """A name of the same kind as the restricted one ("the Starter plan" for "the Enterprise
    plan"; with no kind, a name after the same preposition) that the claim gives it to."""
    if r.kind:
        kind = f"(?i:{re.escape(r.kind)})"  # "Plan" or "plan"; the name keeps its capital
        pattern = rf"(?P<name>{_NAME})\s+{kind}\b|\b{kind}\s+(?P<after>{_NAME})"
    elif r.prep:
        pattern = rf"\b{re.escape(r.prep)}\s+(?:{_ART}\s+)?(?P<name>{_NAME})"
    else:
        return None
    for m in re.finditer(pattern, claim):
        name = m.groupdict().get("name") or m.groupdict().get("after") or ""
        name = name.split()[-1] if r.kind and m.groupdict().get("name") else name
        if name[:1].isupper() and fold(name) not in fold(r.name) and not _ONLY_WORD.fullmatch(name):
            return name
    return None


def _share(weights: dict[str, float], found: set[str]) -> float:
    return sum(w for s, w in weights.items() if s in found) / sum(weights.values() or [1.0])


def _restates(claim: str, r: Restriction, rival: str) -> bool:
    """The claim and the restricted sentence state the same thing beside the entity, its kind
    and the restriction: most of the rarity-weighted words of either are the other's (an
    acronym for a term counts: "SSO" for "single sign-on")."""
    aside = {stem(w) for w in words(f"{r.name} {r.kind} {rival} yes no si")}

    def weighed(text: str) -> dict[str, float]:
        return {
            stem(w): rarity(w)
            for w in content_words(text)
            if stem(w) not in aside and not _ONLY_WORD.fullmatch(w)
        }

    theirs, ours = weighed(r.sentence), weighed(claim)
    if not theirs or not ours:
        return False
    in_sentence = {stem(w) for w in words(r.sentence)}
    said = {stem(w) for w in words(claim)}
    said |= {stem(w) for w in spelled_out(r.sentence, written_acronyms(claim), STOPWORDS)}
    ours_found = {s for s in ours if s in in_sentence or expands(s.upper(), r.sentence, STOPWORDS)}
    return max(_share(theirs, said), _share(ours, ours_found)) > RESTATED


def given_elsewhere(
    claim: str, context: str, *, denied: bool = False
) -> tuple[Restriction, str] | None:
    """The restriction ``claim`` breaks, and the rival it names: the claim, not negated,
    restates what the context gives to one entity only and gives it to another of the same kind
    without naming the one the context names. With ``denied``, the restriction a negated claim
    follows ("SSO is not available on the Starter plan": the context gives it Enterprise only)."""
    if any(w in NEGATIONS or w.endswith("n't") for w in words(claim)) != denied:
        return None
    for r in restrictions(context):
        if fold(r.name) in fold(claim):
            continue
        rival = _rival(claim, r)
        if rival is not None and _restates(claim, r, rival):
            return r, rival
    return None


def check_restriction(question: str, answer: str, context: str) -> ChoiceClash | None:
    """A clash when a "yes" or a statement gives what the context restricts to one entity
    ("only", "exclusively", "únicamente") to another of its kind ("Yes, SAML single sign-on is
    available on the Starter plan." where the context says "on the Enterprise plan only")."""
    said = _PARTICLE.sub("", answer.strip())
    if not restrictions(context) or _NEGATIVE.search(fold(answer.strip())):
        return None
    claims = sentences(said) if words(said) else []
    if _YES.match(fold(answer.strip())) and len(words(said)) <= 2:
        claims = [question]  # a bare "Yes.": the question's proposition
    for claim in claims:
        found = given_elsewhere(claim, context)
        if found is not None:
            r, rival = found
            why = f"the context gives it to {r.written} only, the claim to {rival}"
            return ChoiceClash(rival, why)
    return None


_YES = re.compile(r"^\W*(?:yes|yeah|yep|sure|of course|s[ií]|claro|correct|correcto)\b")
_PARTICLE = re.compile(
    r"^\W*(?:yes|yeah|yep|sure|of course|s[ií]|claro|correct|correcto)\s*[,.;:!\u2014-]\s*", re.I
)
