"""The stemmer every offline judge reads words through: short words meet their inflections."""

from __future__ import annotations

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.text.text import stem
from ragsieve.evaluators.testing import make_interaction

# (inflected, dictionary form): plural and third-person endings in English and Spanish,
# including words of four letters or fewer and roots that end in a sibilant
MEET = [
    ("adds", "add"), ("days", "day"), ("fees", "fee"), ("fans", "fan"), ("apps", "app"),
    ("días", "día"), ("meses", "mes"), ("planes", "plan"), ("buses", "bus"), ("taxes", "tax"),
    ("cases", "case"), ("houses", "house"), ("sizes", "size"), ("clases", "clase"),
    ("releases", "release"), ("released", "release"),
]  # fmt: skip
# a final "s" that belongs to the root, or that would leave fewer than three letters
WHOLE = ["bus", "plus", "gas", "this", "yes", "dos", "mes", "less", "thus", "axis", "us"]


def test_short_inflections_meet_and_root_endings_stay() -> None:
    met = {(a, b): (stem(a), stem(b)) for a, b in MEET}
    assert {pair for pair, (x, y) in met.items() if x != y} == set()
    assert {w for w in WHOLE if stem(w) != w} == set()
    # the endings are stripped, not the words merged: the plural of one word is not another's
    assert len({stem(w) for w in ("bus", "buses", "plus", "gas", "gases")}) == 3


async def test_new_users_plus_adds_chunk_is_relevant_to_what_plus_adds() -> None:
    price = "The Plus policy costs 12 EUR a month and can be cancelled within 14 days."
    adds = "Plus adds theft cover up to 10,000 EUR to the policy."
    query = "What does the Plus policy add to Basic?"
    judge = get_judge("context_relevance")
    [r] = await judge.evaluate(make_interaction(query=query, context=(price, adds)))
    assert [c["relevant"] for c in r.metadata["chunks"]] == [False, True]
    assert r.label == "relevant"
