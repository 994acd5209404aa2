"""Translations of one failure in a bilingual knowledge base: each language retrieves its own
copy of the page (its own chunk ids), and the observed corpus's chunk twins make them one."""

from __future__ import annotations

import dataclasses

import numpy as np
from golden_plant import CHUNKS, CHUNKS_ES, PORTS_EN, flagged

from ragsieve.collector.store import Store
from ragsieve.evaluators.tools.embeddings import embed
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.matching import as_one
from ragsieve.jobs.golden.growth.reference import mutual_twins, nearest_chunks, observed_twins
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.growth.signature import Signature
from ragsieve.jobs.settings import GoldenSettings
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase


def _bilingual_corpus(store: Store) -> None:
    chunks = [c for kb in (CHUNKS, CHUNKS_ES) for topic in kb.values() for c in topic]
    vecs = embed([text for _, text in chunks])
    for (cid, text), vec in zip(chunks, vecs, strict=True):
        store.execute(
            "INSERT INTO corpus_chunks (chunk_id, content, first_seen, vector) VALUES (?, ?, 0, ?)",
            (cid, text, vec.astype(np.float32).tobytes()),
        )


def _asked(query: str, n: int, chunks: list[tuple[str, str]], answer: str) -> FlaggedCase:
    case = flagged(query, "generation", n, chunks=chunks)
    return dataclasses.replace(
        case, interaction=case.interaction.model_copy(update={"answer": answer})
    )


def test_a_page_and_its_translation_are_twins_and_other_pages_are_not(store: Store) -> None:
    _bilingual_corpus(store)
    twins = observed_twins(store, ["kb-install", "kb-network-es"])
    assert twins["kb-install"] == "kb-install-es" and twins["kb-install-es"] == "kb-install"
    assert twins["kb-network-es"] == "kb-network"
    # an incomplete corpus: a page whose translation was never retrieved has no twin, even
    # though some chunk of the other language is its nearest
    ids = ["a-en", "b-en", "b-es"]
    vecs = np.array([[1.0, 0.0], [0.6, 0.8], [0.5, 0.866]], dtype=np.float32)
    langs = {"a-en": "en", "b-en": "en", "b-es": "es"}
    near = nearest_chunks(ids, vecs, ids)
    assert mutual_twins(near, langs) == {"b-en": "b-es", "b-es": "b-en"}


def test_translations_of_one_wrong_answer_are_one_candidate(store: Store) -> None:
    _bilingual_corpus(store)
    # a free translation (query cosine 0.59): the wording alone does not tie the two askings,
    # the failure does, once each language's copy of the page reads as one chunk
    spanish = "¿Qué hay que abrir en el cortafuegos para el agente local?"
    cases = [
        _asked(PORTS_EN, 1, CHUNKS["ports"], "The agent needs port 8443 open."),
        _asked(spanish, 2, CHUNKS_ES["ports"], "El agente necesita abierto el puerto 8443."),
    ]
    report = grow(store, cases, GoldenSettings())
    assert report["new_candidates"] == 1 and report["merged_duplicates"] == 1
    assert "same 2 chunks and same wrong value '8443'" in report["merges"][0]["reason"]
    rows = CandidateRepo(store).select(["candidate"])
    assert [r.seen for r in rows] == [2]


def test_other_questions_on_the_same_bilingual_page_stay_apart(store: Store) -> None:
    _bilingual_corpus(store)
    cases = [
        _asked(PORTS_EN, 1, CHUNKS["ports"], "The agent needs port 8443 open."),
        _asked(
            "¿Cómo instalo el agente on-prem?",
            2,
            CHUNKS_ES["ports"],
            "Instálelo con pip install agente-7.",
        ),
    ]
    report = grow(store, cases, GoldenSettings())
    assert report["new_candidates"] == 2 and report["merged_duplicates"] == 0


def test_only_a_whole_retrieval_reads_as_one_across_languages() -> None:
    """A translated repeat retrieves the translation of every chunk; chunks that only partly
    correspond are another question's retrieval on the same pages, and stay as they are."""
    twins = {"p1-en": "p1-es", "p1-es": "p1-en", "p2-en": "p2-es", "p2-es": "p2-en"}

    def sig(query: str, lang: str, chunks: set[str]) -> Signature:
        return Signature(query, query, "generation", frozenset(chunks), None, frozenset(), lang)

    en = sig("a", "en", {"p1-en", "p2-en"})
    whole = as_one(en, sig("b", "es", {"p1-es", "p2-es"}), twins)
    assert whole[0].chunks == whole[1].chunks == {"p1-en", "p2-en"}
    part = sig("c", "es", {"p1-es", "p3-es"})
    assert as_one(en, part, twins) == (en, part)
