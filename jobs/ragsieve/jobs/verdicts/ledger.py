"""One root-cause decision from every piece of evidence, each named; ``undetermined`` when they
do not decide.

The documented rule (:mod:`rootcause`) reads the judges and gives one cause with its line. That
line is one piece of evidence among others the trace and the store hold, each pointing at a
cause with a weight:

- ``rule``: the rule's own cause and line;
- ``answer_source``: where the answer's own words sit. The observed chunk that holds what the
  answer says, which no chunk of the prompt holds, points at ``retrieval`` (the model had the
  answer from a page the retriever missed); the prompt's chunks holding it point at
  ``generation`` (``answer_in_prompt``: the model had what it said and still got it wrong);
  beside the rule's ``no_answer_expected``, a chunk of the prompt about the question that holds
  most (not all) of the answer's words points at ``generation`` too (``answer_partly_in_prompt``:
  the model read a chunk on what was asked and said what it does not hold);
- ``rival``: an observed chunk the retriever missed that answers the question at least as well
  as the prompt's best, though not clearly better (so the rule did not name it): ``retrieval``.
  Neither this nor ``answer_source`` is weighed for an answer off the question: a page explains
  an answer only when the answer answers the question (:func:`gather.failure_pieces`);
- ``missed_attribute``: for a refusal blamed on a chunk of the prompt, an observed chunk the
  retriever missed that answers clearly better, holds what the question (as typed) asks that no
  chunk of the prompt holds, and holds what the prompt names of it too (the prompt was about the
  topic; the refusal was right for it): ``retrieval``;
- ``near_context``: for the rule's ``no_answer_expected``, a chunk of the prompt that nearly
  answers (within the abstention's near margin of the context threshold, close in meaning)
  while the answer is off the question: ``generation`` (the model did not use it);
- ``near_refusal``: for a refusal blamed on a chunk of the prompt that only nearly answers
  (under the context threshold, within the near margin), an observed chunk the retriever missed
  that answers outright, clearly better: ``retrieval``;
- ``off_conversation``: for the rule's ``retrieval`` or ``no_answer_expected``, a follow-up's
  reply that shares nothing with the question, the conversation or the passages (answer
  relevance's ``leaves_conversation``): ``generation`` (:func:`branches.off_conversation`);
- ``goes_on``: for the same two causes, an answer that goes on from the prompt's chunk the
  conversation's last reply came from (answer relevance's ``goes_on_from_last_reply``):
  ``generation`` (:func:`branches.goes_on`);
- ``dropped``: a chunk the retriever returned that answers the question but did not reach the
  prompt (a reranker or a context budget dropped it): ``retrieval``;
- ``golden``: the golden set's relevant chunks for the same question, none of which reached the
  prompt: ``retrieval``; one of which did: against ``retrieval``;
- ``review``: a reviewer's corrected root cause for the same failure (the same question);
- ``close_over`` / ``close_under`` / ``close_near`` / ``close_lead``: the rule's own branch
  hung on a score near its threshold (:func:`rootcause.close_calls`: the best chunk just over
  the context threshold, the prompt's best just under it, an abstention's chunk just over the
  near margin, a missed chunk's lead just over the lead a miss needs): the cause the other
  branch gives, with both lines. It counts only inside its band (``close_*_band``: how near
  the threshold the score sat, the piece's ``distance``).

Each cause's weight is summed. The heaviest is stated when it leads the next by ``margin``;
otherwise the root cause is ``undetermined`` and carries the two competing lines ("retrieval:
the observed chunk prices#starter holds $49; generation: plans#starter was retrieved and is
about the Starter plan"): the flag stands, a reviewer is asked, and the answer feeds
``judges fit`` (:func:`fit_weights`), which learns the weights and the margin from labelled
root causes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

UNDETERMINED = "undetermined"

DEFAULT_WEIGHTS = MappingProxyType(
    {
        "rule": 1.0,
        "answer_source": 0.75,
        "answer_in_prompt": 1.5,
        "answer_partly_in_prompt": 1.0,
        "rival": 0.6,
        "dropped": 1.5,
        "missed_attribute": 1.5,
        "near_context": 0.75,
        "near_refusal": 1.0,
        "off_conversation": 1.5,
        "goes_on": 1.0,
        "golden": 0.8,
        "review": 3.0,
        "close_over": 1.0,
        "close_under": 1.0,
        "close_near": 1.0,
        "close_lead": 1.0,
        "close_over_band": 0.04,
        "close_under_band": 0.06,
        "close_near_band": 0.0,
        "close_lead_band": 0.0,
        "margin": 0.5,
    }
)
"""Each piece's weight, and the lead the heaviest cause needs to be stated (``margin``).

``answer_source``, ``near_context`` and the bands ``close_over_band`` and ``close_under_band``
are each the median of :func:`fit_weights`' refits leaving one source out of eleven (six service
domains, XQuAD in English and in Spanish, Doc2Dial, INSCIT and TREC CAsT conversations; tuning
halves, the pieces the job stored, ``bench/rootcause_figures.py``) under the loss that prices
an ``undetermined`` as a reviewer's look (:data:`STATED_RIGHT`): ``answer_source`` 0.75 (from
1.5) and ``near_context`` 0.75 (from 1.5), so beside the rule either leaves the cause
``undetermined`` with both lines (on the tuning halves, beside the rule's
``no_answer_expected``, ``near_context`` was right 7 of 10 times and ``answer_source`` 6 of 9:
more often than the rule, not as often as a stated cause needs); a prompt chunk within 0.04
over the context threshold (``close_over_band``: the rule right 9 of 12 times) or 0.06 under
it (``close_under_band``: right 3 of 11) likewise. ``answer_in_prompt`` (1.5, from 0.5) is
what every refit with one domain left out chose under the earlier loss (an ``undetermined``
half a wrong cause); the refits under this one keep it and every other weight. None of these
sets' licences lets fitted numbers ship (the data README): every weight above awaits a refit on
licence-clean traffic. ``judges fit`` refits them from reviewed root causes.

``near_refusal`` weighs 1.0 by a stated principle, not a fit: the rule's "nearly" (the prompt's
chunk under the context threshold, within the near margin) and a missed chunk over it are two
readings of one judge, neither stronger; alone they tie, and the refusal's root cause is
``undetermined`` with both lines. (A refusal's missed page that also holds what the prompt lacks
is ``missed_attribute``, which decides.) Licence-clean traffic cannot choose it: it fires once on
its tuning half (MTRAG govt, a refusal after a miss) and never on a held-out trace, so the
leave-one-domain-out refits (every fold sees that trace and raises it to 1.5) cannot test it on a
domain they did not see, and no left-out domain's figure moves. On the other benches' tuning
halves it fired four times, twice on a refusal whose prompt held the answer: 1.5 would state
those wrong.

``answer_partly_in_prompt`` weighs 1.0 by the principle of ``near_refusal``: the rule's
``no_answer_expected`` rests on one judgement (no chunk of the prompt answers), and a chunk of
the prompt about the question holding most of the answer's own words is another reading of the
same prompt (the model read one on what was asked); neither is stronger, so alone they tie and
the root cause is ``undetermined`` with both lines. (All of the answer's words in the prompt is
``answer_in_prompt``, which decides.)

``off_conversation`` weighs 1.5 by a stated principle, not a fit: the rule's weight plus the
margin. The rule's ``retrieval`` and ``no_answer_expected`` read the answer as one given to this
question; a reply that belongs to another conversation voids that reading (as an answer off the
question voids ``answer_source`` and ``rival``), so alone it states ``generation``. Beside the
rule's ``retrieval``, a ``dropped`` chunk (1 + 1.5 against 1.5) still states ``retrieval`` and a
``golden`` one (1 + 0.8) leaves it ``undetermined``; beside ``no_answer_expected``, ``dropped``
ties it with ``generation``: ``undetermined``.
No licence-clean trace has a conversation, so no licence-clean refit can weigh it (nor
``goes_on``). ``goes_on`` weighs 1.0 by the principle of ``near_refusal``: the context judge's
"no chunk answers" and answer relevance's "the answer goes on from this chunk" are two readings
of one chunk, neither stronger; alone they tie.

The close calls (``close_*``) weigh 1.0 by a stated principle, not a fit: inside its band the
score that chose the rule's branch is as likely on either side, so the other branch's cause
weighs what the rule's does and the rest of the evidence decides (alone, a tie: ``undetermined``
with both lines). Licence-clean traffic alone (``bench/rootcause_figures.py --close-bands`` on
MTRAG and RAGTruth) chose no band: 0.04 for ``close_over`` changed no left-out domain's figure
under the earlier loss. The ``close_near`` and ``close_lead`` bands stay 0 (no refit moved them).
Close calls are recorded within ``rootcause.CLOSE_REACH`` and stored with the
verdict whatever the band; ``judges fit`` widens a band when reviewed root causes say so."""


@dataclass(frozen=True, slots=True)
class Piece:
    """One piece of evidence: what it is (``name``), the cause it points at, and its line."""

    name: str
    cause: str
    line: str
    distance: float | None = None  # a close call: how far its score sat from the threshold

    def as_dict(self) -> dict[str, str | float]:
        """The JSON form stored with the verdict (and read back by ``judges fit``)."""
        out: dict[str, str | float] = {"name": self.name, "cause": self.cause, "line": self.line}
        if self.distance is not None:
            out["distance"] = self.distance
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Piece | None:
        """A piece read back from a stored verdict (None when malformed)."""
        name, cause, line = d.get("name"), d.get("cause"), d.get("line")
        dist = d.get("distance")
        far = float(dist) if isinstance(dist, (int, float)) else None
        if isinstance(name, str) and isinstance(cause, str) and isinstance(line, str):
            return cls(name, cause, line, far)
        return None


@dataclass(frozen=True, slots=True)
class Decision:
    """The combined decision: a cause (or ``undetermined``), its line and, when undetermined,
    the two competing lines, each prefixed with the cause it argues for."""

    label: str
    evidence: str
    competing: tuple[str, ...] = ()
    pieces: tuple[Piece, ...] = field(default_factory=tuple)


def weight(p: Piece, weights: Mapping[str, float]) -> float:
    """What ``p`` weighs: its name's weight; nothing for a close call outside its band
    (``<name>_band``: how near its threshold the score must sit), or a piece without a weight."""
    band = weights.get(f"{p.name}_band")
    if band is not None and (p.distance is None or p.distance >= band):
        return 0.0
    return float(weights.get(p.name, 0.0))


def tally(pieces: Sequence[Piece], weights: Mapping[str, float]) -> dict[str, float]:
    """Each cause's summed weight (a piece without a weight counts nothing)."""
    out: dict[str, float] = {}
    for p in pieces:
        out[p.cause] = out.get(p.cause, 0.0) + weight(p, weights)
    return out


def combine(pieces: Sequence[Piece], weights: Mapping[str, float] = DEFAULT_WEIGHTS) -> Decision:
    """The heaviest cause when it leads the next by the margin, else ``undetermined``.

    ``pieces[0]`` is the rule's: with no other piece the rule's cause and line stand as they are.
    """
    if not pieces:
        raise ValueError("no evidence to combine")
    rule = pieces[0]
    if not any(weight(p, weights) for p in pieces[1:]):
        return Decision(rule.cause, rule.line, (), tuple(pieces))
    totals = tally(pieces, weights)
    ranked = sorted(totals, key=lambda c: (-totals[c], c != rule.cause))
    top = ranked[0]
    second = ranked[1] if len(ranked) > 1 else None
    lead = totals[top] - (totals[second] if second is not None else 0.0)
    if second is None or lead >= float(weights.get("margin", DEFAULT_WEIGHTS["margin"])) - 1e-9:
        lines = [p.line for p in pieces if p.cause == top and (p is rule or weight(p, weights))]
        return Decision(top, "; ".join(dict.fromkeys(lines)), (), tuple(pieces))
    competing = tuple(f"{c}: {_strongest(pieces, c, weights).line}" for c in (top, second))
    return Decision(UNDETERMINED, "; ".join(competing), competing, tuple(pieces))


def _strongest(pieces: Sequence[Piece], cause: str, weights: Mapping[str, float]) -> Piece:
    mine = [p for p in pieces if p.cause == cause]
    return max(mine, key=lambda p: weight(p, weights))


BAND_GRID = (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15)
"""The close-call bands a fit tries (up to ``rootcause.CLOSE_REACH``, how near a recorded close
call can sit)."""


STATED_RIGHT = 0.85
"""How often a stated root cause must be right in the situation it is stated in. A reviewer's
look at an ``undetermined`` costs ``1 - STATED_RIGHT`` of what a wrong stated cause costs (an
engineer who fixes the retriever when the prompt was at fault): the fit's loss weighs them so,
which pushes a situation towards ``undetermined`` where its cause is right less often than
this. It is a price, not a guarantee: weights are shared across situations, and the rule
alone, with no piece against it, is always stated. Chosen leave one
source out on the tuning halves of the eleven sources of :data:`DEFAULT_WEIGHTS`: the highest
of 0.9, 0.85, 0.8, 0.7 and 0.5 whose refits keep every left-out source's root cause right
(counting ``undetermined`` wrong) at 0.80 or more, the issue's floor. At 0.9 a refit without
the DMV pages leaves 0.78 of theirs right (0.85 of them stated); at 0.85 the worst is 0.85."""

MIN_STATED = 0.7
"""The share of labelled failures a refit must still state to be taken (``judges fit``): the
review queue is not where every root cause goes."""


def loss(
    examples: Sequence[tuple[Sequence[Piece], str]],
    weights: Mapping[str, float],
    cost: float = 1.0 - STATED_RIGHT,
) -> tuple[bool, float]:
    """(states fewer than :data:`MIN_STATED` of ``examples``, the loss): a wrong stated cause
    1, an undetermined one ``cost``."""
    total, undecided = 0.0, 0
    for pieces, truth in examples:
        said = combine(pieces, weights).label
        undecided += said == UNDETERMINED
        total += 0.0 if said == truth else cost if said == UNDETERMINED else 1.0
    few = bool(examples) and undecided > (1.0 - MIN_STATED) * len(examples) + 1e-9
    return few, total


def fit_weights(
    examples: Sequence[tuple[Sequence[Piece], str]],
    start: Mapping[str, float] = DEFAULT_WEIGHTS,
    grid: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0),
    rounds: int = 2,
    cost: float = 1.0 - STATED_RIGHT,
) -> dict[str, float]:
    """Weights that state more of the labelled root causes right, wrong ones counting against.

    ``examples``: each labelled failure's pieces and the cause a reviewer gave it. The loss is
    wrong stated causes plus ``cost`` for each undetermined one (:data:`STATED_RIGHT`: a cause
    is worth stating only where it is right at least that often); coordinate descent over
    ``grid`` (the close-call bands over :data:`BAND_GRID`), the rule's weight held at 1 as the
    scale. A weight moves only when it lowers the loss: with no label it could change, the start
    stands.
    """
    w = dict(start)
    names = [k for k in w if k != "rule"]
    best = loss(examples, w, cost)
    for _ in range(rounds):
        moved = False
        for name in names:
            for value in BAND_GRID if name.endswith("_band") else grid:
                if value == w[name]:
                    continue
                cand = {**w, name: value}
                got = loss(examples, cand, cost)
                if got[1] < best[1] - 1e-9:
                    w, best, moved = cand, got, True
        if not moved:
            break
    return w


__all__ = [
    "BAND_GRID",
    "DEFAULT_WEIGHTS",
    "MIN_STATED",
    "STATED_RIGHT",
    "UNDETERMINED",
    "Decision",
    "Piece",
    "combine",
    "fit_weights",
    "loss",
    "tally",
    "weight",
]
