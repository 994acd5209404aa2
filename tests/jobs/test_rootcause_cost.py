"""What an ``undetermined`` costs: a reviewer's look, a fraction of what a wrong stated root
cause costs. A fit states a situation's cause only where it is right at least
``ledger.STATED_RIGHT`` of the time, and ``judges fit`` takes no refit that leaves fewer than
``ledger.MIN_STATED`` of the labelled failures stated."""

from __future__ import annotations

from ragsieve.jobs.fitting.rootcause_weights import fit
from ragsieve.jobs.verdicts.ledger import (
    DEFAULT_WEIGHTS,
    MIN_STATED,
    STATED_RIGHT,
    UNDETERMINED,
    Piece,
    combine,
    fit_weights,
)

RULE = Piece("rule", "generation", "plans#starter reached the prompt; the answer is unfaithful")
HAIR = Piece(
    "close_over",
    "no_answer_expected",
    "plans#starter scores 0.61, 0.01 over the context threshold; read the other way: none of 2"
    " chunk(s) in the prompt was relevant",
    0.01,
)
CLEAR = Piece("rule", "retrieval", "none of 2 chunk(s) in the prompt was relevant; kb-9 answers")
OFF = {**DEFAULT_WEIGHTS, **{k: 0.0 for k in DEFAULT_WEIGHTS if k.endswith("_band")}}


def _situation(right: int, wrong: int) -> list[tuple[list[Piece], str]]:
    """A close call the rule reads as ``generation``: right ``right`` times, ``wrong`` times
    the other branch's cause."""
    return [([RULE, HAIR], "generation")] * right + [([RULE, HAIR], "no_answer_expected")] * wrong


def test_a_situation_right_seven_times_in_ten_is_left_to_the_reviewer_with_both_lines() -> None:
    # stating "generation" there is right more often than not, but a wrong fix three times in
    # ten costs more than three reviewers' looks in ten: the fit leaves it undetermined
    assert 0.7 < STATED_RIGHT
    labelled = _situation(7, 3) + [([CLEAR], "retrieval")] * 20
    assert combine([RULE, HAIR], OFF).label == "generation"
    w = fit_weights(labelled, OFF)
    got = combine([RULE, HAIR], w)
    assert got.label == UNDETERMINED
    assert [c.split(":")[0] for c in got.competing] == ["generation", "no_answer_expected"]
    assert "0.01 over the context threshold" in got.competing[1]
    assert combine([CLEAR], w).label == "retrieval"
    # right nineteen times in twenty, the same close call is stated
    w = fit_weights(_situation(19, 1) + [([CLEAR], "retrieval")] * 20, OFF)
    assert combine([RULE, HAIR], w).label == "generation"


def test_judges_fit_takes_no_refit_that_leaves_most_root_causes_to_the_reviewer() -> None:
    # every labelled failure is the same close call, right six times in ten: the refit would
    # leave all of them undetermined, under the share a refit must still state
    examples = [(p, y, f"question {i}") for i, (p, y) in enumerate(_situation(6, 4))]
    got = fit(examples, OFF)
    assert got["after"]["undetermined"] == len(examples) > (1 - MIN_STATED) * len(examples)
    assert got["weights"] is None
    assert "states fewer than 70%" in got["why"]
