"""Where rankings come from: run files, a user's ``module:function`` retriever, or a BM25 baseline.

A run file is JSONL, one line per query: ``{"id": ..., "retrieved_ids": [...], "scores": [...]}``.
Rank is the order of ``retrieved_ids``; ``scores`` are checked but never reorder it.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.golden import load_models, read_jsonl_objects
from ragsieve.evaluators.records import GoldenCase

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


def load_run(path: str | Path) -> dict[str, list[str]]:
    """Load a run file into ``query id → chunk ids in rank order``; errors name ``path:line``."""
    return {row.id: row.retrieved_ids for _, row in load_models(path, RunLine)}


def write_run(path: str | Path, run: Mapping[str, Sequence[str]]) -> Path:
    """Write ``query id → ranked ids`` as a run file."""
    p = Path(path)
    with p.open("w", encoding="utf-8") as out:
        for qid, ids in run.items():
            out.write(
                json.dumps({"id": qid, "retrieved_ids": list(ids)}, ensure_ascii=False) + "\n"
            )
    return p


def import_object(spec: str) -> Any:
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


def retrieve_all(search: Callable[..., Any], cases: Iterable[GoldenCase], k: int) -> Retrieval:
    """Call ``search(query, k)`` for every case; a failing call is logged, kept and scores 0.

    ``search`` may be sync or async and may return ids, objects with ``.id`` (and ``.content``
    or ``.text``) or dicts with ``"id"``.
    """
    out = Retrieval()
    is_async = inspect.iscoroutinefunction(search)

    async def one_async(query: str) -> Any:
        return await search(query, k)

    for case in cases:
        try:
            raw = asyncio.run(one_async(case.query)) if is_async else search(case.query, k)
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
