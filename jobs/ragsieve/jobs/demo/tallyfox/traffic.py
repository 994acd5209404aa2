"""Demo query traffic: sessions of questions with paraphrases, typos, synonyms and follow-ups."""

# ruff: noqa: E501  (the banks of example sentences below are data)
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from ragsieve.jobs.demo.tallyfox.failures import has_number, plan_kinds
from ragsieve.jobs.demo.tallyfox.kb import KnowledgeBase

# Questions the knowledge base cannot answer, with the confident made-up answer a model might give.
OUT_OF_CORPUS: tuple[dict[str, tuple[str, str]], ...] = (
    {
        "en": (
            "Does Tallyfox have an Android app for merchants?",
            "Yes, the Tallyfox Merchant app for Android has been on Google Play since May 2022.",
        ),
        "es": (
            "¿Tallyfox tiene una aplicación de Android para comerciantes?",
            "Sí, la aplicación Tallyfox Merchant para Android está en Google Play desde mayo de 2022.",
        ),
    },
    {
        "en": (
            "Who is the CEO of Tallyfox?",
            "Tallyfox is led by its chief executive Marta Lindqvist, who founded the company in 2016.",
        ),
        "es": (
            "¿Quién es el director ejecutivo de Tallyfox?",
            "Tallyfox está dirigida por Marta Lindqvist, que fundó la empresa en 2016.",
        ),
    },
    {
        "en": (
            "Is there a Tallyfox office in Berlin that I can visit?",
            "Yes, the Berlin office on Torstrasse 88 welcomes visitors on weekdays from 9 to 17.",
        ),
        "es": (
            "¿Hay una oficina de Tallyfox en Berlín que pueda visitar?",
            "Sí, la oficina de Berlín en Torstrasse 88 recibe visitas entre semana de 9 a 17.",
        ),
    },
    {
        "en": (
            "Which programming language is the Tallyfox dashboard written in?",
            "The dashboard is written in Elixir and served from 6 data centres.",
        ),
        "es": (
            "¿En qué lenguaje de programación está escrito el panel de Tallyfox?",
            "El panel está escrito en Elixir y se sirve desde 6 centros de datos.",
        ),
    },
    {
        "en": (
            "How do I sync my customer list with Salesforce?",
            "Install the Salesforce Sync add-on, which copies up to 50000 customers every night.",
        ),
        "es": (
            "¿Cómo sincronizo mi lista de clientes con Salesforce?",
            "Instala el complemento Salesforce Sync, que copia hasta 50000 clientes cada noche.",
        ),
    },
    {
        "en": (
            "Is Tallyfox hiring support engineers in Madrid?",
            "Yes, Tallyfox is hiring 12 support engineers for its Madrid hub this year.",
        ),
        "es": (
            "¿Tallyfox está contratando ingenieros de soporte en Madrid?",
            "Sí, Tallyfox contrata a 12 ingenieros de soporte para su sede de Madrid este año.",
        ),
    },
    {
        "en": (
            "Does Tallyfox sponsor any football teams?",
            "Tallyfox has sponsored the Porto Lions football club since the 2021 season.",
        ),
        "es": (
            "¿Tallyfox patrocina algún equipo de fútbol?",
            "Tallyfox patrocina al club de fútbol Porto Lions desde la temporada 2021.",
        ),
    },
    {
        "en": (
            "Can I connect Tallyfox to my Shopify store?",
            "Yes, the official Shopify plugin connects in 3 clicks and syncs orders every 5 minutes.",
        ),
        "es": (
            "¿Puedo conectar Tallyfox con mi tienda de Shopify?",
            "Sí, el complemento oficial de Shopify se conecta en 3 clics y sincroniza pedidos cada 5 minutos.",
        ),
    },
    {
        "en": (
            "How many employees does Tallyfox have?",
            "Tallyfox employs about 850 people across 7 countries.",
        ),
        "es": (
            "¿Cuántos empleados tiene Tallyfox?",
            "Tallyfox emplea a unas 850 personas en 7 países.",
        ),
    },
    {
        "en": (
            "Does Tallyfox run a loyalty points programme for shoppers?",
            "Yes, shoppers earn 2 FoxPoints per dollar and can redeem them at any Tallyfox merchant.",
        ),
        "es": (
            "¿Tallyfox tiene un programa de puntos de fidelidad para compradores?",
            "Sí, los compradores ganan 2 FoxPoints por dólar y los canjean en cualquier comercio Tallyfox.",
        ),
    },
)
_SYNONYMS: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (
        ("requests", "calls"),
        ("maximum", "max"),
        ("return", "send back"),
        ("account", "workspace"),
        ("How long", "How much time"),
        ("rotate", "change"),
        ("What happens", "What occurs"),
    ),
    "es": (
        ("solicitudes", "peticiones"),
        ("máximo", "tope"),
        ("devolver", "regresar"),
        ("cuenta", "cuenta de empresa"),
        ("Cuánto tiempo", "Cuánto rato"),
        ("panel", "dashboard"),
    ),
}
_FOLLOW_UP = {
    "en": ("And {q}", "Also, {q}", "One more thing: {q}"),
    "es": ("¿Y {q}", "Otra duda: ¿{q}"),
}
_WORD = re.compile(r"[^\W\d_]{5,}")


@dataclass(frozen=True, slots=True)
class Query:
    """One user turn of the demo traffic and what the app is told to plant on it."""

    index: int
    text: str
    lang: str
    session_id: str
    user_id: str
    fact_key: str | None  # None: out of corpus
    ooc_id: int | None
    planted: str | None
    variant: str  # plain | paraphrase | typo | synonym | follow_up | out_of_corpus


def add_typo(text: str, rng: random.Random) -> str:
    """Swap or drop one letter of a longer word."""
    words = list(_WORD.finditer(text))
    if not words:
        return text
    m = rng.choice(words)
    w, i = m.group(), rng.randrange(1, len(m.group()) - 1)
    typo = w[:i] + w[i + 1] + w[i] + w[i + 2 :] if rng.random() < 0.5 else w[:i] + w[i + 1 :]
    return text[: m.start()] + typo + text[m.end() :]


def _vary(text: str, lang: str, rng: random.Random) -> tuple[str, str]:
    roll = rng.random()
    if roll < 0.15:
        return add_typo(text, rng), "typo"
    if roll < 0.35:
        options = [(a, b) for a, b in _SYNONYMS[lang] if a in text]
        if options:
            a, b = rng.choice(options)
            return text.replace(a, b, 1), "synonym"
    return text, "plain"


def _follow_up(text: str, lang: str, rng: random.Random) -> str:
    body = text.lstrip("¿")
    return rng.choice(_FOLLOW_UP[lang]).format(q=body[0].lower() + body[1:])


def generate_traffic(
    kb: KnowledgeBase, n: int, *, seed: int = 0, failure_share: float = 0.3, ooc_share: float = 0.1
) -> list[Query]:
    """``n`` queries in sessions; exactly ``round(n * failure_share)`` carry a planted failure kind."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    kinds = plan_kinds(n, failure_share, rng)
    out: list[Query] = []
    session = ("", "", "en", kb.topics[0])  # id, user, lang, topic
    left = 0
    for i, kind in enumerate(kinds):
        ooc = kind == "missing_abstention" or (kind is None and rng.random() < ooc_share)
        if ooc:
            lang = rng.choice(("en", "es"))
            sid, uid = f"sess-{seed}-{i:05d}", f"user-{rng.randrange(60):03d}"
            oid = rng.randrange(len(OUT_OF_CORPUS))
            text, variant = _vary(OUT_OF_CORPUS[oid][lang][0], lang, rng)
            out.append(Query(i, text, lang, sid, uid, None, oid, kind, "out_of_corpus"))
            left = 0
            continue
        follow = left > 0
        if not follow:
            lang = rng.choice(("en", "es"))
            session = (
                f"sess-{seed}-{i:05d}",
                f"user-{rng.randrange(60):03d}",
                lang,
                rng.choice(kb.topics),
            )
            left = rng.choice((1, 1, 1, 2, 3))
        sid, uid, lang, topic = session
        left -= 1
        facts = [f for f in kb.facts.values() if f.topic == topic and lang in f.answers]
        if kind == "changed_numbers":
            facts = [f for f in facts if has_number(kb.answer_sentence(f, lang))]
        fact = rng.choice(facts)
        phrasings = fact.questions[lang]
        pick = rng.randrange(len(phrasings))
        text, variant = _vary(phrasings[pick], lang, rng)
        if variant == "plain" and pick > 0:
            variant = "paraphrase"
        if follow:
            text, variant = _follow_up(text, lang, rng), "follow_up"
        out.append(Query(i, text, lang, sid, uid, fact.key, None, kind, variant))
    return out
