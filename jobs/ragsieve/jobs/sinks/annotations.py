"""Phoenix span annotations for every verdict: queued in the durable outbox, delivered with retries.

Each judge result becomes one annotation on the trace's root span (name = evaluator, label,
score, explanation, annotator kind LLM or CODE, root cause, run id, session id and the
calibration that judged it, if any, in metadata), plus one
``ragsieve_verdict`` annotation (pass / fail, root cause as explanation). The ``identifier`` is
stable per (trace, name), so re-posting updates the annotation instead of adding a duplicate,
and it is the outbox dedup key, so a requeue replaces a pending payload.

Delivery uses ``POST {phoenix}/v1/span_annotations?sync=true`` with body
``{"data": [{"span_id", "name", "annotator_kind", "result": {"label", "score", "explanation"},
"metadata", "identifier"}]}``. In sync mode Phoenix answers 404 for a span it has not stored
yet; that, a refused connection, 429 and 5xx are retried later with backoff. 400/422 mean the
payload itself is bad and are parked as dead letters. Nothing here ever fails the job.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ragsieve.collector.forward.forwarder import outbound, parse_retry_after
from ragsieve.collector.forward.outbox import OutboxWorker, Outcome
from ragsieve.collector.store import OutboxItem, Store
from ragsieve.evaluators.judges.thresholds import calibration_id
from ragsieve.evaluators.records import EvalResult

log = logging.getLogger(__name__)

TOPIC = "phoenix_annotations"
VERDICT_NAME = "ragsieve_verdict"
CONTENT_TYPE = "application/json"


def identifier(trace_id: str, name: str) -> str:
    """Stable annotation identifier (and outbox dedup key) for one (trace, name)."""
    return f"ragsieve:{trace_id}:{name}"


def build_annotations(
    span_id: str,
    results: Sequence[EvalResult],
    *,
    verdict: str,
    root_cause: str | None,
    evidence: str,
    run_id: str,
    session_id: str | None = None,
) -> list[dict[str, Any]]:
    """The annotation objects for one interaction: one per result, one for the verdict.

    ``session_id`` (the conversation the turn belongs to) goes in every annotation's metadata,
    so Phoenix can filter a session's verdicts.
    """
    shared = {"root_cause": root_cause, "run_id": run_id}
    out: list[dict[str, Any]] = []
    for r in results:
        out.append(
            {
                "span_id": span_id,
                "name": r.evaluator,
                "annotator_kind": "LLM" if r.annotator_kind == "LLM" else "CODE",
                "result": {"label": r.label, "score": r.score, "explanation": r.explanation},
                "metadata": {
                    **shared,
                    "trace_id": r.trace_id,
                    "session_id": session_id,
                    "verdict": verdict,
                    "judge_version": r.judge_version,
                    "judge_model": r.judge_model,
                    "calibration": calibration_id(r.judge_version),
                },
                "identifier": identifier(r.trace_id, r.evaluator),
            }
        )
    if results:
        explanation = f"{root_cause}: {evidence}" if root_cause else evidence
        out.append(_verdict_annotation(span_id, results, verdict, explanation, shared, session_id))
    return out


def _verdict_annotation(
    span_id: str,
    results: Sequence[EvalResult],
    verdict: str,
    explanation: str,
    shared: Mapping[str, Any],
    session_id: str | None,
) -> dict[str, Any]:
    """The ``ragsieve_verdict`` annotation: pass / fail, root cause and evidence as explanation."""
    trace_id = results[0].trace_id
    return {
        "span_id": span_id,
        "name": VERDICT_NAME,
        "annotator_kind": "CODE",
        "result": {
            "label": verdict,
            "score": 0.0 if verdict == "fail" else 1.0,
            "explanation": explanation,
        },
        "metadata": {
            **shared,
            "trace_id": trace_id,
            "session_id": session_id,
            "calibration": next(
                (c for r in results if (c := calibration_id(r.judge_version))), None
            ),
        },
        "identifier": identifier(trace_id, VERDICT_NAME),
    }


def queue(store: Store, annotations: Sequence[Mapping[str, Any]]) -> int:
    """Put annotations in the outbox in one transaction, one row each, deduplicated by identifier.

    Same upsert as ``Store.enqueue`` (a requeue replaces the pending payload), batched.
    """
    if not annotations:
        return 0
    now = time.time()
    rows = [
        (
            TOPIC,
            str(a["identifier"]),
            json.dumps(a, ensure_ascii=False).encode(),
            CONTENT_TYPE,
            1,
            now,
            now,
        )
        for a in annotations
    ]
    with store.transaction() as cur:
        cur.executemany(
            store.sql(
                "INSERT INTO outbox (topic, dedup_key, payload, content_type, items, created_at,"
                " next_attempt_at) VALUES (?,?,?,?,?,?,?) ON CONFLICT (topic, dedup_key) DO UPDATE"
                " SET payload = excluded.payload, content_type = excluded.content_type,"
                " items = excluded.items, attempts = 0, next_attempt_at = excluded.next_attempt_at,"
                " delivered_at = NULL, last_error = NULL"
            ),
            rows,
        )
    return len(rows)


class PhoenixAnnotationSender:
    """Posts one outbox row to Phoenix and classifies the answer as an outbox ``Outcome``."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = 5.0):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = base_url.rstrip("/") + "/v1/span_annotations"
        self.timeout_s = timeout_s
        self._client = httpx.AsyncClient(timeout=timeout_s, headers=headers)

    async def __call__(self, item: OutboxItem) -> Outcome:
        """Deliver one annotation."""
        body = b'{"data":[' + item.payload + b"]}"
        try:
            resp = await outbound.post(
                self._client,
                self.url,
                total_s=self.timeout_s,
                params={"sync": "true"},
                content=body,
                headers={"Content-Type": CONTENT_TYPE},
            )
        except httpx.HTTPError as exc:
            return Outcome(False, error=f"phoenix unreachable: {type(exc).__name__}: {exc}")
        if resp.is_success:
            return Outcome(True)
        detail = resp.text[:200]
        if resp.status_code == 404:
            return Outcome(False, error=f"404 span not in phoenix yet: {detail}")
        if resp.status_code in (400, 422):
            return Outcome(False, error=f"{resp.status_code}: {detail}", dead_letter=True)
        after = parse_retry_after(resp.headers.get("Retry-After"))
        return Outcome(False, retry_after_s=after, error=f"{resp.status_code}: {detail}")

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()


async def deliver(
    store: Store,
    base_url: str,
    *,
    api_key: str | None = None,
    time_budget_s: float = 5.0,
    timeout_s: float = 2.0,
    base_backoff_s: float = 2.0,
    max_backoff_s: float = 300.0,
) -> dict[str, Any]:
    """Deliver due annotations for at most ``time_budget_s``; returns counts, never raises."""
    sender = PhoenixAnnotationSender(base_url, api_key=api_key, timeout_s=timeout_s)
    worker = OutboxWorker(
        store, TOPIC, sender, batch=100, base_backoff_s=base_backoff_s, max_backoff_s=max_backoff_s
    )
    deadline = time.monotonic() + time_budget_s
    delivered = 0
    try:
        while time.monotonic() < deadline:
            try:
                n = await asyncio.wait_for(worker.run_once(), max(deadline - time.monotonic(), 0.1))
            except TimeoutError:
                break
            # Whatever stops a pass (a locked or lost store, a driver error; sender errors are
            # handled inside run_once): the rows stay queued and the next run delivers them.
            # The run's verdicts are already committed, so delivery must never fail it.
            except Exception as exc:
                log.warning("annotation delivery pass failed: %s", exc)
                break
            delivered += n
            if n == 0 or worker.stats.retried or worker.stats.dead_lettered:
                break
    finally:
        await sender.aclose()
    pending = store.outbox_stats().get(TOPIC, {}).get("pending", 0)
    return {
        "delivered": delivered,
        "retried": worker.stats.retried,
        "dead_lettered": worker.stats.dead_lettered,
        "pending": pending,
        "last_error": worker.stats.last_error,
    }


__all__ = [
    "TOPIC",
    "VERDICT_NAME",
    "PhoenixAnnotationSender",
    "build_annotations",
    "deliver",
    "identifier",
    "queue",
]
