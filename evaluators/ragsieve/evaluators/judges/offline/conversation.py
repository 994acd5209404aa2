"""The question a chat turn really asks: its standalone meaning, and whether it asks at all.

A follow-up ("and on Saturdays?") means what the conversation around it says. The judges read
:func:`judged_question`, which takes, in this order: ``rewrite``, the app's own standalone query
(the query of the retrieval step whose chunks reached the prompt, when it differs from the typed
turn: LangChain's history-aware retriever, LlamaIndex's condense engines); ``resolved``, a
follow-up that leans on the conversation (it points back, or names too little of its own) with
what it leaves out carried over from the last user turns and, for a reply that is not a question
("Yes, I do."), from the question the assistant's last turn asked; ``typed``, the turn as typed.
It also says what kind of turn it is (:func:`turn_kind`): a ``question`` (or a request: "tell
me about ..."), a ``statement`` ("Don't do that, I'll get insurance") or an ``acknowledgement``
("ok", "thanks!", "vale, gracias"). A turn that asks nothing new (those, "tell me more") is
answered from the passages of the open question, which the context judge also reads
(``JudgedQuestion.topic``); each judge's evidence records what was judged (``evidence()``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from ragsieve.evaluators.judges.offline.text.asked import replaced_names
from ragsieve.evaluators.judges.offline.text.question import in_user_voice
from ragsieve.evaluators.judges.offline.text.terms import TermIndex, key, tokens
from ragsieve.evaluators.judges.offline.text.text import (
    STOPWORDS,
    content_words,
    entities,
    fold,
    language,
    rarity,
)
from ragsieve.evaluators.records import Message, RagInteraction, normalize_text


class _Scored(Protocol):
    @property
    def score(self) -> float: ...


QuestionSource = Literal["typed", "rewrite", "resolved"]
TurnKind = Literal["question", "statement", "acknowledgement"]

USER_ROLES = frozenset({"user", "human"})
ASSISTANT_ROLES = frozenset({"assistant", "ai", "bot", "model"})
CARRY_FROM_TURNS = 2  # the last user turns whose words a follow-up may leave out
MAX_CARRIED = 6  # words carried over at most (the rarest first)
REFERENT_NAMES = 3  # names of the assistant's last turn an anaphor may point at (first said)
SELF_CONTAINED_WORDS = 3  # a question with this many content words and no anaphor stands alone
LAST_TURNS = 4  # turns an LLM judge is shown before the follow-up
TURN_CHARS = 600  # ... each cut to this many characters

_WH = (
    "what which who whom whose when where why how que qué cual cuál cuales cuáles quien quién"
    " quienes cuando cuándo donde dónde como cómo cuanto cuánto cuanta cuánta cuantos cuántos"
    " cuantas cuántas porqué puedo puede pueden podría podria"
)
_AUX = (
    "is are was were do does did can could will would should shall may might must have has had am"
)
_SUBJECT = (
    "i you he she it we they there this that these those the a an my your his her our their any"
    " anyone someone somebody anybody"
)
_ASKS = re.compile(
    r"^\W*(?:(?:and|so|but|also|ok|okay|then|well|y|pero|entonces|vale|bueno)\W+)?"
    r"(?:(?:" + "|".join(_WH.split()) + r")\b"
    r"|(?:" + "|".join(_AUX.split()) + r")\s+(?:" + "|".join(_SUBJECT.split()) + r")\b)"
)
# requests for information that end with no question mark: "tell me about ...", "dime ..."
_REQUEST = re.compile(
    r"\b(?:tell me|explain|describe|give me|show me|list|let me know|i(?: want| need| would like|"
    r"'d like| wanna) to know|i(?: am|'m) (?:looking|searching) for|i wonder|wondering|"
    r"what about|how about|any (?:info|information|idea)|more (?:info|information|about|details)|"
    r"dime|dígame|digame|explica|explícame|explicame|describe|quiero saber|necesito saber|"
    r"me gustar[ií]a saber|qu[eé] tal|y (?:el|la|los|las|si)\b|informaci[oó]n sobre)"
)
_ACK_WORDS = frozenset(
    """ok okay okey k kk yes yeah yep yup ya no nope nah sure thanks thank thx ty you very much
    so great cool good nice fine perfect awesome excellent wonderful alright right got it i see
    understood understand makes sense noted will do that helps helped helpful hello hi hey bye
    goodbye cheers lol wow oh ah hmm sounds appreciate appreciated sí si vale gracias muchas
    muchísimas perfecto genial bien bueno claro entendido entiendo de acuerdo hola adiós adios
    chao vale estupendo excelente listo okey gracias mil the a all for your help that's it
    all thats""".split()
)
_FILLER = STOPWORDS | {"help", "info", "information", "ayuda", "informacion", "agradezco"}
# how a turn asks, not what about: never carried over ("(topics guide services please tell)")
_ASKING = _FILLER | frozenset(
    """tell know like please anything something want need wondering wonder ask question questions
    details learn find show explain give dime saber quiero necesito favor algo gustaria pregunta
    preguntar""".split()
)
_ANAPHORS = frozenset(
    """it its it's they them their theirs this that these those he she him her his one
    ones such same lo la los las le les eso esto ese esa esos esas ello ellos ellas allí alli
    ahí ahi su sus""".split()
)
# what a request to go on says besides "more": it names no subject of its own
_GO_ON = frozenset(
    """more information info details detail know need tell expand explain elaborate else
    anything something further additional please help say continue go learn hear want like
    can could give me us about that this more más mas información informacion detalles saber
    dime cuéntame cuentame quiero""".split()
)
# "there" points back at a place ("What is the cost of living there?", "Who took her there?"),
# unless it only says that something exists ("Is there a fee?", "if there could be an issue")
_THERE = re.compile(
    r"(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )(?<!\bbe )(?<!\bhas )(?<!\bhave )(?<!\bhad )"
    r"(?<!\bif )(?<!\bwhether )(?<!\bwill )(?<!\bcould )(?<!\bcan )(?<!\bwould )(?<!\bhi )"
    r"(?<!\bhello )(?<!\bhey )\bthere\b"  # "Hi there," greets
    r"(?!\s*(?:is|are|was|were|'s|will|would|could|can|must|should|might|may|have|has|had|be"
    r"|any|a|an|no|used|use|need|needs|exist|exists|seem|seems|appear|appears)\b)"
)
_ARTICLE = re.compile(
    r"\b(?:a|al|de|del|en|con|por|para|sin|sobre|hasta|desde)\s+(?:la|las|lo|los)\b"
)
_ELLIPTIC_START = re.compile(
    r"^\W*(?:and|also|what about|how about|and what|and how|same|then|y|también|tambien|"
    r"y qu[eé]|y c[oó]mo|y si)\b"
)


def turn_kind(text: str) -> TurnKind:
    """``question`` (a question or a request for information), ``acknowledgement`` (a
    confirmation, thanks or small talk) or ``statement`` (anything else the user says)."""
    stripped = text.strip()
    if not stripped:
        return "question"
    folded = fold(stripped)
    if "?" in stripped or "¿" in stripped or _ASKS.match(folded) or _REQUEST.search(folded):
        return "question"
    said = re.findall(r"[\w']+", folded)
    polite = [w for w in said if w in _ACK_WORDS]
    if polite and len(said) <= 8 and all(w in _ACK_WORDS or w in _FILLER for w in said):
        return "acknowledgement"  # "thanks for the info", "ok I will do that"
    return "statement"


@dataclass(frozen=True, slots=True)
class JudgedQuestion:
    """What the judges read as the turn's question, and where it came from."""

    text: str
    typed: str
    source: QuestionSource
    kind: TurnKind
    carried: tuple[str, ...] = ()  # words carried over from earlier turns (``resolved``)
    last_turns: tuple[Message, ...] = ()  # the conversation just before the turn
    topic: tuple[str, ...] = ()  # the open question, for a turn that asks nothing new
    referent: str = ""  # an anaphoric question with the names the assistant just said
    follows_up: bool = False  # the typed turn leans on the conversation (:func:`_elliptical`)

    @property
    def is_question(self) -> bool:
        """True when the turn asks something (a question or a request)."""
        return self.kind == "question"

    def readings(self) -> tuple[str, ...]:
        """The texts a judge may read the turn as: the judged question, the typed turn when
        words were carried over, then the conversation's open question (:attr:`topic`)."""
        out = [self.text]
        if self.source == "resolved":
            out.append(self.typed)
        out += [t for t in (*self.topic, self.referent) if t and t not in out]
        return tuple(out)

    def evidence(self) -> dict[str, Any]:
        """Result metadata: which question was judged, from what, and what kind of turn it is."""
        out: dict[str, Any] = dict(
            judged_question=self.text, question_source=self.source, turn_kind=self.kind
        )
        if self.carried:
            out["carried_over"] = list(self.carried)
        if self.topic:
            out["open_question"] = list(self.topic)
        return out

    def conversation(self) -> str:
        """The last turns as ``role: text`` lines (what an LLM judge is shown), or ``""``."""
        return "\n".join(
            f"{m.role}: {' '.join(m.content.split())[:TURN_CHARS]}" for m in self.last_turns
        )


def app_rewrite(interaction: RagInteraction) -> str | None:
    """The app's standalone query: the query of the retrieval step whose chunks reached the
    prompt (else the last retrieval query), when it differs from the typed turn."""
    typed = normalize_text(interaction.query or "")
    fed = {d.span_id for d in interaction.context if d.span_id}
    steps = [st.query for st in interaction.stages if st.span_id in fed and st.query]
    for q in (*reversed(steps), *reversed(interaction.retrieval_queries)):
        if q.strip() and normalize_text(q) != typed:
            return q.strip()
    return None


def _conversation_turns(interaction: RagInteraction) -> list[Message]:
    return [m for m in interaction.chat_history if m.role in USER_ROLES | ASSISTANT_ROLES]


def _open_question(turns: list[Message]) -> str | None:
    """The question the assistant's last turn asked, when it ended the conversation so far
    with one ("Do you hold a G series visa?"): a reply that is not a question answers it."""
    if not turns or turns[-1].role not in ASSISTANT_ROLES:
        return None
    asked = [s for s in re.split(r"(?<=[.!?])\s+", turns[-1].content) if s.rstrip().endswith("?")]
    return " ".join(asked) or None


def _referent(typed: str, turns: list[Message]) -> str:
    """An anaphoric question ("what are the penalties for violating the act?") read with the
    names the assistant's last turn said ("Terrorism Act 2000"): what "it" most likely points
    at. ``""`` when the turn has no anaphor or the assistant did not speak last."""
    if not turns or turns[-1].role not in ASSISTANT_ROLES:
        return ""
    folded = fold(typed)
    if not _anaphoric(folded):
        return ""
    have = {key(w) for w in content_words(typed)}
    said = fold(turns[-1].content)
    names = [n for n in entities(" x " + turns[-1].content) if key(n) not in have]
    names = sorted(names, key=said.find)[:REFERENT_NAMES]  # the subject is named first
    return f"{typed.rstrip()} ({' '.join(names)})" if names else ""


def goes_on(typed: str) -> bool:
    """A request to go on with the subject ("tell me more", "I need more information"): every
    word it says is asking for more, none names what about."""
    said = re.findall(r"[\w']+", fold(typed))
    return bool(said) and all(w in _GO_ON or w in STOPWORDS for w in said)


def open_topic(turns: list[Message]) -> tuple[str, ...]:
    """The conversation's open question: what the assistant's last turn asked, and the last
    user turn that asked something (what the passages of a turn that asks nothing new answer)."""
    out: list[str] = []
    asked_back = _open_question(turns)
    if asked_back:
        out.append(asked_back)
    for m in reversed(turns):
        if m.role in USER_ROLES and turn_kind(m.content) == "question" and not goes_on(m.content):
            out.append(m.content.strip())
            break
    return tuple(out)


def carried_words(typed: str, earlier: list[str]) -> list[str]:
    """Content words and names of the ``earlier`` user turns (latest first) that ``typed`` leaves
    out, rarest first, at most ``MAX_CARRIED``; no word it replaces (:func:`replaced_names`)."""
    have = {key(w) for w in content_words(typed)}
    out: dict[str, str] = {}
    for turn in earlier:
        names, gone = {fold(e) for e in entities(" x " + turn)}, replaced_names(typed, turn)
        for w in content_words(turn):
            k = key(w)
            if k in have or k in out or w in _ACK_WORDS or w in _ASKING or len(w) < 3 or w in gone:
                continue
            if w in names or rarity(w) >= 1.0 or len(out) < 2:
                out[k] = w
    ranked = sorted(out.values(), key=lambda w: -rarity(w))
    return ranked[:MAX_CARRIED]


def _anaphoric(folded: str) -> bool:
    """An anaphor ("it", "eso", "¿Dónde la dejo?" but not "a la una") or "there" at a place."""
    said = set(re.findall(r"[\w']+", _ARTICLE.sub(" ", folded)))
    return bool(said & _ANAPHORS or _THERE.search(folded))


def names_its_subject(typed: str) -> bool:
    """No anaphor and no elliptic opening ("And if I'm late?", "¿Y eso?"): what the turn asks
    about, it names in its own words ("Is there a yearly option?"), however few."""
    folded = fold(typed)
    return not (_anaphoric(folded) or _ELLIPTIC_START.match(folded))


def _elliptical(typed: str, kind: TurnKind) -> bool:
    """A turn that does not stand alone: not a question, an anaphor, an elliptic opening."""
    if kind != "question" or not names_its_subject(typed):
        return True
    return len(content_words(typed)) < SELF_CONTAINED_WORDS  # too few to name its subject


# the words of an offer to narrow the question or a request to rephrase it, not what it offers
_OFFER_WORDS = frozenset(
    """would like know learn more about interested interest help want need wondering asking ask mean
    looking find out tell specific specifically information info details detail topic topics related
    something anything else other some any kind which what involving regarding concerning please
    rephrase clarify question provide repeat explain say again sure assistance gustaria saber quiere
    quieres interesa interesaria informacion detalles tema temas algo otro otra alguno alguna cual
    cuales sobre acerca mas ayuda podria puede pregunta aclarar puedo repetir explicar podemos
    ayudar ayudarte ayudarle ayudaros assist today hoy""".split()
)
# a question about the user's own situation ("What is your order number?", "Are you using
# Windows?"): its words come from the user's world, not from the passages
_ABOUT_THE_USER = re.compile(
    r"\b(?:your|yours|are you|were you|do you have|did you|have you|you (?:are|were|have|had|use"
    r"|using|did)|tu|tus|su|sus|usted|eres|tienes|tiene usted)\b"
)
GROUNDED_ASK = 0.5  # share of an offer's words the context or the conversation must hold
FOUND = 0.6  # a word found at least this strongly (exact, misspelt or translated) is held


def asks_back_grounding(
    questions_back: list[str], interaction: RagInteraction, context: list[str]
) -> tuple[float, list[str]] | None:
    """How much of what a reply asks back (a clarifying question that offers topics: "Would you
    like to know about the US or Australia?") the context or the conversation already names: the
    share of its content words they hold (exactly, misspelt or translated), and the words they do
    not. Asking to narrow the question is a turn, not an answer; it is on topic when what it
    offers comes from the passages or what was said, with at least one word from the passages.
    An offer of help that names nothing else ("Anything else?", "¿En qué puedo ayudarte?") after
    a turn that asked nothing (thanks, a greeting) is grounded: ``(1.0, [])``.

    None when the reply is not such an offer: it names nothing of its own ("Could you rephrase
    that?") in reply to a question, states values ("... over 5 kg?"), asks about the user's
    situation naming nothing the passages hold ("What is your order number?"), or asks in the
    user's voice ("Am I eligible for ...?": a heading copied out)."""
    if in_user_voice(" ".join(questions_back)):
        return None
    said_back = [t for q in questions_back for t in tokens(q)]
    asked = [t for t in said_back if t not in STOPWORDS and t not in _OFFER_WORDS and len(t) > 2]
    if any(t[0].isdigit() for t in said_back):
        return None
    if not asked:  # "Anything else?", "¿En qué puedo ayudarte?" fit a turn that asked nothing
        return (1.0, []) if turn_kind(interaction.query or "") != "question" else None
    said = [interaction.query or "", *(m.content for m in interaction.chat_history)]
    other = language(" ".join(questions_back)) != language(" ".join(context))
    passages = TermIndex(context, cross_lingual=other)
    conversation = TermIndex([t for t in said if t.strip()] or [""])
    in_passages = [passages.find(t).strength >= FOUND for t in asked]
    held = [
        p or conversation.find(t).strength >= FOUND for t, p in zip(asked, in_passages, strict=True)
    ]
    missing = list(dict.fromkeys(t for t, h in zip(asked, held, strict=True) if not h))
    share = 0.0 if not any(in_passages) else round(sum(held) / len(held), 3)
    if share < GROUNDED_ASK and _ABOUT_THE_USER.search(fold(" ".join(questions_back))):
        return None
    return share, missing


def judged_question(interaction: RagInteraction) -> JudgedQuestion:
    """The question the judges read for this turn (module docstring: rewrite, resolved, typed)."""
    typed = (interaction.query or "").strip()
    kind = turn_kind(typed)
    turns = _conversation_turns(interaction)
    last = tuple(turns[-LAST_TURNS:])
    # A first turn's own retrieval queries (multi-hop, tools) are not its meaning, unless the
    # answering call was given the rewrite (a condense engine whose history the trace may lack).
    answered = interaction.judged_question_source == "rewrite"
    rewrite = app_rewrite(interaction) if typed and (turns or answered) else None
    if rewrite:
        follows = bool(turns) and _elliptical(typed, kind)
        return JudgedQuestion(rewrite, typed, "rewrite", kind, (), last, follows_up=follows)
    users = [m.content for m in turns if m.role in USER_ROLES]
    topic = open_topic(turns) if typed and (kind != "question" or goes_on(typed)) else ()
    referent = _referent(typed, turns) if typed and kind == "question" else ""
    if not typed or not users or not _elliptical(typed, kind):
        return JudgedQuestion(typed, typed, "typed", kind, (), last, topic, referent)
    earlier = users[::-1][:CARRY_FROM_TURNS]
    asked_back = _open_question(turns)
    if kind != "question" and asked_back:  # "Yes, I do." answers what the assistant asked
        earlier = [asked_back, *earlier]
    carried = carried_words(typed, earlier)
    if not carried:
        return JudgedQuestion(typed, typed, "typed", kind, (), last, topic, referent, True)
    text = f"{typed.rstrip()} ({' '.join(carried)})"
    return JudgedQuestion(
        text, typed, "resolved", kind, tuple(carried), last, topic, referent, follows_up=True
    )


T = TypeVar("T", bound=_Scored)


def best_reading(asked: JudgedQuestion, judge: Callable[[str], list[T]]) -> list[T]:
    """``judge`` run on each of the turn's readings (:meth:`JudgedQuestion.readings`); each
    item (a chunk's evidence) keeps the reading that scores it highest. Carried words and the
    open question are guesses at what the turn leaves out: they may help a judge, never hurt it."""
    found = judge(asked.text)
    for reading in asked.readings()[1:]:
        other = judge(reading)
        found = [a if a.score >= b.score else b for a, b in zip(found, other, strict=True)]
    return found


__all__ = [
    "best_reading", "JudgedQuestion", "QuestionSource", "TurnKind", "app_rewrite", "carried_words",
    "goes_on", "names_its_subject", "open_topic", "judged_question", "turn_kind",
]  # fmt: skip
