"""``judges fit``'s root-cause part: the root-cause decision's weights, fitted to reviewers'
root causes.

Each failing trace's verdict stored the pieces of evidence its root cause weighed
(``samples.body.pieces``, :mod:`ragsieve.jobs.verdicts.ledger`). A label that names a root cause
(a reviewer's correction, the review's answer to an ``undetermined``, a labels file) pairs those
pieces with the right cause; :func:`fit` refits the weights on them
(:func:`~ragsieve.jobs.verdicts.ledger.fit_weights`) and keeps the refit only when it is better
out of sample too: in ``FOLDS``-fold cross-validation, grouped by question, the refit's loss
(a wrong stated cause 1, an undetermined one ``1 - ledger.STATED_RIGHT``) is lower than the
defaults', and the refit still states ``ledger.MIN_STATED`` of the labelled failures. The
weights ride in the stored calibration's report (``root_cause_weights``) with the price of an
undetermined they were fitted under (``stated_right``), which the job reads
(:func:`ragsieve.jobs.verdicts.verdicts.root_cause_weights`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.jobs.fitting.labels import Label, effective
from ragsieve.jobs.verdicts.gather import body_query
from ragsieve.jobs.verdicts.ledger import (
    DEFAULT_WEIGHTS,
    MIN_STATED,
    STATED_RIGHT,
    UNDETERMINED,
    Piece,
    combine,
    fit_weights,
    loss,
)

MIN_LABELS = 6  # fewer labelled root causes cannot move a weight beyond one trace's say
FOLDS = 5

Example = tuple[list[Piece], str, str]  # pieces, the labelled cause, the group (question)


def labelled_pieces(store: Store, labels: Sequence[Label]) -> list[Example]:
    """The stored pieces of each failure a label names a root cause for (latest verdict)."""
    causes = {
        x.trace_id: str(x.root_cause)
        for x in effective(labels)
        if x.metric is None and x.verdict == "fail" and x.root_cause
    }
    if not causes:
        return []
    latest: dict[str, list[Piece]] = {}
    for tid, body in store.query_in(
        "SELECT s.trace_id, s.body FROM samples s JOIN runs r ON r.run_id = s.run_id"
        " WHERE s.trace_id IN ({ids}) ORDER BY r.started_at",
        sorted(causes),
    ):
        raw = json.loads(body or "{}").get("pieces") or []
        got = [Piece.from_dict(p) for p in raw if isinstance(p, Mapping)]
        latest[str(tid)] = [p for p in got if p is not None]
    queries = {
        tid: body_query(body)
        for tid, body in store.query_in(
            "SELECT trace_id, body FROM interactions WHERE trace_id IN ({ids})", sorted(latest)
        )
    }
    return [
        (pieces, causes[tid], " ".join(str(queries.get(tid) or tid).casefold().split()))
        for tid, pieces in sorted(latest.items())
        if pieces
    ]


def _loss(examples: Sequence[Example], weights: Mapping[str, float]) -> tuple[bool, float]:
    return loss([(p, y) for p, y, _ in examples], weights)


def _stated(examples: Sequence[Example], weights: Mapping[str, float]) -> dict[str, Any]:
    said = [(combine(p, weights).label, y) for p, y, _ in examples]
    told = [(s, y) for s, y in said if s != UNDETERMINED]
    return {
        "stated": len(told),
        "stated_right": sum(s == y for s, y in told),
        "undetermined": len(said) - len(told),
    }


def fit(
    examples: Sequence[Example], start: Mapping[str, float] = DEFAULT_WEIGHTS
) -> dict[str, Any]:
    """The refit weights (``weights``: None when the defaults stay) and how they state the
    labelled causes, in sample and cross-validated."""
    out: dict[str, Any] = {"n": len(examples), "weights": None, "stated_right": STATED_RIGHT}
    if len(examples) < MIN_LABELS:
        out["why"] = f"{len(examples)} labelled root cause(s) with stored evidence"
        return out
    groups = sorted({g for _, _, g in examples})
    cv_before = cv_after = 0.0
    for k in range(FOLDS):
        held = {g for i, g in enumerate(groups) if i % FOLDS == k}
        train = [(p, y) for p, y, g in examples if g not in held]
        test = [e for e in examples if e[2] in held]
        w = fit_weights(train, start)
        cv_before += _loss(test, start)[1]
        cv_after += _loss(test, w)[1]
    weights = fit_weights([(p, y) for p, y, _ in examples], start)
    out.update(
        before=_stated(examples, start),
        after=_stated(examples, weights),
        cv_loss={"before": cv_before, "after": cv_after},
    )
    if weights == dict(start):
        out["why"] = "no change"
    elif _loss(examples, weights)[0]:
        out["why"] = f"the refit states fewer than {MIN_STATED:.0%} of the labelled root causes"
    elif cv_after < cv_before:
        out["weights"] = weights
    else:
        out["why"] = "no lower loss in cross-validation"
    return out


__all__ = ["FOLDS", "MIN_LABELS", "fit", "labelled_pieces"]
