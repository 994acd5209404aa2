"""Where an answer comes from: the section titles over the chunk sentences it was taken from, and
the retrieved chunk it was taken from when that chunk does not hold what the question asks.

Both read the retrieved context beside the answer, which answer relevance otherwise does not:
a title that matches the question shows that the answer addresses it in the page's words, and an
answer taken from a passage that does not answer, beside one that clearly does, is off the
question however close in topic. A reply's place in the conversation is read here too: whether
it leaves the conversation, and whether a yes or no answers a question that asks whether
(:func:`stays_on`, :func:`yes_no_to_elliptic`); :func:`limits` caps a reply's relevance by
all of these.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragsieve.evaluators.judges.offline.context import chunk_evidence, question_terms
from ragsieve.evaluators.judges.offline.conversation import (
    ASSISTANT_ROLES,
    SELF_CONTAINED_WORDS,
    JudgedQuestion,
)
from ragsieve.evaluators.judges.offline.text.terms import TermIndex, key
from ragsieve.evaluators.judges.offline.text.text import (
    content_words,
    fold,
    language,
    rarity,
    sentences,
)
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.tools.embeddings import embed

# service pages and FAQs title each section ("Can I transfer benefits?", "REPAYE and ICR Plans"):
# an answer taken from a section whose title matches the question addresses it, in the page's
# words rather than the question's
SOURCE_SHARE = 0.6  # share of an answer sentence's words one chunk sentence holds: its source
_CLAUSE = re.compile(r"(?<=[,;:])\s+|\s+(?=\((?!\d))")  # where a sentence's clauses part
HEADING_MAX_WORDS = 10  # an unpunctuated line this short titles what follows (a question: 20)
HEADING_MIN = 0.5  # a title that matches the question less than this says nothing
HEADING_SHARE = 0.9  # a matching title is nearly as good as the answer restating the question
HEADING_TYPED = 0.8  # a title this close to the question: its section answers in its own form
HEADING_COSINE_FLOOR = 0.2
HEADING_COSINE_SPAN = 0.4
_ENDS_CLAUSE = re.compile(r"[.!;:,\u2026]\s*$")


def _is_heading(sent: str) -> bool:
    """A section title or an FAQ's question: a question, or a short capitalised line that does
    not end like a clause."""
    n = len(sent.split())
    if sent.endswith(("?", "\uff1f")):
        return n <= 2 * HEADING_MAX_WORDS
    return n <= HEADING_MAX_WORDS and sent[:1].isupper() and not _ENDS_CLAUSE.search(sent)


def _source_lines(
    sents: list[str], context: Sequence[str], asked: frozenset[str]
) -> list[tuple[list[str], int]]:
    """``(chunk sentences, position)`` of every chunk sentence that holds most of the words of
    one of the answer's sentences (those of two content words or more): where it was taken from.
    Most of the words the question did not give (``asked``, as keys) must be there too: any
    sentence on the topic holds the question's, so "Mount Brown is located in New Zealand." was
    not taken from "Mount Brown is a 6,958-foot mountain summit located in Liberty County,
    Montana." for its "Mount Brown" and "located"."""
    answer_keys = [ks for s in sents if len(ks := {key(w) for w in content_words(s)}) >= 2]
    found: list[tuple[list[str], int]] = []
    for chunk in context:
        lines = sentences(chunk)
        keys = [{key(w) for w in content_words(line)} for line in lines]
        found += [
            (lines, i)
            for i, have in enumerate(keys)
            if any(_holds(ks, have) and _holds(ks - asked, have) for ks in answer_keys)
        ]
    return found


def _holds(words: set[str], have: set[str]) -> bool:
    """``have`` holds most of ``words`` (none: nothing to hold)."""
    return bool(words) and len(words & have) >= SOURCE_SHARE * len(words)


def answer_sources(
    sents: list[str], context: Sequence[str], asked: Sequence[str] = ()
) -> tuple[list[str], list[str]]:
    """``(titles, restated)``, from the chunk sentences the answer's sentences were taken from
    (each holding most of one answer sentence's words): the titles of their sections (the
    nearest title above each), and the clauses of them the answer restates, in the passage's
    own words: "Press the red button on the dock." restates "Damage to a bike is reported with
    the red button on the dock.", which says what the instruction is for. Only the clauses from
    the first to the last holding the answer's words count: a clause it did not draw on ("...,
    and the annual pass costs 60 euros") says nothing of what the answer is about. ``asked``:
    the readings of the question, whose words show no source."""
    words = {key(w) for s in sents for w in content_words(s)}
    given = frozenset(key(w) for q in asked for w in content_words(q))
    titles: list[str] = []
    restated: list[str] = []
    for lines, i in _source_lines(sents, context, given):
        title = next((lines[j] for j in range(i - 1, -1, -1) if _is_heading(lines[j])), None)
        if title is not None and title not in titles:
            titles.append(title)
        parts = _CLAUSE.split(lines[i])
        drawn = [j for j, part in enumerate(parts) if words & {key(w) for w in content_words(part)}]
        span = " ".join(parts[drawn[0] : drawn[-1] + 1]) if drawn else lines[i]
        if span not in restated:
            restated.append(span)
    return titles, restated


def term_coverage(terms: Mapping[str, tuple[str, float]], index: TermIndex) -> float:
    """The weighted share of the question's key terms that ``index`` holds (0 without terms)."""
    total = sum(w for _, w in terms.values())
    return (
        sum(w * index.find(word).strength for word, w in terms.values()) / total if total else 0.0
    )


def heading_match(question: str, titles: Sequence[str]) -> tuple[float, str]:
    """``(match, title)``: how well the best of ``titles`` (the sections the answer comes from,
    :func:`answer_sources`) matches the question, in key terms or in meaning; 0 below
    ``HEADING_MIN``."""
    terms = question_terms(question)
    if not titles or not terms:
        return 0.0, ""
    vecs = embed([question, *titles])
    best, best_title = 0.0, ""
    for title, vec in zip(titles, vecs[1:], strict=True):
        index = TermIndex([title], cross_lingual=language(title) != language(question))
        meaning = (float(vec @ vecs[0]) - HEADING_COSINE_FLOOR) / HEADING_COSINE_SPAN
        match = float(np.clip(max(term_coverage(terms, index), meaning), 0.0, 1.0))
        if match > best:
            best, best_title = match, title
    return (best, best_title) if best >= HEADING_MIN else (0.0, "")


# an answer taken whole from one retrieved chunk that does not hold what the question asks, while
# another chunk clearly does: the model answered from the wrong passage ("Once you are certified as
# an instructor, ..." to a question about a suspended licence, beside the passage that answers it)
SOURCE_WHOLE = 0.9  # share of the answer's content words one chunk holds: taken from it
SOURCE_LITTLE = 0.5  # ... and less than this from the chunk that answers
SOURCE_CLEAR = 0.15  # below / above the context threshold by this: clearly not / clearly relevant
SOURCE_MIN_WORDS = 3
WRONG_SOURCE_SCORE = 0.3  # at most this for an answer from the wrong passage


def wrong_source(question: str, answer: str, context: Sequence[str]) -> tuple[int, int] | None:
    """``(taken from, answering)`` chunk positions when the answer was taken from a chunk that
    does not hold what ``question`` asks while another chunk clearly does; else None."""
    words = {key(w) for w in content_words(answer)}
    if len(context) < 2 or len(words) < SOURCE_MIN_WORDS:
        return None
    shares = [len(words & {key(w) for w in content_words(c)}) / len(words) for c in context]
    source = max(range(len(context)), key=shares.__getitem__)
    if shares[source] < SOURCE_WHOLE:
        return None
    scores = [ev.score for ev in chunk_evidence(question, list(context))]
    answering = max(range(len(context)), key=scores.__getitem__)
    threshold = DEFAULT_THRESHOLDS["context_relevance"]
    if (
        answering != source
        and shares[answering] < SOURCE_LITTLE
        and scores[source] < threshold - SOURCE_CLEAR
        and scores[answering] >= threshold + SOURCE_CLEAR
    ):
        return source, answering
    return None


# a follow-up that leans on the conversation ("And what if I go over?") asks about what the last
# reply's passage is on: a reply going on from that passage answers it
PASSAGE_SHARE = 0.6  # share of a reply's words one passage sentence holds: taken from it
REPEAT_SHARE = 0.5  # ... and of its words the last reply said: a repeat, not going on


def _taken_from(text: str, context: list[str]) -> set[tuple[int, int]]:
    """(chunk, sentence) positions of the passage sentences that hold most of ``text``'s words."""
    words = {key(w) for w in content_words(text)}
    return {
        (c, i)
        for c, chunk in enumerate(context)
        for i, sent in enumerate(sentences(chunk) or [chunk])
        if len(words) >= 2
        and len(words & {key(w) for w in content_words(sent)}) >= PASSAGE_SHARE * len(words)
    }


def continues_last_reply(asked: JudgedQuestion, answer: str, context: list[str]) -> bool:
    """A reply to a follow-up that leans on the conversation ("And what if I go over?") which
    goes on from the passage the assistant's last reply was taken from: a sentence of the same
    two-sentence window ("Every extra 30 minutes costs 1.50 euros." after "Up to 45 minutes per
    ride.", both of the chunk that says so), saying something new. The turn asks about what
    the conversation is on, and the reply answers it from there."""
    said = [m.content for m in asked.last_turns if m.role in ASSISTANT_ROLES]
    if not (asked.follows_up and said and context):
        return False
    last = {key(w) for w in content_words(said[-1])}
    words = {key(w) for w in content_words(answer)}
    if not words or len(words & last) >= REPEAT_SHARE * len(words):
        return False
    before = {p for sent in sentences(said[-1]) or [said[-1]] for p in _taken_from(sent, context)}
    return any(
        c == b and abs(i - j) <= 1 for c, i in _taken_from(answer, context) for b, j in before
    )


# what a reply to a turn that asks nothing fits, and a reply that leaves the conversation: its
# words (weighed by rarity) come from the turn, the last turns and the passages, or do not
ACKNOWLEDGED = 0.9  # any reply that does not decline fits "ok" / "thanks!"
FIT_FLOOR = 0.3  # share of a reply's words from the conversation and context: fits nothing
FIT_SPAN = 0.4  # ... and at floor + span, fits the statement fully
OFF_CONVERSATION_WORDS = 3  # content words a reply needs before its words can show it off topic
OFF_CONVERSATION_SCORE = 0.3  # at most this for a reply that leaves the conversation


def shared_with_conversation(
    asked: JudgedQuestion, answer: str, context: list[str]
) -> tuple[float, int] | None:
    """``(share, words)``: the share of the reply's content words (weighed by rarity) that the
    turn, the last turns or the retrieved context hold, and how many content words it has;
    None when it has none ("Sure.")."""
    said = [asked.typed, *(m.content for m in asked.last_turns), *context]
    pool = {key(w) for text in said for w in content_words(text)}
    words = {key(w): w for w in content_words(answer)}
    if not words:
        return None
    total = sum(rarity(w) for w in words.values())
    return sum(rarity(w) for k, w in words.items() if k in pool) / total, len(words)


def fits_turn(
    asked: JudgedQuestion, answer: str, context: list[str], score: float, abstained: bool
) -> float:
    """A reply to a turn that asks nothing fits it unless it declines or leaves the
    conversation: to an acknowledgement anything else fits; to a statement, a reply whose
    words (weighed by rarity) come from the turn, the last turns or the retrieved context."""
    if abstained:
        return score
    if asked.kind == "acknowledgement":
        return max(score, ACKNOWLEDGED)
    shared = shared_with_conversation(asked, answer, context)
    if shared is None:
        return max(score, ACKNOWLEDGED)  # "Sure." / "Of course!"
    on_topic = float(np.clip((shared[0] - FIT_FLOOR) / FIT_SPAN, 0.0, 1.0))
    return max(score, on_topic)


def leaves_conversation(asked: JudgedQuestion, answer: str, context: list[str]) -> bool:
    """A reply to a follow-up question that shares (almost) none of its words with the
    question, the last turns or the passages, in their language: it belongs to another
    conversation, however fluent ("Schools must provide the information." to a question about
    VA health care). Short replies ("Yes, you can.") carry too little to tell."""
    if not asked.last_turns or not context:
        return False
    lang = language(answer)
    if lang == "unknown" or lang != language(" ".join([asked.text, *context])):
        return False
    shared = shared_with_conversation(asked, answer, context)
    return shared is not None and shared[1] >= OFF_CONVERSATION_WORDS and shared[0] < FIT_FLOOR


MAX_ANSWER_CHARS = 400  # the answer's gist for the question-answer cosine
SHORT_ANSWER_WORDS = 6  # a short answer holding the asked type addresses the question

# a question that does not open with a question word asks whether ("Can I still use it?",
# "¿Puedo pagar con tarjeta?"; "Can I pay when I arrive?"): a reply that opens with yes or no
# answers it. Question words are read where they open a question or a clause after a comma,
# unaccented ("Como pido cita?"), where "que" / "como" cannot mean "that" / "as"
WH_OPENING = re.compile(
    r"(?:^\W*(?:(?:and|so|but|ok|okay|also|then|y|pero|entonces)\W+)?|,\s*|¿)"
    r"(?:what|which|who|whom|whose|where|when|why|how|que|cual|cuales|quien|quienes|donde"
    r"|cuando|como|cuanto|cuanta|cuantos|cuantas|por que)\b"
)
REQUEST = re.compile(r"^\W*(?:please\s+)?(?:list|tell|give|show|explain|describe|dime|explica)\b")
# "yes" opens an answer however it goes on; "no" and "sí" only before a pause ("Si pagas con
# tarjeta" is "if", "No information is given" is no answer)
YES_NO_TAIL_WORDS = 2  # content words a bare yes or no may carry on with ("Yes, you can.")
YES_NO_MEANING = 0.15  # ... or any, when the reply is this near the question in meaning
YES_NO = re.compile(r"^\W*(?:yes|yeah|yep)\b|^\W*(?:no|nope|si)\s*(?:[,.!;]|$)")


def stays_on(reply: str, readings: Sequence[str], cosine: float | None) -> bool:
    """A yes or no that goes on about the question, or hardly goes on: "Yes, you can.", "No, the
    fee is waived.", "Yes, pets are welcome on a leash." (to "Can I bring my dog?": near in
    meaning); "No, we don't need that kind of information." answers nothing asked. ``cosine``
    and the words are read against the same ``readings`` of the question (as typed and as
    rewritten): a word of either is on it."""
    rest = content_words(YES_NO.sub(" ", fold(reply), count=1))
    if len(rest) <= YES_NO_TAIL_WORDS or (cosine is not None and cosine >= YES_NO_MEANING):
        return True
    # what it asks about, not how ("need", "puedo")
    asked = {k for q in readings for k in question_terms(q)}
    return any(key(w) in asked for w in rest)


def yes_no_to_elliptic(asked: JudgedQuestion, answer: str) -> bool:
    """A reply opening with yes or no to a follow-up that asks whether and leans on the
    conversation ("¿Son más caras?" "Sí, 0,20 euros más por minuto."): the turn names too little
    of its own to stand alone, so the reply has little of it to share, the yes or no answers it,
    and what follows is a short answer (:data:`SHORT_ANSWER_WORDS`) that stays on the question
    (:func:`stays_on`: hardly goes on, or near it in meaning). "Yes. The bike must be reported
    within 24 hours or the rider pays 450 euros." to "Does it cost the same for children?" is
    judged as any reply is."""
    plain = fold(asked.typed)
    if not asked.follows_up or WH_OPENING.search(plain) or REQUEST.search(plain):
        return False
    first = (sentences(answer) or [answer])[0]
    if len(content_words(asked.typed)) >= SELF_CONTAINED_WORDS or not YES_NO.search(fold(first)):
        return False
    if len(content_words(YES_NO.sub(" ", fold(answer), count=1))) > SHORT_ANSWER_WORDS:
        return False
    # near in meaning to the turn as typed or as rewritten ("¿Son más caras?")
    vecs = embed([asked.text, asked.typed, answer[:MAX_ANSWER_CHARS]])
    return stays_on(answer, (asked.text, asked.typed), float(max(vecs[:2] @ vecs[2])))


LEFT_NOTE = "the reply shares nothing with the conversation or the passages"


def limits(
    asked: JudgedQuestion,
    answer: str,
    abstained: bool,
    chunks: Sequence[tuple[str, int, str]],
    score: float,
    threshold: float,
) -> tuple[float, dict[str, Any], list[str]]:
    """``(score, metadata, notes)`` under what the turn and the passages (``chunk_texts``: id,
    rank, text) allow: a reply to a turn that asks nothing is judged by whether it fits; a reply
    that leaves the conversation, or was taken from the wrong passage
    (:func:`wrong_source`), is capped."""
    context = [c for _, _, c in chunks]
    if not asked.is_question:  # nothing was asked: does the reply fit the turn?
        fit = fits_turn(asked, answer, context, score, abstained)
        article = "an" if asked.kind[:1] in "aeiou" else "a"
        said = [f"the turn is {article} {asked.kind}, not a question"]
        if (
            asked.kind == "statement"
            and fit < threshold
            and not abstained
            and leaves_conversation(asked, answer, context)
        ):
            # a failed fit whose reply shares nothing: recorded so a root cause reads where it
            # belongs (a reply that fits the statement is not said to leave it)
            return fit, {"leaves_conversation": True}, [*said, LEFT_NOTE]
        return fit, {}, said
    if leaves_conversation(asked, answer, context) and not yes_no_to_elliptic(asked, answer):
        return min(score, OFF_CONVERSATION_SCORE), {"leaves_conversation": True}, [LEFT_NOTE]
    found = None if abstained else wrong_source(asked.text, answer, context)
    if found is None:
        return score, {}, []
    taken, answering = chunks[found[0]][0], chunks[found[1]][0]
    return (
        min(score, WRONG_SOURCE_SCORE),
        {"wrong_source": {"taken_from": taken, "answering": answering}},
        [f"taken from {taken}, which does not hold what is asked; {answering} does"],
    )


__all__ = [
    "LEFT_NOTE",
    "limits",
    "answer_sources",
    "OFF_CONVERSATION_SCORE",
    "fits_turn",
    "leaves_conversation",
    "shared_with_conversation",
    "HEADING_SHARE",
    "HEADING_TYPED",
    "WRONG_SOURCE_SCORE",
    "continues_last_reply",
    "heading_match",
    "term_coverage",
    "wrong_source",
    "MAX_ANSWER_CHARS",
    "REQUEST",
    "SHORT_ANSWER_WORDS",
    "WH_OPENING",
    "YES_NO",
    "YES_NO_MEANING",
    "YES_NO_TAIL_WORDS",
    "stays_on",
    "yes_no_to_elliptic",
]
