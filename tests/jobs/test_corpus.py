"""The observed corpus: incremental indexing in a real SQLite store, and missed-chunk search."""

from __future__ import annotations

from functools import partial

from ragsieve.collector.store import open_store
from ragsieve.evaluators.judges.offline.faithfulness import FaithfulnessJudge
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.verdicts.corpus import ObservedCorpus

REFUNDS = "Refunds for returned card readers are paid to the original card within 14 days."
REFUNDS_ES = "Los reembolsos de lectores devueltos se pagan a la tarjeta original en 14 días."
FEES = "Card payments cost 2.4% plus 0.30 USD per successful transaction."
KEYS = "Each API key can open at most 25 simultaneous connections."
WEBHOOKS = "Failed webhook deliveries are retried 8 times over 24 hours."


def _trace(query: str, *chunks: tuple[str, str]):
    it = make_interaction(query=query, context=[c for _, c in chunks], answer="x")
    docs = tuple(
        d.model_copy(update={"id": cid}) for d, (cid, _) in zip(it.documents, chunks, strict=True)
    )
    return it.model_copy(update={"documents": docs})


def _filled(tmp_path, *traces):
    """A store whose observed corpus ``traces`` filled."""
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    corpus = ObservedCorpus(store)
    corpus.update(list(traces))
    return store, corpus


def _refunds_and_keys(tmp_path):
    """A store whose corpus two traces filled: refunds and fees, API keys and webhooks."""
    return _filled(
        tmp_path,
        _trace("How long do refunds take?", ("kb-refunds", REFUNDS), ("kb-fees", FEES)),
        _trace("API key limits?", ("kb-keys", KEYS), ("kb-hooks", WEBHOOKS)),
    )


def test_update_indexes_new_traces_once_and_counts_retrievals(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    corpus = ObservedCorpus(store)
    a = _trace("refunds?", ("kb-refunds", REFUNDS), ("kb-fees", FEES))
    b = _trace("fees?", ("kb-fees", FEES), ("kb-keys", KEYS))
    assert corpus.update([a]) == 2
    assert corpus.update([a]) == 0  # the same trace again: nothing new, nothing counted twice
    assert corpus.update([a, b]) == 1  # only kb-keys is new
    rows = dict(store.query("SELECT chunk_id, traces FROM corpus_chunks"))
    assert rows == {"kb-refunds": 1, "kb-fees": 2, "kb-keys": 1}
    store.close()


def test_a_chunk_other_traces_retrieved_is_found_for_a_question_that_missed_it(tmp_path):
    store, corpus = _refunds_and_keys(tmp_path)
    question = "How many days until a refund for a returned reader is paid?"
    hit = corpus.find_answer(question, {"kb-keys", "kb-hooks"}, threshold=0.6)
    assert hit is not None and hit.chunk_id == "kb-refunds" and hit.traces == 1
    assert "kb-refunds" in hit.evidence() and "14 days" in hit.window
    # a question nothing seen answers: no hit, however similar the topic
    assert corpus.find_answer("Is there a Tallyfox office in Madrid?", {"kb-keys"}, 0.6) is None
    # the chunk the trace itself retrieved is never its own "missed" chunk
    assert corpus.find_answer(question, {"kb-refunds"}, 0.6) is None
    store.close()


def test_a_translation_of_a_retrieved_chunk_is_not_a_miss(tmp_path):
    store, corpus = _filled(
        tmp_path,
        _trace("refunds?", ("kb-refunds-en", REFUNDS), ("kb-fees", FEES)),
        _trace("reembolsos?", ("kb-refunds-es", REFUNDS_ES), ("kb-keys", KEYS)),
    )
    question = "¿En cuántos días se paga el reembolso de un lector devuelto?"
    assert corpus.find_answer(question, {"kb-refunds-en"}, threshold=0.6) is None
    store.close()


def test_a_question_that_names_nothing_specific_has_no_missed_chunk(tmp_path):
    help_page = "For more details on refunds, call our help line; details of fees are online."
    store, corpus = _filled(
        tmp_path, _trace("Refund help?", ("kb-help", help_page), ("kb-fees", FEES))
    )
    # "details" and "know" are all it names: every page has details
    assert corpus.find_answer("What more details do I need to know?", {"kb-keys"}, 0.5) is None
    # the same page is found for a question that names what it is about
    hit = corpus.find_answer("Where do I get details on refunds?", {"kb-keys"}, 0.5)
    assert hit is not None and hit.chunk_id == "kb-help"
    store.close()


def test_a_follow_up_read_with_carried_words_needs_a_chunk_that_holds_its_own_terms(tmp_path):
    store, corpus = _refunds_and_keys(tmp_path)
    # "and what about webhooks there?" after a turn on refunds for returned card readers: the
    # carried words find the refunds chunk again, which says nothing about webhooks
    resolved = "And webhooks there? (refunds returned card readers paid original)"
    typed = "And webhooks there?"
    assert corpus.find_answer(resolved, {"kb-keys"}, 0.6) is not None
    assert corpus.find_answer(resolved, {"kb-keys"}, 0.6, typed=typed) is None
    # a follow-up whose own terms the chunk holds is still found
    own = "How long until the refund for the reader is paid there? (returned card)"
    hit = corpus.find_answer(own, {"kb-keys"}, 0.6, typed="How long until the refund is paid?")
    assert hit is not None and hit.chunk_id == "kb-refunds"
    store.close()


def test_where_an_unfaithful_answer_came_from_is_a_chunk_that_holds_it(tmp_path):
    # the retriever served the keys and webhooks pages for a refunds question; the answer
    # states what the refunds page says: that page is found as the answer's missed source
    old_policy = "Refunds for returned card readers were paid by bank transfer until 2019."
    store, corpus = _filled(
        tmp_path,
        _trace("How long do refunds take?", ("kb-refunds", REFUNDS), ("kb-fees", FEES)),
        _trace("Old refund policy?", ("kb-old", old_policy), ("kb-fees", FEES)),
        _trace("API key limits?", ("kb-keys", KEYS), ("kb-hooks", WEBHOOKS)),
    )
    judge = FaithfulnessJudge()
    question = "How are refunds for a returned card reader paid?"

    retrieved = {"kb-keys", "kb-hooks"}

    def source(answer: str):
        """The missed chunk the corpus names as the source of ``answer`` to ``question``."""
        it = make_interaction(query=question, context=[KEYS, WEBHOOKS], answer=answer)
        return corpus.find_answer(question, retrieved, 0.5, holds=partial(judge.holds_answer, it))

    hit = source("Refunds go to the original card within 14 days.")
    assert hit is not None and hit.chunk_id == "kb-refunds" and hit.holds_answer
    assert "holds what the answer says" in hit.evidence()
    hit = source("Refunds were paid by bank transfer until 2019.")
    assert hit is not None and hit.chunk_id == "kb-old"
    # an answer no chunk holds has no source, though chunks elsewhere answer the question
    assert source("Refunds are paid in store credit within 3 days.") is None
    assert corpus.find_answer(question, retrieved, 0.5) is not None
    store.close()
