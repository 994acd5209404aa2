"""Context relevance on short service-desk questions (issue 26): the answering chunk is found."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges.offline.context import chunk_evidence, question_terms
from ragsieve.evaluators.judges.offline.text import asked
from ragsieve.evaluators.judges.offline.text.asked import NEAR_WORD_MIN
from ragsieve.evaluators.judges.offline.text.question import expected_type, without_preamble
from ragsieve.evaluators.judges.offline.text.terms import TermIndex
from ragsieve.evaluators.judges.offline.text.text import sentences
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS

THRESHOLD = DEFAULT_THRESHOLDS["context_relevance"]

CASES = [
    (
        "¿Cuándo pasa la recogida de voluminosos?",
        "Recogida de muebles y enseres. El camión municipal retira muebles, colchones y"
        " electrodomésticos el primer martes de cada mes, a partir de las 20:00.",
        "El Punto Limpio acepta voluminosos, escombros y aceite usado. Es gratuito para los"
        " vecinos empadronados.",
    ),
    (
        "¿Qué hay que llevar para darse de alta en el padrón?",
        "Para inscribirse en el padrón municipal se debe presentar el DNI, NIE o pasaporte en"
        " vigor y el contrato de alquiler o la escritura de la vivienda.",
        "El padrón municipal es el registro administrativo donde constan los vecinos del"
        " municipio.",
    ),
    (
        "¿A qué hora abre el centro de salud?",
        "El centro de salud atiende de lunes a viernes de 8:00 a 20:00 y los sábados de 9:00 a"
        " 14:00.",
        "El centro de salud dispone de servicio de pediatría y enfermería.",
    ),
    (
        "What do I need to bring to register to vote?",
        "To register you must bring a photo ID, such as a driver license or passport, and a proof"
        " of address dated within the last three months.",
        "Voter registration lets residents take part in local elections.",
    ),
]


@pytest.mark.parametrize(("question", "answering", "topic_only"), CASES)
def test_the_answering_chunk_is_relevant_and_the_topic_alone_is_not(
    question: str, answering: str, topic_only: str
) -> None:
    ev = chunk_evidence(question, [answering, topic_only, "Las bibliotecas cierran en agosto."])
    assert ev[0].score >= THRESHOLD, ev[0]
    assert ev[1].score < THRESHOLD, ev[1]


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("¿A qué hora abre el registro?", "date"),
        ("What are the opening hours of the library?", "date"),
        ("¿Qué documentos hay que presentar?", "requirement"),
        ("What do I need to bring to the DMV?", "requirement"),
        ("¿Qué hay que llevar para el padrón?", "requirement"),
    ],
)
def test_service_questions_ask_for_a_time_or_a_requirement(question: str, kind: str) -> None:
    assert expected_type(question) == kind


def test_a_people_named_in_the_question_is_found_where_the_chunk_names_its_place() -> None:
    question = "Did the paper money change after the Chinese Revolution?"
    chunk = (
        "After the revolution the Communist Party of China gained control of the provinces, and"
        " the paper money was replaced by notes of the People's Bank of China."
    )
    [ev] = chunk_evidence(question, [chunk])
    assert ev.score >= THRESHOLD
    assert chunk_evidence(question.replace("Chinese", "Peruvian"), [chunk])[0].score < ev.score


def test_a_name_is_not_matched_by_the_encoders_nearest_word_in_another_language() -> None:
    # "Tonkin" is not "Poopó", nor "Gulf" "ríos": a lake in Bolivia does not say where the gulf is
    chunk = (
        "El lago Titicaca se encuentra en los Andes, en la frontera entre Perú y Bolivia. De este"
        " lago tectónico desembocan varios ríos, siendo el más importante el río Desaguadero, que"
        " luego desemboca en el lago Poopó. El lago Titicaca formaba, junto a la laguna de Arapa"
        " en Perú, un gran lago en el pasado."
    )
    assert chunk_evidence("Where is the Gulf of Tonkin?", [chunk])[0].score < THRESHOLD


@pytest.mark.parametrize(
    ("asked", "plain"),
    [
        ("Quick questiion: when does the pool open?", "when does the pool open?"),
        ("Do you know when the pool opens?", "when the pool opens?"),
        ("Quisiera saber: ¿cuándo abre la piscina?", "¿cuándo abre la piscina?"),
        ("¿Me puedes decir cuándo abre la piscina?", "cuándo abre la piscina?"),
        # a turn of a conversation opens with a reaction before it asks
        ("Oh you need an agent to book it?", "you need an agent to book it?"),
        ("Yes, what is the fee?", "what is the fee?"),
        ("Alright, and where do I send it?", "and where do I send it?"),
        ("Vale, ¿y dónde lo entrego?", "¿y dónde lo entrego?"),
        ("Ok, thanks. Do you know the fee?", "the fee?"),
    ],
)
def test_a_lead_in_asks_and_names_nothing(asked: str, plain: str) -> None:
    assert without_preamble(asked) == plain
    assert question_terms(asked) == question_terms(plain)


@pytest.mark.parametrize(
    "question",
    [
        "What do I need to know about the pool?",
        "Can I swim at the pool?",
        "Tell me",
        # a first word that names something: no pause, a content word after it
        "Great Barrier Reef size?",
        "Well water testing?",
        "Well-being programs: what do they cover?",
        "Cool down period for returns?",
        "Ok, thanks",
    ],
)
def test_a_question_that_is_not_led_in_is_kept(question: str) -> None:
    assert without_preamble(question) == question


def test_a_question_word_the_chunk_writes_in_other_words_is_found_at_a_discount(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    question = "What are good alternatives to eggs in baking?"
    chunk = "Commercial substitutes are sold for people who wish to avoid eggs."
    found = TermIndex(sentences(chunk)).find("alternatives", translate=True)
    assert found.found.startswith("substit") and found.strength >= NEAR_WORD_MIN
    [near] = chunk_evidence(question, [chunk])
    monkeypatch.setattr(asked, "NEAR_WORD_SHARE", 0.0)
    [exact_only] = chunk_evidence(question, [chunk])
    assert near.terms > exact_only.terms and near.score > exact_only.score


def test_a_name_is_never_found_as_a_near_word() -> None:
    question = "When does the Alhambra open?"
    chunk = "The Generalife gardens open at 8:30 every day."
    [ev] = chunk_evidence(question, [chunk])
    assert ev.score < THRESHOLD
