"""SQL over the ``candidates`` table: one row per candidate, golden reference rows beside them.

Statuses: ``candidate`` (waiting for a person), ``accepted``, ``rejected`` (kept as a negative
label), ``merged`` (a duplicate a reviewer folded into another candidate, ``merged_into``: kept
as the record, never matched, categorised or reviewed again), ``covered`` (a production failure
whose query the golden set already holds; counted, never reviewed) and ``golden`` (a case of
the current golden set, imported or promoted, so that dedup and novelty work before any golden
file is configured). Audit items (ids ``audit:<trace id>``, see ``audit.py``) are passing
traces a person checks: ``audit`` while open, then ``audit_pass`` or ``audit_fail`` (or
``accepted`` when the missed failure is also taken as a case). Everything beyond the indexed
columns lives in the JSON ``body``.

Saves are optimistic: each row carries a ``version`` that every write raises by one, and a save
writes only when the stored version is still the one it read. When another writer (a review, a
run's golden growth, a Phoenix pull) saved in between, the save re-reads the row and merges field
by field (``merge.py``: provenance is a union, a decision saved in between stands) and tries again;
nothing one writer changed is lost to another's stale copy.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ragsieve.collector.store import Store
from ragsieve.collector.store.sql import Cursor
from ragsieve.jobs.results.reviews import says_false_alarm

log = logging.getLogger(__name__)

STATUSES = (
    "candidate",
    "accepted",
    "rejected",
    "covered",
    "golden",
    "audit",
    "audit_pass",
    "audit_fail",
    "merged",
)
REVIEWABLE = ("candidate", "accepted", "rejected")
_COLUMNS = (
    "id, status, category, root_cause, norm_query, seen, created_at, updated_at, body, version"
)
SAVE_ATTEMPTS = 8  # conditional writes per row before a save gives up (each re-reads and merges)


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
    version: int = 0  # the stored version this row was read at (0: never stored)
    _read: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def base(self) -> Candidate | None:
        """The row as it was read from the store (None for a row built in memory)."""
        return _row(self._read) if self._read is not None else None

    @property
    def query(self) -> str:
        """The (scrubbed) question text."""
        return str(self.body.get("query", ""))

    @property
    def cause(self) -> str | None:
        """The root cause as reviewed: the reviewer's correction when there is one, else the
        job's (``root_cause``, kept as the job said it)."""
        return (self.body.get("review") or {}).get("root_cause") or self.root_cause

    @property
    def false_alarm(self) -> bool:
        """True when a person rejected it as no failure at all ("the judge was wrong"; a
        ``false_alarm`` reason from the terminal or Phoenix), not as a duplicate or out of scope."""
        reason = (self.body.get("review") or {}).get("reason")
        return self.status == "rejected" and says_false_alarm(reason)

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
    row = _plain(r)
    row._read = tuple(r)
    return row


def _plain(r: Sequence[Any]) -> Candidate:
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
        version=int(r[9] or 0),
    )


def _dump(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False, sort_keys=True, default=str)


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
        """Write rows (insert, or update under the version each was read at); how many.

        All rows are tried in one transaction; a row another writer saved since it was read is
        then re-read and merged (module docstring). Each row given is updated in place to what
        was stored, at its new version. Two different decisions on one candidate raise
        :class:`~ragsieve.jobs.golden.growth.merge.CandidateConflict`.
        """
        stamp = time.time() if now is None else now
        todo = list(rows)
        stale: list[Candidate] = []
        with self.store.transaction() as cur:
            for c in todo:
                c.updated_at = stamp
                c.created_at = c.created_at or stamp
                update = c._read is not None
                if self._write(cur, c, update=update):
                    _adopt(c, c, c.version + 1 if update else 1)
                else:
                    stale.append(c)
        for c in stale:
            self._merge_and_save(c, stamp)
        return len(todo)

    def _merge_and_save(self, c: Candidate, stamp: float) -> None:
        """Re-read, merge ``c``'s changes onto the stored row and write, until it holds."""
        from ragsieve.jobs.golden.growth.merge import CandidateConflict, merge

        for _ in range(SAVE_ATTEMPTS):
            theirs = self.get(c.id)
            if theirs is None:  # deleted in between: write it afresh
                row = _plain((*_values(c)[:-1], 0))
            else:
                row = merge(c.base, _plain(_values(c)), theirs)
                row.updated_at = stamp
                row._read = theirs._read
            update = row._read is not None
            with self.store.transaction() as cur:
                done = self._write(cur, row, update=update)
            if done:
                log.info("candidate %s: saved over a newer version, merged", c.id)
                _adopt(c, row, row.version + 1 if update else 1)
                return
        raise CandidateConflict(
            f"candidate {c.id}: still changing under this save after {SAVE_ATTEMPTS} merges"
        )

    def _write(self, cur: Cursor, row: Candidate, *, update: bool) -> bool:
        """One conditional write: update at ``row.version`` (or insert a new id); done or not."""
        values = _values(row)
        if not update:
            cur.execute(
                self.store.sql(
                    f"INSERT INTO candidates ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"
                    " ON CONFLICT (id) DO NOTHING"
                ),
                (*values[:-1], 1),
            )
        else:
            cur.execute(
                self.store.sql(
                    "UPDATE candidates SET status = ?, category = ?, root_cause = ?,"
                    " norm_query = ?, seen = ?, updated_at = ?, body = ?,"
                    " version = version + 1 WHERE id = ? AND version = ?"
                ),
                (*values[1:6], values[7], values[8], row.id, row.version),
            )
        return int(getattr(cur, "rowcount", 0) or 0) == 1

    def counts(self) -> dict[str, int]:
        """Rows per status."""
        rows = self.store.query("SELECT status, COUNT(*) FROM candidates GROUP BY status")
        return {str(r[0]): int(r[1]) for r in rows}


def _values(c: Candidate) -> tuple[Any, ...]:
    """The row's column values in ``_COLUMNS`` order."""
    return (
        c.id, c.status, c.category, c.root_cause, c.norm_query, c.seen, c.created_at,
        c.updated_at, _dump(c.body), c.version,
    )  # fmt: skip


def _adopt(c: Candidate, stored: Candidate, version: int) -> None:
    """Make ``c`` the row just stored at ``version`` (so a later save builds on it)."""
    for name in ("status", "category", "root_cause", "norm_query", "seen", "body"):
        setattr(c, name, getattr(stored, name))
    c.created_at, c.updated_at, c.version = stored.created_at, stored.updated_at, version
    c.__dict__.pop("embedding", None)  # the cached vector of the old body
    c._read = _values(c)
