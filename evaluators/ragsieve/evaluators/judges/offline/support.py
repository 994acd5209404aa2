"""Claim support: how well the retrieved context backs one claim of an answer.

Every claim gets a verdict from the words it shares with the context, weighted by rarity: over
the whole context and over the best window of two adjacent sentences of one chunk (a claim built
from two sentences is still supported). Numbers are compared by value, names must be found in
one piece, and a claim negated against its closest context sentence (clause with clause, a
contracted "isn't" a negation as "is not" is) loses support. Across
languages, the claim's meaning is compared with each sentence's (the embedded multilingual
encoder). The verdict records what decided it: ``support``, the share of the claim's content
the context never states (``novel``), the rarest such word, missing values and names, and the
share of it one context sentence holds together (``together``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

import ragsieve.evaluators.judges.offline.binding.units as units
from ragsieve.evaluators.judges.offline.text.reading import advice_verb
from ragsieve.evaluators.judges.offline.text.spelling import (
    acronyms,
    expands,
    spelled_out,
    written_acronyms,
)
from ragsieve.evaluators.judges.offline.text.terms import (
    CANON,
    NO_MATCH,
    Match,
    TermIndex,
    all_values,
    decades,
    key,
    number_values,
    tokens,
)
from ragsieve.evaluators.judges.offline.text.text import (
    ANSWER_PARTICLE,
    CONTRACTED,
    STOPWORDS,
    entities,
    fold,
    language,
    lemma_rarity,
    negation_differs,
    sentences,
    uncontracted,
    unglued,
    words,
)
from ragsieve.evaluators.tools.embeddings import embed

SUPPORT_THRESHOLD = 0.6  # a claim with soft support below this is "unsupported"
NAME_FOUND = 0.6  # a name the context holds at least this strongly (exact, misspelt) is written
MAX_CONTEXT_SENTENCES = 400
BROKEN_SPAN_SUPPORT = 0.25  # a name the context never writes in one piece is not evidence
VALUE_MISSING_SUPPORT = 0.25  # a number the context never states
MAX_CROSS_LINGUAL_SENTENCES = 80
XLING_SENT_FLOOR = 0.45  # claim-to-sentence cosine across languages below this: no support
XLING_SENT_SPAN = 0.3  # ... and at floor + span: full support
NEGATION_LENGTH_RATIO = 1.6  # negation is compared only with sentences of about the claim's size
UNFOUNDED_NOVEL = 0.9  # a claim this much of whose content the context never states ...
UNFOUNDED_RARITY = 2.0  # ... with a word at least this rare among it: a hallucination in 67-100 %
# of such answers on every labelled set (RAGTruth, HaluEval, MEMERAG, LFQA, AttributionBench)
SUPPORT_POWER = 1.5  # one unsupported rare word in a short claim should cost more than its share
YES = frozenset({"yes", "si", "yeah", "yep", "true", "correct", "indeed", "cierto"})
NO = frozenset({"no", "nope", "false", "incorrect", "falso"})


@dataclass(slots=True)
class Context:
    sents: list[str]
    sent_chunk: list[str]
    index: TermIndex
    values: set[str]
    value_sents: dict[str, frozenset[int]]
    lang: str
    acronyms: frozenset[str] = frozenset()  # initials of the context's multi-word names
    written: frozenset[str] = frozenset()  # the acronyms the context writes ("SSO")
    text: str = ""  # the context's sentences, for the terms an acronym may stand for
    # the keys of each sentence that states a price of nothing ("at no extra cost", "gratis")
    nothing: tuple[frozenset[str], ...] = ()


def build_context(chunks: list[tuple[str, str]], *, translate: bool) -> Context:
    pairs = [(cid, s) for cid, c in chunks for s in sentences(c)][:MAX_CONTEXT_SENTENCES]
    sents = [s for _, s in pairs]
    return Context(
        sents=sents,
        sent_chunk=[cid for cid, _ in pairs],
        index=TermIndex([unglued(uncontracted(s)) for s in sents], cross_lingual=translate),
        values=_with_decades(set().union(*(all_values(c) for _, c in chunks))),
        value_sents=_value_sentences(sents),
        lang=language(" ".join(c for _, c in chunks)),
        acronyms=acronyms(" ".join(c for _, c in chunks)),
        written=written_acronyms(" ".join(c for _, c in chunks)),
        text=" ".join(sents),
        nothing=tuple(frozenset(units.content_keys(s)) for s in sents if units.nothing_price(s)),
    )


def _with_decades(values: set[str]) -> set[str]:
    return values | decades(values)


def _value_sentences(sents: list[str]) -> dict[str, frozenset[int]]:
    where: dict[str, set[int]] = {}
    for i, sent in enumerate(sents):
        for value in _with_decades(all_values(sent)):
            where.setdefault(value, set()).add(i)
    return {v: frozenset(ix) for v, ix in where.items()}


def _by_value(token: str, ctx: Context) -> Match | None:
    """``token`` found as a value the context states (a number or a number word), or None."""
    hits = sorted(all_values(token) & ctx.values)
    return Match(1.0, ctx.value_sents.get(hits[0], frozenset()), "value", token) if hits else None


def _claim_terms(claim: str, q_keys: set[str]) -> list[str]:
    """The claim's content words that the question did not already say (numbers are compared
    by value, not as words: "40 000" is one number, not the words "40" and "000"); a leading
    "No," / "Yes," answers the question and is no word to find, nor is the head of a
    contracted negation ("isn't" -> "isn")."""
    claim = ANSWER_PARTICLE.sub("", claim)
    skip = STOPWORDS | {fold(m.group(1)) + "n" for m in CONTRACTED.finditer(claim)}
    words_ = [
        t
        for t in tokens(claim)
        if t not in skip and len(t) > 1 and not t[0].isdigit() and key(t) not in q_keys
    ]
    raws = [raw for raw in number_values(claim) if raw[:1].isdigit()]
    return words_ + [
        r for r in raws if key(r) not in q_keys and key(r.replace(",", "")) not in q_keys
    ]


def _coverage(toks: list[str], ctx: Context) -> tuple[float, float, int, float, list[str], float]:
    """Weighted coverage of ``toks``: over the whole context, over the best window (two adjacent
    sentences of one chunk); the best single sentence and its coverage; the words found nowhere
    and their share of the claim's weight (how much the claim says that the context never does)."""
    weights: dict[str, float] = {}
    found: dict[str, Match] = {}
    for t in toks:
        k = key(t)
        weights[k] = max(weights.get(k, 0.0), 2.5 if t[0].isdigit() else lemma_rarity(t))
        if t[:1].isdigit():  # a number as written ("8,8", "40 000"): found by value
            found[k] = _by_value(t, ctx) or NO_MATCH
            continue
        if k not in found or found[k].strength < 1.0:
            m = ctx.index.find(t)
            if m.strength < 1.0:  # a number word: "seis" for "six-time"
                m = _by_value(t, ctx) or m
            if k not in found or m.strength > found[k].strength:
                found[k] = m
    total = sum(weights.values())
    glob = sum(w * found[k].strength for k, w in weights.items()) / total
    per_sent = [0.0] * len(ctx.sents)
    for k, w in weights.items():
        for i in found[k].sentences:
            per_sent[i] += w * found[k].strength
    best_window = 0.0
    for i, cov in enumerate(per_sent):
        nxt = i + 1 < len(per_sent) and ctx.sent_chunk[i + 1] == ctx.sent_chunk[i]
        window = {i, i + 1} if nxt else {i}
        cov = sum(w * found[k].strength for k, w in weights.items() if found[k].sentences & window)
        best_window = max(best_window, cov)
    best_i = max(range(len(per_sent)), key=per_sent.__getitem__) if per_sent else -1
    best_single = per_sent[best_i] / total if best_i >= 0 else 0.0
    missing = [t for t in toks if found[key(t)].strength == 0.0]
    novel = sum(w for k, w in weights.items() if found[k].strength == 0.0) / total
    return glob, best_window / total, best_i, best_single, missing, novel


_CODE = re.compile(r"`[^`]*`")
# the closed class of vague quantifiers and approximators: they say "some" or "about", not
# how many (the number they qualify is still checked)
VAGUE = frozenset(
    "various several numerous multiple many certain diverse variety plenty countless"
    " varios varias diversos diversas numerosos numerosas multiples"
    " around estimated approximate alrededor aproximadamente aproximado aproximada".split()
)


def _optional(word: str) -> bool:
    """A word that states no checkable fact of its own: a vague quantifier, or a manner or
    degree adverb ("primarily", "directly", "easily"; not "monthly": a time unit's adverb says
    how often)."""
    if word in VAGUE:
        return True
    return (
        len(word) >= 6 and word.endswith("ly") and word[:-2] not in CANON and word[:-3] not in CANON
    )


def _optional_keys(claim: str) -> set[str]:
    """Keys of the words a claim need not support: an instruction's verb ("Ensure ..."),
    inline example code and placeholders (`mydatabase`, `SELECT`), vague quantifiers and
    manner adverbs, the answer pointing at its own items ("Option 2"); a negation is never
    optional."""
    out = {key(t) for span in _CODE.findall(claim) for t in tokens(span)}
    out |= {key(t) for m in _OWN_ITEM.finditer(claim) for t in tokens(m.group())}
    out |= {key(t) for t in tokens(claim) if _optional(t)}
    verb = advice_verb(claim)
    return out | ({key(verb)} if verb else set())


def claim_verdict(
    claim: str, ctx: Context, q_keys: set[str], q_values: set[str], polarity: bool | None
) -> dict[str, Any]:
    optional = _optional_keys(claim) | units.nothing_keys(claim, q_keys, ctx.nothing)
    said, claim = claim, _CODE.sub(" ", claim) if "`" in claim else claim

    def needed(t: str) -> bool:
        return key(t) not in optional or ctx.index.find(t).strength > 0

    # an acronym the context writes out in full ("US" for "the United States") is found
    toks = [t for t in _claim_terms(claim, q_keys) if needed(t) and not _written_out(t, claim, ctx)]
    restates = not toks or {key(t) for t in toks} <= YES | NO
    if restates:  # only the question's words: the claim is the question's proposition
        toks = [t for t in _claim_terms(claim, set()) if t not in YES | NO and needed(t)]
    # "Option 2": the answer's own item, not a value (that span only: its other numbers count)
    values = number_values(_OWN_ITEM.sub(" ", claim))
    if not toks and not values:
        return {
            "claim": said,
            "support": 1.0,
            "evidence": None,
            "chunk": None,
            "reason": "only restates the question",
            "novel": 0.0,
        }
    glob, local, best_i, single, missing_words, novel = _coverage(toks, ctx)
    rarest = max((lemma_rarity(t) for t in missing_words), default=0.0)
    support = (0.5 * glob + 0.5 * local) ** SUPPORT_POWER
    if ctx.index.cross_lingual and not restates:  # word by word misses idiom; meaning does not
        cos, j = _closest_sentence(claim, ctx)
        meaning = float(np.clip((cos - XLING_SENT_FLOOR) / XLING_SENT_SPAN, 0.0, 1.0))
        if meaning > support:
            support, best_i, single = meaning, j, 1.0
    support, problems, missing_nums, missing_ents = _checks(
        claim, ctx, _Found(toks, values, q_keys, q_values, polarity, best_i, single), support
    )
    if not problems and support < SUPPORT_THRESHOLD and missing_words:
        problems.append(f"'{' '.join(missing_words[:4])}' not supported by the context")
    reason = "; ".join(problems) or "content words found in the context"
    if restates and not problems:
        reason = "the question's own proposition, found in the context"
    return {
        "claim": said,
        "support": round(support, 4),
        "novel": round(novel, 4),
        "rarest_missing": round(rarest, 4),
        # nothing of it is in the context, a specific word included: decisive
        "unfounded": novel >= UNFOUNDED_NOVEL and rarest >= UNFOUNDED_RARITY,
        "values_missing": bool(missing_nums),
        "names_missing": bool(missing_ents),
        "negation": "negation differs" in reason,
        # the question's own proposition, answered with the opposite polarity of the context
        "contradiction": polarity is not None and "negation differs" in reason,
        "evidence": ctx.sents[best_i] if best_i >= 0 and single > 0 else None,
        "chunk": ctx.sent_chunk[best_i] if best_i >= 0 and single > 0 else None,
        "reason": reason,
        # the share of its content one context sentence holds together (the rest is only
        # found in other sentences: the context may not relate them as the claim does)
        "together": round(min(1.0, single), 4),
    }


def _closest_sentence(claim: str, ctx: Context) -> tuple[float, int]:
    """The cosine of the context sentence closest in meaning to ``claim``, and its index."""
    sents = ctx.sents[:MAX_CROSS_LINGUAL_SENTENCES]
    vecs = embed([claim, *sents])
    sims = vecs[1:] @ vecs[0]
    j = int(np.argmax(sims))
    return float(sims[j]), j


def yes_no(answer: str) -> bool | None:
    """True for an answer that opens with yes, False for no, None otherwise; a yes that a "not"
    follows in its bare words ("Yes, it doesn't.") says what its words say: no."""
    toks = words(uncontracted(answer[:40]))
    if not toks:
        return None
    if toks[0] in YES and bare_answer(answer) and {"not", "cannot", "no"} & set(toks[1:]):
        return False
    return True if toks[0] in YES else False if toks[0] in NO else None


def bare_answer(claim: str) -> bool:
    """A yes or no with nothing of its own to check: "Yes.", "No, it doesn't.", "No, you
    cannot.", "No, no lo hace.": past the particle only pronouns, auxiliaries and "not" (the
    question's proposition, with the polarity :func:`yes_no` reads)."""
    toks = words(uncontracted(claim))
    rest = YES | NO | {"not", "cannot", "hace", "hacen"}
    return not [t for t in toks if t not in rest and t not in STOPWORDS]


@dataclass(frozen=True, slots=True)
class _Found:
    """What the word-level search found for one claim, for the checks that follow it."""

    toks: list[str]
    values: dict[str, set[str]]
    q_keys: set[str]
    q_values: set[str]
    polarity: bool | None
    best_i: int
    single: float


def _checks(
    claim: str, ctx: Context, f: _Found, support: float
) -> tuple[float, list[str], list[str], list[str]]:
    """Values, names and negation: each problem found lowers ``support`` and is named."""
    problems: list[str] = []
    listed = _listed_count(claim)
    missing_nums = sorted(
        raw
        for raw, vals in f.values.items()
        if not vals & (ctx.values | f.q_values) and vals != {str(listed)}
    )
    if missing_nums:
        problems.append(f"{', '.join(missing_nums)} is not in the context")
        support = min(support, VALUE_MISSING_SUPPORT)
    missing_ents = sorted(
        e
        for e in entities(claim)
        if key(e) not in f.q_keys
        and ctx.index.find(e).strength < NAME_FOUND
        and not _written_out(e, claim, ctx)
    )
    if missing_ents:
        problems.append(f"{', '.join(missing_ents[:3])} not found in the context")
        # names are sometimes translated ("Luther"/"Lutero", "Academy Award"/"Óscar")
        support *= 0.85 if ctx.index.cross_lingual else 0.7
    aligned = (len(f.toks) >= 2 or f.polarity is not None) and f.single >= 0.6
    if aligned:  # a long sentence may negate another of its clauses: compare like with like
        aligned = len(words(ctx.sents[f.best_i])) <= NEGATION_LENGTH_RATIO * len(words(claim)) + 3
    if aligned and negation_differs(claim, ctx.sents[f.best_i], f.polarity):
        problems.append("negation differs from the closest context sentence")
        support *= 0.6 if f.polarity is None else 0.3
    return support, problems, missing_nums, missing_ents


# "Option 1 or Option 2", "see step 3": the answer pointing at its own list items
_OWN_ITEM = re.compile(
    r"\b(?:options?|steps?|methods?|opci[oó]n|opciones|pasos?|m[eé]todos?)\s+(\d{1,2})\b", re.I
)
_LIST_AFTER_COLON = re.compile(r":\s*([^:]+?)\s*[.;]?\s*$")


def _listed_count(claim: str) -> int | None:
    """How many items a claim lists after its colon ("two plans: Pay-As-You-Go and
    Subscription" lists 2): a count of its own list is checked through the items."""
    m = _LIST_AFTER_COLON.search(claim)
    if m is None:
        return None
    items = [
        p for p in re.split(r",\s*(?:(?:and|or|y|o)\s+)?|\s+(?:and|or|y|e|o|u)\s+", m.group(1)) if p
    ]
    return len(items) if len(items) >= 2 else None


def _written_out(name: str, claim: str, ctx: Context) -> bool:
    """True when ``name`` is an acronym in the claim ("US", plural "IDs", "SSO") that the
    context writes in full ("the United States", "single sign-on"), with dots ("U.S.") or in
    the singular ("ID"); or a word of a term the claim writes in full whose acronym the context
    writes ("sign" of "single sign-on" where the context says "SSO"). A word the context
    writes as it stands is found, not read as an acronym: it keeps its weight in the claim."""
    read = fold(name) in spelled_out(claim, ctx.written, STOPWORDS) or _acronym_of(name, claim, ctx)
    return read and ctx.index.find(name).strength < NAME_FOUND


def _acronym_of(name: str, claim: str, ctx: Context) -> bool:
    upper = name.upper()
    if not 2 <= len(upper) <= 7:
        return False
    if re.search(rf"\b{upper}\b", claim) is not None and (
        upper in ctx.acronyms or expands(upper, ctx.text, STOPWORDS)
    ):
        return True
    single = upper[:-1]
    return (
        len(single) >= 2
        and re.search(rf"\b{single}s\b", claim) is not None
        and (
            single in ctx.acronyms
            or expands(single, ctx.text, STOPWORDS)
            or ctx.index.find(single.lower()).strength >= NAME_FOUND
        )
    )
