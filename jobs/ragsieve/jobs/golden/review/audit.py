"""Audit items: a random share of passing traces routed to a person, who says if each really passed.

The job calls :func:`route` with the run's audited passes. Each becomes one ``candidates`` row with
id ``audit:<trace id>`` and status ``audit`` (never merged or deduplicated: each is one random
draw for the judge's false-omission rate), scrubbed like a candidate. ``ragsieve golden review``
asks "is this really a pass?": yes → ``audit_pass``; no → ``audit_fail`` (a failure the judge
missed), or, when the reviewer also accepts it as a case, ``accepted`` so that the next
``golden promote`` adds it. An audit item reaches the golden set only that way.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden.growth.candidates import Scrubber, _new_body
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase

if TYPE_CHECKING:
    from ragsieve.collector.store import Store
    from ragsieve.jobs.settings import Settings

log = logging.getLogger(__name__)
PREFIX = "audit:"
OPEN, PASSED, MISSED = "audit", "audit_pass", "audit_fail"
AUDIT_STATUSES = (OPEN, PASSED, MISSED)


def audit_id(trace_id: str) -> str:
    """The candidates-row id of one audited trace."""
    return PREFIX + trace_id


def is_audit(c: Candidate) -> bool:
    """True for an audit item (whatever its status), False for a flagged-failure candidate."""
    return c.id.startswith(PREFIX) or c.body.get("audit") is True


def route(store: Store, audits: Sequence[FlaggedCase], settings: Settings) -> dict[str, int]:
    """Queue a run's audited passes for review; returns ``{"queued", "already_queued"}``."""
    cfg = settings.golden
    repo = CandidateRepo(store)
    scrub = Scrubber(cfg.scrub_pii, cfg.pii_patterns)
    now = datetime.now(UTC)
    fresh: list[Candidate] = []
    known = 0
    for f in audits:
        cid = audit_id(f.interaction.trace_id)
        if repo.get(cid) is not None:
            known += 1
            continue
        query = scrub(f.interaction.query) or ""
        body = _new_body(f, query, scrub, now)
        body["audit"] = True
        body["judge_verdict"] = "pass"
        fresh.append(
            Candidate(
                id=cid,
                status=OPEN,
                norm_query=normalize_text(query),
                category=None,
                root_cause=None,
                body=body,
            )
        )
    repo.save(fresh, now=now.timestamp())
    if fresh:
        log.info("routed %d audited passes to review", len(fresh))
    return {"queued": len(fresh), "already_queued": known}


__all__ = ["AUDIT_STATUSES", "audit_id", "is_audit", "route"]
