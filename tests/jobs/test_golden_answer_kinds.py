"""Two askings that expect different kinds of answer (a count, a duration, a price, a date, a
yes or no) ask apart whatever chunks they share, in English and Spanish: a new user's "How many
times does Quillstack retry a failed webhook delivery?" and "How long does Quillstack keep
retrying a failed webhook?" became one candidate (cosine 0.79, the same two chunks), and so did
the Team plan's price per seat and its seats. A re-wording whose kind is the same, or cannot be
read ("And on Enterprise?"), still merges as before.

Growth runs on a real SQLite store with the real encoder and the real offline context judge.
"""

from __future__ import annotations

import pytest
from golden_plant import candidate_askings as _candidates
from golden_plant import judged_failure as _failure

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges.offline.text.asked import answer_kind, kinds_apart

WEBHOOKS = [
    (
        "webhooks#setup",
        "Quillstack signs every webhook with an HMAC-SHA256 signature. A failed webhook delivery"
        " is retried up to 5 times with exponential backoff over 24 hours.",
    ),
    ("errors#5xx", "A 5xx response means Quillstack had an internal error; retry the request."),
]
PLANS = [
    (
        "plans#billing",
        "The Team plan costs $20 per seat per month and includes up to 25 seats. Enterprise is"
        " invoiced annually.",
    ),
    ("plans#overview", "Quillstack has three plans: Free, Team and Enterprise."),
]
LOGS = [
    ("plans#limits", "Request logs are kept 7 days on Free, 30 days on Team, 365 on Enterprise."),
    ("plans#overview", "Quillstack has three plans: Free, Team and Enterprise."),
]


def test_a_count_and_a_duration_on_the_same_chunks_are_two_candidates(store: Store) -> None:
    times = "How many times does Quillstack retry a failed webhook delivery?"
    veces = "¿Cuántas veces reintenta Quillstack un webhook que falla?"
    how_long = "How long does Quillstack keep retrying a failed webhook?"
    got = _candidates(
        store,
        [
            _failure(1, times, WEBHOOKS, "Quillstack retries a failed delivery up to 3 times."),
            _failure(2, how_long, WEBHOOKS, "It keeps retrying for up to 72 hours."),
            _failure(3, veces, WEBHOOKS, "Quillstack lo reintenta hasta 3 veces."),
        ],
    )
    assert got == [[how_long], sorted([times, veces])]


def test_a_price_and_a_count_of_one_plan_are_two_candidates(store: Store) -> None:
    price = "How much does the Team plan cost per seat?"
    seats = "How many seats are included in the Team plan?"
    got = _candidates(
        store,
        [
            _failure(1, price, PLANS, "The Team plan costs $49 per seat per month."),
            _failure(2, seats, PLANS, "The Team plan includes up to 10 seats."),
        ],
    )
    assert got == sorted([[price], [seats]])


def test_a_duration_asked_as_a_count_of_days_is_still_one_candidate(store: Store) -> None:
    """A count of time units is a duration: "how many days" and "how long" are one asking."""
    days = "How many days are request logs kept on the Enterprise plan?"
    how_long = "How long are request logs kept on the Enterprise plan?"
    got = _candidates(
        store,
        [
            _failure(1, days, LOGS, "Enterprise keeps request logs for 90 days."),
            _failure(2, how_long, LOGS, "Request logs are kept for 90 days on Enterprise."),
        ],
    )
    assert got == [sorted([days, how_long])]


def test_what_the_kind_of_answer_is_read_from_and_when_it_is_not() -> None:
    assert kinds_apart("¿Cuánto cuesta el plan Team?", "¿Cuántos asientos incluye el plan Team?")
    assert kinds_apart("Does Team include SSO?", "How much does SSO cost on Team?")
    # a follow-up with no verb, an indirect question, a quantity read no finer: nothing to part
    assert answer_kind("And on Enterprise?") is None
    assert answer_kind("Can you tell me how many seats Team has?") == "count"
    assert kinds_apart("What is the price of the Pro plan?", "how much is the pro plan") is None
    # a delay answers "when?" as well as "how long?"
    assert kinds_apart("When will my refund arrive?", "How long until my refund arrives?") is None


@pytest.mark.parametrize(
    ("a", "b"),
    [  # rewordings an independent review found told apart: a duration is read before a price,
        # and a count of time or length units, however qualified, is a duration
        ("How long does the fee waiver last?", "When does the fee waiver end?"),
        ("¿Cuánto dura la tarifa de bienvenida?", "¿Cuándo termina la tarifa de bienvenida?"),
        ("How many business days does shipping take?", "How long does shipping take?"),
        ("How many trial days do I get?", "How many days is the free trial?"),
        ("How many metres is the charging cable?", "How long is the charging cable?"),
        ("How many mins does the wash take?", "How long does the wash take?"),
    ],
)
def test_one_duration_asked_in_other_words_is_one_kind(a: str, b: str) -> None:
    assert kinds_apart(a, b) is None, (answer_kind(a), answer_kind(b))
    assert answer_kind("How many messages can I send?") == "count"  # not "mes", a month
