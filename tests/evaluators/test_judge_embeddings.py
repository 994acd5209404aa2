"""The shared encoder's caches and the context judge's lexical gate in front of the encoder."""

from __future__ import annotations

import numpy as np
import pytest

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.testing import make_interaction
from ragsieve.evaluators.tools import embeddings

TEXTS = [
    "The Starter plan allows 120 API requests per minute per account.",
    "El plan Growth eleva el límite a 600 solicitudes por minuto.",
    "  Ünïcode   spacing, ﬁligree and 2,121 items; ¿qué tal?",
    "",
]


@pytest.fixture(autouse=True)
def _empty_vector_cache():
    embeddings.clear_cache()
    yield
    embeddings.clear_cache()


def test_word_cached_tokenizer_matches_the_stock_tokenizer():
    model = embeddings._model()
    assert isinstance(model._sp, embeddings._WordCachedTokenizer)
    stock = model._sp._inner
    assert not isinstance(stock, embeddings._WordCachedTokenizer)
    for text in [*TEXTS, "Limits are counted over a sliding window of 60 seconds." * 3]:
        assert model._sp.encode(text, out_type=int) == stock.encode(text, out_type=int)


def test_cached_vectors_equal_fresh_ones_and_are_counted():
    first = embeddings.embed(TEXTS)
    again = embeddings.embed(list(reversed(TEXTS)))
    uncached = embeddings.embed(TEXTS, cache=False)
    assert first.shape == (4, embeddings.DIM)
    np.testing.assert_allclose(again[::-1], first)
    np.testing.assert_allclose(uncached, first, atol=1e-6)
    info = embeddings.cache_info()
    assert info["misses"] == 4 and info["hits"] == 4 and info["size"] == 4


async def test_lexically_relevant_chunks_are_not_encoded():
    x = make_interaction(
        query="When was GPT-4 released by OpenAI?",
        context=("GPT-4 was released by OpenAI on March 14, 2023.",) * 2,
    )
    [r] = await get_judge("context_relevance").evaluate(x)
    assert r.label == "relevant" and "cosines" not in r.metadata
    assert embeddings.cache_info()["misses"] == 0


async def test_translated_chunk_is_found_by_meaning_and_unrelated_text_is_not():
    x = make_interaction(
        query="How many calls per minute can a Growth account make?",
        context=(
            "Bananas grow in tropical climates and are rich in potassium.",
            "The Growth plan raises the limit to 600 requests per minute.",
            "El plan Growth permite 600 solicitudes por minuto.",
        ),
    )
    [r] = await get_judge("context_relevance").evaluate(x)
    chunks = r.metadata["chunks"]
    assert [c["relevant"] for c in chunks] == [False, True, True]
    # the paraphrase ("calls" for "requests") and the translation are found by meaning: their
    # closest sentences are far nearer the question than the unrelated chunk's
    cosines = [c["cosine"] for c in chunks]
    assert min(cosines[1:]) > cosines[0] + 0.2
    assert chunks[0]["terms"] == 0.0 and chunks[0]["typed"] is False
