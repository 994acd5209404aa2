"""Two askings are one failure only when they ask the same thing: a high query cosine or the same
retrieved chunks do not make "how many days do I have to return it" and "when do I get the
money" one case (a new user's bike-rental and shop traffic); a re-wording still merges.

The flagged cases carry the offline context judge's real results (which chunks answer), and
growth runs on a real SQLite store with the real encoder.
"""

from __future__ import annotations

from golden_plant import candidate_askings as _candidates
from golden_plant import judged_failure as _failure

from ragsieve.collector.store import Store

SHOP = [
    ("returns#window", "You can return an item within 30 days of delivery for a full refund."),
    (
        "refunds#timing",
        "Refunds are paid to your card within 5 business days after the return arrives.",
    ),
]
PLANS = {
    "plans#pro": "The Pro plan costs 19 EUR per month and includes 90 minutes of free riding.",
    "plans#basic": "The Basic plan costs 9 EUR per month and includes 30 minutes of free riding.",
    "ebike#unlock": "Unlocking an e-bike costs 1 EUR on every plan.",
}


def test_questions_answered_by_different_chunks_stay_apart(store: Store) -> None:
    days = "How many days do I have to return an item?"  # the returns chunk answers it
    money = "How many days until the refund reaches my card?"  # the refunds chunk does
    got = _candidates(
        store,
        [
            _failure(1, days, SHOP, "You have 14 days."),
            _failure(2, money, SHOP[::-1], "Within 10 business days."),
        ],
    )
    assert got == [[days], [money]]


def test_two_plans_are_two_subjects_and_a_rewording_still_merges(store: Store) -> None:
    pro = "How much does the Pro plan cost per month?"
    basic = "How much does the Basic plan cost per month?"
    again = "What is the monthly price of the Pro plan?"
    three = list(PLANS.items())
    two = [(k, PLANS[k]) for k in ("plans#basic", "plans#pro")]
    got = _candidates(
        store,
        [
            _failure(1, pro, three, "The Pro plan costs 9 EUR per month."),
            _failure(2, basic, two, "The Basic plan costs 19 EUR per month."),
            _failure(3, again, three, "It is 9 EUR a month."),
        ],
    )
    assert got == [[basic], sorted([pro, again])]


def test_two_questions_no_language_is_read_from_are_not_held_to_the_same_language_rules() -> None:
    """ "Warsaw office hours?" / "Horario oficina Varsovia?" are both too short for a language:
    the answering-chunk rule, which holds only within one language, must not part them."""
    from ragsieve.jobs.golden.growth.signature import Signature, asks_apart

    def sig(query: str, answers: tuple[str, ...]) -> Signature:
        chunks = frozenset({"kb-1", "kb-2"})
        return Signature(query, query.lower(), "generation", chunks, None, frozenset(), "unknown",
                         answers)  # fmt: skip

    a, b = (
        sig("Warsaw office hours?", ("kb-1",)),
        sig("Horario oficina Varsovia?", ("kb-2", "kb-1")),
    )
    assert asks_apart(a, b, both=True) is None
    same = Signature("x", "x", "generation", frozenset(), None, frozenset(), "en", ("kb-1",))
    other = Signature("y", "y", "generation", frozenset(), None, frozenset(), "en", ("kb-2",))
    assert asks_apart(same, other, both=True) == "answered by different chunks (kb-1 / kb-2)"


def test_lower_case_subjects_in_the_same_frame_ask_apart() -> None:
    """The words that tell two askings apart are those that differ in the same frame, whatever
    their case; a synonym or a typo in that frame is the same asking."""
    from ragsieve.jobs.golden.growth.signature import Signature, asks_apart

    def sig(q: str) -> Signature:
        return Signature(q, q.lower(), "generation", frozenset({"kb-1"}), None, frozenset(), "en")

    pro, basic = sig("how much is the pro plan"), sig("how much is the basic plan")
    assert asks_apart(pro, basic) == "names different subjects (pro / basic)"
    assert asks_apart(sig("what is the monthly cost of the plan"), sig(
        "what is the monthly price of the plan")) is None  # fmt: skip
    assert asks_apart(sig("how long does esim activation take"), sig(
        "how long does esim actvation take")) is None  # fmt: skip
    # Spanish puts the word that names after its noun: "el plan pro"
    pro_es = Signature("¿cuánto cuesta el plan pro?", "x", "generation", frozenset({"kb-1"}),
                       None, frozenset(), "es")  # fmt: skip
    basic_es = Signature("¿cuánto cuesta el plan básico?", "y", "generation", frozenset({"kb-1"}),
                         None, frozenset(), "es")  # fmt: skip
    assert asks_apart(pro_es, basic_es) == "names different subjects (pro / basico)"


def test_two_plans_typed_in_lower_case_are_two_subjects(store: Store) -> None:
    # no judge said which chunk answers each: only the words can part them
    pro = "how much is the pro plan a month"
    basic = "how much is the basic plan a month"
    again = "whats the monthly price of the pro plan"
    three = list(PLANS.items())
    two = [(k, PLANS[k]) for k in ("plans#basic", "plans#pro")]
    got = _candidates(
        store,
        [
            _failure(1, pro, three, "It costs 9 EUR per month.", judged=False),
            _failure(2, basic, two, "It costs 19 EUR per month.", judged=False),
            _failure(3, again, three, "It is 9 EUR a month.", judged=False),
        ],
    )
    assert got == [[basic], sorted([pro, again])]


def test_a_near_word_before_the_same_head_names_another_one(store: Store) -> None:
    """ "monthly" / "annual" before "fee" name two fees (the encoder holds them as near as "cost"
    / "price"); "yearly" / "annual" there are one word to it, and merge."""
    fees = {
        "plans#pro": "The Pro plan costs 19 EUR per month or 190 EUR per year.",
        "plans#basic": "The Basic plan costs 9 EUR per month or 90 EUR per year.",
        "ebike#unlock": "Unlocking an e-bike costs 1 EUR on every plan.",
    }
    monthly = "what is the monthly fee of the pro plan"
    annual = "what is the annual fee of the pro plan"
    yearly = "what is the yearly fee of the pro plan"
    three = list(fees.items())
    two = [(k, fees[k]) for k in ("plans#basic", "plans#pro")]
    got = _candidates(
        store,
        [
            _failure(1, monthly, three, "It costs 29 EUR.", judged=False),
            _failure(2, annual, two, "It costs 250 EUR.", judged=False),
            _failure(3, yearly, three, "It is 240 EUR.", judged=False),
        ],
    )
    assert got == [sorted([annual, yearly]), [monthly]]
