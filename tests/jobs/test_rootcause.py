"""The documented root-cause rule, one case per branch."""

from __future__ import annotations

import pytest

from ragsieve.jobs.verdicts.rootcause import Signals, assign

Q = "How long does a refund take for a returned reader?"


@pytest.mark.parametrize(
    ("signals", "label"),
    [
        (Signals(query="refund?"), "ambiguous_query"),
        # A short keyword query does not hide what the judges found.
        (
            Signals(
                query="refund policy",
                context_relevant=True,
                relevant_chunks=("c1",),
                faithful=False,
            ),
            "generation",
        ),
        (
            Signals(query="refund policy", context_relevant=False, faithful=False),
            "no_answer_expected",
        ),
        (Signals(query="refund policy", context_relevant=None, faithful=False), "generation"),
        (
            Signals(query="refund policy", abstained=True, context_relevant=True),
            "abstained_wrongly",
        ),
        # ... but when the only failure is an off-question answer, the vague query is the cause.
        (
            Signals(
                query="refund policy", context_relevant=True, faithful=True, answer_relevant=False
            ),
            "ambiguous_query",
        ),
        (Signals(query="refund policy", answer_relevant=False), "ambiguous_query"),
        (Signals(query=Q, answer_relevant=False), "generation"),
        (
            Signals(query="refund?", has_history=True, context_relevant=True, faithful=False),
            "generation",
        ),
        (
            Signals(query=Q, abstained=True, context_relevant=True, relevant_chunks=("c1",)),
            "abstained_wrongly",
        ),
        # an unfaithful answer whose words hold in a chunk the retriever missed: the retriever
        (
            Signals(
                query=Q,
                context_relevant=True,
                faithful=False,
                missed_chunk="missed kb-9",
                missed_holds_answer=True,
            ),
            "retrieval",
        ),
        # ... but a missed chunk that only answers the question does not explain the answer
        (
            Signals(query=Q, context_relevant=True, faithful=False, missed_chunk="missed kb-9"),
            "generation",
        ),
        (
            Signals(query=Q, abstained=True, context_relevant=False, expected="answerable"),
            "retrieval",
        ),
        # nothing relevant reached the prompt but the question was answerable: the retriever
        (
            Signals(query=Q, context_relevant=False, faithful=False, expected="answerable"),
            "retrieval",
        ),
        (
            Signals(
                query=Q,
                context_relevant=False,
                faithful=False,
                missed_chunk="the retriever missed kb-9",
                corpus_searched=40,
            ),
            "retrieval",
        ),
        (
            Signals(query=Q, context_relevant=False, faithful=False, corpus_searched=40),
            "no_answer_expected",
        ),
        (Signals(query=Q, context_relevant=False, faithful=False), "no_answer_expected"),
        (
            Signals(query=Q, context_relevant=False, faithful=False, expected="no_answer"),
            "no_answer_expected",
        ),
        (
            Signals(query=Q, context_relevant=False, faithful=True, answer_relevant=False),
            "no_answer_expected",
        ),
        (Signals(query=Q, context_relevant=True, faithful=False), "generation"),
        (
            Signals(query=Q, context_relevant=True, faithful=True, answer_relevant=False),
            "generation",
        ),
        (Signals(query=Q, context_relevant=None, faithful=False), "generation"),
    ],
)
def test_rule(signals: Signals, label: str) -> None:
    cause = assign(signals)
    assert cause.label == label
    assert cause.evidence


def test_evidence_names_the_relevant_chunk() -> None:
    cause = assign(
        Signals(query=Q, context_relevant=True, relevant_chunks=("kb-7",), faithful=False)
    )
    assert "kb-7" in cause.evidence and "unfaithful" in cause.evidence


def test_evidence_names_the_missed_chunk_or_how_much_was_searched() -> None:
    missed = assign(
        Signals(
            query=Q,
            context_relevant=False,
            faithful=False,
            missed_chunk="the retriever missed kb-9 (answer score 0.80)",
        )
    )
    assert missed.label == "retrieval" and "kb-9" in missed.evidence
    nothing = assign(Signals(query=Q, context_relevant=False, faithful=False, corpus_searched=40))
    assert "none of the 40 chunks seen in traffic answers this" in nothing.evidence
