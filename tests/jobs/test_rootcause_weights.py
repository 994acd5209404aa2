"""``judges fit``'s root-cause part: weights refit on labelled root causes are kept only when
they also state more right out of sample."""

from __future__ import annotations

from ragsieve.jobs.fitting.rootcause_weights import MIN_LABELS, fit
from ragsieve.jobs.verdicts.ledger import DEFAULT_WEIGHTS, Piece

GEN = Piece("rule", "generation", "kb-1 reached the prompt; the answer is unfaithful")
RIVAL = Piece("rival", "retrieval", "the observed chunk kb-9 answers as well")


def _examples(n: int, cause: str) -> list[tuple[list[Piece], str, str]]:
    return [([GEN, RIVAL], cause, f"question {cause} {i}") for i in range(n)]


def test_a_deployment_whose_reviewers_blame_the_retriever_gets_weights_that_say_so() -> None:
    got = fit(_examples(10, "retrieval") + [([GEN], "generation", f"g{i}") for i in range(5)])
    assert got["weights"] is not None and got["weights"]["rival"] > DEFAULT_WEIGHTS["rival"]
    assert got["before"]["undetermined"] == 10 and got["after"]["undetermined"] == 0
    assert got["after"]["stated_right"] == 15
    assert got["cv_loss"]["after"] < got["cv_loss"]["before"]


def test_labels_that_agree_with_the_defaults_or_are_too_few_keep_them() -> None:
    agree = [([GEN], "generation", f"q{i}") for i in range(10)]
    assert fit(agree)["weights"] is None
    few = fit(_examples(MIN_LABELS - 1, "retrieval"))
    assert few["weights"] is None and "labelled root cause" in few["why"]


def test_the_job_reads_a_refit_only_under_the_price_it_was_fitted_with(store) -> None:  # type: ignore[no-untyped-def]
    """A refit stored before an undetermined was priced as a reviewer's look (no
    ``stated_right``) was fitted under another loss: the job keeps the defaults until the next
    fit; one stamped with today's price is read (an independent review)."""
    from ragsieve.evaluators.judges.combined.calibrated import Calibration
    from ragsieve.jobs.judging import calibrations
    from ragsieve.jobs.verdicts.verdicts import root_cause_weights

    refit = fit(_examples(10, "retrieval") + [([GEN], "generation", f"g{i}") for i in range(5)])
    old = {**refit, "weights": {**refit["weights"]}}
    del old["stated_right"]
    for stored, read in ((old, DEFAULT_WEIGHTS), (refit, refit["weights"])):
        series = calibrations.next_series(store)
        calibrations.save(store, Calibration({}, series, report={"root_cause_weights": stored}))
        got = root_cause_weights(store)
        assert {k: got[k] for k in read} == dict(read)
