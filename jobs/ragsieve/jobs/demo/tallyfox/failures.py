"""Planted failures of the demo app: what each kind does to a clean answer, and its expected root cause."""

# ruff: noqa: E501  (the banks of example sentences below are data)
from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

from ragsieve.jobs.demo.tallyfox.kb import Chunk, KnowledgeBase

# kind -> the root cause a correct job should name
ROOT_CAUSE: dict[str, str] = {
    "retrieval_miss": "retrieval",
    "wrong_chunk": "generation",
    "changed_numbers": "generation",
    "unsupported_claim": "generation",
    "off_topic": "generation",
    "missing_abstention": "no_answer_expected",
}
# share of each kind among planted queries
WEIGHTS: dict[str, float] = {
    "retrieval_miss": 0.20,
    "wrong_chunk": 0.15,
    "changed_numbers": 0.20,
    "unsupported_claim": 0.15,
    "off_topic": 0.10,
    "missing_abstention": 0.20,
}
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")

# Claims no KB chunk supports, by topic and language (appended to a correct answer).
_UNSUPPORTED: dict[str, dict[str, tuple[str, ...]]] = {
    "api_limits": {
        "en": (
            "Enterprise contracts also include a guaranteed burst capacity of 9000 requests per second.",
            "Requests sent through the GraphQL gateway are exempt from throttling during holiday seasons.",
        ),
        "es": (
            "Los contratos Enterprise incluyen además una capacidad de ráfaga garantizada de 9000 solicitudes por segundo.",
            "Las solicitudes enviadas por la pasarela GraphQL quedan exentas de limitación en temporada navideña.",
        ),
    },
    "webhooks": {
        "en": (
            "Premium subscribers can also receive events over a dedicated Kafka topic with 99.99% delivery guarantees.",
            "Webhook payloads are additionally encrypted with PGP for customers in regulated industries.",
        ),
        "es": (
            "Los suscriptores Premium también pueden recibir eventos en un tema de Kafka dedicado con garantía de entrega del 99.99%.",
            "Los cuerpos de los webhooks se cifran además con PGP para clientes de sectores regulados.",
        ),
    },
    "billing": {
        "en": (
            "Nonprofit organisations receive a permanent 40% rebate after sending their registration certificate.",
            "Customers paying by wire transfer get a complimentary month of onboarding consultancy.",
        ),
        "es": (
            "Las organizaciones sin ánimo de lucro reciben una bonificación permanente del 40% al enviar su certificado de registro.",
            "Los clientes que pagan por transferencia reciben un mes gratuito de consultoría de incorporación.",
        ),
    },
    "returns_warranty": {
        "en": (
            "Refurbished readers sold at pop-up kiosks carry a lifetime guarantee including liquid spills.",
            "Customers in Canada and Brazil also get a prepaid courier pickup from their shop.",
        ),
        "es": (
            "Los lectores reacondicionados vendidos en quioscos temporales tienen garantía de por vida incluidos derrames de líquidos.",
            "Los clientes de Canadá y Brasil también reciben una recogida prepagada por mensajería en su tienda.",
        ),
    },
    "account_security": {
        "en": (
            "Biometric passkeys stored in the Tallyfox Vault mobile wallet bypass the lockout entirely.",
            "Administrators can also whitelist office IP ranges so that colleagues skip verification.",
        ),
        "es": (
            "Las llaves biométricas guardadas en la cartera móvil Tallyfox Vault evitan por completo el bloqueo.",
            "Los administradores también pueden autorizar rangos de IP de la oficina para que los compañeros omitan la verificación.",
        ),
    },
}
# Answers that ignore the question (off-topic filler a chatty model produces).
_OFF_TOPIC: dict[str, tuple[str, ...]] = {
    "en": (
        "Our design team recently refreshed the Tallyfox logo with a brighter orange fox.",
        "Tallyfox hosts a community meetup in Lisbon every autumn with talks from merchants.",
        "The engineering blog publishes new customer stories about coffee shops every Thursday.",
        "Many merchants enjoy customising their receipt footer with a friendly thank-you message.",
    ),
    "es": (
        "Nuestro equipo de diseño renovó hace poco el logotipo de Tallyfox con un zorro naranja más brillante.",
        "Tallyfox organiza cada otoño un encuentro de la comunidad en Lisboa con charlas de comerciantes.",
        "El blog de ingeniería publica cada jueves nuevas historias de clientes sobre cafeterías.",
        "A muchos comerciantes les gusta personalizar el pie de sus recibos con un mensaje de agradecimiento.",
    ),
}


def has_number(text: str) -> bool:
    """True when ``text`` has a standalone number a changed-number failure can alter."""
    return bool(_NUMBER.search(text))


def plan_kinds(n: int, share: float, rng: random.Random) -> list[str | None]:
    """Exactly ``round(n * share)`` planted kinds (largest-remainder split by WEIGHTS), shuffled."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"failure_share must be in [0, 1], got {share}")
    planted = round(n * share)
    quotas = {k: planted * w for k, w in WEIGHTS.items()}
    counts = {k: int(q) for k, q in quotas.items()}
    for k in sorted(quotas, key=lambda k: counts[k] - quotas[k])[: planted - sum(counts.values())]:
        counts[k] += 1
    kinds: list[str | None] = [k for k, c in counts.items() for _ in range(c)]
    kinds += [None] * (n - planted)
    rng.shuffle(kinds)
    return kinds


def exclude_topic(topic: str) -> Callable[[Chunk], bool]:
    """An index filter that hides every chunk of ``topic`` (a mis-scoped metadata filter)."""
    return lambda chunk: chunk.topic == topic


def change_numbers(answer: str, context: str, rng: random.Random) -> str:
    """``answer`` with one number replaced by a plausible value that appears nowhere in ``context``."""
    matches = list(_NUMBER.finditer(answer))
    if not matches:
        raise ValueError(f"no number to change in {answer!r}")
    seen = set(_NUMBER.findall(context))
    m = rng.choice(matches)
    value = float(m.group())
    decimals = len(m.group().split(".")[1]) if "." in m.group() else 0
    for factor in rng.sample([2.0, 1.5, 3.0, 0.5, 4.0, 2.5], 6):
        new = f"{value * factor:.{decimals}f}" if decimals else str(max(1, round(value * factor)))
        if new != m.group() and new not in seen:
            return answer[: m.start()] + new + answer[m.end() :]
    return answer[: m.start()] + str(int(value) + 997) + answer[m.end() :]


def unsupported_claim(answer: str, topic: str, lang: str, rng: random.Random) -> str:
    """``answer`` followed by a confident claim that no chunk supports."""
    return f"{answer} {rng.choice(_UNSUPPORTED[topic][lang])}"


def off_topic(lang: str, rng: random.Random) -> str:
    """A fluent answer that does not address the question."""
    return rng.choice(_OFF_TOPIC[lang])


def wrong_chunk_sentence(
    kb: KnowledgeBase, topic: str, lang: str, rng: random.Random, avoid: Sequence[str] = ()
) -> tuple[str, str]:
    """``(sentence, chunk id)`` from a chunk of another topic in ``lang``, not among ``avoid``."""
    pool = [c for c in kb.chunks if c.topic != topic and c.lang == lang and c.id not in avoid]
    chunk = rng.choice(pool)
    return rng.choice(chunk.sentences), chunk.id
