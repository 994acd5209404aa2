"""Issue 26: a chunk that matches a question only by translated topic words is no missed answer,
and a correct abstention in Spanish passes like one in English."""

from __future__ import annotations

from test_corpus import FEES, KEYS, _trace
from test_flagging import TH, ctx, res

from ragsieve.collector.store import open_store
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.verdicts.corpus import ObservedCorpus
from ragsieve.jobs.verdicts.flagging import CorpusAnswer, decide

FUTBOL = (
    "El club juega cada temporada en el torneo regional de fútbol. Históricamente ha jugado"
    " varios torneos nacionales y ganó la liga de fútbol en 1998."
)
HORARIO = "El ayuntamiento abre de 9 a 14 los días laborables."
TOWN = (
    "The town hall opens from 9 to 14 on weekdays. Bulky waste is collected on the first"
    " Monday of each month."
)
BULKY = "Bulky waste is collected on the first Monday of each month in the Northern district."


def _corpus(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    corpus = ObservedCorpus(store)
    corpus.update(
        [
            _trace("fútbol?", ("es-futbol", FUTBOL), ("kb-fees", FEES)),
            _trace("horario?", ("es-horario", HORARIO), ("kb-keys", KEYS)),
            _trace("hours?", ("town", TOWN), ("bulky", BULKY)),
        ]
    )
    return store, corpus


def test_translated_topic_words_are_no_missed_answer(tmp_path):
    store, corpus = _corpus(tmp_path)
    question = "What does a perfect season in football mean?"
    # the trace was served English chunks: a Spanish chunk matching only by translation is
    # the topic, not the answer the retriever missed
    assert corpus.find_answer(question, {"town", "kb-keys"}, threshold=0.5) is None
    # served Spanish chunks too, this knowledge base answers English questions in Spanish
    hit = corpus.find_answer(question, {"es-horario", "kb-keys"}, threshold=0.5)
    assert hit is not None and hit.chunk_id == "es-futbol"
    store.close()


def test_a_missed_chunk_holds_the_names_the_question_asks_about(tmp_path):
    store, corpus = _corpus(tmp_path)
    asked = "When is bulky waste collected in the Southern district?"
    assert corpus.find_answer(asked, {"town", "kb-keys"}, threshold=0.5) is None
    hit = corpus.find_answer(asked.replace("Southern", "Northern"), {"town"}, threshold=0.5)
    assert hit is not None and hit.chunk_id == "bulky"
    store.close()


def test_a_courteous_spanish_abstention_is_a_correct_abstention() -> None:
    answer = "Lo siento, pero los documentos proporcionados no contienen esa información."
    it = make_interaction("¿Cuándo se fundó el club?", context=[HORARIO], answer=answer)
    # the faithfulness judge read "Lo siento" as a claim it could not support
    results = [
        res("faithfulness", "unfaithful", 0.0),
        res("answer_relevance", "irrelevant", 0.1),
        ctx(False),
    ]
    v = decide(it, results, TH, corpus=CorpusAnswer(None, 40))
    assert (v.outcome, v.abstained) == ("pass", True), v
    # a refusal followed by a claim is no abstention
    it2 = it.model_copy(update={"answer": answer + " El club se fundó en 1921."})
    assert decide(it2, results, TH, corpus=CorpusAnswer(None, 40)).outcome == "fail"
