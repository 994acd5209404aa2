"""Run files, user retrievers and the BM25 baseline."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.golden.runs import (
    BM25Retriever,
    import_object,
    load_corpus,
    load_run,
    retrieve_all,
    tokenize,
    write_run,
)
from ragsieve.evaluators.records import GoldenCase


def _jsonl(path: Path, *rows: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_run_keeps_file_order_and_ignores_scores(tmp_path: Path) -> None:
    p = _jsonl(
        tmp_path / "run.jsonl",
        {"id": "q1", "retrieved_ids": ["b", "a", "c"], "scores": [0.1, 0.9, 0.5]},
        {"id": "q2", "retrieved_ids": []},
    )
    assert load_run(p) == {"q1": ["b", "a", "c"], "q2": []}
    assert load_run(write_run(tmp_path / "copy.jsonl", load_run(p))) == load_run(p)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"id": "q2"}', ":2: retrieved_ids: Field required"),
        ('{"id": "q2", "retrieved_ids": "abc"}', ":2: retrieved_ids: "),
        (
            '{"id": "q2", "retrieved_ids": ["a"], "scores": [1, 2]}',
            ":2: scores: has 2 values for 1 retrieved ids",
        ),
        ('{"id": "q1", "retrieved_ids": []}', ":2: id: duplicate 'q1' (first on line 1)"),
        ("oops", ":2: json: "),
    ],
)
def test_run_errors_name_path_and_line(tmp_path: Path, line: str, expected: str) -> None:
    p = _jsonl(tmp_path / "run.jsonl", {"id": "q1", "retrieved_ids": ["a"]}, line)
    with pytest.raises(ConfigError) as info:
        load_run(p)
    assert str(info.value).startswith(f"{p}{expected}")


def test_import_object(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_search.py").write_text("def search(q, k):\n    return ['x'][:k]\nVALUE = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_object("my_search:search")("q", 1) == ["x"]
    for spec, msg in [
        ("my_search", "expected module:function"),
        ("nope_mod_xyz:f", "cannot import"),
        ("my_search:missing", "has no attribute"),
        ("my_search:VALUE", "not callable"),
    ]:
        with pytest.raises(ConfigError, match=msg):
            import_object(spec)
    sys.modules.pop("my_search", None)


def test_retrieve_all_accepts_ids_objects_dicts_async_and_keeps_failures() -> None:
    cases = [GoldenCase(id=f"q{i}", query=f"query {i}") for i in range(4)]

    def search(query: str, k: int) -> list[object]:
        if query.endswith("0"):
            return ["a", "b", "c"][:k]
        if query.endswith("1"):
            return [SimpleNamespace(id="d", content="text d"), SimpleNamespace(id=7, text="seven")]
        if query.endswith("2"):
            return [{"id": "e", "text": "text e"}]
        raise RuntimeError("index offline")

    got = retrieve_all(search, cases, 2)
    assert got.run == {"q0": ["a", "b"], "q1": ["d", "7"], "q2": ["e"]}
    assert got.texts == {"d": "text d", "7": "seven", "e": "text e"}
    assert got.errors == {"q3": "RuntimeError: index offline"}

    async def asearch(query: str, k: int) -> list[str]:
        return [query.upper()] * k

    assert retrieve_all(asearch, cases[:1], 2).run == {"q0": ["QUERY 0", "QUERY 0"]}


def test_tokenize_folds_case_accents_and_stopwords() -> None:
    assert tokenize("¿Cuántos Grammys ha ganado Lady Gaga?") == [
        "cuantos",
        "grammys",
        "ganado",
        "lady",
        "gaga",
    ]
    assert tokenize("The effect of IL-6 on T cells, in 2019") == [
        "effect",
        "il",
        "6",
        "cells",
        "2019",
    ]


def test_load_corpus_formats_and_errors(tmp_path: Path) -> None:
    p = _jsonl(
        tmp_path / "c.jsonl",
        {"id": "1", "title": "T", "text": "body"},
        {"id": 2, "content": "only content"},
    )
    assert load_corpus(p) == {"1": "T\nbody", "2": "only content"}
    bad = _jsonl(tmp_path / "bad.jsonl", {"id": "1", "text": "ok"}, {"id": "2"})
    with pytest.raises(ConfigError, match=r"bad.jsonl:2: text: missing"):
        load_corpus(bad)
    with pytest.raises(ConfigError, match="corpus is empty"):
        load_corpus(_jsonl(tmp_path / "empty.jsonl", ""))


def test_bm25_ranks_matching_documents_in_spanish_and_english() -> None:
    corpus = {
        "es1": "Lady Gaga cantó el himno nacional en la Super Bowl.",
        "es2": "Los Panthers lideraron las intercepciones de la liga.",
        "en1": "Diffusion tensor imaging of white matter in newborns.",
        "en2": "Gut microbiome alterations reduce resistance to Clostridium difficile.",
    }
    bm25 = BM25Retriever(corpus)
    assert bm25.search("¿Qué cantó Lady Gaga?", 3)[0] == "es1"
    assert bm25.search("intercepciones Panthers", 1) == ["es2"]
    assert bm25.search("clostridium difficile microbiome", 2)[0] == "en2"
    assert bm25.search("the of and", 5) == []  # only stopwords: nothing scores
    assert bm25.search("unrelated zebra", 5) == []
    with pytest.raises(ConfigError):
        BM25Retriever({})
