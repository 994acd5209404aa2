"""What a question asks for: its key terms, the answer type it expects, and term coverage."""

from __future__ import annotations

import re
from functools import lru_cache

from rapidfuzz import fuzz, process

from ragsieve.evaluators.judges.offline.text.text import (
    STOPWORDS,
    entities,
    fold,
    has_date,
    numbers,
)

_DEFINITION = re.compile(
    r"\b(is|was|are|were|refers to|es|son|fue|era)\s+(a|an|the|one|un|una|el|la)\b"
    r"|\b(?:known as|is defined as|se conoce como|se define como)\b"
)
_ARTICLE = r"\s*,\s*(?:a|an|un|una)\s"
# "For REPAYE, an application ...", "Para el NIE, una cita ...": an opening phrase, no apposition
_NOT_APPOSED = re.compile(
    r"(?:^|[.;:!?]\s*)(?:for|under|in|on|at|to|of|by|with|from|para|en|con|de|del|por|a|al)"
    r"\s+(?:(?:the|a|an|el|la|los|las|un|una)\s+)?(?:[\w'-]+\s+){0,2}$"
)


def _defines(text: str, question: str) -> bool:
    """``text`` defines something ("X is a ...", "known as"), or says what the question's
    subject is in an apposition ("Jack Thompson, a disbarred attorney, ...")."""
    folded = fold(text)
    if _DEFINITION.search(folded):
        return True
    for w in _words(question) - STOPWORDS:
        for m in re.finditer(rf"\b{re.escape(w)}{_ARTICLE}", folded):
            if not _NOT_APPOSED.search(folded[: m.start()]):
                return True
    return False


# "when" asks for a date at the start of a question or before an auxiliary ("..., when does it
# apply?"); "what happens when I roll a key" is a condition, not a date question.
_ASKS_WHEN = re.compile(
    r"^\W*(?:(?:and|also|so|but|y|pero)\W+)?when\b"
    r"|\bwhen (?:is|are|was|were|do|does|did|will|would|can|could|should|has|have|had)\b"
    r"|\b(?:what year|which year|what date|en que ano|que fecha)\b"
)


_ATTRIBUTE_OF = re.compile(
    r"^\W*(?:what|which|que|cual)\s+(?:is|was|are|were|es|son|era|fue)\s+(?:the|el|la|los|las)\s+"
    r"(?:\w+\s+){0,2}\w+\s+(?:of|de|del)\s"
)


# "what is another name for X?", "what is X called?", "X is known as what?" ask for a name
_NAMED = re.compile(
    r"\b(?:(?:another|other|alternative|former|official|full) name|called|known as"
    r"|otro nombre|nombre (?:oficial|completo)|se llama|se conoce como|como se llamaba)\b"
)


# a quantity asked for by name: "what was Warsaw's population in 1901?"
_QUANTITY = re.compile(
    r"\b(?:(?:size|height|population|elevation|length|area|weight|price|cost|fee|amount|rate"
    r"|percentage|distance|duration|poblacion|altura|precio|costo|porcentaje|tamano"
    r"|superficie|longitud|peso|distancia|duracion)e?s?|percent|number of|numero de)\b"
)
# "what is X?" asks for a definition only when X is a short term and nothing more is asked
_DEFINE = re.compile(
    r"\s*(?!.*\b(?:of|de|del|for|para)\b)(?:what|who|que|quien)\s+(?:is|are|was|were|es|son|era|fue)\s+"
    r"(?:(?:an?|the|el|la|los|las|un|una)\s+)?[\w'-]+(?:\s+[\w'-]+){0,2}\W*$"
)


# service questions: "at what time does it open?", "which days?", "what are the opening hours?"
_ASKS_TIME = re.compile(
    r"\b(?:what time|how soon|which days?|what days?|opening (?:hours|times)|office hours"
    r"|a que hora|que dias?|en que horario|que horario|horarios?)\b"
)
# "what do I need to bring?", "¿qué hay que llevar?", "which documents...?": a requirement
_ASKS_REQUIREMENT = re.compile(
    r"\b(?:what (?:do|does|will) (?:i|we|you|one) (?:need|have) to (?:bring|show|present|provide"
    r"|submit|send)|what (?:documents|papers|documentation|requirements|proof)|which (?:documents"
    r"|papers|forms?|requirements)|what (?:do|does|will) (?:i|we|you) need (?:for|to)"
    r"|requirements? (?:for|to)|que (?:hay que|tengo que|debo|necesito|se necesita|piden)"
    r"(?: \w+)? (?:llevar|presentar|aportar|traer|entregar|para)|que (?:documentos|papeles"
    r"|documentacion|requisitos)|cuales son los requisitos|requisitos (?:para|de))\b"
)


def expected_type(question: str) -> str | None:
    """What kind of answer the question asks for: 'date' (a date, a time, a day, a delay),
    'number', 'requirement' (documents or conditions), 'definition', 'name' or None."""
    q = fold(question)
    if _ASKS_WHEN.search(q) or "cuándo" in question.casefold() or _ASKS_TIME.search(q):
        return "date"
    if _ASKS_REQUIREMENT.search(q):
        return "requirement"
    if re.search(
        r"\b(how (?:many|much|long|old|tall|high|far|big|large)|(?<!en )cuant[oa]s?)\b(?! a\b)", q
    ) or (re.match(r"\W*(what|which|que|cual|cuales)\b", q) and _QUANTITY.search(q)):
        return "number"
    if _NAMED.search(q) or _ATTRIBUTE_OF.search(q):
        return "name"  # "what is the capital of France?" wants a value, not a definition
    if _DEFINE.match(q):
        return "definition"
    if re.search(r"\b(who|whom|quien|quienes)\b", q) or re.search(r"\b(where|donde)\b", q):
        return "name"
    return None


_WHEN_ANSWER = re.compile(
    r"\b\d+(?:[.,]\d+)?\s*(?:business |working |calendar )?(?:second|minute|hour|day|week|month"
    r"|year|segundo|minuto|hora|dia|semana|mes|ano)s?\b"
    # a weekday, a time of day, a frequency: "the first Tuesday", "8:00 a 20:00", "every week"
    r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekdays?|weekends?|lunes"
    r"|martes|miercoles|jueves|viernes|sabados?|domingos?|festivos?|laborables?)\b"
    r"|\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s*(?:a\.?m\.?|p\.?m\.?|h\b|horas\b)"
    r"|\b(?:every|each|daily|weekly|monthly|annually|cada|diario|diariamente|semanal|mensual)\b"
    r"|\b(?:noon|midnight|morning|afternoon|evening|mediodia|manana|tarde|noche)\b"
)
# a moment told by an event or a span, which answers "when?" in a reply though a passage that
# merely holds one does not ("hasta el" and "siglo" fill encyclopaedic text): "until your
# suspension period ends", "the first full month after the date you filed", "en el siglo VIII",
# "the month before you apply"
_MOMENT = re.compile(
    r"\b(?:until|till|hasta que|hasta el|hasta la)\b"
    r"|\b(?:after|before|despues de|antes de)\s+(?:the |la |el )?(?:date|day|end|fecha|dia|final)\b"
    r"|\b(?:first|next|last|following|same|primer|proximo|siguiente|ultimo|mismo)\s+(?:\w+\s+)?"
    r"(?:day|week|month|year|dia|semana|mes|ano)\b"
    r"|\b(?:century|centuries|siglos?|deadline|end date|fecha limite|plazo)\b"
    # "from the month before you apply", "la semana después de la cita"
    r"|\b(?:day|week|month|year|dia|semana|mes|ano)\s+(?:before|after|antes|despues)\b"
)
# what answers a requirement question: documents, forms, proofs, or an obligation
_REQUIREMENT_ANSWER = re.compile(
    r"\b(?:id|identification|passport|licen[cs]e|certificate|card|form|application|proof|receipt"
    r"|document|documents|copy|photo|statement|letter|record|dni|nie|pasaporte|certificado"
    r"|carn[eé]t?|tarjeta|formulario|solicitud|justificante|contrato|escritura|fotocopia"
    r"|documento|documentos|recibo|impreso|instancia|libro de familia|volante)\b"
    r"|\b(?:must|required|need to|needs to|have to|has to|se debe|debe|deben|hay que|es necesario"
    r"|son necesarios|es obligatorio|tiene que|tienen que|requiere|requisito)\b"
)


def has_type(text: str, kind: str, question: str = "") -> bool:
    """True when ``text`` contains an answer of ``kind`` that ``question`` did not already give:
    a name, number or date the question itself holds is the subject, not the answer."""
    if kind == "date":  # "when?" is also answered by a delay or a moment ("within 7 days")
        return has_date(_without(text, question)) or bool(_WHEN_ANSWER.search(fold(text)))
    if kind == "number":
        return bool(numbers(text) - numbers(question))
    if kind == "requirement":
        return bool(_REQUIREMENT_ANSWER.search(fold(text)))
    if kind == "definition":
        return _defines(text, question)
    asked = _words(question)
    if entities(text) - asked:
        return True
    first = text.split()[:1]
    return bool(first) and first[0][:1].isupper() and fold(first[0].strip(".,;:")) not in asked


# a quantity of nothing, which answers "how much / how many?" in a reply with no digit: a price
# of nothing stated as the predicate ("it is free", "included at no extra cost", "costs
# nothing", "es gratis", "sin coste", "no cuesta nada"), or a sentence that is only that ("Free.",
# "No cost.", "None.", "Ninguno."). "A free trial", "feel free to ask", "you are free to cancel",
# "hands-free" and "none of our plans" state no amount, nor does a passage's "free text". Binding
# reads it as a price of nothing in the context as well (``binding.units.nothing_price``)
NOTHING_PRICE = re.compile(
    r"\b(?:is|are|it'?s|be|comes?|for|es|son|sale|salen|resulta)\s+(?:\w+ly\s+|always\s+"
    r"|completamente\s+|totalmente\s+|siempre\s+)?(?:free|gratis|gratuit[oa]s?)\b"
    r"(?!\s+(?:trial|de|to)\b)|\bfree of charge\b|\bfree to (?:download|use|install|join|try"
    r"|register|sign up)\b|\b(?:at|with|for|has|have|is|there'?s|there is|con|sin|hay)\s+no\s+"
    r"(?:extra\s+|additional\s+)?(?:cost|charge|fee)s?\b|\bcosts? nothing\b"
    r"|\bno (?:cuesta|cuestan|cobra|cobran|cobramos) nada\b|\bsin (?:ningun )?(?:coste|costo"
    r"|cargo)s?(?: extra| adicional)?\b|\bno tiene (?:ningun )?(?:coste|costo|cargo)\b"
)
_NONE = re.compile(
    r"\W*(?:none|zero|nothing|ninguno|ninguna|cero|nada|(?:completely |totally |totalmente )?"
    r"(?:free|gratis)|no (?:extra )?(?:cost|charge|fee))\W*"
)


def _states_nothing(answer: str) -> bool:
    """A reply that gives a quantity of nothing (:data:`NOTHING_PRICE`, :data:`_NONE`)."""
    folded = fold(answer)
    return bool(NOTHING_PRICE.search(folded)) or any(_NONE.fullmatch(s) for s in folded.split("."))


def answers_type(answer: str, kind: str, question: str = "") -> bool:
    """``has_type`` for an answer, where a moment told by an event or a span also answers
    "when?" ("until the period ends", "the month after the date you filed"), and a quantity of
    nothing answers "how much?" ("included at no extra cost")."""
    if kind == "number" and _states_nothing(answer):
        return True
    return has_type(answer, kind, question) or (
        kind == "date" and bool(_MOMENT.search(fold(answer)))
    )


def _without(text: str, question: str) -> str:
    """``text`` with the question's own words removed (so its years and months do not count)."""
    asked = _words(question)
    return " ".join(w for w in re.findall(r"\w+", text) if fold(w) not in asked)


def _words(text: str) -> set[str]:
    return {fold(w) for w in re.findall(r"\w+", text)}


# how people lead into a question ("Quick question:", "Do you know ...", "I'd like to know,",
# "Quisiera saber:", "¿Me puedes decir ...", "Dime,"): words of asking, not of what is asked
_PREAMBLE_WORDS = frozenset(
    """quick short one a question can could would will you tell me do know i i'd id like to want
    was wondering please hi hello hey just and so una pregunta rapida quisiera saber me puedes
    puede podrias podria decir dime gustaria quiero oye hola por favor sabes sabe y""".split()
)
_ASKING_WORDS = ("know", "tell", "question", "wondering", "saber", "decir", "pregunta", "dime")
PREAMBLE_MAX_WORDS = 6
_WORD = re.compile(r"[^\W\d_][\w']*")


PREAMBLE_SPELLING = 80.0  # rapidfuzz ratio from which a word of four letters or more is one of them


def _preamble_word(word: str, vocabulary: frozenset[str] | tuple[str, ...]) -> bool:
    """``word`` is in ``vocabulary``, or (four letters or more) a near spelling of one of its
    words ("questiion", "qick")."""
    if word in vocabulary:
        return True
    longer = [v for v in vocabulary if len(v) >= 4]
    return (
        len(word) >= 4
        and process.extractOne(word, longer, scorer=fuzz.ratio, score_cutoff=PREAMBLE_SPELLING)
        is not None
    )


# how a turn of a conversation opens before it asks ("Oh you need an agent?", "Yes, what is the
# fee?", "Alright, and where do I send it?", "Vale, ¿y dónde lo entrego?"): a reaction, no term
_INTERJECTIONS = frozenset(
    """oh ah aha ok okay okey hmm hm um uh well wow yes no yeah yep nope alright great cool sure
    really interesting thanks perfect vale bueno pues claro vaya genial gracias perfecto
    si""".split()
)


# what follows an interjection without a pause ("Oh you need ...", "Ok so how ...", "Yes I
# would ...", "Oh ok, ..."); a content word or a stopword such as "down" keeps it ("Cool down
# period?")
_FOLLOWS_INTERJECTION = _INTERJECTIONS | frozenset(
    """i you we they he she it so and but then what how why when where who which can could do
    does did is are was were will would should please i'm i'd i'll y pero entonces que como
    donde cuando cual puedo puede me te se lo""".split()
)


def _interjection_end(question: str, words: list[re.Match[str]]) -> int:
    """How many of ``words`` open ``question`` as interjections: each one followed by a pause
    ("Yes, ...") or by a word of no content ("Oh you ...", "Ok so ..."), so that "Great Barrier
    Reef" or "Well water" keep their first word."""
    end = 0
    for n, m in enumerate(words[: PREAMBLE_MAX_WORDS - 1]):
        if fold(m.group()) not in _INTERJECTIONS:
            break
        nxt = words[n + 1] if n + 1 < len(words) else None
        pause = nxt is not None and bool(re.search(r"[,.!;:¿?]", question[m.end() : nxt.start()]))
        if nxt is None or not (pause or fold(nxt.group()) in _FOLLOWS_INTERJECTION):
            break
        end = n + 1
    return end


@lru_cache(maxsize=4096)  # question_terms reads the same question several times per judgement
def without_preamble(question: str) -> str:
    """``question`` without the interjections that open it ("Oh", "Yes,", "Vale,") and a leading
    run of asking words that holds a verb of asking ("Do you know", "Quick question:", "¿Me
    puedes decir"); unchanged when fewer than two words would remain."""
    words = list(_WORD.finditer(question))
    opened = _interjection_end(question, words)
    if opened and len(words) - opened >= 2:
        question = question[words[opened - 1].end() :].lstrip(" ,.!:;-")
        words = list(_WORD.finditer(question))
    end = 0
    for n, m in enumerate(words[:PREAMBLE_MAX_WORDS]):
        if not _preamble_word(fold(m.group()), _PREAMBLE_WORDS):
            break
        end = n + 1
    lead = [fold(m.group()) for m in words[:end]]
    if not any(_preamble_word(w, _ASKING_WORDS) for w in lead) or len(words) - end < 2:
        return question
    return question[words[end - 1].end() :].lstrip(" ,:;-")


# a question in the user's own voice ("Am I eligible for ...?", "Which forms would my service
# member need?") is a page's heading or the user's question repeated, not one put to the user
_USER_VOICE = re.compile(r"\b(?:i|i'm|i've|i'd|my|me|mine|myself|yo|mi|mis)\b")
_TO_THE_USER = re.compile(r"\b(?:you|your|yours|usted|ustedes|tu|tus|te|ti)\b")


def in_user_voice(text: str) -> bool:
    """``text`` speaks as the user ("Am I eligible ...?", "my service member"), to nobody."""
    folded = fold(text)
    return bool(_USER_VOICE.search(folded)) and not _TO_THE_USER.search(folded)
