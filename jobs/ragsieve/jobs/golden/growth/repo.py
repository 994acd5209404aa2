"""SQL over the ``candidates`` table: one row per candidate, golden reference rows beside them.

Statuses: ``candidate`` (waiting for a person), ``accepted``, ``rejected`` (kept as a negative
label), ``covered`` (a production failure whose query the golden set already holds; counted, never
reviewed) and ``golden`` (a case of the current golden set, imported or promoted, so that dedup
and novelty work before any golden file is configured). Audit items (ids ``audit:<trace id>``,
see ``audit.py``) are passing traces a person checks: ``audit`` while open, then ``audit_pass``
or ``audit_fail`` (or ``accepted`` when the missed failure is also taken as a case). Everything
beyond the indexed columns lives in the JSON ``body``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ragsieve.collector.store import Store

STATUSES = (
    "candidate",
    "accepted",
    "rejected",
    "covered",
    "golden",
    "audit",
    "audit_pass",
    "audit_fail",
)
REVIEWABLE = ("candidate", "accepted", "rejected")
_COLUMNS = "id, status, category, root_cause, norm_query, seen, created_at, updated_at, body"


@dataclass
class Candidate:
    """One row of ``candidates``; ``body`` holds query, provenance, suggestions and review."""

    id: str
    status: str
    norm_query: str
    category: str | None = None
    root_cause: str | None = None
    seen: int = 1
    created_at: float = 0.0
    updated_at: float = 0.0
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def query(self) -> str:
        """The (scrubbed) question text."""
        return str(self.body.get("query", ""))

    @property
    def source_trace_ids(self) -> list[str]:
        """Every flagged trace merged into this candidate, first one first."""
        return list(self.body.get("source_trace_ids", []))

    @cached_property
    def embedding(self) -> np.ndarray | None:
        """The query's unit vector, or None when it was never embedded (decoded once)."""
        return decode_vector(self.body.get("embedding"))


def encode_vector(vec: np.ndarray) -> str:
    """A unit vector as base64 float16 (1 KiB for 512 dims; cosine error below 1e-3)."""
    return base64.b64encode(np.asarray(vec, dtype=np.float16).tobytes()).decode("ascii")


def decode_vector(text: object) -> np.ndarray | None:
    """Inverse of :func:`encode_vector`; None for a missing value."""
    if not isinstance(text, str) or not text:
        return None
    return np.frombuffer(base64.b64decode(text), dtype=np.float16).astype(np.float32)


def _row(r: Sequence[Any]) -> Candidate:
    return Candidate(
        id=r[0],
        status=r[1],
        category=r[2],
        root_cause=r[3],
        norm_query=r[4],
        seen=int(r[5]),
        created_at=float(r[6]),
        updated_at=float(r[7]),
        body=json.loads(r[8]),
    )


class CandidateRepo:
    """Reads and writes candidate rows through the store's generic SQL access."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, candidate_id: str) -> Candidate | None:
        """One row by id."""
        rows = self.store.query(f"SELECT {_COLUMNS} FROM candidates WHERE id = ?", (candidate_id,))
        return _row(rows[0]) if rows else None

    def select(
        self,
        statuses: Iterable[str] | None = None,
        *,
        category: str | None = None,
    ) -> list[Candidate]:
        """Rows with one of ``statuses`` (all when None), most seen first, then oldest."""
        sql = f"SELECT {_COLUMNS} FROM candidates"
        where: list[str] = []
        params: list[Any] = []
        wanted = list(statuses) if statuses is not None else []
        if wanted:
            where.append("status IN (" + ",".join("?" for _ in wanted) + ")")
            params.extend(wanted)
        if category is not None:
            where.append("category = ?")
            params.append(category)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seen DESC, created_at, id"
        return [_row(r) for r in self.store.query(sql, params)]

    def by_norm_query(self, norm_query: str) -> list[Candidate]:
        """Rows whose normalised query equals ``norm_query`` (exact duplicates)."""
        rows = self.store.query(
            f"SELECT {_COLUMNS} FROM candidates WHERE norm_query = ?", (norm_query,)
        )
        return [_row(r) for r in rows]

    def save(self, rows: Iterable[Candidate], *, now: float | None = None) -> int:
        """Insert or replace rows in one transaction; returns how many were written."""
        stamp = time.time() if now is None else now
        n = 0
        with self.store.transaction() as cur:
            for c in rows:
                c.updated_at = stamp
                if not c.created_at:
                    c.created_at = stamp
                cur.execute(
                    self.store.sql(
                        f"INSERT INTO candidates ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)"
                        " ON CONFLICT (id) DO UPDATE SET status = excluded.status,"
                        " category = excluded.category, root_cause = excluded.root_cause,"
                        " norm_query = excluded.norm_query, seen = excluded.seen,"
                        " updated_at = excluded.updated_at, body = excluded.body"
                    ),
                    (
                        c.id,
                        c.status,
                        c.category,
                        c.root_cause,
                        c.norm_query,
                        c.seen,
                        c.created_at,
                        c.updated_at,
                        json.dumps(c.body, ensure_ascii=False, sort_keys=True, default=str),
                    ),
                )
                n += 1
        return n

    def counts(self) -> dict[str, int]:
        """Rows per status."""
        rows = self.store.query("SELECT status, COUNT(*) FROM candidates GROUP BY status")
        return {str(r[0]): int(r[1]) for r in rows}
