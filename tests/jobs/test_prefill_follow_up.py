"""Review pre-fills the chunk that answers the question the turn means, not the earlier turn's.

A new user's bike-rental bot: after "How much does the Pro plan cost per month?", the follow-up
"And for the Basic plan?" retrieved the Pro and Basic chunks and answered with the Pro price.
The judges read the follow-up with words carried over from the Pro turn, so both chunks count
as relevant and the root-cause evidence names both; the review used to pre-fill both, making the
Pro chunk a relevant chunk of the Basic question's golden case.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges.offline.context import ContextRelevanceJudge
from ragsieve.evaluators.records import Message, RagInteraction, RetrievedDocument
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.review import prefill
from ragsieve.jobs.settings import GoldenSettings, Settings
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase
from ragsieve.jobs.verdicts.rootcause import Signals, assign

PRO = "The Pro plan costs 19 EUR per month and includes 90 minutes of free riding per day."
BASIC = "The Basic plan costs 9 EUR per month and includes 30 minutes of free riding per day."


def _follow_up(rewrite: str | None = None) -> FlaggedCase:
    """The follow-up turn, judged by the real context judge, its cause by the real rule."""
    it = RagInteraction(
        trace_id="c8a19af0db7494945cd7cfb19c7001d7",
        span_id="e4645b91f6074efc",
        started_at=datetime(2026, 12, 7, 13, 0, tzinfo=UTC),
        query="And for the Basic plan?",
        answer="The Basic plan costs 19 EUR per month.",
        chat_history=(
            Message(role="user", content="How much does the Pro plan cost per month?"),
            Message(role="assistant", content="The Pro plan costs 19 EUR per month."),
        ),
        documents=(
            RetrievedDocument(id="plans#pro", content=PRO, rank=0, in_prompt=True),
            RetrievedDocument(id="plans#basic", content=BASIC, rank=1, in_prompt=True),
        ),
        retrieval_queries=(rewrite,) if rewrite else (),
    )
    [ctx] = asyncio.run(ContextRelevanceJudge().evaluate(it))
    relevant = tuple(c["id"] for c in ctx.metadata["chunks"] if c["relevant"])
    cause = assign(
        Signals(query=it.query, has_history=True, context_relevant=bool(relevant),
                relevant_chunks=relevant, n_chunks=2, faithful=False, answer_relevant=True)
    )  # fmt: skip
    return FlaggedCase(it, [ctx], cause.label, cause.evidence, "run-1")


def _prefilled(store: Store, case: FlaggedCase) -> dict[str, int]:
    grow(store, [case], Settings(golden=GoldenSettings()))
    [c] = CandidateRepo(store).select(["candidate"])
    prefill(c)
    return dict(c.body.get("relevant_chunks") or {})


def test_a_follow_up_prefills_its_own_subjects_chunk(store: Store) -> None:
    # the judged question carries no "Pro" now (conversation.replaced_names), so the evidence
    # names the Basic chunk; where evidence names both (a judge that still reads Pro), the
    # pre-fill keeps the chunk that holds the subject the follow-up names
    case = replace(_follow_up(), evidence="plans#pro, plans#basic reached the prompt; unfaithful")
    assert _prefilled(store, case) == {"plans#basic": 1}


def test_the_apps_rewrite_names_the_subject(store: Store) -> None:
    case = _follow_up("How much does the Basic plan cost per month?")
    assert _prefilled(store, case) == {"plans#basic": 1}


def test_a_lower_case_follow_up_prefills_its_own_subjects_chunk(store: Store) -> None:
    # people type "basic" and "pro" in lower case: the word in the frame where the earlier turn
    # had "pro" ("... plan") is the subject, whatever its case
    case = _follow_up()
    it = case.interaction.model_copy(
        update={
            "query": "and for the basic plan?",
            "chat_history": (
                Message(role="user", content="how much does the pro plan cost per month?"),
                Message(role="assistant", content="The Pro plan costs 19 EUR per month."),
            ),
        }
    )
    evidence = "plans#pro, plans#basic reached the prompt; unfaithful"
    assert _prefilled(store, replace(case, interaction=it, evidence=evidence)) == {"plans#basic": 1}


def test_a_follow_ups_new_verb_is_no_subject(store: Store) -> None:
    # "last" sits where the earlier turn had "cost", a verb's place: only "basic", in the place
    # of "pro" before "plan", is a subject the pre-filled chunk must hold
    case = _follow_up()
    it = case.interaction.model_copy(
        update={
            "query": "and how long does the basic plan last?",
            "chat_history": (
                Message(role="user", content="how much does the pro plan cost?"),
                Message(role="assistant", content="The Pro plan costs 19 EUR per month."),
            ),
        }
    )
    evidence = "plans#pro, plans#basic reached the prompt; unfaithful"
    assert _prefilled(store, replace(case, interaction=it, evidence=evidence)) == {"plans#basic": 1}
