"""Faithfulness on short replies (issue 44): one or two sentences that add a fact the knowledge
lacks, or deny what it states, are caught; a short grounded reply passes."""

from __future__ import annotations

import pytest
from judged import faithfulness

from ragsieve.evaluators.judges.offline.claims import is_abstention, parse_answer

PLAN = (
    "The Lite plan includes 2 GB of mobile data per month. Usage above the data limit is"
    " billed at $0.10 per GB. Calls within the country are free.",
)
STORE = (
    "Our store on Main Street is open from 9 am to 9 pm on weekdays and from 10 am to 6 pm on"
    " weekends. Returns are accepted within 30 days with a receipt.",
)


async def test_a_short_denial_against_the_knowledge_is_caught_not_read_as_abstention():
    answer = "No, there is no data limit."
    assert not is_abstention(answer)
    assert parse_answer(answer).claims == [answer]
    r = await faithfulness("Is there a data limit on the Lite plan?", PLAN, answer)
    assert r.label == "unfaithful"
    assert "denies what the context states" in r.explanation
    # the grounded short reply passes
    ok = await faithfulness(
        "Is there a data limit on the Lite plan?", PLAN, "Yes, the Lite plan includes 2 GB of data."
    )
    assert ok.label == "faithful", ok.explanation


async def test_a_reply_led_by_no_that_restates_the_rule_is_not_a_denial():
    """The leading "No," answers the question; the clause after it restates the context. A
    condition ("si no" = otherwise) in the context is not a denial either."""
    rule = ("Riders must be at least 16 years old; child seats are not allowed on the bikes.",)
    r = await faithfulness("Can my 14-year-old ride?", rule, "No, riders must be at least 16.")
    assert r.label == "faithful", r.explanation
    regla = ("Para usar el servicio hay que tener al menos 16 años; no se permiten sillas.",)
    r = await faithfulness("¿Puede usarla mi hija de 14 años?", regla, "No, hay que tener 16 años.")
    assert r.label == "faithful", r.explanation
    robo = ("El robo de una bici se comunica en 24 horas; si no, se cobran 450 euros.",)
    r = await faithfulness("¿Qué pasa si se comunica tarde el robo?", robo, "Se cobran 450 euros.")
    assert r.label == "faithful", r.explanation
    # the clause itself negated against the context is still a denial
    r = await faithfulness("Can my 14-year-old ride?", rule, "Yes, riders need not be 16.")
    assert r.label == "unfaithful", r.explanation


def test_saying_what_the_sources_lack_is_still_an_abstention():
    assert is_abstention("There is no information about the data limit.")
    assert is_abstention("There is no data on that.")


@pytest.mark.parametrize(
    "answer",
    [  # a help desk's words for its sources, as a new user's assistant wrote them
        "I don't know; the documentation I have doesn't mention office locations.",
        "The documentation doesn't mention a student discount.",
        "I don't know; the documentation doesn't say.",
        "The knowledge base I have does not cover gift cards.",
        "No lo sé; la documentación no menciona oficinas.",
    ],
)
async def test_naming_the_documentation_that_lacks_the_answer_is_an_abstention(answer):
    r = await faithfulness("Do you have an office in Lisbon?", STORE, answer)
    assert r.label == "abstained", r.explanation


@pytest.mark.parametrize(
    "denial",
    [  # what a product's documentation, FAQ or data holds is a claim about the product
        "No, the documentation does not include a printed manual.",
        "Our docs do not include Python 2 support.",
        "The FAQ doesn't include weekends.",
        "The knowledge base does not contain articles older than 2020.",
        "The documents we received do not include your signature.",
        "The documents we have do not include your signature.",  # "we": the business speaking
        "Your usage data does not indicate any overage this month.",
        "The information does not indicate a charge.",
        "La tarifa de datos no incluye roaming.",
        "The data plan does not include roaming.",
        "Mobile data does not include roaming.",
    ],
)
def test_a_denial_about_a_thing_named_like_a_source_is_a_claim(denial):
    assert not is_abstention(denial)


@pytest.mark.parametrize(
    "decline",
    [
        "The documentation that I have does not mention it.",
        "La documentación que tengo no menciona oficinas.",
        "The passages do not contain the answer.",
        "The documents do not provide information about the fee.",
        "The documentation we have does not cover gift cards.",
        "The context does not indicate the year.",
        "La documentación no contiene la respuesta.",
        "La documentación no incluye información sobre reembolsos.",
        "La base de conocimientos que tenemos no incluye tarjetas regalo.",
    ],
)
def test_the_sources_named_as_the_assistants_or_lacking_the_answer_decline(decline):
    assert is_abstention(decline)


async def test_anytime_answers_a_when_and_is_courtesy_after_thanks():
    for asked in ("When can I call?", "How soon can I call?"):
        r = await faithfulness(asked, STORE, "Anytime.")
        assert r.label == "unfaithful", r.explanation
    for thanks, reply in [
        ("Thanks, that helps!", "Anytime!"),
        ("Thanks, that helps!", "Anytime! Let me know if you need anything else."),
        ("¡Gracias!", "¡Cuando quieras!"),
    ]:
        r = await faithfulness(thanks, STORE, reply)
        assert r.label == "skipped", (reply, r.explanation)


async def test_a_clause_joined_by_and_is_a_claim_of_its_own():
    answer = (
        "We are open from 9 am to 9 pm on weekdays, and customers get free parking in our garage."
    )
    parsed = parse_answer(answer)
    assert len(parsed.claims) == 2
    r = await faithfulness("When are you open?", STORE, answer)
    weak = [c for c in r.metadata["claims"] if not c["supported"]]
    assert [c["claim"] for c in weak] == ["customers get free parking in our garage."]
    assert "parking" in weak[0]["reason"]


async def test_a_short_reply_adding_a_fact_the_knowledge_lacks_is_caught():
    r = await faithfulness(
        "When are you open?",
        STORE,
        "We are open from 9 am to 9 pm on weekdays, and customers get free parking in our garage.",
    )
    assert r.label == "unfaithful", r.explanation
    ok = await faithfulness(
        "When are you open?", STORE, "We are open from 9 am to 9 pm on weekdays."
    )
    assert ok.label == "faithful", ok.explanation


async def test_a_decline_that_restates_the_question_is_an_abstention():
    q = (
        "Do common stocks and preferred stocks differ in the percentage of the company per unit"
        " they represent?"
    )
    answer = (
        "I do not have specific information on whether common stocks and preferred stocks"
        " differ in the percentage of the company they represent per unit."
    )
    assert not is_abstention(answer)  # without the question: many words besides the phrase
    assert is_abstention(answer, q)
    r = await faithfulness(q, ("Preferred stocks usually pay higher dividends.",), answer)
    assert r.label == "abstained"
    # a decline that adds a fact of its own is still a claim
    added = "I do not know, but the Starter plan allows 600 requests per minute and free parking."
    parsed = parse_answer(added, q)
    assert [c.lower() for c in parsed.claims] == [
        "the starter plan allows 600 requests per minute and free parking."
    ]


SLOW_COOKER = (
    "Place the chicken breasts in the slow cooker on top of the vegetables. Cook on low for"
    " 6 - 8 hours or until done. You can cook it for 4 hours on high if you are pinched for"
    " time.",
)
TENDERS = "How long does it take to make chicken tenders in a crock pot?"


async def test_a_long_answer_restating_what_was_asked_is_not_a_fact_from_elsewhere():
    answer = (
        "Cook the chicken on low for 6 - 8 hours. You can cook it for 4 hours on high if you"
        " are pinched for time. The same method can be used for chicken tenders."
    )
    r = await faithfulness(TENDERS, SLOW_COOKER, answer)
    last = r.metadata["claims"][-1]
    assert last["claim"] == "The same method can be used for chicken tenders."
    assert not last.get("nothing_near"), last
    assert r.label != "unfaithful", r.explanation


async def test_a_new_fact_or_a_short_reply_with_nothing_near_is_still_caught():
    new_fact = "Chicken tenders made in a crock pot need a marinade first."
    short = await faithfulness(TENDERS, SLOW_COOKER, new_fact)
    assert short.metadata["claims"][0].get("nothing_near")
    assert short.label == "unfaithful"
    long = await faithfulness(
        TENDERS,
        SLOW_COOKER,
        f"Cook the chicken on low for 6 - 8 hours. You can cook it for 4 hours on high. {new_fact}",
    )
    assert long.metadata["claims"][-1].get("nothing_near")
    assert long.label == "unfaithful"


BIKES = (
    "PedalGo partner API keys start with the prefix pgk_ and are shown only once, when the key"
    " is created. Bikes can be parked in any green zone.",
)


@pytest.mark.parametrize(
    ("question", "reply", "label"),
    [  # a support bot's closings state nothing to check (found by a new user)
        (
            "Can I take a bike on the train?",
            "Sorry, I don't have any information about taking bikes on trains."
            " Please contact PedalGo support.",
            "abstained",
        ),
        (
            "¿Puedo subirla al tren?",
            "No tengo información sobre eso. Por favor, contacta con el soporte de PedalGo.",
            "abstained",
        ),
        (  # "you can ask / consult our team", as Spanish help desks close (a new user's)
            "¿Tenéis tiendas en Valencia?",
            "Lo siento, no tengo información sobre tiendas en Valencia. Puedes consultar con"
            " nuestro equipo de atención al cliente.",
            "abstained",
        ),
        (
            "¿Puedo subirla al tren?",
            "No tengo información sobre eso. Llama a atención al cliente.",
            "abstained",
        ),
        ("Thanks!", "You're welcome! Happy riding.", "skipped"),
        ("Thanks!", "You're welcome! Enjoy your ride!", "skipped"),
        ("Where can I park?", "You can park in any green zone. Have a great ride!", "faithful"),
        # a referral that gives something to check is a claim
        (
            "Can I take a bike on the train?",
            "Please contact PedalGo support at 555-0100.",
            "unfaithful",
        ),
        (
            "¿Puedo subirla al tren?",
            "Puedes consultar con nuestro equipo en el 555-0100.",
            "unfaithful",
        ),
        # the same referral in English; "call" / "llama" send to the help desk only by name
        (
            "Can I take a bike on the train?",
            "I don't have information about that. Call customer service.",
            "abstained",
        ),
        (
            "Can I take a bike on the train?",
            "I don't have information about that. You can check with our customer service team.",
            "abstained",
        ),
        (
            "¿Puedo subirla al tren?",
            "No tengo información sobre eso. Puedes consultar con nuestros agentes.",
            "abstained",
        ),
        ("¿Qué hago si tengo un accidente?", "Llama al equipo de emergencias.", "unfaithful"),
        ("¿Qué hago si tengo un accidente?", "Puedes llamar al equipo de seguros.", "unfaithful"),
        ("What do I do after an accident?", "Call the emergency team.", "unfaithful"),
        ("What do I do after an accident?", "Contact the emergency team.", "unfaithful"),
        # a team of the assistant's own is its help desk, in either language and with any verb
        (
            "Where can I park?",
            "You can park in any green zone. Puedes contactar con nuestro equipo de ventas.",
            "faithful",
        ),
        (
            "Where can I park?",
            "You can park in any green zone. You can contact our sales team.",
            "faithful",
        ),
        # a recommendation to ask the company's sales or billing team closes a refusal as GPT-4o
        # writes it, and "no encuentro información" declines (a second new user's docs bot)
        (
            "Can I take a bike on the train?",
            "I'm sorry, but I couldn't find any information about bikes on trains in the PedalGo"
            " documentation. I'd recommend contacting PedalGo's sales team to ask.",
            "abstained",
        ),
        (
            "Can I take a bike on the train?",
            "The documentation doesn't mention trains. I would suggest calling the billing"
            " department.",
            "abstained",
        ),
        (
            "¿Puedo subirla al tren?",
            "Lo siento, no encuentro información sobre trenes en la documentación disponible."
            " Te recomiendo consultar con el soporte de PedalGo.",
            "abstained",
        ),
        (
            "¿Puedo subirla al tren?",
            "No encontré información sobre eso. Le sugiero contactar al equipo de ventas para"
            " confirmarlo.",
            "abstained",
        ),
        (
            "Can I take a bike on the train?",
            "I don't have information about trains. You may want to reach out to PedalGo's sales"
            " team for group options.",
            "abstained",
        ),
        # a referral that is the whole answer is what the user was told to do: it is checked
        ("Can I take a bike on the train?", "Please contact the billing department.", "unfaithful"),
        ("¿Puedo subirla al tren?", "Por favor, contacta con el soporte de PedalGo.", "unfaithful"),
        # what one cannot find that is not information is a claim; so is a team that is no desk
        ("¿Puedo subirla al tren?", "No encuentro la bici en el tren.", "unfaithful"),
        ("What do I do after an accident?", "I'd recommend calling the rescue team.", "unfaithful"),
    ],
)
async def test_a_closing_wish_or_referral_is_no_claim(question, reply, label):
    r = await faithfulness(question, BIKES, reply)
    assert r.label == label, r.explanation


async def test_an_identifier_ending_in_an_underscore_is_its_own_word_not_emphasis():
    copied = BIKES[0].split(" Bikes")[0]
    r = await faithfulness("What prefix do partner API keys have?", BIKES, copied)
    assert r.label == "faithful", r.explanation
    assert parse_answer("Use *only* the _test_ keys.").claims == ["Use only the test keys."]


async def test_a_contracted_negation_is_a_negation():
    """A contracted negation ("isn't", "doesn't", "can't", "won't") negates as "not" does: a
    short reply that denies what the context states with one is caught, and one that restates a
    contracted denial passes."""
    free = ("Calls within the country are free on the Lite plan.",)
    r = await faithfulness(
        "Are calls within the country free?", free, "Calls within the country aren't free."
    )
    assert r.label == "unfaithful", r.explanation
    assert "negation differs" in r.explanation
    r = await faithfulness(
        "Are calls within the country free?", free, "Calls within the country are free."
    )
    assert r.label == "faithful", r.explanation
    no_roaming = ("The Lite plan doesn't include roaming outside the country.",)
    r = await faithfulness(
        "Does the Lite plan include roaming?", no_roaming, "The Lite plan does not include roaming."
    )
    assert r.label == "faithful", r.explanation
    r = await faithfulness(
        "Does the Lite plan include roaming?",
        no_roaming,
        "The Lite plan includes roaming outside the country.",
    )
    assert r.label == "unfaithful", r.explanation


async def test_negation_is_compared_clause_with_clause():
    """A negation in another clause of the context sentence is about something else: a claim
    restating the clause it shares its words with is not a denial ("Ideally 20 %, because then
    you don't pay insurance" states the 20 %); the clause it restates negated still is."""
    down = ("A 20 percent down payment is usual, so you do not pay insurance.",)
    q = "What is a usual down payment?"
    r = await faithfulness(q, down, "A 20 percent down payment is usual.")
    assert r.label == "faithful", r.explanation
    r = await faithfulness(q, down, "A 20 percent down payment is not usual.")
    assert r.label != "faithful", r.explanation


@pytest.mark.parametrize(
    ("context", "answer", "label"),
    [
        (
            "Los socios tienen un descuento del 15 % en las clases.",
            "Los socios tienen un 15 por ciento de descuento en las clases.",
            "faithful",
        ),
        (
            "Members get a 15% discount on classes.",
            "Members get 15 per cent off classes.",
            "faithful",
        ),
        (
            "Los socios tienen un descuento del 15 % en las clases.",
            "Los socios tienen un 20 por ciento de descuento en las clases.",
            "unfaithful",
        ),
    ],
)
async def test_per_cent_in_words_is_the_percent_sign(context, answer, label):
    r = await faithfulness("¿Qué descuento tienen los socios?", (context,), answer)
    assert r.label == label, r.explanation
