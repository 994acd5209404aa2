"""What a question asks, read from its words: its key terms (rarity-weighted, question and
function words left out), its names, for a yes/no question about a number the limits a text
states that answer it, and what another text holds of it that a prompt lacks (:func:`asked_gap`).
Context relevance and the root cause's corpus search share them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragsieve.evaluators.judges.offline.text.question import expected_type, without_preamble
from ragsieve.evaluators.judges.offline.text.spelling import misspells
from ragsieve.evaluators.judges.offline.text.terms import NO_MATCH, Match, TermIndex, key, tokens
from ragsieve.evaluators.judges.offline.text.text import (
    STOPWORDS,
    fold,
    known_word,
    language,
    rarity,
    sentences,
)

# a name ("Tonkin", "Tennessee") is written alike in both languages or translated word for word;
# the encoder's nearest word of another language ("Poopó", "secuoya") is a neighbour, not the name
NAME_TRANSLATION_MIN = 0.8  # strength a name's translated match needs to count at all
# a question word the chunk writes with another word of the same language that the encoder
# holds near ("alternatives" / "substitutes"): only this sure, and worth less than the word itself
NEAR_WORD_MIN = 0.75
NEAR_WORD_SHARE = 0.8

_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how que cual cuales quien quienes cuando donde"
    " como cuanto cuanta cuantos cuantas por"
    # how people ask at a service desk: the verbs carry the asking, not what is asked about
    " need needs bring do does did can could will would should get hay hace hacer falta pasa"
    " pasan tengo tiene tienen puedo puede pueden necesito necesita necesitan quiero saber"
    " llevar traer darse debo".split()
)
_FUNCTION = STOPWORDS | _QUESTION_WORDS


def question_terms(question: str) -> dict[str, tuple[str, float]]:
    """key -> (a word of the question, rarity weight) for the question's content words (a
    lead-in such as "Quick question:" or "Quisiera saber:" asks, it names nothing)."""
    out: dict[str, tuple[str, float]] = {}
    names = name_keys(question)
    for t in tokens(without_preamble(question)):
        if t in STOPWORDS or (len(t) < 2 and not t.isdigit()) or t in _QUESTION_WORDS:
            continue
        if key(t) not in names and misspells(t, _FUNCTION):
            continue  # "shold", "waht": a function word misspelt names nothing either
        w = 2.5 if t[0].isdigit() else rarity(t)
        if key(t) not in out or out[key(t)][1] < w:
            out[key(t)] = (t, w)
    return out


# words that open a question by asking, not naming ("Does ...", "Tell me ...", "Dime ...")
_OPENERS = _FUNCTION | frozenset(
    "list tell give show explain describe name please dime explica explique".split()
)


def name_keys(question: str) -> set[str]:
    """Keys of the question's names, the one reading of them every judge shares: its
    capitalised words, the first one too when it can only be a name (:func:`_names_first`:
    "Quillwick keys: when do they rotate?", not "Does ..." or "Aside from ..."). A question
    written all in capitals marks no name."""
    words = re.findall(r"[^\W\d_][\w'-]*", question)
    if not any(c.islower() for w in words for c in w):
        return set()
    return {
        key(t)
        for i, w in enumerate(words)
        if w[:1].isupper() and (i or _names_first(fold(w)))
        for t in tokens(w)
    }


def _names_first(word: str) -> bool:
    """A capitalised first word, where a capital marks nothing, names something when no word
    list knows it ("Quillwick", "Tallyfox"), and it is no asking word misspelt ("Waht"); a known
    word there ("Aside from ...", "Paris") may be any word."""
    return not known_word(word) and word not in _OPENERS and not misspells(word, _OPENERS)


# A yes/no question about a number ("Can my 14-year-old ride?", "¿Puede usarla mi hija de 14
# años?") is answered by the rule or limit the chunk states for that quantity ("Riders must be
# at least 16 years old"), which holds another number than the question's.
LIMIT_STRENGTH = 0.9  # the question's number, answered by a stated limit of the same unit
LIMIT_GAP_WORDS = 3  # words a limit may hold between its word and its number ("between
# midnight and 6 am")
_LIMIT = (
    r"at\s+least|at\s+most|up\s+to|no\s+more\s+than|no\s+less\s+than|more\s+than|less\s+than"
    r"|fewer\s+than|older\s+than|younger\s+than|over|under|above|below|minimum|maximum|min|max"
    r"|between|from|until|till|before|after|within|exceed\w*|al\s+menos|como\s+m[ií]nimo"
    r"|como\s+m[aá]ximo|hasta|m[aá]s\s+de|menos\s+de|mayor(?:es)?\s+de|menor(?:es)?\s+de"
    r"|m[ií]nimo|m[aá]ximo|entre|desde|antes\s+de|despu[eé]s\s+de|dentro\s+de|supera\w*"
)
_LIMITED_NUMBER = re.compile(
    rf"(?i)\b(?:{_LIMIT})\b(?:\W+[^\W\d_]+){{0,{LIMIT_GAP_WORDS}}}\W+(\d+(?:[.,]\d+)?)"
    r"[\s-]*([^\W\d_]+)?"
)
_NUMBER_UNIT = re.compile(r"(\d+(?:[.,]\d+)?)[\s-]*([^\W\d_]+)?")
_WH_WORDS = frozenset(
    "what which who whom whose when where why how que cual cuales quien quienes cuando donde"
    " como cuanto cuanta cuantos cuantas".split()
)


def yes_no(question: str) -> bool:
    """The question asks yes or no: no question word among its first three words."""
    return not any(w in _WH_WORDS for w in tokens(without_preamble(question))[:3])


def _unit_of(text: str, number: str) -> str | None:
    """The key of the word that follows ``number`` in ``text`` ("14-year-old" → year)."""
    for m in _NUMBER_UNIT.finditer(fold(text)):
        if m.group(1).replace(",", "") == number:
            return key(m.group(2)) if m.group(2) else None
    return None


def _limits(sents: list[str], unit: str | None) -> frozenset[int]:
    """Sentences that state a limit ("at least 16 years", "hasta 45 minutos") on ``unit``."""
    out = set()
    for i, s in enumerate(sents):
        for m in _LIMITED_NUMBER.finditer(fold(s)):
            if unit is None or (m.group(2) and key(m.group(2)) == unit):
                out.add(i)
    return frozenset(out)


def limit_matches(
    question: str, terms: dict[str, tuple[str, float]], sents: list[str], found: dict[str, Match]
) -> dict[str, Match]:
    """``found`` with each number of a yes/no question that the chunk does not hold credited
    where the chunk states a limit of the same unit: the rule answers the question."""
    out = dict(found)
    for k, (word, _) in terms.items():
        if not word[:1].isdigit() or out[k].strength > 0:
            continue
        where = _limits(sents, _unit_of(question, word))
        if where:
            out[k] = Match(LIMIT_STRENGTH, where, "limit", sents[min(where)][:40])
    return out


def find_term(index: TermIndex, word: str, name: bool, near_words: bool = True) -> Match:
    """``index.find(word)``; a name's translated match counts only when it is near certain; a
    word (not a name) found nowhere may be found as a near word of the chunk's own language."""
    m = index.find(word, transposed=True, indel=not name)  # a person's question: "Heniz"
    if name and m.via == "translation" and m.strength < NAME_TRANSLATION_MIN:
        return NO_MATCH
    if name and not m.strength:  # "Chinese" where the chunk writes "China"
        return index.find_kin(word)
    if near_words and not m.strength and not name and not index.cross_lingual:
        # a word the chunk writes in other words the encoder holds near-certain ("alternatives"
        # for "substitutes", "philanthropy" for "generous"): found, at a discount
        near = index.find(word, translate=True)
        if near.strength >= NEAR_WORD_MIN:
            return Match(
                round(near.strength * NEAR_WORD_SHARE, 4), near.sentences, "near", near.found
            )
    return m


FOUND_AS_WRITTEN = 0.9  # a word found exactly (1) or misspelt (0.9), not translated or near


@dataclass(frozen=True, slots=True)
class AskedGap:
    """What another text holds of a question that no chunk of a prompt holds."""

    share: float  # weighted share of the question's key terms it names that the prompt lacks
    words: tuple[str, ...]  # ... those words
    kept: float  # weighted share of the terms the prompt names as written that it holds too
    # (1 when the prompt names none)


def asked_gap(question: str, prompt: Sequence[str], other: str) -> AskedGap:
    """What ``other`` holds of the question that no chunk of ``prompt`` holds: the weighted
    share of the question's key terms (and those words) that ``other`` names as written or
    misspelt while no prompt chunk names them in any form (misspelt, translated, a near word);
    and how much of what the prompt names of the question as written or misspelt ``other``
    holds too, in any form (``kept``).

    A chunk about the question's topic shares its names with the page that answers; what it
    lacks is the asked attribute ("unlocked ... at 1 am" where the prompt's chunk is about the
    same bikes' rental). A large gap with everything the prompt holds kept says the prompt was
    about the topic and the other chunk about the same topic and what was asked; a gap with the
    prompt's terms lost says only that the other chunk words another subject the same way."""
    terms = question_terms(question)
    total = sum(w for _, w in terms.values())
    if not total:
        return AskedGap(0.0, (), 1.0)
    names = name_keys(question)
    qlang = language(question)
    indexes = [
        TermIndex(
            sentences(c) or [c],
            cross_lingual=qlang != "unknown" and language(c) not in ("unknown", qlang),
        )
        for c in prompt
    ]
    theirs = TermIndex(sentences(other) or [other])
    gap, missing, held, kept = 0.0, [], 0.0, 0.0
    for k, (word, w) in terms.items():
        strength = max((find_term(ix, word, k in names).strength for ix in indexes), default=0.0)
        if strength >= FOUND_AS_WRITTEN:  # the prompt's topic: what it names as the question does
            held += w
            kept += w if find_term(theirs, word, k in names).strength > 0 else 0.0
        elif strength > 0:
            continue  # held in other words (a near word, a translation): neither topic nor gap
        elif theirs.find(word, transposed=True, indel=k not in names).strength >= FOUND_AS_WRITTEN:
            gap += w
            missing.append(word)
    return AskedGap(gap / total, tuple(missing), kept / held if held else 1.0)


# the words before a word that frame it: a preposition ("in Lisbon", "per month", "con Pro")
_PLACING = frozenset("in at on for per from to with by en para por con de desde hasta".split())
# the words that open a thing named ("the", "el", "mi"): the noun after one heads its phrase
_DETERMINING = frozenset(
    "the a an this that these those my your our his her its their el la los las lo un una unos"
    " unas del al mi mis tu tus su sus este esta estos estas ese esa esos esas".split()
)
_POSSESSIVE = re.compile(r"['’]s?$")  # "Anna's" is Anna, "users'" users


def _word_frames(text: str, *, subjects: bool = False) -> dict[str, set[str]]:
    """Each content word of ``text`` (folded, any case, a sentence's first too, a possessive
    "'s" dropped) -> the frames it sits in: the content word after it ("pro plan" -> ``>plan``)
    and the content word or preposition before it ("in Lisbon" -> ``<in``).

    ``subjects``: only the frames of a thing named (:func:`_in_noun_phrase`), the head it
    modifies (``>plan``) and the preposition that places it (``<in``; not "to", which also
    leads a verb: "to use"), and, for the word right after the noun a determiner or preposition
    opens, that noun (``el plan pro`` -> ``<plan``). Any other word after a content word
    ("Narcissus prideful") or a question word ("Who led Milly") is most often a predicate or a
    verb, which people re-word freely ("haughty", "took"), not a subject."""
    out: dict[str, set[str]] = {}
    for sent in sentences(text) or [text]:
        toks = [_POSSESSIVE.sub("", fold(t)) for t in re.findall(r"[^\W\d_][\w'-]*", sent)]
        named = _in_noun_phrase(toks)
        for i, tok in enumerate(toks):
            if tok in _FUNCTION or len(tok) < 2:
                continue
            frames = out.setdefault(tok, set())
            if i + 1 < len(toks) and toks[i + 1] not in _FUNCTION and (named[i] or not subjects):
                frames.add(">" + key(toks[i + 1]))
            before = toks[i - 1] if i else ""
            if subjects and (before in _PLACING and before != "to" or _after_head(toks, i)):
                frames.add("<" + before)
            elif not subjects and before and (before in _PLACING or before not in _FUNCTION):
                frames.add("<" + before)
    return out


def _after_head(toks: list[str], i: int) -> bool:
    """The word follows the head noun a determiner or preposition opens ("el plan pro", "the
    plan basic"): Spanish, and product names in English, put the word that names after it."""
    opener = toks[i - 2] if i > 1 else ""
    placing = opener in _PLACING and opener != "to"  # "to use Pro": a verb's object
    return toks[i - 1] not in _FUNCTION and (opener in _DETERMINING or placing)


def _in_noun_phrase(toks: list[str]) -> list[bool]:
    """Whether each word opens or continues a thing named: it starts the sentence, follows a
    determiner or preposition ("the pro plan", "on Prepaid Basic"), or follows such a word
    ("basic" in "the prepaid basic plan"). A word after a question word, an auxiliary or the
    subject it tells of ("Who led ...", "did Andrea find ...") is a verb's place."""
    out: list[bool] = []
    for i in range(len(toks)):
        before = toks[i - 1] if i else ""
        plain = before in STOPWORDS and before not in _QUESTION_WORDS
        out.append(not i or plain or (before not in _FUNCTION and out[i - 1]))
    return out


def replacements(typed: str, earlier: str, *, subjects: bool = False) -> dict[str, str]:
    """Each word of ``earlier`` that ``typed`` replaces -> the word of ``typed`` in its place:
    a word ``typed`` lacks that sits in a frame (:func:`_word_frames`) a word of ``typed`` sits
    in. A frame word that is itself replaced reads as its replacement, so a phrase is replaced
    word by word from its anchor: "the Postpaid Plus plan" replaces "the Prepaid Basic plan"
    whole ("basic" before "plan" first, then "prepaid" before what "basic" became).
    ``subjects``: in the frames of a thing named only (:func:`_word_frames`)."""
    mine = _word_frames(typed, subjects=subjects)
    theirs = _word_frames(earlier, subjects=subjects)
    out: dict[str, str] = {}
    grew = True
    while grew:
        grew = False
        # a frame names the word after by its key (">plan"), the word before as written
        renamed = {">": {key(w): key(t) for w, t in out.items()}, "<": out}
        for word, frames in theirs.items():
            if word in mine or word in out:
                continue
            read = {f[0] + renamed[f[0]].get(f[1:], f[1:]) for f in frames}
            new = next((t for t, own in mine.items() if own & read), None)
            if new is not None:
                out[word], grew = new, True
    return out


def replaced_names(typed: str, earlier: str) -> set[str]:
    """The words of an ``earlier`` turn that a follow-up ``typed`` replaces with one of its own
    in the same frame (:func:`replacements`): "and for the basic plan?" after "... the Pro plan
    ..." replaces "pro" (both before "plan"); "And in Madrid?" after "... in Lisbon?" replaces
    "lisbon"; "And for the Postpaid Plus plan?" after "... the Prepaid Basic plan ..." replaces
    both words. A word the follow-up does not replace ("Pro" beside "And in Madrid?") is still
    what it is about; a name in no shared frame ("What about Basic?") is not read as a
    replacement."""
    return set(replacements(typed, earlier))


def told_apart(a: str, b: str) -> list[tuple[str, str]]:
    """The words that tell two askings apart: pairs (a word of ``a``, a word of ``b``) that
    differ between them in the same frame of a thing named (:func:`replacements` with
    ``subjects``), whatever their case ("how much is the pro plan" / "how much is the basic
    plan": ``[("pro", "basic")]``; "in lisbon" / "in madrid"). A word the other text holds in
    any spelling is no difference ("activation" / "actvation"), and a word both hold frames, it
    does not differ. A near word of the encoder is no difference either ("the monthly cost" /
    "the monthly price"), except before the same head: there a word names which one of the
    head's kind, and the encoder's near words are most often the kind's other members ("the
    monthly fee" / "the annual fee", "the weekly pass" / "the daily pass", each held as near as
    "cost" / "price", 0.83), so only a word it holds for the same as surely as a misspelling
    counts ("the yearly fee" / "the annual fee")."""
    index_a, index_b = TermIndex([a]), TermIndex([b])
    frames_a = _word_frames(a, subjects=True)
    frames_b = _word_frames(b, subjects=True)
    out = []
    for w, t in replacements(b, a, subjects=True).items():
        shared = frames_a.get(w, set()) & frames_b.get(t, set())
        naming = any(f.startswith(">") for f in shared)  # before the same head
        if not _holds(index_b, w, naming) and not _holds(index_a, t, naming):
            out.append((w, t))
    return out


def _holds(index: TermIndex, word: str, naming: bool) -> bool:
    """``index`` writes ``word`` in some spelling or as a near word; ``naming`` (the word names
    which one): a near word only when the encoder holds it for ``word`` at least as surely as a
    misspelling (:data:`FOUND_AS_WRITTEN`)."""
    m = find_term(index, word, False)
    if not naming or m.via != "near":
        return bool(m.strength)
    return index.find(word, translate=True).strength >= FOUND_AS_WRITTEN


# Finer than 'number': a count of time (or length: "how long" asks both) units is a duration.
_UNITS = "sec(?:ond)? min(?:ute)? hour hr day week month year segundo minuto hora dia semana mes"
_UNITS += " ano met(?:er|re) metro kilomet(?:er|re) kilometro mile inch foot feet"
_TIME_UNIT = "(?:" + "|".join(_UNITS.split()) + ")(?:e?s)?"
_PAYING = re.compile(
    r"\b(?:cost|costs|price|prices|pay|charge|charged|fee|fees|dollars?|euros?|cuesta|cuestan"
    r"|costar|precio|precios|pagar|pago|cobran?|vale|valen|dolares|tarifa)\b|[$€£]"
)
_DURATION = re.compile(
    rf"\b(?:how long|(?:how many|cuant[oa]s) (?:\w+ ){{0,2}}{_TIME_UNIT}|cuanto tiempo"
    r"|cuanto tarda|cuanto dura|duration|duracion)\b"
)
_COUNT = re.compile(r"\b(?:how many|cuant[oa]s|number of|numero de)\b")
# a yes/no question opens with its verb: "And on Enterprise?", "¿El plan Free incluye ...?" no
_YES_NO = re.compile(
    r"^\W*(?:(?:and|also|so|but|y|pero|entonces)\W+)?(?:is|are|was|were|do|does|did|can|could"
    r"|will|would|should|shall|may|must|has|have|had|isn't|aren't|doesn't|don't|can't|puedo"
    r"|puede|pueden|podemos|podria|hay|existe|existen|se puede|es posible)\b"
)


def answer_kind(question: str) -> str | None:
    """The kind of answer ``question`` expects: 'yes/no' (it opens with its verb and no question
    word follows: "can you tell me how many ..." asks how many), 'date', 'duration', 'price',
    'count', 'number' (a quantity of no kind read), or None where the wording does not say."""
    q, kind = fold(without_preamble(question)), expected_type(question)
    if _YES_NO.search(q) and not _WH_WORDS & set(tokens(q)):
        return "yes/no"
    if kind != "number":
        return "date" if kind == "date" else None
    kinds = (("duration", _DURATION), ("price", _PAYING), ("count", _COUNT))  # a price: "how much"
    return next((k for k, p in kinds if p.search(q)), "number")  # beside a word of paying


# kinds one answer may give both: a quantity read no finer is any of them; a delay ("within 5
# days") answers "when?" as well as "how long?" (``question.has_type`` reads it as a date)
_SHARE_AN_ANSWER = {
    frozenset(p.split())
    for p in ("date duration", "number count", "number duration", "number price")
}


def kinds_apart(a: str, b: str) -> tuple[str, str] | None:
    """The kinds of answer two askings expect (:func:`answer_kind`) when both are read and no one
    answer gives both ("how many times ...?" / "how long ...?": a count, a duration); or None."""
    ka, kb = answer_kind(a), answer_kind(b)
    if ka is None or kb is None or ka == kb or frozenset({ka, kb}) in _SHARE_AN_ANSWER:
        return None
    return ka, kb
