"""Reading an answer as a person does: its structure and its talk about itself are not claims.

LLM answers come dressed: "Sure! Here is ...", "Based on the given passages, the benefits
include:", numbered steps, bullets, headings ("Symptoms:"), citation markers ("[1]",
"(Passage 2)"), "Therefore, ..." and "I hope this helps!". :func:`read_answer` undresses an
answer into the sentences that state something, each with the lead-in it belongs to (a list item
inherits the line that introduced the list), and sets aside what only frames the answer:

- **structure**: list markers (at a line's start or inside a paragraph: "2. After ..."), step
  labels ("**Forms and Filing Fee**: Complete ..."), headings, emphasis, table rules, citation
  markers, and fenced example code;
- **meta**: sentences about the answer or the passages ("Passage 1 provides the steps:", "The
  second passage repeats the same information."), preambles and courtesy, and questions back to
  the user ("Would you like to know about the US rules?"): they assert nothing;
- **discourse markers** at a sentence's start ("Next,", "Additionally,", "Therefore,",
  "Por lo tanto,"): the sentence is kept, the marker is not a word to support.

Nothing here decides support: it only chooses which text the faithfulness judge checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, fold, known_word, sentences

QUESTION_BACK = "a question back, not a claim"  # the reason a question to the user is set aside

# "1.", "2)", "(3)", "a.", "-", "*", "•", "+", "Step 4:", "Paso 2:" at the start of a line
_ITEM = re.compile(
    r"^\s*(?:\(?\d{1,2}[.)]|\(?[a-hA-H][.)](?=\s)|[-*•+◦▪–]|(?:step|paso)\s*\d{1,2}\s*[:.)-])\s+",
    re.IGNORECASE,
)
_HEADING_MD = re.compile(r"^\s*#{1,6}\s+")
_EMPHASIS = re.compile(r"\*\*|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)")
# underscores emphasise only in pairs: alone they are an identifier's ("pgk_", "sk_live_")
_UNDERSCORES = re.compile(r"(?<!\w)(__?)(?=[^\s_])(.+?)(?<=[^\s_])\1(?!\w)")
_FENCE = re.compile(r"^\s*(?:```|~~~)")  # a fenced block of example code opens or closes
# "**Forms and Filing Fee**: Complete the forms": a list item's (or a bold line's) label names
# the step; what follows it is the statement (not "8:30", not "https://")
_LABEL = re.compile(r"^\s*([^\W\d_][^:.!?;]{0,60}?)(?<!\d)\s*:\s+(?=\S)")
_LABEL_WORDS = 6
_OWN_LABEL = re.compile(r"(?:method|option|step|way|approach|m[eé]todo|opci[oó]n|paso)\s*\d", re.I)
# "2. After the FROM keyword, ...": a list number inside a paragraph opens its sentence
_INLINE_ITEM = re.compile(r"^\(?\d{1,2}[.)]\s+(?=[A-Z\"'`(])")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
# "[1]", "[2, 3]", "[Passage 2]", "(Passage 1)", "(Source: 2)", "【1】", "(Pasaje 3)"
_CITATION = re.compile(
    r"\s*(?:\[\s*\d+(?:\s*[,;-]\s*\d+)*\s*\]|【\s*\d+\s*】"
    r"|[\[(]\s*(?:(?:ref|reference|see|source|cf|ver)\.?\s*:?\s*)?"
    r"(?:passages?|pasajes?|sources?|fuentes?|documents?|documentos?|doc|context|contexto)"
    r"\s*:?\s*\d+(?:\s*(?:,|and|y|&|-)\s*\d+)*"
    # "(Passage 1, step 6)", "(Passage 2, steps 1-3)": where in the source, not a claim
    r"(?:\s*[,;]\s*(?:steps?|paragraphs?|para|lines?|sections?|pasos?|p[aá]rrafos?)\s*"
    r"\d+(?:\s*[-–]\s*\d+)?)?\s*[\])])",
    re.IGNORECASE,
)
_WORDS_IN_HEADING = 6  # a line of at most this many words ending in ":" is a heading or lead-in

# sentences that only talk about the answer, the question or the passages
_SELF = (
    r"(?:passages?|pasajes?|context|contexto|documents?|documentos?|sources?|fuentes?|texts?"
    r"|textos?|excerpts?|articles?|art[ií]culos?|information provided|informaci[oó]n proporcionada)"
)
# "the first passage", "the other document": which source, not what it states
_ORDINAL = r"(?:first|second|third|fourth|fifth|last|final|other|primer|segundo|tercer|[uú]ltimo)"
_META = re.compile(
    r"^(?:"
    # courtesy and offers
    r"(?:i )?hope (?:this|that|it) helps|let me know\b|feel free\b|if you have (?:any )?"
    r"(?:more |further |other )?questions|please (?:let me know|note that)?\s*$|happy to help"
    r"|espero que (?:esto |esta informaci[oó]n )?(?:te |le )?(?:sirva|ayude)|si (?:tienes|tiene)"
    r" (?:m[aá]s |alguna )?(?:preguntas|dudas)"
    # preambles: "Sure! Here is ...", "Certainly.", "Great question."
    r"|(?:sure|certainly|of course|absolutely|okay|ok|great question|good question|claro"
    r"|por supuesto|(?:i'm |i am |we're |we are )?sorry|lo siento|disculpa|disculpe|perd[oó]n)"
    r"\s*[!.,]?\s*$"
    # a reply made only of courtesy: "Sure, no problem.", "Hello.", "Oh, that's too bad."
    r"|(?:(?:sure|certainly|of course|absolutely|okay|ok|alright|all right|hello|hi|hey|great"
    r"|thanks|thank you|no problem|got it|understood|i see|oh|well|(?:that's|that is) too bad"
    r"|(?:you're|you are|you're very|you are very|you're most|you are most) welcome"
    r"|(?:it was |it's |it is )?my pleasure|glad (?:i could|to) help|con gusto"
    r"|(?:es |fue )?un placer|a la orden|a tu servicio|a su servicio"
    r"|(?:i'm |i am )?sorry to hear (?:that|this)|claro|vale|hola|buenas|gracias|de nada|perfecto"
    r"|entendido|sin problema|por supuesto|vaya|qu[eé] pena|(?:lo )?siento (?:mucho )?"
    r"(?:o[ií]r|escuchar) (?:eso|esto))[\s!.,]*)+$"
    r"|(?:sure|certainly|of course|absolutely|okay|ok|claro|por supuesto)[!.,]?\s+"
    r"(?:here|i can|i'd|i will|let me|aqu[ií])\b"
    r"|here(?:'s| is| are)\b.{0,80}\b(?:answer|summary|steps?|list|overview|how|what|ways?"
    r"|information|explanation)\b"
    r"|aqu[ií] (?:tienes|tiene|est[aá]n?)\b"
    # "Passage 1 provides the necessary information ...", "The second passage repeats ..."
    rf"|(?:the |both |all |none of the |each |these |this |el |la |los |las )?(?:\w+ )?{_SELF}"
    r"(?: \d+(?:(?:,| and| y| &) \d+)*)?(?: \([^)]*\))? (?:also |further |then |only |primarily "
    r"|mainly )?"
    r"(?:provides?|gives?|repeats?|offers?|discuss(?:es)?|focus(?:es)?|describes?|lists?"
    r"|contains?|explains?|covers?|talks?|suggests?|mentions?|addresses|proporciona|repite"
    r"|describe|explica|menciona)\b.{0,60}\b(?:information|steps?|details?|tips?|same"
    r"|following|answer|question|instructions?|overview|informaci[oó]n|pasos?|respuesta)\b"
    # "The answer to the question ... can be summarized in the above steps": the answer's own
    # shape ("10 steps as mentioned above" counts the answer's steps, not a fact to find)
    r"|(?:the |my )?answer to (?:the|your|this) question\b.{0,120}\b(?:summari[sz]ed|above"
    r"|below|following)\b"
    r")",
    re.IGNORECASE,
)
# "The passages do not mention the temperature", "None of the passages explicitly state ...",
# "No se menciona ... en los pasajes": what the context lacks is a hedge, not a world claim
_HEDGE = re.compile(
    r"(?:^(?:however,? |but |unfortunately,? |sin embargo,? )?"
    r"(?:the |these |this |both |any |el |la |los |las |este |esta |estos )?"
    rf"(?:(?:given|provided|above|retrieved|{_ORDINAL}) )?(?:{_SELF}|question|pregunta)(?: \d+)?"
    r"(?: (?:provided|given|above|proporcionad[oa]s?|dad[oa]s?))? (?:do|does|did) not"
    r" (?:\w+ )?(?:provide|mention|state|specify|say|indicate|include|contain|give|address"
    r"|cover|offer|explain|describe|discuss|list|answer)\b"
    rf"|^(?:none|neither) of the {_SELF}\b.{{0,30}}\b(?:mention|state|specif|say|indicate|provide"
    r"|contain|give|address|explain|describe)"
    r"|^(?:there is|there's|there are) no (?:\w+ )?(?:information|mention|details?|data)\b"
    # "..., but does not mention frying": a source's clause whose subject the split cut off
    r"|^(?:but )?(?:does|do|did) not (?:\w+ )?(?:mention|state|specify|say|address|discuss)\b"
    rf"|^no (?:se )?(?:menciona|especifica|indica|proporciona|dice|detalla)\b.{{0,120}}\b{_SELF}"
    rf"|^(?:los |las |el |la )?{_SELF}(?: \w+)? no (?:menciona|especifica|indica|proporciona"
    r"|dice|incluye|contiene|detalla)n?\b"
    r"|^(?:it|this) (?:cannot|can't|can not) be (?:determined|answered|confirmed|inferred)\b"
    r"|^without (?:additional|more|further) (?:information|context|details)\b"
    r"|^it(?: is|'s) (?:difficult|hard|impossible|not possible) to (?:\w+ )?(?:say|determine|tell"
    r"|know|answer|confirm)\b"
    # "No se proporciona información sobre ...", "No information is given on ...": what is
    # missing about something ("No data is provided to third parties" is a claim)
    r"|^no (?:se )?(?:proporciona|menciona|especifica|indica|ofrece|detalla)n?"
    r" (?:informaci[oó]n|datos|detalles) (?:sobre|acerca de|respecto|de la|del)\b"
    r"|^no (?:information|details|data) (?:is|are|was|were)"
    r" (?:given|provided|available|mentioned) (?:about|on|regarding|as to|for)\b"
    # "It does not provide information on other moves", "The location is not explicitly
    # mentioned.", "Watching stories is not mentioned as a factor": what the sources leave out
    r"|^(?:it|they) (?:does|do) not (?:\w+ )?(?:provide|give|mention|include) (?:any )?"
    r"(?:information|details|data)\b"
    r"|\b(?:is|are) not (?:explicitly |specifically |directly |clearly )?(?:mentioned|stated"
    r"|specified)(?: as\b|\s*[.;]?\s*$)"
    # "The passages primarily focus on how to cook ...": what the sources are about
    rf"|^(?:the |these |both |all )?{_SELF} (?:primarily |mainly |only |also )?(?:focus|center"
    r"|centre|concentrate)(?:es)? on\b"
    # "No hay un X mencionado en los pasajes", "There is no X mentioned in the passages"
    rf"|^no hay\b.{{0,80}}\bmencionad[oa]s? en (?:los|las|el|la) {_SELF}"
    rf"|^there (?:is|are) no\b.{{0,80}}\b(?:mentioned|stated|given) in the {_SELF}"
    r")",
    re.IGNORECASE,
)
# "Passage 2 states that ...", "Passage 3:", "According to passage 1, ...": where a statement
# comes from is not part of what it states (and "2" is no value to find in the context)
_REPORTS = (
    r"(?:states?|says?|explains?|mentions?|reiterates?|notes?|suggests?|adds?|provides?"
    r"|discuss(?:es)?|lists?|highlights?|covers?|talks? about"
    r"|indicates?|describes?|recommends?|confirms?|dice|indica|menciona|explica|afirma|señala)"
)
_SOURCE_REF = re.compile(
    r"^(?:in |from |per |según (?:el |la )?|de acuerdo con (?:el |la )?|according to )?"
    r"(?:(?:passage|pasaje|source|fuente|document|documento|doc|context|contexto)\s*(?:#\s*)?\d+"
    r"(?:\s*(?:,|and|y|&)\s*\d+)*(?:\s*\([^)]*\))?\s*(?:also |further |then )?"
    rf"{_REPORTS}?"
    # "the first passage states ...", "The other source:", but not "The final document must be"
    rf"|(?:the |el |la )?{_ORDINAL} (?:passage|pasaje|source|fuente|document|documento)"
    rf"(?:\s*\([^)]*\))?\s*(?:(?:also |further |then )?{_REPORTS}|(?=:)))"
    r"(?: that| que)?\s*[:,]?\s*",
    re.IGNORECASE,
)
_SOURCE_REF_INNER = re.compile(
    r",?\s*\(?(?:according to|as (?:stated|mentioned|noted) in|per|in|from|según)"
    r" (?:the )?(?:passage|pasaje|source|document|documento)\s*\d+\)?(?=[\s.,;:]|$)"
    r"|,?\s*\(?as (?:described|explained|shown|outlined|discussed|suggested|listed|given)"
    r" (?:in|by) (?:the )?(?:passage|pasaje|source|document|documento)s?\s*\d+\)?(?=[\s.,;:]|$)"
    # ", as stated in the provided document,": where it comes from, inside the sentence
    r"|(?<=,)\s*(?:as (?:stated|mentioned|noted|described|explained|shown) in|according to)"
    r" (?:the )?(?:provided |given |above )?(?:documents?|passages?|context|text|sources?"
    r"|articles?)\s*,",
    re.IGNORECASE,
)
_ANSWER_LEAD = re.compile(
    r"^(?:so,? |therefore,? |thus,? )?(?:the |my )?(?:short |final |brief |direct )?answer"
    r"(?: to (?:the|your|this) question)?(?: \"[^\"]*\"| '[^']*'| [^:]{0,80}?)?"
    r" (?:is|would be)\s*:\s*",
    re.IGNORECASE,
)
# advice to look elsewhere: courtesy, not a claim about the world
_ADVICE = re.compile(
    r"^(?:it(?: is|'s| would be| may be| might be) (?:always )?(?:recommended|advisable|best"
    r"|a good idea|wise) to |(?:i |we )?"
    r"(?:would )?(?:recommend|suggest|advise) (?:you )?)(?:to )?(?:consult|seek|contact|check"
    r"|speak|talk|refer|ask|look)\w*\b|^(?:please )?(?:consult|contact) (?:a|an|your) \w+"
    r"|^(?:se recomienda|recomiendo|te recomiendo|le recomiendo) (?:consultar|contactar|acudir)"
    r"|^for (?:more|further|additional) (?:details|information|assistance|help|guidance)\b"
    r"|^(?:(?:also|alternatively|for (?:more|further) (?:details|information)|if [^,]{1,60}),? )?"
    r"you (?:can|may|might|could|should) (?:also )?(?:refer to|consult|check|see|read) (?:the )?"
    r"(?:(?:provided|given|above) (?:passages?|documents?|sources?|texts?)|passages?|context)"
    r"(?: for (?:more|further|additional) (?:details|information|guidance|help))?\s*[.!]?\s*$"
    r"|\b(?:consult|contact|speak|talk)(?:ing)? (?:to |with )?(?:a |an |your )?[\w ]{0,30}?"
    r" (?:is|are|would be|may be) (?:advisable|recommended|a good idea|wise|best)\b"
    # the answer's own steps wishing the reader well: "These steps should help you address
    # the problem", "Following these tips will help you ..."
    r"|^(?:following )?(?:these|the above|the following) (?:steps|tips|options|methods"
    r"|suggestions|instructions|solutions)\b.{0,30}\b(?:should|will|can|may|might) help\b"
    r"|^if (?:you(?:'re| are) )?still (?:having|experiencing|facing|encountering|seeing)"
    r" (?:issues|problems|trouble|errors)\b"
    # a closing that hands the choice to the reader: "Ultimately, the choice depends on your
    # financial situation", "The best option depends on your needs"
    r"|^(?:ultimately,? |in the end,? )?(?:the |your )?(?:best |right |final )?(?:choice|decision"
    r"|option|approach)\b.{0,30}\bdepends? (?:on|upon) (?:your|one's|the individual|individual)\b",
    re.IGNORECASE,
)
_NOTE = re.compile(
    r"^(?:it(?: is|'s) (?:also )?(?:worth|important to) not(?:e|ing)|(?:please )?note|nota)"
    r"(?: that| que)?"
    r"[,:]?\s+",
    re.IGNORECASE,
)
# a leading discourse marker: the sentence stays, the marker is not a claim's word
_MARKER = re.compile(
    r"^(?:next|then|also|additionally|furthermore|moreover|finally|lastly|first(?:ly)?"
    r"|second(?:ly)?|third(?:ly)?|fourth(?:ly)?|fifth(?:ly)?|however|alternatively|similarly"
    r"|specifically|importantly|in addition|in other words|for example|for instance|note"
    r"|therefore|thus|hence|so|overall|in summary|in short|in conclusion|to summarize"
    r"|unfortunately|fortunately|luckily|sadly"
    r"|to sum up|as a result|consequently|in general|generally|basically|essentially"
    r"|on the other hand|in contrast|by contrast|in fact|indeed|instead|meanwhile|as such"
    r"|adem[aá]s|tambi[eé]n|luego|despu[eé]s|finalmente|por [uú]ltimo|sin embargo"
    r"|por (?:lo )?tanto|por consiguiente|en resumen|en conclusi[oó]n|en primer lugar"
    r"|en segundo lugar|por ejemplo|es decir|asimismo|as[ií] que|en general|de hecho"
    r"|por otro lado|en cambio|por el contrario|en realidad|lamentablemente|desafortunadamente"
    r"|afortunadamente|por desgracia|por suerte)\s*[,:]\s*",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Statement:
    """A sentence that states something, and the lead-in line its list item belongs to."""

    text: str
    lead_in: str = ""


@dataclass(slots=True)
class ReadAnswer:
    """An answer read: its statements and what was set aside (with the reason)."""

    statements: list[Statement] = field(default_factory=list)
    set_aside: list[tuple[str, str]] = field(default_factory=list)  # (text, why)


def clean_line(line: str) -> str:
    """``line`` without markdown emphasis, heading marks and citation markers."""
    line = _HEADING_MD.sub("", line)
    line = _CITATION.sub("", line)
    line = _UNDERSCORES.sub(r"\2", _EMPHASIS.sub("", line))
    if "|" in line:  # a table row: its cells read as one clause
        line = "; ".join(c.strip() for c in line.strip().strip("|").split("|") if c.strip())
    return line.strip()


def strip_marker(sentence: str) -> str:
    """``sentence`` without a leading discourse marker ("Additionally, it ..." -> "It ...")."""
    for _ in range(2):
        rest = _MARKER.sub("", sentence, count=1)
        if rest == sentence or len(rest.split()) < 2:
            break
        sentence = rest[:1].upper() + rest[1:]
    return sentence


def is_hedge(text: str) -> bool:
    """True for a statement of what the passages (or the question) do not say: a hedge about
    the context, not a claim about the world ("The passages do not mention the dose")."""
    return bool(_HEDGE.search(fold(text).replace("’", "'").strip(" \t\"'")))


def strip_source(sentence: str) -> str:
    """``sentence`` without "Passage 2 states that" / "The answer to the question is:" /
    ", according to passage 1": where it comes from is not what it states."""
    sentence = sentence.replace("’", "'")
    for pattern in (_NOTE, _ANSWER_LEAD, _SOURCE_REF):
        rest = pattern.sub("", sentence, count=1)
        if rest != sentence and len(rest.split()) >= 1 and any(c.isalpha() for c in rest):
            sentence = rest[:1].upper() + rest[1:]
    return _SOURCE_REF_INNER.sub("", sentence)


def is_meta(sentence: str) -> bool:
    """True for a sentence about the answer, the question or the passages, a preamble,
    courtesy or advice to look elsewhere: it frames the answer and states nothing about the
    world."""
    text = fold(sentence).replace("’", "'").strip(" \t\"'¡¿")
    return bool(_META.search(text) or _ADVICE.search(text))


def _is_heading(line: str, raw: str) -> bool:
    text = line.rstrip()
    if _HEADING_MD.match(raw):
        return True
    return text.endswith(":") and len(text.split()) <= _WORDS_IN_HEADING


def _label(line: str, raw: str, item: bool) -> tuple[str, str]:
    """``(label, rest)`` of a list item or bold line "Label: rest", else ``("", line)``."""
    m = _LABEL.match(line)
    named = m is not None and _OWN_LABEL.match(m.group(1)) is not None  # "Method 1 (Manual):"
    if m is None or not (item or named or raw.lstrip().startswith(("**", "__"))):
        return "", line
    if len(m.group(1).split()) > _LABEL_WORDS or not any(c.isalpha() for c in line[m.end() :]):
        return "", line
    return m.group(1).strip(), line[m.end() :]


# the words that follow a transitive verb at a sentence's start: an instruction ("Ensure that
# ...", "Choose the ...", "Go to ...", "Bake at ...") whose verb names the step, not a fact
_AFTER_VERB = frozenset(
    "the a an your you that this these those it its any all each every if whether on to for"
    " with up out down off through into at my our their his her them us me".split()
)


def advice_verb(claim: str) -> str | None:
    """The folded first word of an instruction ("Ensure you are in the editor" -> "ensure"):
    a sentence that opens with a lowercase word of the language (not a name, not a number)
    followed directly by what a verb takes (a determiner, pronoun or particle). The verb says
    what to do; what it applies to is the claim to check."""
    m = re.match(r"^\W*([A-Za-z][a-z]+)\s+([a-z]+)\b", claim)
    if m is None or m.group(2) not in _AFTER_VERB:
        return None
    word = m.group(1).lower()
    if word in STOPWORDS or not known_word(word):
        return None
    return word


def read_answer(answer: str) -> ReadAnswer:
    """The statements of ``answer`` (each with its list lead-in) and what was set aside."""
    out = ReadAnswer()
    lead_in = ""
    in_code = False
    for raw in answer.replace("\r", "").split("\n"):
        if _FENCE.match(raw):  # example code is an illustration, not a claim about the world
            in_code = not in_code
            continue
        if in_code:
            if raw.strip():
                out.set_aside.append((raw.strip(), "example code"))
            continue
        if not raw.strip() or _TABLE_RULE.match(raw):
            continue
        item = _ITEM.match(raw)
        line = clean_line(raw[item.end() :] if item else raw)
        if not line or not any(ch.isalpha() for ch in line):
            continue
        # a numbered or bulleted line that is only a heading ("2. **Submission**:") heads the
        # items under it, as an unmarked heading does (not one that states a value: "3. Bake
        # at 200 degrees:" is a step)
        if _is_heading(line, raw) and not (item and any(ch.isdigit() for ch in line)):
            lead_in = line.rstrip(":").strip()
            out.set_aside.append((line, "heading"))
            continue
        if not item:
            lead_in = ""
        label, line = _label(line, raw, bool(item))
        if label:
            out.set_aside.append((label, "label of a step"))
        for sent in sentences(line):
            sent = _INLINE_ITEM.sub("", sent, count=1)
            if sent.rstrip().endswith(":") and not item:  # "... the benefits include:"
                lead_in = sent.rstrip(": ").strip()
                if is_meta(sent):
                    out.set_aside.append((sent, "about the answer"))
                else:
                    out.set_aside.append((sent, "lead-in of a list"))
                continue
            if is_meta(sent):
                out.set_aside.append((sent, "about the answer"))
                continue
            if sent.rstrip(" \"'»)").endswith("?"):  # "Would you like to know about ...?"
                out.set_aside.append((sent, QUESTION_BACK))
                continue
            text = strip_marker(strip_source(sent))
            context = "; ".join(x for x in (lead_in if item else "", label) if x)
            out.statements.append(Statement(text, context))
    return out


__all__ = [
    "ReadAnswer",
    "advice_verb",
    "Statement",
    "clean_line",
    "is_hedge",
    "is_meta",
    "read_answer",
    "strip_marker",
    "strip_source",
]
