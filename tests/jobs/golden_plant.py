"""A planted stream of flagged interactions for the golden-growth tests.

Golden set v3 holds two known categories (billing refunds, SAML single sign-on). The stream adds
exact duplicates, English and Spanish paraphrases of a new failure (ports of the on-prem agent),
failures close to both known categories, one query the golden set already holds, and PII.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from ragsieve.evaluators.judges.offline.context import ContextRelevanceJudge
from ragsieve.evaluators.records import EvalResult, RagInteraction, RetrievedDocument
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase

if TYPE_CHECKING:
    from ragsieve.collector.store import Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

GOLDEN_V3 = [
    {
        "id": "g-refund",
        "query": "What is the refund policy for annual plans?",
        "relevant_chunks": {"kb-refunds": 3},
        "reference_answer": "Annual plans: 30 days.",
        "category": "billing",
        "source": "manual",
        "reviewed": True,
    },
    {
        "id": "g-card",
        "query": "How do I update the credit card on my invoice?",
        "relevant_chunks": ["kb-card"],
        "category": "billing",
        "source": "manual",
        "reviewed": True,
    },
    {
        "id": "g-saml",
        "query": "How do I configure SAML single sign-on?",
        "relevant_chunks": ["kb-saml"],
        "category": "sso",
        "source": "manual",
        "reviewed": True,
    },
    {
        "id": "g-cert",
        "query": "Why does SSO login fail with an invalid certificate?",
        "relevant_chunks": ["kb-cert"],
        "category": "sso",
        "source": "manual",
        "reviewed": True,
    },
]

PORTS_EN = "What ports does the on-prem agent need open?"
PORTS_ES = "¿Qué puertos necesita abiertos el agente on-prem?"

# (query, root cause); the comments say what each one plants
STREAM: list[tuple[str, str]] = [
    (PORTS_EN, "retrieval"),  # new category
    ("what ports does the ON-PREM agent need open", "retrieval"),  # exact duplicate
    ("Which ports does the on-prem agent need opened?", "retrieval"),  # EN paraphrase
    (PORTS_ES, "retrieval"),  # ES, same category
    ("¿Qué puertos necesita tener abiertos el agente on-prem?", "retrieval"),  # ES paraphrase
    ("Can I get a refund on my annual plan?", "retrieval"),  # known: billing
    ("¿Me devuelven el dinero si cancelo el plan anual?", "retrieval"),  # known: billing (ES)
    ("What is the refund policy for annual plans", "retrieval"),  # already golden
    ("¿Cómo configuro el inicio de sesión único SAML?", "generation"),  # known: sso
    (PORTS_EN, "retrieval"),  # exact duplicate again
]


def write_golden_v3(folder: Path, *, spanish: bool = False) -> Path:
    """Write golden_v3.jsonl (optionally with the Spanish field aliases)."""
    path = folder / "golden_v3.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for case in GOLDEN_V3:
            row = dict(case)
            if spanish:
                row = {
                    "id": row["id"],
                    "pregunta": row["query"],
                    "chunks_relevantes": row["relevant_chunks"],
                    "respuesta_ideal": row.get("reference_answer"),
                    "categoria": row["category"],
                }
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


# what the retriever returns per topic (the knowledge base has a Spanish version of each
# document): failures of one area share its documents, whatever their language
CHUNKS = {
    "ports": [
        ("kb-install", "Install the on-prem agent with apt; it runs as a systemd service."),
        ("kb-network", "The agent talks to the cloud over outbound TLS; proxies are supported."),
    ],
    "billing": [
        ("kb-pricing", "Pricing tiers, seats and annual plans."),
        ("kb-invoices", "Invoices are issued monthly; cancel at any time from the billing page."),
    ],
    "sso": [
        ("kb-sso", "Single sign-on: SAML 2.0 and OIDC identity providers."),
        ("kb-users", "Invite users and assign roles from the admin console."),
    ],
}
CHUNKS_ES = {
    "ports": [
        ("kb-install-es", "Instale el agente on-prem con apt; se ejecuta como servicio systemd."),
        ("kb-network-es", "El agente se conecta a la nube por TLS saliente; admite proxies."),
    ],
    "billing": [
        ("kb-pricing-es", "Planes de precios, puestos y planes anuales."),
        ("kb-invoices-es", "Las facturas son mensuales; cancele cuando quiera desde facturación."),
    ],
    "sso": [
        ("kb-sso-es", "Inicio de sesión único: proveedores de identidad SAML 2.0 y OIDC."),
        ("kb-users-es", "Invite usuarios y asigne roles desde la consola de administración."),
    ],
}


def chunks_for(query: str) -> list[tuple[str, str]]:
    """The chunks a query of the planted stream retrieves (by its topic and language)."""
    q = query.lower()
    kb = CHUNKS_ES if q.startswith("¿") else CHUNKS
    if "port" in q or "puerto" in q:
        return kb["ports"]
    if "saml" in q or "sso" in q or "sesión" in q:
        return kb["sso"]
    return kb["billing"]


def flagged(
    query: str,
    root_cause: str,
    n: int,
    *,
    run_id: str = "run-1",
    chunks: list[tuple[str, str]] | None = None,
) -> FlaggedCase:
    """One flagged interaction with trace id ``n`` (hex), two chunks, an answer and a verdict."""
    trace_id, span_id = f"{n:032x}", f"{n:016x}"
    interaction = RagInteraction(
        trace_id=trace_id,
        span_id=span_id,
        started_at=T0 + timedelta(minutes=n),
        query=query,
        answer=f"Please write to support-{n}@example.com or call +34 612 345 678.",
        documents=tuple(
            RetrievedDocument(id=cid, content=text, rank=i, in_prompt=True)
            for i, (cid, text) in enumerate(chunks or chunks_for(query))
        ),
    )
    verdict = EvalResult(
        trace_id=trace_id,
        span_id=span_id,
        evaluator="faithfulness",
        label="unfaithful",
        score=0.1,
        explanation="The answer is not supported by the retrieved chunks.",
        judge_version="2",
    )
    return FlaggedCase(
        interaction=interaction,
        results=[verdict],
        root_cause=root_cause,
        evidence="context_relevance=0.05",
        run_id=run_id,
        stratum="uniform",
        inclusion_p=0.25,
    )


def stream(start: int = 1) -> list[FlaggedCase]:
    """The planted stream, trace ids from ``start``."""
    return [flagged(q, rc, start + i) for i, (q, rc) in enumerate(STREAM)]


JUDGED_AT = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def judged_failure(
    n: int, query: str, chunks: Sequence[tuple[str, str]], answer: str, *, judged: bool = True
) -> FlaggedCase:
    """A flagged generation failure judged by the real offline context judge (``judged``; else
    no judge said which chunk answers, as with a judge that scores the prompt as a whole)."""
    it = RagInteraction(
        trace_id=f"{n:032x}",
        span_id=f"{n:016x}",
        started_at=JUDGED_AT,
        query=query,
        answer=answer,
        documents=tuple(
            RetrievedDocument(id=cid, content=text, rank=i, in_prompt=True)
            for i, (cid, text) in enumerate(chunks)
        ),
    )
    results = list(asyncio.run(ContextRelevanceJudge().evaluate(it))) if judged else []
    return FlaggedCase(it, results, "generation", "the answer is unfaithful", "run-1")


def candidate_askings(store: Store, cases: list[FlaggedCase]) -> list[list[str]]:
    """Grow ``cases`` on ``store``; each open candidate's askings, sorted."""
    from ragsieve.jobs.golden import grow
    from ragsieve.jobs.golden.growth.repo import CandidateRepo
    from ragsieve.jobs.settings import GoldenSettings, Settings

    grow(store, cases, Settings(golden=GoldenSettings()))
    rows = CandidateRepo(store).select(["candidate"])
    return sorted(sorted(r.body.get("askings") or [r.query]) for r in rows)
