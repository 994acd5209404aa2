"""Answer parsing shared by the judges: atomic claims, abstentions and prompt-injection text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragsieve.evaluators.judges.offline.text.question import expected_type
from ragsieve.evaluators.judges.offline.text.reading import is_hedge, is_meta, read_answer
from ragsieve.evaluators.judges.offline.text.text import fold, sentences

# Phrases that mean "I cannot answer": an abstention is honest, not a hallucination.
# what an assistant calls its sources (a help desk's "documentation", "knowledge base", "FAQ");
# words that also name things in the world ("guide", "manual", "records") are left out
_SRC = (
    r"(?:context|passages?|documents?|documentation|docs|text|sources?|information|data"
    r"|articles?|excerpts?|knowledge base|faqs?|(?:help|support) pages?)"
)
_SRC_ES = (
    r"(?:contexto|documentos?|documentaci[oó]n|textos?|fuentes?|informaci[oó]n|datos"
    r"|art[ií]culos?|base de conocimientos?|preguntas frecuentes)"
)
# the nouns that name only what the model was given: any verb ("the context does not include it")
_SRC_GIVEN = r"(?:context|passages?|excerpts?|sources?|provided text)"
_SRC_GIVEN_ES = r"(?:contexto|pasajes?|fuentes?|fragmentos?)"
# which sources: "the documentation (that) I have", "the pages provided to me", "la que tengo";
# "we" speaks for a business too ("the documents we have" can be a customer's papers), so it
# names the assistant's sources only with the help desk's own nouns (_SRC_DESK)
_SRC_WHICH = (
    r" (?:(?:that |which |que )?(?:i (?:have|was given|can see|found)|tengo)"
    r"|(?:provided|available|given|retrieved|shared|above|here|at hand"
    r"|proporcionad[ao]s?|disponibles?)(?: to (?:me|us))?)"
)
_SRC_DESK = r"(?:documentation|docs|knowledge base|faqs?|(?:help|support) pages?)"
_SRC_WE = r" (?:that |which |que )?(?:we (?:have|were given|can see|found)|tenemos)"
_NOT = r" (?:does not|do not|did not|doesn't|don't|didn't)"
# a speech verb says what a text says; a content verb also says what a product includes ("The
# documentation does not include a printed manual"), so it needs the sources named as such or
# the answer as its object
_SPEECH = r" (?:mention|say|specify|state|address)"
_INDICATE = r" (?:indicate|show)"
_CONTENT = r" (?:contain|include|provide|give|cover|have)"
_ANSWER_OBJ = (
    r" (?:the |an |any |this |that |such |enough )?(?:answer|information|details?|specifics)"
)
_ABSTAIN = re.compile(
    r"\b("
    r"i (?:do not|don't|dont) (?:have|know|possess|see|find)"
    r"|i(?: am|'m) (?:not sure|unable|not able|not aware"
    r"|sorry(?! to (?:have to )?(?:inform|tell|say|let you know|report)))"  # ... courtesy
    r"|(?:^|i (?:was |am )?)unable to (?:answer|determine|find|provide|say)"
    r"|(?:an |the |a )?answer (?:cannot|can't|can not|could not) be (?:\w+ )?(?:provided|given"
    r"|determined|found)(?=\s*(?:$|[.,;:!?]|(?:based on|from|with|without|using|here)\b))"
    r"|i (?:cannot|can't|can not|could not|couldn't|was unable to|am unable to)"
    r" (?:find|answer|provide|determine|say|tell|confirm|give|locate|know)"
    # "there is no information": what the sources lack ("there is no data limit" is a claim)
    r"|(?:there is|there's) no (?:information|mention|data|record)s?"
    r"(?=\s*(?:$|[.,;:!?]|about|on|of|regarding|concerning|for|in|available|to|that|which))"
    r"|(?:is|are|was|were) not (?:specifically |explicitly |directly |clearly )?(?:mentioned"
    r"|provided|specified|stated|available|given|included) in the (?:\w+ )?"
    + _SRC
    + rf"|{_SRC_GIVEN}(?:{_SRC_WHICH})?{_NOT}(?:{_SPEECH}|{_CONTENT})"
    + rf"|{_SRC}(?:{_SRC_WHICH})?{_NOT}{_SPEECH}"
    + rf"|{_SRC_DESK}{_SRC_WE}{_NOT}(?:{_SPEECH}|{_CONTENT}|{_INDICATE})"
    + rf"|(?:{_SRC_GIVEN}|{_SRC_DESK})(?:{_SRC_WHICH})?{_NOT}{_INDICATE}"
    + rf"|{_SRC}{_SRC_WHICH}{_NOT}(?:{_CONTENT}|{_INDICATE})"
    + rf"|{_SRC}{_NOT}{_CONTENT}{_ANSWER_OBJ}"
    r"|no (?:tengo|dispongo de|cuento con|hay) (?:esa |suficiente |la |ninguna )?informaci[oó]n"
    r"|no (?:lo )?s[eé](?=\s*(?:[.,;:!?]|$)|\s+(?:la respuesta|si|cual|que|como|cuando|donde)\b)"
    r"|no (?:puedo|pude) (?:responder|encontrar|determinar|confirmar|decir|dar)"
    r"|no (?:encuentro|encontr[eé]|encontramos|he encontrado|hemos encontrado|logro encontrar"
    r"|consigo encontrar) (?:ninguna |esa |la |m[aá]s |suficiente )?informaci[oó]n"
    r"|no se (?:menciona|especifica|indica|proporciona)"
    r"|no (?:hay|existe) informaci[oó]n"
    + rf"|{_SRC_GIVEN_ES}(?:{_SRC_WHICH})? no (?:menciona|incluye|contiene|dice|especifica"
    r"|proporciona|indica)n?"
    + rf"|{_SRC_ES}(?:{_SRC_WHICH})? no (?:menciona|dice|especifica|indica)n?"
    + rf"|{_SRC_ES}(?:{_SRC_WHICH}|{_SRC_WE})? no (?:incluye|contiene|proporciona|da|ofrece)n?"
    r" (?:la |una |ninguna |esa |suficiente |m[aá]s )?(?:respuesta|informaci[oó]n|detalles?"
    r"|datos)\b" + rf"|{_SRC_ES}(?:{_SRC_WHICH}|{_SRC_WE}) no (?:incluye|contiene|proporciona)n?"
    r")",
)
# Text that addresses the judge instead of the user: content must stay data.
_INJECTION = re.compile(
    r"("
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|prompts?|rules|above|previous)"
    r"|\b(?:you are now|pretend to be|new instructions?|system prompt)\b"
    r"|(?:^\W*|\byou (?:must |should |will |shall )?)act as\b"
    r"|\b(?:answer|respond|reply|output|return|say|grade|rate|score|mark)\b.{0,30}"
    r"\b(?:yes|faithful|relevant|supported|correct|1\.0|10/10|true|pass)\b.{0,20}"
    r"(?:regardless|no matter|always|judge|evaluator|grader)"
    r"|\b(?:to|dear) (?:the )?(?:judge|evaluator|grader|ai|assistant|llm)\b"
    r"|\b(?:ignora|olvida|omite)\b.{0,40}\binstrucciones\b"
    r"|<\|?(?:system|im_start|endoftext)\|?>"
    r"|<{2,}\s*/?\s*(?:begin|end)\b[^<>\n]{0,60}>{2,}"  # a fake data-fence marker
    r")",
    re.IGNORECASE | re.DOTALL,
)
# Lead-ins that cite the source instead of stating a fact ("According to the context, ...",
# "The documents say that ...", "Según el texto, ..."): the claim is what follows them.
_SOURCE = (
    r"(?:provided |given |available |retrieved |above |following )?"
    r"(?:text|context|documents?|passages?|sources?|information|articles?|excerpts?|records?"
    r"|texto|contexto|documentos?|fuentes?|informaci[oó]n|art[ií]culos?|pasajes?|datos)"
)
_ATTRIBUTION = re.compile(
    r"^\W*(?:"
    rf"(?:according to|based on|as (?:stated|mentioned|described|noted|shown) in|per|from)"
    rf" (?:the |these |this )?{_SOURCE}\b[,:]?"
    r"|it is (?:mentioned|stated|noted|said|explained) (?:in (?:the |these |this )?"
    rf"{_SOURCE} )?that\b[,:]?"
    # a hedge or someone else's voice before the statement: "It appears that X", "It is clear
    # that X", "Some suggest that X", "others indicate that X"
    r"|it (?:appears|seems|is clear|is evident|is likely)(?: from (?:the |these )?"
    rf"{_SOURCE})? that\b,?"
    # courtesy before the statement: "I'm sorry to have to inform you that X"
    r"|(?:i'?m|i am|we'?re|we are) (?:sorry|afraid|happy|glad|pleased) to (?:have to )?"
    r"(?:inform you|tell you|say|let you know|report)(?: that)?\b,?"
    r"|(?:lamento|siento|me alegra|me complace) (?:tener que )?(?:informarle|informarte|decirle"
    r"|decirte|comunicarle|comunicarte)(?: que)?\b,?"
    # the reader's inference from the sources: "we can see that X", "it can be inferred that X"
    r"|(?:we|one|you) can (?:see|understand|infer|conclude|say|tell) that\b,?"
    r"|it can be (?:seen|understood|inferred|concluded|said) that\b,?"
    r"|(?:podemos|puedes|puede|se puede|se podr[ií]a) (?:ver|entender|inferir|concluir|deducir"
    r"|decir) que\b,?"
    r"|(?:some|others|some people|some experts|many) (?:suggest|indicate|say|believe|claim"
    r"|argue|note)s? (?:that\b)?,?"
    rf"|(?:the |these |this |some |other |both |all )?{_SOURCE} (?:also |primarily |mainly )?"
    r"(?:says?|states?|indicates?|mentions?|notes?|shows?"
    r"|explains?|reports?|suggests?)(?: that)?\b[,:]?"
    r"|(?:the |my )?(?:short |final |correct |direct )?answer(?: to (?:the|your|this) question"
    r"(?: \"[^\"]*\"| '[^']*')?)? (?:is|would be)\b:?"
    r"|(?:seg[uú]n|de acuerdo con|con base en) (?:el |la |los |las |este |esta |estos )?"
    rf"{_SOURCE}\b[,:]?"
    rf"|(?:el |la |los |las )?{_SOURCE}"
    r" (?:dice|indica|menciona|señala|afirma|explica|muestra)n?"
    r"(?: que)?\b[,:]?"
    r"|la respuesta (?:es|ser[ií]a)\b:?"
    # discourse markers that summarise rather than state: "In total, 390 settlers."
    r"|(?:in total|en total|overall|altogether|in short|in summary|en resumen|en suma"
    r"|in conclusion|en conclusi[oó]n)\b[,:]?"
    r")\s*",
    re.IGNORECASE,
)
_SPLIT_CONJ = re.compile(
    r";\s+|,?\s+\b(?:and also|but also|while|whereas|mientras que)\b\s+|,\s+(?:but|pero)\s+"
)


@dataclass(slots=True)
class ParsedAnswer:
    """An answer split into verifiable claims plus what was set aside."""

    claims: list[str] = field(default_factory=list)
    abstentions: list[str] = field(default_factory=list)
    suspicious: list[str] = field(default_factory=list)
    lead_ins: list[str] = field(default_factory=list)  # per claim: its list's lead-in, or ""
    set_aside: list[tuple[str, str]] = field(default_factory=list)  # framing: (text, why)

    @property
    def abstained(self) -> bool:
        """True when the answer only declines to answer."""
        return bool(self.abstentions) and not self.claims


MAX_WORDS_BESIDE_ABSTENTION = 10  # more than this beside the phrase: the sentence states facts


def is_abstention(sentence: str, asked: str = "") -> bool:
    """True when a sentence declines to answer (English or Spanish).

    Bracketed asides ("[citation needed]") are not read, and a sentence that states much
    besides the declining phrases is a claim, not an abstention; the words of the question it
    declines (``asked``) state nothing new ("I do not have information on whether common and
    preferred stocks differ in the share of the company they represent"). Every declining
    phrase is set apart, not only the first: "I'm sorry, our documents don't say anything about
    a discount for alarms, so I can't tell you." declines three times and states nothing; beside
    several, a number the question does not write is a value stated, and the sentence a claim.
    """
    text = re.sub(r"\[[^\]]*\]|\([^)]*\)", " ", fold(sentence).replace("’", "'"))
    if _ABSTAIN.search(text) is None:
        return False
    said = set(re.findall(r"\w+", fold(asked)))
    rest, phrases = _ABSTAIN.subn(" ", text)
    new = [w for w in rest.split() if not said or re.sub(r"\W", "", w) not in said]
    if phrases > 1 and any(ch.isdigit() for w in new for ch in w):
        return False  # "I can't confirm it: Pro costs 30 EUR": a value stated, not declined
    return len(new) <= MAX_WORDS_BESIDE_ABSTENTION


def find_injections(text: str) -> list[str]:
    """Sentences of ``text`` that try to instruct a judge or an assistant."""
    return [s for s in sentences(text) if _INJECTION.search(s)]


_PARTICLE = re.compile(r"^\W*(?:no|yes|s[ií])\s*,\s*", re.IGNORECASE)


def strip_attribution(sentence: str) -> str:
    """``sentence`` without a lead-in that only cites the source ("According to the text, ");
    a reply's leading "No," / "Yes," stays ("No, based on the passages, it does not ..." ->
    "No, it does not ...")."""
    particle = _PARTICLE.match(sentence)
    if particle and _ATTRIBUTION.match(sentence[particle.end() :]):
        rest = strip_attribution(sentence[particle.end() :])
        return sentence[: particle.end()] + rest[:1].lower() + rest[1:]
    for _ in range(2):
        rest = _ATTRIBUTION.sub("", sentence, count=1)
        if rest == sentence or not rest.strip():
            break
        sentence = rest[:1].upper() + rest[1:] if rest[:1].islower() else rest
    return sentence


CLAUSE_WORDS = 4  # ", and ..." starts a claim of its own when both sides have this many words
_AND_CLAUSE = re.compile(r",\s+(?:and|y)\s+")


def split_claims(sentence: str) -> list[str]:
    """Break one sentence into atomic-ish claims at semicolons and contrastive conjunctions, and
    at ", and" between two clauses ("We open at 9, and parking is free": two facts to check;
    "apples, pears, and plums" stays one)."""
    parts = [p.strip(" ,") for p in _SPLIT_CONJ.split(sentence)]
    out: list[str] = []
    for part in parts:
        pieces = _AND_CLAUSE.split(part)
        if len(pieces) == 2 and all(len(p.split()) >= CLAUSE_WORDS for p in pieces):
            out.extend(p.strip(" ,") for p in pieces)
        else:
            out.append(part)
    return [p for p in out if len(p.split()) >= 2] or [sentence]


# "Anytime!" answers a "when" and is courtesy after anything else ("Thanks, that helps!")
_ANYTIME = re.compile(r"\W*(?:any ?time|cuando quieras|cuando quiera)\W*", re.IGNORECASE)
# a closing that states nothing: a wish ("Happy riding!", "Enjoy your trip!", "¡Buen viaje!")
# or a referral to the help desk with nothing to check ("Please contact PedalGo support.", "I'd
# recommend contacting Acme's sales team to ask.", "Te recomiendo consultar con el soporte": no
# number, address or hours; "Contact support at 555-0100" stays a claim)
# the help desk, named (matched on folded text): customer service, support, a help desk, or a
# team of the assistant's own ("our sales team", "Acme's billing department", "nuestro equipo de
# ventas", "el equipo de soporte"). "Contact the
# emergency team" and "Llama al equipo de emergencias" are instructions to check
_DESK = (
    r"(?:(?:our |the |your |tu |su |el |al |a |la )?(?:[\w-]+ ){0,2}?(?:customer (?:service|support"
    r"|care)|support|help ?desk|service desk|soporte|atencion al cliente|servicio (?:de atencion )?"
    r"al cliente)(?: team| agents| staff| de [\w-]+)?|our (?:[\w-]+ ){0,2}?(?:team|agents|staff"
    r"|department)|(?:the |your |[\w-]+'?s )?(?:sales|billing|account|support) (?:team|department)"
    r"|(?:al |el )?(?:equipo|departamento) de (?:ventas|soporte|facturacion|cuentas)"
    r"|(?:nuestr[oa]s?) (?:equipo|agentes|departamento|oficina)(?: de [\w-]+)?"
    r"(?: al cliente)?)"
)
# a greeting, thanks or "you're welcome" beside a wish makes one courtesy: "You're welcome, have
# a nice day!", "¡De nada! Que tengas un buen día.", "¡Buenos días!"
_GREETING = (
    r"(?:good (?:morning|afternoon|evening|day)|buen(?:os|as) (?:dias|tardes|noches)|hello|hi|hey"
    r"|hola|buenas|(?:many )?thanks(?: a lot| so much)?|thank you(?: so much| very much)?"
    r"|(?:muchas )?gracias|(?:you['’]?re|you are)(?: very| most)? welcome|de nada)"
)
_CLOSING = re.compile(
    r"\W*(?:(?:(?:happy|feliz) \w+|enjoy (?:your|the) \w+|have a (?:great|good|nice|lovely"
    r"|wonderful) \w+|safe travels|take care|buen viaje|que (?:lo )?disfrutes?"
    r"|que (?:tengas|tenga|teng[aá]is|pases|pase) (?:un |una )?(?:buen|buena|feliz|bonito"
    r"|bonita|gran|excelente) \w+(?: de semana)?|"
    + _GREETING
    + r"|disfruta (?:de )?(?:tu|el|la) \w+"
    r"|(?:please |you (?:can|may|could|might)(?: want to)? |feel free to |(?:i|we)(?:'d| would)?"
    r" (?:recommend|suggest) (?:that you )?)?(?:contact|reach out to|get in touch with|ask|call"
    r"|phone|consult|check with|speak (?:to|with)|talk to)(?:ing)? "
    rf"{_DESK}(?: (?:for (?:more )?(?:help|assistance|details|information|[a-z-]+ options)"
    r"|to (?:ask|confirm)))?"
    r"|(?:por favor,? )?(?:(?:puedes|puede|pueden|podeis|te recomiendo|le recomiendo|te sugiero"
    r"|le sugiero|recomiendo) )?(?:contact|escrib|consult|llam|pregunt|habl)(?:a|e|ar|ir|ad)"
    rf"(?: con)? {_DESK}(?: para (?:confirmarlo|preguntar|m[aá]s (?:informaci[oó]n|detalles)))?)"
    r"\W*)+",
    re.IGNORECASE,
)


_REFERRAL = re.compile(
    rf"\b(?:contact|reach out|get in touch|call|phone|consult|check with|speak"
    rf"|talk|escrib|llam|pregunt|habl)\w*\b.*?{_DESK}"
)


# the words of thanks, greetings and wishes: a sentence made only of them ("Thank you for your
# patience, have a nice day!", "¡Gracias a ti!") states nothing, however they are combined
_COURTESY_WORDS = frozenset(
    """hi hello hey there thanks thank you so much very lot for your the patience reaching out
    contacting us writing asking have a nice great good lovely wonderful day evening weekend
    morning afternoon night welcome youre re most glad happy to help it was my pleasure and all
    best regards cheers take care bye goodbye see soon again hola buenos buenas dias dia tardes
    noches gracias muchas mil ti usted de nada que tengas tenga pases pase un una buen buena
    feliz bonito gran excelente fin semana por tu su paciencia contactarnos escribirnos placer
    saludos hasta pronto luego adios cuidate y""".split()
)
_COURTESY_MARKS = frozenset(
    "hi hello hey thanks thank welcome bye goodbye cheers hola buenos buenas gracias nada adios"
    " day dia".split()
)


def _courtesy(part: str, question: str) -> bool:
    said = re.findall(r"[a-z']+|\d", fold(part).replace("'", ""))
    if said and _COURTESY_MARKS.intersection(said) and _COURTESY_WORDS.issuperset(said):
        return True
    if _CLOSING.fullmatch(fold(part)):
        return True
    return bool(_ANYTIME.fullmatch(part)) and expected_type(question) != "date"


def parse_answer(answer: str, question: str = "") -> ParsedAnswer:
    """Split ``answer`` into claims, abstaining sentences and suspicious (injection) sentences;
    structure, preambles and courtesy are set aside (:mod:`.reading`). A declining sentence
    may restate the ``question`` at any length."""
    parsed = ParsedAnswer()
    read = read_answer(answer)
    parsed.set_aside = read.set_aside
    for statement in read.statements:
        sent = statement.text
        if _INJECTION.search(sent):
            parsed.suspicious.append(sent)
            # the instruction is set aside; what the rest of the sentence states is still a claim
            sent = re.sub(r"\s+([,.;:])", r"\1", _INJECTION.sub(" ", sent)).strip(" ,;:-")
            if len(sent.split()) < 2:
                continue
        if is_abstention(sent, question) and not _SPLIT_CONJ.search(sent):
            parsed.abstentions.append(sent)
            continue
        for part in split_claims(strip_attribution(sent)):
            if is_abstention(part, question):  # "I don't know the dose, but it is taken daily"
                parsed.abstentions.append(part)
            elif is_hedge(part):  # "..., but the passages do not say when"
                parsed.set_aside.append((part, "says what the passages lack"))
            elif is_meta(part) or _courtesy(part, question):  # "Lo siento, pero ...", "Anytime!"
                parsed.set_aside.append((part, "about the answer"))
            else:
                parsed.claims.append(part)
                parsed.lead_ins.append(statement.lead_in)
    if not parsed.claims and not parsed.abstentions and not parsed.suspicious and answer.strip():
        # a bare number or symbol is still a claim; so is a referral that is the whole answer
        # ("Please contact the billing department." when the context says how): it closes
        # an answer or a refusal, and alone it is what the user was told to do
        referred = any(_REFERRAL.search(fold(text)) for text, _ in parsed.set_aside)
        if not read.set_aside or not any(ch.isalnum() for ch in answer) or referred:
            parsed.claims.append(answer.strip())
            parsed.lead_ins.append("")
    return parsed
