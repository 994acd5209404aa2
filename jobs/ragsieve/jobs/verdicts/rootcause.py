"""Root cause of a failing interaction, with the evidence that decided it.

The rule reads the judges' verdicts of one failing interaction (after the failure policy made
them agree: a chunk backing a faithful, on-question answer counts as relevant) and applies the
first match. A query is *short* when it has fewer than ``MIN_QUERY_WORDS`` words and no chat
history to resolve it; shortness alone never overrides what the other judges found.

1. The answer is an abstention (faithfulness label ``abstained``):
   - a chunk judged relevant (for an abstention, or nearly relevant and close in meaning)
     reached the prompt → ``abstained_wrongly``;
   - otherwise a chunk of the observed corpus answers the question, or the golden set says it
     is answerable → ``retrieval`` (the evidence names the missed chunk).
   (An abstention with no relevant context and no such evidence is a pass, not a failure.)
2. No chunk judged relevant reached the prompt:
   - a chunk of the observed corpus answers the question, or the golden set says it is
     answerable → ``retrieval``: the retriever missed it (the evidence names it, with its score
     and how many traces retrieved it before);
   - otherwise → ``no_answer_expected``: nothing the system has seen answers this ("none of
     the N chunks seen in traffic answers this"), so it should have abstained instead of answering.
3. The answer is unfaithful (context relevant or unknown) → ``generation``, unless what it
   says holds in a chunk of the observed corpus that answers the question clearly better than
   every chunk in the prompt → ``retrieval``: the answer came from knowledge the prompt lacked,
   and the chunk that holds it is the one the retriever missed.
4. A relevant chunk reached the prompt and the answer is faithful, yet off the question →
   ``ambiguous_query`` for a short query (nothing else to blame), else ``generation``.
5. Context relevance unknown (not judged or judge error), answer not unfaithful:
   - a short query → ``ambiguous_query``;
   - the answer is off the question → ``generation``, else ``retrieval``.

"Golden says" means the nearest golden query has cosine >= the near-duplicate threshold: a case
with relevant chunks makes the question ``answerable``, one without makes it ``no_answer``.
``both`` (retrieval missed and the answer is unsupported) is kept for reviewers' corrections;
the rule does not assign it, since an unsupported answer without relevant context is expected.

The rule's cause is one piece of evidence (:mod:`ledger`): what else the trace and the store hold
(where the answer's words sit, a chunk that answers as well though the retriever missed it, one
the prompt dropped, the golden set's relevant chunks, a reviewer's correction) is weighed with
it, and when the causes do not decide, the root cause is ``undetermined`` with the two competing
lines. So are the rule's own close calls (:func:`close_calls`): where a score within
``CLOSE_REACH`` of its threshold chose the branch (context relevance, an abstention's near
margin, a missed chunk's "clearly better" lead), the cause the other branch gives is a piece
with both lines and the distance; the ledger counts it inside its band. The other branch gives
a cause only as it ends with the evidence that weighs on it alone (what the reply says against
a context branch, :func:`reply_pieces`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from ragsieve.evaluators.records import EvalResult
from ragsieve.jobs.verdicts.ledger import DEFAULT_WEIGHTS, UNDETERMINED, Piece, combine

ROOT_CAUSES = (
    "retrieval",
    "generation",
    "both",
    "no_answer_expected",
    "abstained_wrongly",
    "ambiguous_query",
    UNDETERMINED,
)
MIN_QUERY_WORDS = 3
Expectation = Literal["answerable", "no_answer"] | None
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# how near its threshold a score that chose a branch must sit for the other branch to be recorded
# (``close_*`` pieces); whether a recorded one counts is the ledger's band (``close_*_band``). The
# widest "near" the product uses: an abstention's near margin (``flagging.NEAR_MARGIN``)
CLOSE_REACH = 0.15
# what answer relevance read in a reply that argues against a branch blaming the context
# (:func:`reply_pieces`): it leaves the conversation, or goes on from the last reply's chunk
READS = ("leaves_conversation", "goes_on_from_last_reply")
_CONTEXT_CAUSES = ("retrieval", "no_answer_expected")


@dataclass(frozen=True, slots=True)
class Edge:
    """A score that decided one of the rule's branches, and how far it sat from its threshold.

    ``kind``: ``over`` (context relevant: the best chunk over the context threshold), ``under``
    (not relevant: the prompt's best chunk under it), ``near`` (an abstention's chunk over the
    near margin) or ``lead`` (the missed chunk's lead over the prompt's best, over the lead a
    miss needs)."""

    kind: Literal["over", "under", "near", "lead"]
    distance: float
    line: str
    chunk: str = ""  # the chunk whose score it is


@dataclass(frozen=True, slots=True)
class Signals:
    """What the judges said about one interaction, reduced to what the rule needs.

    ``None`` means unknown (not judged, skipped or judge error).
    """

    query: str | None
    has_history: bool = False
    abstained: bool = False
    context_relevant: bool | None = None
    relevant_chunks: tuple[str, ...] = ()
    n_chunks: int = 0
    faithful: bool | None = None
    answer_relevant: bool | None = None
    expected: Expectation = None
    missed_chunk: str | None = None  # evidence line naming a corpus chunk that answers
    corpus_searched: int | None = None  # chunks of the observed corpus searched (None: not asked)
    near_only: bool = False  # an abstention's relevant chunks only nearly reached the threshold
    missed_holds_answer: bool = False  # the missed chunk holds what the unfaithful answer says
    pieces: tuple[Piece, ...] = ()  # evidence beyond the judges' (:mod:`ledger`)
    weights: Mapping[str, float] | None = None  # how the pieces weigh (None: the defaults)
    edges: tuple[Edge, ...] = ()  # the scores that decided the rule's branches (close calls)
    reads: frozenset[str] = frozenset()  # answer relevance's readings of the reply (:data:`READS`)


@dataclass(frozen=True, slots=True)
class RootCause:
    """A root-cause label and a one-line reason."""

    label: str
    evidence: str
    competing: tuple[str, ...] = ()  # undetermined: the two lines that argue for each cause
    pieces: tuple[Piece, ...] = ()  # every piece weighed, the rule's first


def query_words(query: str | None) -> int:
    """Number of words in the query."""
    return len(_WORD.findall(query or ""))


def assign(s: Signals) -> RootCause:
    """The documented rule's cause, weighed with its own close calls and the other evidence
    (``s.pieces``)."""
    base = rule(s)
    pieces = (*close_calls(s, base), *s.pieces)
    if not pieces:
        return RootCause(base.label, base.evidence, (), (Piece("rule", base.label, base.evidence),))
    got = combine([Piece("rule", base.label, base.evidence), *pieces], s.weights or DEFAULT_WEIGHTS)
    return RootCause(got.label, got.evidence, got.competing, got.pieces)


def close_calls(s: Signals, base: RootCause, reach: float = CLOSE_REACH) -> tuple[Piece, ...]:
    """The causes the rule's other branches give where a score within ``reach`` of its
    threshold chose the branch (``close_<kind>``, :class:`Edge`), each with the score's line,
    its distance and the other branch's line; the ledger counts one inside its band
    (``close_<kind>_band`` in :data:`ledger.DEFAULT_WEIGHTS`). A branch whose other side is no
    failure at all (a refusal with nothing relevant and nothing that answers is a correct
    abstention) gives none; nor does a prompt chunk under the threshold that ``near_context``
    already weighs, nor the context's score when a missed chunk that answers clearly better
    pinned the failure on the retriever (its lead is the edge then). The other branch argues
    for its cause only as it would end once the evidence that weighs on it alone is weighed
    (:func:`reply_pieces`): a reply that leaves the conversation is ``generation`` on either
    branch, so a hair-over context gives it no close call; an answer going on from the last
    reply's chunk ties that branch (``undetermined``), which argues for no cause either."""
    near_weighed = any(p.name == "near_context" for p in s.pieces)
    # a missed chunk that answers clearly better than every prompt chunk decided the branch:
    # its lead (the ``lead`` edge) is the score it hung on, not the prompt's best chunk's
    pinned = base.label == "retrieval" and s.missed_chunk is not None
    out: list[Piece] = []
    for e in s.edges:
        if e.distance >= reach or (near_weighed and e.kind == "under"):
            continue
        if pinned and e.kind in ("over", "under", "near"):
            continue
        flipped = _flip(s, e)
        other = rule(flipped) if flipped is not None else base
        if flipped is not None and _ends(flipped, other) != other.label:
            continue  # the other branch, its own evidence weighed, does not end at its cause
        if other.label != base.label:
            line = f"{e.line}; read the other way: {other.evidence}"
            out.append(Piece(f"close_{e.kind}", other.label, line, round(e.distance, 4)))
    return tuple(out)


def _ends(s: Signals, reached: RootCause) -> str:
    """Where the branch that ``reached`` its cause ends once the evidence that weighs only on
    that branch is weighed (:func:`reply_pieces`): the cause, another, or ``undetermined``."""
    own = reply_pieces(s, reached.label)
    if not own:
        return reached.label
    weighed = [Piece("rule", reached.label, reached.evidence), *own]
    return combine(weighed, s.weights or DEFAULT_WEIGHTS).label


def reply_pieces(s: Signals, cause: str) -> tuple[Piece, ...]:
    """What the reply says against a branch that blames the context (``cause`` ``retrieval`` or
    ``no_answer_expected``; a refusal says nothing): ``off_conversation``, a reply off the
    question that shares nothing with it, the conversation or the passages, and ``goes_on``, an
    answer going on from a chunk of the prompt the last reply came from while no chunk was
    judged to answer (:mod:`branches`). Both argue ``generation``; beside the rule's own
    ``generation`` they are absent, so the rule's other branch weighs them (:func:`close_calls`)."""
    if s.abstained or cause not in _CONTEXT_CAUSES:
        return ()
    out: list[Piece] = []
    if "leaves_conversation" in s.reads:
        out.append(Piece("off_conversation", "generation", OFF_LINE))
    if "goes_on_from_last_reply" in s.reads and s.context_relevant is False:
        out.append(Piece("goes_on", "generation", GOES_ON_LINE))
    return tuple(out)


def reply_reads(ans: EvalResult | None) -> frozenset[str]:
    """Answer relevance's readings of the reply (:data:`READS`) its result records; leaving the
    conversation counts only when the reply was judged irrelevant."""
    meta = ans.metadata if ans is not None and isinstance(ans.metadata, Mapping) else {}
    got = {r for r in READS if meta.get(r)}
    if ans is None or ans.label != "irrelevant":
        got.discard("leaves_conversation")
    return frozenset(got)


OFF_LINE = (
    "the reply shares nothing with the question, the conversation or the passages (answer"
    " relevance): it answers no question asked here, which no page explains"
)
GOES_ON_LINE = (
    "the answer goes on from a chunk of the prompt the conversation's last reply came from"
    " (answer relevance): the follow-up's own passage reached the prompt"
)


def _flip(s: Signals, e: Edge) -> Signals | None:
    """``s`` with the branch ``e`` decided taken the other way (None: the other way passes)."""
    could = s.missed_chunk is not None or s.expected == "answerable"
    if e.kind == "lead":
        return replace(s, missed_chunk=None, missed_holds_answer=False)
    if s.context_relevant:  # over the threshold (or the near margin): read it as under
        if s.abstained and not could:
            return None  # a refusal with nothing relevant and nothing that answers passes
        return replace(s, context_relevant=False, relevant_chunks=(), near_only=False)
    return replace(s, context_relevant=True, relevant_chunks=(e.chunk,) if e.chunk else ())


def rule(s: Signals) -> RootCause:
    """Apply the documented rule to a failing interaction."""
    n_words = query_words(s.query)
    short = n_words < MIN_QUERY_WORDS and not s.has_history
    vague = RootCause("ambiguous_query", f"query has {n_words} word(s) and no chat history")
    golden = {"answerable": "; golden set: answerable", "no_answer": "; golden set: no answer"}
    gnote = golden.get(s.expected or "", "")
    could = s.missed_chunk is not None or s.expected == "answerable"
    missed = s.missed_chunk or "the golden set says it is answerable"
    if s.abstained:
        if s.context_relevant:
            chunks = ", ".join(s.relevant_chunks[:3]) or "a chunk"
            note = " (nearly: close to the question in meaning)" if s.near_only else ""
            return RootCause("abstained_wrongly", f"abstained although {chunks} was relevant{note}")
        return RootCause("retrieval", f"abstained with no relevant chunk in the prompt; {missed}")
    if s.context_relevant is False:
        none = f"none of {s.n_chunks} chunk(s) in the prompt was relevant"
        if could:
            return RootCause("retrieval", f"{none}; {missed}")
        seen = (
            f"none of the {s.corpus_searched} chunks seen in traffic answers this"
            if s.corpus_searched is not None
            else "nothing shows the question was answerable"
        )
        what = "made unsupported claims" if s.faithful is False else "answered"
        return RootCause(
            "no_answer_expected", f"{none}; {seen}; the system {what} instead of abstaining{gnote}"
        )
    if s.context_relevant:
        chunks = ", ".join(s.relevant_chunks[:3]) or "a relevant chunk"
        if s.faithful is False and s.missed_chunk is not None and s.missed_holds_answer:
            return RootCause(
                "retrieval",
                f"{chunks} reached the prompt, but what the answer says is not there; {missed}",
            )
        if s.faithful is False:
            return RootCause("generation", f"{chunks} reached the prompt; the answer is unfaithful")
        if s.answer_relevant is False and short:
            return vague
        return RootCause(
            "generation", f"{chunks} reached the prompt; the answer is off the question"
        )
    if s.faithful is False:
        return RootCause("generation", "answer is unfaithful; context relevance unknown")
    if short:
        return vague
    if s.answer_relevant is False:
        return RootCause("generation", "answer is off the question; context relevance unknown")
    return RootCause("retrieval", "only the retrieval metrics failed")


class _Hit(Protocol):
    @property
    def chunk_id(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def best_seen(self) -> float | None: ...


def edges_of(
    chunks: Sequence[Mapping[str, object]],
    threshold: float | None,
    relevant: bool | None,
    *,
    vouched: bool = False,
    near_margin: float | None = None,
    missed: tuple[_Hit, float] | None = None,
) -> tuple[Edge, ...]:
    """The scores that decided the rule's branches, each with how near its threshold it sat.

    Context (the judge's per-chunk ``chunks``): for relevant context the best chunk's score over
    ``threshold`` (over the near floor, ``threshold - near_margin``, when only a near chunk made
    an abstention's context relevant), else the prompt's best chunk's score under it; none when
    a faithful, on-question answer ``vouched`` for the chunks (the answer decided, not a score)
    or the scores are unknown. ``missed``: the corpus's missed chunk and the lead it needed
    over the prompt's best chunk ("clearly better"), and its lead over that."""
    out: list[Edge] = []
    scored = [
        (str(c.get("id")), float(v))
        for c in chunks
        if isinstance(v := c.get("score"), (int, float))
    ]
    if threshold is not None and relevant is not None and not (vouched and relevant) and scored:
        cid, best = max(scored, key=lambda p: p[1])
        floor = threshold - near_margin if near_margin is not None and relevant else threshold
        far = abs(best - floor)
        if floor != threshold:
            line = f"{cid} scores {best:.2f}, {far:.2f} over an abstention's near margin"
            out.append(Edge("near", far, f"{line} {floor:.2f}", cid))
        elif relevant:
            line = f"{cid} scores {best:.2f}, {far:.2f} over the context threshold {threshold:g}"
            out.append(Edge("over", far, line, cid))
        else:
            line = f"the prompt's best chunk {cid} scores {best:.2f}, {far:.2f} under the context"
            out.append(Edge("under", far, f"{line} threshold {threshold:g}", cid))
    if missed is not None:
        hit, needed = missed
        lead = hit.score - (hit.best_seen or 0.0)
        out.append(
            Edge(
                "lead",
                abs(lead - needed),
                f"the missed chunk {hit.chunk_id} answers {lead:.2f} better than the prompt's"
                f" best, {lead - needed:.2f} over the {needed:g} a miss needs",
                hit.chunk_id,
            )
        )
    return tuple(out)


__all__ = [
    "CLOSE_REACH",
    "GOES_ON_LINE",
    "MIN_QUERY_WORDS",
    "OFF_LINE",
    "READS",
    "ROOT_CAUSES",
    "UNDETERMINED",
    "Edge",
    "RootCause",
    "Signals",
    "assign",
    "close_calls",
    "edges_of",
    "query_words",
    "reply_pieces",
    "reply_reads",
    "rule",
]
