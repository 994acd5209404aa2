"""Agreement between a judge and human labels: κ, F1, pairwise accuracy and a threshold sweep."""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.records import EvalResult, RagInteraction, RetrievedDocument
from ragsieve.evaluators.tools.jsonlines import parse_line
from ragsieve.evaluators.tools.userfile import MAX_DATA_BYTES, read_capped

# Which human label each metric is compared with, and the judge labels that mean "failure".
LABEL_FIELD = {
    "faithfulness": "label_faithful",
    "answer_relevance": "label_relevant",
    "context_relevance": "label_context_relevant",
}
FAILURE_LABELS = frozenset({"unfaithful", "irrelevant"})
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


class LabelledRow(BaseModel):
    """One row of a labelled JSONL file (see shared/data/README.md)."""

    model_config = ConfigDict(extra="ignore")
    id: str
    question: str | None = None
    contexts: list[str] = []
    answer: str | None = None
    label_faithful: bool | None = None
    label_relevant: bool | None = None
    label_context_relevant: bool | None = None
    task: str = "default"
    pair_id: str | None = None


def _lines(path: str | Path) -> list[str]:
    """The file's lines, decoded as UTF-8; a bad byte is a ConfigError naming its line."""
    data = read_capped(path, MAX_DATA_BYTES, what="a labelled JSONL file")  # no FIFO, /dev/zero
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 BOM is harmless
        data = data[3:]
    out = []
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{path}:{lineno}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                f"{exc.start + 1}); re-save the file as UTF-8"
            ) from exc
    return out


def read_rows(path: str | Path) -> list[LabelledRow]:
    """Read and validate a labelled JSONL file; a bad line raises ``ConfigError`` (path:line)."""
    rows: list[LabelledRow] = []
    for lineno, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        obj = parse_line(line, f"{path}:{lineno}")
        if not isinstance(obj, dict):
            kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
                type(obj), "a number"
            )
            raise ConfigError(f"{path}:{lineno}: row: expected a JSON object, got {kind}")
        try:
            rows.append(LabelledRow.model_validate(obj))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(map(str, err["loc"])) or "row"
            raise ConfigError(f"{path}:{lineno}: {where}: {err['msg']}") from exc
    return rows


def row_to_interaction(row: LabelledRow) -> RagInteraction:
    """Turn a labelled row into the interaction a judge sees (contexts become ranked chunks)."""
    trace = hashlib.sha256(row.id.encode()).hexdigest()[:32]
    docs = tuple(
        RetrievedDocument(id=f"{row.id}#{i}", content=c, rank=i, in_prompt=True)
        for i, c in enumerate(row.contexts)
    )
    return RagInteraction(
        trace_id=trace,
        span_id=trace[:16],
        started_at=_EPOCH,
        query=row.question,
        answer=row.answer,
        documents=docs,
    )


@dataclass(slots=True)
class Scored:
    """A judged row: human truth, judge score and whether the judge called it a failure."""

    row: LabelledRow
    truth: bool
    score: float | None
    failure: bool | None


def _div(a: float, b: float) -> float:
    return a / b if b else 0.0


def binary_stats(truth: Sequence[bool], failure_pred: Sequence[bool]) -> dict[str, float]:
    """Accuracy, balanced accuracy, P/R/F1 (failure = positive) and Cohen's κ."""
    pos = [not t for t in truth]  # the failure class is the positive one
    tp = sum(p and q for p, q in zip(pos, failure_pred, strict=True))
    fp = sum((not p) and q for p, q in zip(pos, failure_pred, strict=True))
    fn = sum(p and not q for p, q in zip(pos, failure_pred, strict=True))
    tn = len(pos) - tp - fp - fn
    n = len(pos)
    acc = _div(tp + tn, n)
    prec, rec = _div(tp, tp + fp), _div(tp, tp + fn)
    expected = _div((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp), n * n)
    kappa = _div(acc - expected, 1 - expected) if expected < 1 else 0.0
    return {
        "n": n,
        "accuracy": acc,
        "balanced_accuracy": (rec + _div(tn, tn + fp)) / 2,
        "precision": prec,
        "recall": rec,
        "f1": _div(2 * prec * rec, prec + rec),
        "kappa": kappa,
    }


def auc(truth: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Probability that a true row scores above a false one (ties count half)."""
    pos = sorted(s for t, s in zip(truth, scores, strict=True) if t)
    neg = sorted(s for t, s in zip(truth, scores, strict=True) if not t)
    if not pos or not neg:
        return None
    import bisect

    wins = sum(
        bisect.bisect_left(neg, p)
        + 0.5 * (bisect.bisect_right(neg, p) - bisect.bisect_left(neg, p))
        for p in pos
    )
    return wins / (len(pos) * len(neg))


def pairwise_accuracy(scored: Iterable[Scored]) -> tuple[float | None, int]:
    """Share of pairs where the row labelled true scores higher (ties count half)."""
    pairs: dict[str, list[Scored]] = defaultdict(list)
    for s in scored:
        if s.row.pair_id and s.score is not None:
            pairs[s.row.pair_id].append(s)
    wins, n = 0.0, 0
    for members in pairs.values():
        good = [m.score for m in members if m.truth]
        bad = [m.score for m in members if not m.truth]
        for g in good:
            for b in bad:
                n += 1
                wins += 1.0 if g > b else 0.5 if g == b else 0.0  # type: ignore[operator]
    return (wins / n if n else None), n


def threshold_sweep(scored: Sequence[Scored], steps: int = 20) -> list[dict[str, float]]:
    """Agreement if the failure rule were ``score < t`` for ``t`` in (0, 1]."""
    usable = [s for s in scored if s.score is not None]
    out = []
    for i in range(1, steps + 1):
        t = i / steps
        stats = binary_stats([s.truth for s in usable], [s.score < t for s in usable])  # type: ignore[operator]
        out.append({"threshold": t, **{k: round(v, 4) for k, v in stats.items()}})
    return out


def agreement(scored: Sequence[Scored], *, sweep: bool = True) -> dict[str, Any]:
    """All agreement statistics for one task's judged rows."""
    decided = [s for s in scored if s.failure is not None]
    out: dict[str, Any] = {
        k: round(v, 4) if isinstance(v, float) else v
        for k, v in binary_stats(
            [s.truth for s in decided], [bool(s.failure) for s in decided]
        ).items()
    }
    out["undecided"] = len(scored) - len(decided)
    with_score = [s for s in scored if s.score is not None]
    a = auc([s.truth for s in with_score], [s.score for s in with_score])  # type: ignore[misc]
    out["auc"] = None if a is None else round(a, 4)
    pw, npairs = pairwise_accuracy(scored)
    if npairs:
        out["pairwise_accuracy"] = round(pw, 4)  # type: ignore[arg-type]
        out["pairs"] = npairs
    if sweep:
        out["threshold_sweep"] = threshold_sweep(scored)
    return out


async def judge_rows(
    judge: Any, rows: Sequence[LabelledRow], *, concurrency: int = 8
) -> list[Scored]:
    """Run ``judge`` on every row that carries the label of the judge's metric."""
    field = LABEL_FIELD.get(judge.name)
    if field is None:
        raise ConfigError(f"judge {judge.name!r}: no human label to compare with")
    todo = [r for r in rows if getattr(r, field) is not None]
    if not rows:
        raise ConfigError("--data: the file holds no rows")
    if not todo:
        raise ConfigError(
            f"--data: {field}: no row carries this label, so judge {judge.name!r} has nothing "
            "to be compared with"
        )
    sem = asyncio.Semaphore(concurrency)

    async def one(row: LabelledRow) -> Scored:
        async with sem:
            results = await judge.evaluate(row_to_interaction(row))
        res: EvalResult | None = next((r for r in results if r.evaluator == judge.name), None)
        truth = bool(getattr(row, field))
        if res is None or res.label in {"error", "skipped"}:
            return Scored(row, truth, None, None)
        score = res.score if res.score is not None and not math.isnan(res.score) else None
        if res.label == "abstained":
            score = None  # an abstention is neither faithful nor a hallucination
        return Scored(row, truth, score, res.label in FAILURE_LABELS)

    return list(await asyncio.gather(*(one(r) for r in todo)))


def calibrate(
    judge: Any, rows: Sequence[LabelledRow], *, task: str | None = None, sweep: bool = True
) -> Mapping[str, dict[str, Any]]:
    """Judge ``rows`` and return agreement per task (filtered to ``task`` when given)."""
    if task is not None:
        rows = [r for r in rows if r.task == task]
        if not rows:
            raise ConfigError(f"--task: no rows with task {task!r}")
    scored = asyncio.run(judge_rows(judge, rows))
    by_task: dict[str, list[Scored]] = defaultdict(list)
    for s in scored:
        by_task[s.row.task].append(s)
    return {t: agreement(items, sweep=sweep) for t, items in sorted(by_task.items())}
