"""Where rankings come from: run files, a user's ``module:function`` retriever, or a BM25 baseline.

A run file is JSONL, one line per query: ``{"id": ..., "retrieved_ids": [...], "scores": [...]}``.
Rank is the order of ``retrieved_ids``; ``scores`` are checked but never reorder it.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import importlib
import inspect
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.golden.sets import load_models, read_jsonl_objects
from ragsieve.evaluators.records import GoldenCase
from ragsieve.evaluators.tools.userfile import MAX_DATA_BYTES, regular_file

log = logging.getLogger(__name__)
_WORD = re.compile(r"\w+")


class RunLine(BaseModel):
    """One line of a run file."""

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str
    retrieved_ids: list[str]
    scores: list[float] | None = None

    @field_validator("scores")
    @classmethod
    def _same_length(cls, v: list[float] | None, info: ValidationInfo) -> list[float] | None:
        ids = info.data.get("retrieved_ids")
        if v is not None and ids is not None and len(v) != len(ids):
            raise ValueError(f"has {len(v)} values for {len(ids)} retrieved ids")
        return v


class _RawRunLine(msgspec.Struct):
    """A run line with its lists kept as JSON text, to be checked and decoded one by one."""

    id: str
    retrieved_ids: msgspec.Raw
    scores: msgspec.Raw = msgspec.Raw(b"null")  # Raw | None would refuse an array


_RAW_LINE = msgspec.json.Decoder(_RawRunLine)
_IDS = msgspec.json.Decoder(list[str])
_T = TypeVar("_T")
_SCORES = msgspec.json.Decoder(list[float] | None)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector, then restore its previous state.

    Loading 100,000 golden cases or rankings allocates hundreds of thousands of containers, and
    every automatic collection walks all those already alive: it more than doubles the time.
    Parsed JSON holds no reference cycles, so there is nothing for the collector to free.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class LazyJson(Mapping[str, _T]):
    """``key → value``, each value kept as its JSON text and decoded (in C) by ``decoder`` when
    read; each read returns a new object. Large files stay as their bytes, not as millions of
    Python objects (:class:`RunFile`, ``gate.policy.PerQuery``)."""

    def __init__(self, raw: Mapping[str, msgspec.Raw], decoder: msgspec.json.Decoder[_T]) -> None:
        self._raw = raw
        self._decoder = decoder

    def __getitem__(self, key: str) -> _T:
        return self._decoder.decode(self._raw[key])

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


class RunFile(LazyJson[list[str]]):
    """A checked run file: ``query id → chunk ids in rank order``, in file order.

    Each ranking is kept as its JSON text and decoded (in C) when read: 100,000 rankings of 100
    ids are 10 million strings, which as objects would take 1 GB and, scattered over it, make
    every pass over them wait on memory. Each read returns a new list.
    """

    def __init__(self, rankings: Mapping[str, msgspec.Raw]) -> None:
        super().__init__(dict(rankings), _IDS)


def load_run(path: str | Path) -> Mapping[str, list[str]]:
    """Load a run file into ``query id → chunk ids in rank order``; errors name ``path:line``.

    A strict typed decode (msgspec) reads well-formed files; anything it declines (a bad line,
    a repeated id, a value only the lax reference accepts) is read again by the line-by-line
    :class:`RunLine` path, which accepts or rejects it exactly as before, naming ``path:line``.
    """
    p = regular_file(path)  # a FIFO or /dev/zero is refused, not read for ever
    with paused_gc():
        fast = _load_run_fast(p) if p.stat().st_size <= MAX_DATA_BYTES else None
        if fast is not None:
            return fast
        return {row.id: row.retrieved_ids for _, row in load_models(p, RunLine)}


def _load_run_fast(path: Path) -> RunFile | None:
    try:  # read whole (up to 1 GiB); a larger file goes line by line
        rows = _RAW_LINE.decode_lines(path.read_bytes())
        for row in rows:  # every line is checked now; the rankings are decoded again when read
            n_ids = len(_IDS.decode(row.retrieved_ids))
            scores = _SCORES.decode(row.scores)
            if scores is not None and len(scores) != n_ids:
                return None
    except (OSError, msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None  # the line-by-line path names the line (or the file it cannot read)
    rankings = {row.id: row.retrieved_ids for row in rows}
    if len(rankings) != len(rows):  # a repeated id: the reference path names both lines
        return None
    return RunFile(rankings)


def write_run(path: str | Path, run: Mapping[str, Sequence[str]]) -> Path:
    """Write ``query id → ranked ids`` as a run file."""
    p = Path(path)
    with p.open("w", encoding="utf-8") as out:
        for qid, ids in run.items():
            out.write(
                json.dumps({"id": qid, "retrieved_ids": list(ids)}, ensure_ascii=False) + "\n"
            )
    return p


def import_object(spec: str) -> Callable[..., Any]:
    """Import ``package.module:attribute`` (attribute may be dotted); raises ConfigError."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{spec!r}: expected module:function, e.g. 'myapp.search:search'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{spec!r}: cannot import {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{spec!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"{spec!r}: {attr!r} is not callable")
    return obj


@dataclass
class Retrieval:
    """What a retriever returned for a set of cases."""

    run: dict[str, list[str]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def _item_id(item: Any) -> tuple[str, str | None]:
    if isinstance(item, str):
        return item, None
    if isinstance(item, Mapping):
        cid, text = item.get("id"), item.get("content", item.get("text"))
    else:
        cid = getattr(item, "id", None)
        text = getattr(item, "content", None) or getattr(item, "text", None)
    if cid is None:
        raise TypeError(f"retrieved item {item!r} has no id")
    return str(cid), text if isinstance(text, str) else None


def _takes(search: Callable[..., Any], name: str) -> bool:
    """True when ``search`` has a parameter called ``name`` (a C callable: False)."""
    try:
        return name in inspect.signature(search).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False


def _with_config(
    search: Callable[..., Any], config: Mapping[str, object] | None
) -> Callable[..., Any]:
    if config is None or not _takes(search, "config"):
        return search
    return functools.partial(search, config=dict(config))


def _history(case: GoldenCase) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in case.chat_history]


def retrieve_all(
    search: Callable[..., Any],
    cases: Iterable[GoldenCase],
    k: int,
    *,
    config: Mapping[str, object] | None = None,
) -> Retrieval:
    """Call ``search(query, k)`` for every case; a failing call is logged, kept and scores 0.

    ``search`` may be sync or async and may return ids, objects with ``.id`` (and ``.content``
    or ``.text``) or dicts with ``"id"``. When it takes a ``config`` parameter it gets the run's
    pipeline settings (``eval --config``), so the settings recorded are the settings used.

    Follow-up cases (with ``chat_history``): a ``search`` that takes a ``history`` parameter gets
    the turn as the person typed it and ``history=[{"role", "content"}, ...]`` (oldest first;
    ``[]`` for a single-turn case), so the app's own rewriting is what is measured; any other
    ``search`` gets the case's ``standalone_query`` (its reviewed meaning) when it has one.
    """
    out = Retrieval()
    with_history = _takes(search, "history")
    search = _with_config(search, config)
    is_async = inspect.iscoroutinefunction(search)

    def call(case: GoldenCase) -> Any:
        if with_history:
            return search(case.query, k, history=_history(case))
        return search(case.standalone_query or case.query, k)

    async def one_async(case: GoldenCase) -> Any:
        return await call(case)

    for case in cases:
        try:
            raw = asyncio.run(one_async(case)) if is_async else call(case)
            ids: list[str] = []
            for item in raw:
                cid, text = _item_id(item)
                ids.append(cid)
                if text is not None:
                    out.texts.setdefault(cid, text)
        except Exception as exc:  # a user's retriever: record the failure, keep going
            log.warning("retriever failed on %s: %s: %s", case.id, type(exc).__name__, exc)
            out.errors[case.id] = f"{type(exc).__name__}: {exc}"
            continue
        out.run[case.id] = ids
    return out


def load_corpus(path: str | Path) -> dict[str, str]:
    """Read a corpus JSONL: ``{"id", "title"?, "text"}`` (BEIR) or ``{"id", "content"}``."""
    p = Path(path)
    corpus: dict[str, str] = {}
    for lineno, obj in read_jsonl_objects(p):
        cid = obj.get("id", obj.get("_id"))
        body = obj.get("text", obj.get("content"))
        if not isinstance(cid, str | int) or isinstance(cid, bool):
            raise ConfigError(f"{p}:{lineno}: id: missing or not a string")
        if not isinstance(body, str):
            raise ConfigError(f"{p}:{lineno}: text: missing 'text' or 'content' string")
        title = obj.get("title")
        corpus[str(cid)] = f"{title}\n{body}" if isinstance(title, str) and title else body
    if not corpus:
        raise ConfigError(f"{p}: corpus is empty")
    return corpus


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_SPANISH  # type: ignore[import-untyped]

    return frozenset(_fold(w) for w in (*STOPWORDS_EN, *STOPWORDS_SPANISH))


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    """Unicode words, case and accent folded, English and Spanish stopwords removed."""
    stop = _stopwords()
    return [t for t in _WORD.findall(_fold(text)) if t not in stop and (len(t) > 1 or t.isdigit())]


class BM25Retriever:
    """BM25 over a corpus (``bm25s``, Lucene variant, k1=1.2 and b=0.75 as BEIR's Elasticsearch)."""

    def __init__(self, corpus: Mapping[str, str], *, k1: float = 1.2, b: float = 0.75) -> None:
        import bm25s  # type: ignore[import-untyped]

        # bm25s pins its logger to DEBUG on import; let it follow the application's level again
        logging.getLogger("bm25s").setLevel(logging.NOTSET)

        if not corpus:
            raise ConfigError("bm25: corpus is empty")
        self.ids = list(corpus)
        self.texts = dict(corpus)
        self._index = bm25s.BM25(k1=k1, b=b)
        self._index.index([tokenize(corpus[c]) or [""] for c in self.ids], show_progress=False)

    def search(self, query: str, k: int) -> list[str]:
        """Top ``k`` chunk ids by BM25 score; ties keep corpus order; zero scores are dropped."""
        tokens = [t for t in tokenize(query) if t in self._index.vocab_dict]
        if not tokens:
            return []
        scores = self._index.get_scores(tokens)
        n = min(k, len(scores))
        top = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]
        return [self.ids[i] for i in top if scores[i] > 0]
