"""``evaluate_dataframe``: the job's judges over a pandas DataFrame, for notebook users.

One row is one question/answer/contexts triple; the frame that comes back has the same index and,
per metric, ``<metric>_label``, ``<metric>_score`` and ``<metric>_explanation``::

    >>> import pandas as pd  # doctest: +SKIP
    >>> df = pd.DataFrame({"question": [...], "answer": [...], "contexts": [[...], ...]})
    >>> evaluate_dataframe(df)  # doctest: +SKIP

Judges are built as the job builds them (``build_judges``: offline, llm or cascade backends, the
persistent LLM cache with ``cache_path``); ``concurrency`` calls run at once. pandas is optional
(``pip install 'ragsieve[pandas]'``) and only imported here.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges import LLMConfig, build_judges, safe_evaluate
from ragsieve.evaluators.records import RagInteraction, RetrievedDocument, utcnow

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_JUDGES = ("faithfulness", "answer_relevance", "context_relevance")
PROGRESS_FROM_ROWS = 50  # frames this long get a progress bar unless told otherwise
QUESTION_COLUMNS = ("question", "query")


def require_pandas() -> Any:
    """The pandas module, or :class:`MissingExtra` (an ImportError) saying how to install it."""
    from ragsieve.evaluators.tools.extras import require

    require("pandas", "the DataFrame API", "pandas")
    import pandas

    return pandas


def _documents(contexts: Any, row: object) -> tuple[RetrievedDocument, ...]:
    """Chunks from a list of strings or of dicts with ``id``/``content`` (or ``text``)."""
    if contexts is None or (isinstance(contexts, float) and contexts != contexts):  # NaN
        return ()
    if isinstance(contexts, str | Mapping):
        contexts = [contexts]
    docs = []
    for rank, ctx in enumerate(list(contexts)):  # lists, tuples, numpy arrays (from parquet)
        if isinstance(ctx, Mapping):
            content = ctx.get("content", ctx.get("text"))
            doc_id = ctx.get("id", ctx.get("chunk_id"))
        elif isinstance(ctx, str):
            content, doc_id = ctx, None
        else:
            raise ConfigError(
                f"row {row!r}: contexts must be strings or dicts with id/content"
                f" (got {type(ctx).__name__})"
            )
        text = None if content is None else str(content)
        if doc_id is None:
            digest = hashlib.sha256((text or "").encode()).hexdigest()
            doc_id = f"sha256:{digest}"
        docs.append(RetrievedDocument(id=str(doc_id), content=text, rank=rank, in_prompt=True))
    return tuple(docs)


def interactions_from_frame(df: pd.DataFrame) -> list[RagInteraction]:
    """One interaction per row (``question``/``query``, ``answer``, ``contexts``)."""
    question_col = next((c for c in QUESTION_COLUMNS if c in df.columns), None)
    if question_col is None or "answer" not in df.columns:
        raise ConfigError(
            "evaluate_dataframe needs columns question (or query) and answer;"
            f" got {list(df.columns)}"
        )
    contexts = df["contexts"] if "contexts" in df.columns else None
    out = []
    for pos, (label, row) in enumerate(df.iterrows()):
        trace_id = str(row["trace_id"]) if "trace_id" in df.columns else f"{pos:032x}"
        span_id = str(row["span_id"]) if "span_id" in df.columns else f"{pos:016x}"
        question, answer = row[question_col], row["answer"]
        out.append(
            RagInteraction(
                trace_id=trace_id,
                span_id=span_id,
                started_at=utcnow(),
                query=None if _missing(question) else str(question),
                answer=None if _missing(answer) else str(answer),
                documents=_documents(None if contexts is None else contexts.iloc[pos], label),
            )
        )
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to completion, also from a notebook whose event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="ragsieve-evaluate")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _progress_bar(total: int, enabled: bool | None) -> Callable[[], None]:
    """A tick function: tqdm when installed, else a line on stderr every tenth of the frame."""
    if enabled is False or (enabled is None and total < PROGRESS_FROM_ROWS):
        return lambda: None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        done = [0]

        def tick() -> None:
            done[0] += 1
            if done[0] == total or done[0] % max(1, total // 10) == 0:
                print(f"evaluated {done[0]}/{total} rows", file=sys.stderr)

        return tick
    bar = tqdm(total=total, desc="ragsieve judges", unit="row")

    def tick_bar() -> None:
        bar.update(1)
        if bar.n >= total:
            bar.close()

    return tick_bar


async def _judge_all(
    items: list[RagInteraction], judges: list[Any], concurrency: int, tick: Callable[[], None]
) -> list[dict[str, Any]]:
    gate = asyncio.Semaphore(concurrency)

    async def one(it: RagInteraction) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for judge in judges:
            async with gate:
                results = await safe_evaluate(judge, it)
            main = next((r for r in results if r.evaluator == judge.name), results[0])
            row[f"{judge.name}_label"] = main.label
            row[f"{judge.name}_score"] = main.score
            row[f"{judge.name}_explanation"] = main.explanation
        tick()
        return row

    return list(await asyncio.gather(*(one(it) for it in items)))


def evaluate_dataframe(
    df: pd.DataFrame,
    judges: Sequence[str] = DEFAULT_JUDGES,
    backend: str = "offline",
    llm: LLMConfig | None = None,
    *,
    concurrency: int | None = None,
    cache_path: str | None = None,
    thresholds: Mapping[str, float] | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Judge every row of ``df``; returns a frame with the same index and three columns a metric.

    Args:
        df: columns ``question`` (or ``query``), ``answer`` and ``contexts`` (a list of strings
            or of dicts with ``id``/``content``); ``trace_id``/``span_id`` are used and carried
            over when present (so ``Client.log_to_phoenix`` can annotate the traces).
        judges: metric names (or registry names), as in ``jobs.judges``.
        backend: ``offline`` (default, no network), ``llm`` or ``cascade``; the last two need
            ``llm`` (an ``LLMConfig``).
        concurrency: judge calls in flight (default: ``llm.concurrency``, else 8).
        cache_path: the LLM judges' persistent cache (SQLite file), as ``jobs.cache_path``.
        progress: a progress bar; by default on frames of 50 rows or more.

    Raises:
        ConfigError: pandas missing, a required column missing, an unknown judge, or an LLM
            backend without ``llm``.
    """
    pandas = require_pandas()
    if backend in ("llm", "cascade") and llm is None:
        raise ConfigError(f"backend {backend!r} needs llm=LLMConfig(base_url=..., model=...)")
    built = build_judges(
        list(judges),
        backend=backend,  # type: ignore[arg-type]  # checked by build_judges
        llm=llm,
        cache_path=cache_path,
        thresholds=thresholds,
    )
    items = interactions_from_frame(df)
    limit = concurrency or (llm.concurrency if llm is not None else 8)
    rows = _run(_judge_all(items, built, max(1, limit), _progress_bar(len(items), progress)))
    out = pandas.DataFrame(rows, index=df.index)
    for key in ("span_id", "trace_id"):
        if key in df.columns:
            out.insert(0, key, df[key])
    return out


__all__ = ["evaluate_dataframe", "interactions_from_frame", "require_pandas"]
