"""Faithfulness: acronyms of lower-case terms, and a feature the context gives to one entity
only (issue 44, a new user's support bot: "SAML single sign-on is available on the Enterprise
plan only.")."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.text.choice import restrictions
from ragsieve.evaluators.testing import make_interaction

SSO = "SAML single sign-on is available on the Enterprise plan only."
SSO_ANY = "SAML single sign-on is available on the Enterprise plan."
SSO_ES = "El inicio de sesión único SAML está disponible únicamente en el plan Empresa."
SUPPORT = "Priority phone support is offered exclusively to Gold members."


async def faithfulness(question: str, context: str, answer: str):
    interaction = make_interaction(query=question, context=(context,), answer=answer)
    [result] = await get_judge("faithfulness").evaluate(interaction)
    return result


@pytest.mark.parametrize(
    ("context", "question", "answer"),
    [
        # the context writes the words, the question or the answer the acronym
        (
            SSO,
            "Does the Pro plan include SSO?",
            "No, SSO is available on the Enterprise plan only.",
        ),
        (
            "Multi-factor authentication is required for every admin account.",
            "Do admins need anything to sign in?",
            "Yes, MFA is required for every admin account.",
        ),
        (
            "Refund rules are listed on the frequently asked questions page.",
            "Where are the refund rules?",
            "They are on the FAQ page.",
        ),
        (
            "The application programming interface is rate limited to 100 calls a minute.",
            "Is there a limit?",
            "Yes, the API is rate limited to 100 calls a minute.",
        ),
        # ... and the reverse: the context writes the acronym, the answer the words
        (
            "Admins must turn on MFA before inviting users.",
            "What must admins do before inviting users?",
            "They must turn on multi-factor authentication.",
        ),
        (
            "Every API key expires after 90 days.",
            "When do keys expire?",
            "Application programming interface keys expire after 90 days.",
        ),
    ],
)
async def test_an_acronym_of_lower_case_words_is_found_both_ways(context, question, answer):
    result = await faithfulness(question, context, answer)
    assert result.label == "faithful", result.explanation


async def test_a_made_up_acronym_is_still_not_found():
    result = await faithfulness(
        "Which plan has single sign-on?",
        SSO,
        "SAML SSO and XQR are available on the Enterprise plan only.",
    )
    assert result.label == "unfaithful", result.explanation
    assert "xqr not found in the context" in result.explanation


async def test_the_new_users_denial_passes():
    result = await faithfulness(
        "Does the Pro plan include SSO?",
        SSO,
        "No. SAML single sign-on is available on the Enterprise plan only.",
    )
    assert result.label == "faithful", result.explanation


@pytest.mark.parametrize(
    ("context", "question", "answer", "named"),
    [
        (
            SSO,
            "Is SAML single sign-on available on the Starter plan?",
            "Yes, SAML single sign-on is available on the Starter plan.",
            "the context gives it to Enterprise plan only, the claim to Starter",
        ),
        (
            SSO,
            "Is SSO included in Pro?",
            "Yes, SAML single sign-on is included in the Pro plan.",
            "the context gives it to Enterprise plan only, the claim to Pro",
        ),
        (
            SSO,
            "Is SAML single sign-on available on the Starter plan?",
            "Yes.",
            "the context gives it to Enterprise plan only, the claim to Starter",
        ),
        (
            SUPPORT,
            "Do Silver members get priority phone support?",
            "Yes, Silver members get priority phone support.",
            "the context gives it to Gold members only, the claim to Silver",
        ),
        (
            SSO_ES,
            "¿Está el inicio de sesión único disponible en el plan Básico?",
            "Sí, el inicio de sesión único SAML está disponible en el plan Básico.",
            "the context gives it to plan Empresa only, the claim to Básico",
        ),
    ],
)
async def test_a_yes_giving_a_restricted_feature_to_another_entity_is_flagged(
    context, question, answer, named
):
    result = await faithfulness(question, context, answer)
    assert result.label == "unfaithful", result.explanation
    assert named in result.explanation
    assert result.metadata["claims"][0]["contradiction"] is True


@pytest.mark.parametrize(
    ("context", "question", "answer"),
    [
        # the same entity the context names
        (
            SSO,
            "Is SSO included in Enterprise?",
            "Yes, SAML single sign-on is included in the Enterprise plan.",
        ),
        (
            SSO_ES,
            "¿Está el inicio de sesión único disponible en el plan Empresa?",
            "Sí, el inicio de sesión único SAML está disponible en el plan Empresa.",
        ),
        (
            SUPPORT,
            "Do Gold members get priority phone support?",
            "Yes, Gold members get priority phone support.",
        ),
        # another entity, denied
        (
            SSO,
            "Is SAML single sign-on available on the Starter plan?",
            "No, SAML single sign-on is not available on the Starter plan.",
        ),
    ],
)
async def test_the_restricted_entity_or_a_denial_passes(context, question, answer):
    result = await faithfulness(question, context, answer)
    assert result.label == "faithful", result.explanation


async def test_without_a_restriction_nothing_changes():
    question = "Is SAML single sign-on available on the Starter plan?"
    answer = "Yes, SAML single sign-on is available on the Starter plan."
    result = await faithfulness(question, SSO_ANY, answer)
    assert "the context gives it to" not in result.explanation
    assert not result.metadata["claims"][0].get("contradiction")


@pytest.mark.parametrize(
    ("sentence", "written"),
    [
        (SSO, "Enterprise plan"),
        (SUPPORT, "Gold members"),
        (SSO_ES, "plan Empresa"),
        ("Only the Business plan includes audit logs.", "Business plan"),
        ("The service runs only in Spain.", "Spain"),
        ("Refunds are issued solely to the original card holder.", None),
        ("Only 5 users can join a Starter workspace.", None),
    ],
)
def test_restrictions_name_the_entity_as_written(sentence, written):
    found = restrictions(sentence)
    assert [r.written for r in found] == ([written] if written else [])


async def test_another_feature_of_the_other_entity_passes():
    context = f"{SSO} The Starter plan includes 5 GB of storage."
    result = await faithfulness(
        "What does the Starter plan include?", context, "The Starter plan includes 5 GB of storage."
    )
    assert result.label == "faithful", result.explanation
    assert not result.metadata["claims"][0].get("contradiction")
