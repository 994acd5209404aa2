"""A failure category is named by correctly spelt member words (issue 42: the demo showed a
category called after the typo ``aplciación``, typed in two of its questions)."""

from __future__ import annotations

from ragsieve.evaluators.judges.offline.text.typos import misspelt, misspelt_among
from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden.growth.categories import name_terms
from ragsieve.jobs.golden.growth.repo import Candidate


def _c(i: int, query: str) -> Candidate:
    return Candidate(
        id=f"q{i}", status="candidate", norm_query=query.lower(), body={"query": query}
    )


def test_a_typo_typed_twice_does_not_name_the_category() -> None:
    groups = {
        "keys": [
            _c(1, "¿Puedo usar mi clave secreta en una aplciación móvil?"),
            _c(2, "¿Sirve la clave secreta en la aplciación del teléfono?"),
            _c(3, "¿Mi clave secreta funciona en una aplicación?"),
        ],
        "returns": [_c(4, "¿Cómo devuelvo un lector dañado?"), _c(5, "¿Devuelvo el lector roto?")],
        "reset": [_c(6, "How do I reset my password?"), _c(7, "I forgot my password, reset it")],
    }
    named = name_terms(groups, 3)
    assert named["keys"] == (["secreta", "clave", "aplicación"], "es")
    assert all("aplciación" not in terms for terms, _ in named.values())


def test_a_misspelt_word_still_names_a_category_that_has_nothing_else() -> None:
    named = name_terms({"only": [_c(1, "aplciación?"), _c(2, "la aplciación")]}, 3)
    assert named["only"][0] == ["aplciación"]


def test_misspelt_means_one_slip_from_a_word_not_unknown() -> None:
    for typo in ("aplciación", "reemplazso", "clve", "psos", "aply"):
        assert misspelt(normalize_text(typo)), typo
    for word in ("aplicación", "password", "devuelvo", "tallyfox", "webhook", "kubernetes"):
        assert not misspelt(normalize_text(word)), word


def test_a_slip_of_a_name_typed_more_often_does_not_name_the_category() -> None:
    groups = {
        "stack": [
            _c(1, "¿En qué lenguaje está escrito el panel de Tlalyfox?"),
            _c(2, "¿Qué lenguaje usa Tlalyfox en el panel?"),
        ],
        "hiring": [
            _c(3, "¿Tallyfox está contratando en Madrid?"),
            _c(4, "¿Contrata Tallyfox en Madrid?"),
            _c(5, "¿Busca Tallyfox ingenieros en Madrid?"),
        ],
    }
    named = name_terms(groups, 3)
    assert "tlalyfox" not in [t.lower() for t in named["stack"][0]]
    assert "tallyfox" in [t.lower() for t in named["hiring"][0]]  # the name itself stays
    assert misspelt_among("tlalyfox", {"tallyfox": 3, "tlalyfox": 2})
    assert not misspelt_among("tallyfox", {"tallyfox": 3, "tlalyfox": 2})


def test_question_words_written_with_accents_and_words_every_category_shares_name_none() -> None:
    """A new user's category was called "cuánto / tarda / ondalinea": an accented question word
    (the stop list was compared unfolded) and the product name every question holds."""
    groups = {
        "esim": [
            _c(1, "¿Cuánto tarda en activarse la eSIM de Ondalinea?"),
            _c(2, "¿Cuánto tarda la activación de la eSIM en Ondalinea?"),
        ],
        "roaming": [
            _c(3, "¿Cuánto cuesta el roaming de Ondalinea en Estados Unidos?"),
            _c(4, "¿Ondalinea cobra el roaming en Suiza?"),
        ],
    }
    named = {cat: [t.lower() for t in terms] for cat, (terms, _) in name_terms(groups, 3).items()}
    assert all("cuánto" not in t and "ondalinea" not in t for t in named.values()), named
    assert "esim" in named["esim"] and "roaming" in named["roaming"], named


def test_a_recorded_name_the_name_rules_now_refuse_is_replaced() -> None:
    from ragsieve.jobs.golden.growth.categories import kept_names

    members = [
        _c(1, "¿Cuánto tarda en activarse la eSIM de Ondalinea?"),
        _c(2, "¿Cuánto tarda la activación de la eSIM?"),
    ]
    named = {"c1": (["esim", "tarda"], "es")}
    kept = kept_names({"c1": members}, named, {"c1": ["cuánto", "tarda", "ondalinea"]})
    assert kept["c1"] == named["c1"]
    # a name still made of name words of the failures is kept from run to run
    assert kept_names({"c1": members}, named, {"c1": ["tarda", "esim"]})["c1"][0] == [
        "tarda",
        "esim",
    ]
