"""Evidence that questions the rule's own branch on the context (:mod:`ledger`'s pieces).

The rule (:mod:`rootcause`) reads the context judge's verdict as settled: relevant, the failure
is the model's (a refusal ``abstained_wrongly``); not relevant, the retriever's or nothing's.
What the trace and the observed corpus hold beside that verdict can argue for the other side:

- ``missed_attribute``: for a refusal blamed on a chunk of the prompt, an observed chunk the
  retriever missed that answers clearly better and holds what the question asks that the
  prompt lacks (the prompt was about the topic; the refusal was right for it): ``retrieval``;
- ``near_context``: for the rule's ``no_answer_expected``, a chunk of the prompt that nearly
  answers while the answer is off the question: ``generation``;
- ``near_refusal``: for a refusal blamed on a chunk that only *nearly* answers (under the
  context threshold, within the near margin), an observed chunk the retriever missed that
  answers the question outright, clearly better: ``retrieval``;
- ``off_conversation``: for the rule's ``retrieval`` or ``no_answer_expected``, a reply that
  shares nothing with the question, the conversation or the passages (answer relevance's
  ``leaves_conversation``): ``generation``;
- ``goes_on``: for the same two causes, an answer that goes on from a chunk of the prompt the
  conversation's last reply came from (answer relevance's ``goes_on_from_last_reply``), which
  the context judge read as not answering the follow-up: ``generation``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragsieve.evaluators.judges.offline.conversation import ASSISTANT_ROLES
from ragsieve.evaluators.judges.offline.text.asked import asked_gap
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.verdicts.corpus import CorpusHit
from ragsieve.jobs.verdicts.flagging import NEAR_MARGIN, Verdict, near_answers
from ragsieve.jobs.verdicts.ledger import Piece
from ragsieve.jobs.verdicts.rootcause import Signals, reply_pieces, reply_reads

# share of what a question asks (its weighted key terms) that a refusal's missed page must hold
# and the prompt must lack for the refusal to read as the retriever's (``missed_attribute``)
ATTRIBUTE_GAP = 0.15
# share of what the prompt holds of the question (weighted) the missed page must hold too: it is
# about the prompt's topic and holds more, not another subject worded like the question
TOPIC_KEPT = 0.9


def missed_attribute(
    question: str, it: RagInteraction, hit: CorpusHit | None, typed: str | None = None
) -> tuple[Piece, ...]:
    """A refusal's missed page (``retrieval``): ``hit`` answers clearly better than the prompt,
    holds at least ``ATTRIBUTE_GAP`` of what the question asks (weighted) that no chunk of the
    prompt holds in any form, and everything the prompt holds of it (``TOPIC_KEPT``). For a
    follow-up read with words carried from earlier turns, what is asked is the turn as
    ``typed``: the carried words name the earlier subject (the topic), which the prompt's chunk
    may word otherwise; they are not the attribute this turn asks for. Nor is what the
    assistant's earlier replies said, which the model was shown with the chunks ("No Time to
    Die" in "When did No Time to Die first start filming?" after a reply on its premiere): they
    count with the prompt's chunks. The user's own earlier questions give the model nothing: a
    question asked again keeps its missed page."""
    if hit is None:
        return ()
    prompt = [d.content or "" for d in it.context if d.content]
    said = [m.content for m in it.chat_history if m.role in ASSISTANT_ROLES and m.content.strip()]
    gap = asked_gap(typed or question, [*prompt, *said], hit.window)
    if gap.share < ATTRIBUTE_GAP or gap.kept < TOPIC_KEPT - 1e-9:
        return ()
    shown = ", ".join(f"'{w}'" for w in gap.words[:3])
    return (
        Piece(
            "missed_attribute",
            "retrieval",
            f"the observed chunk {hit.chunk_id} answers the question (score {hit.score:.2f}) and"
            f" holds {shown}, which no chunk of the prompt holds, besides all the prompt holds"
            f" of it: the prompt was about the topic, the refusal was right for it:"
            f" '{hit.window[:120]}'",
        ),
    )


def near_context(
    results: Sequence[EvalResult], verdict: Verdict, threshold: float
) -> tuple[Piece, ...]:
    """An answer off the question while a chunk that nearly answers it reached the prompt
    (``generation``, against the rule's ``no_answer_expected``): within ``NEAR_MARGIN`` of the
    context threshold and close to the question in meaning (:func:`flagging.near_answers`, as
    an abstention's "nearly"). "Nothing answers this" explains an answer made up for the
    question; an answer about something else, beside a chunk that nearly answers, says the
    model did not use what it was given."""
    if verdict.root_cause != "no_answer_expected" or "answer_relevance" not in (
        verdict.failed_metrics
    ):
        return ()
    ctx = next((r for r in results if r.evaluator == "context_relevance"), None)
    near = near_answers(ctx, threshold)
    if not near:  # (no context result: none)
        return ()
    return (
        Piece(
            "near_context",
            "generation",
            f"{near[0]} nearly answers the question (within {NEAR_MARGIN} of the context"
            f" threshold {threshold:g}, close in meaning) and the answer is off the question",
        ),
    )


def off_conversation(results: Sequence[EvalResult], verdict: Verdict) -> tuple[Piece, ...]:
    """A reply that shares (almost) none of its words with the question, the last turns or the
    passages (answer relevance's ``leaves_conversation``) blamed on the context: ``generation``.
    Both of the rule's context branches read the answer as one given to this question: had
    from a page the retriever missed (``retrieval``), or made up for a question nothing answers
    (``no_answer_expected``). A reply that belongs to another conversation was given to no
    question asked here; no page, found or missed, explains it (the premise on which
    ``answer_source`` and ``rival`` are not weighed for an answer off the question)."""
    return _reply(results, verdict, "off_conversation")


def goes_on(results: Sequence[EvalResult], verdict: Verdict) -> tuple[Piece, ...]:
    """An answer that goes on from the passage the conversation's last reply came from, which
    reached the prompt (answer relevance's ``goes_on_from_last_reply``), while the rule blames
    the context (``retrieval`` or ``no_answer_expected``: no chunk of the prompt judged to
    answer): ``generation``, the cause the rule gives with that chunk read as answering. The
    context judge read the follow-up (a few words, some carried) against the chunk; answer
    relevance read the answer going on where the conversation was. Two readings of the one
    chunk, neither stronger: the ledger weighs this as the rule (:data:`ledger.DEFAULT_WEIGHTS`),
    and alone the two tie."""
    return _reply(results, verdict, "goes_on")


def _reply(results: Sequence[EvalResult], verdict: Verdict, name: str) -> tuple[Piece, ...]:
    """The piece ``name`` of :func:`rootcause.reply_pieces` for the rule's cause in ``verdict``
    (the rule's other branches weigh the same pieces, :func:`rootcause.close_calls`)."""
    ar = next((r for r in results if r.evaluator == "answer_relevance"), None)
    s = Signals(
        None,
        abstained=verdict.abstained,
        context_relevant=verdict.context_relevant,
        reads=reply_reads(ar),
    )
    return tuple(p for p in reply_pieces(s, verdict.root_cause or "") if p.name == name)


def near_refusal(hit: CorpusHit | None, best: float, threshold: float) -> tuple[Piece, ...]:
    """A refusal blamed on a chunk that only nearly answers (``best``, the prompt's best score,
    under the context ``threshold``: the rule counted it within the near margin) while ``hit``, a
    chunk the retriever missed, answers outright: over the threshold and clearly better than
    the prompt's (the corpus search's hit). The rule's "nearly" and this line are two readings
    of the same judge, one under its threshold and one over it: ``retrieval`` here, and the
    ledger weighs the two alike (:data:`ledger.DEFAULT_WEIGHTS`)."""
    if hit is None or best >= threshold or hit.score < threshold:
        return ()
    return (
        Piece(
            "near_refusal",
            "retrieval",
            f"no chunk of the prompt answers outright (best score {best:.2f}, under the context"
            f" threshold {threshold:g}); the observed chunk {hit.chunk_id}, which the retriever"
            f" missed, answers it (score {hit.score:.2f}): '{hit.window[:120]}'",
        ),
    )


__all__ = [
    "ATTRIBUTE_GAP",
    "TOPIC_KEPT",
    "missed_attribute",
    "near_context",
    "goes_on",
    "near_refusal",
    "off_conversation",
]
