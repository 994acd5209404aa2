"""Persistent LLM-verdict cache in SQLite, keyed by (judge, prompt_version, model, input hash)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_cache (
    judge TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    model TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (judge, prompt_version, model, input_hash)
)
"""


def input_hash(*parts: str | None) -> str:
    """Stable hash of the judged inputs (question, chunks, answer...)."""
    h = hashlib.sha256()
    for p in parts:
        h.update((p or "").encode("utf-8"))
        h.update(b"\x1f")
    return h.hexdigest()


class ResultCache:
    """A tiny key-value store; a change of prompt, model or input is a different key."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False)
        with self._lock, self._conn:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)

    def get(self, judge: str, prompt_version: str, model: str, key: str) -> dict[str, Any] | None:
        """The cached payload, or None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT payload FROM judge_cache WHERE judge=? AND prompt_version=? AND model=? "
                "AND input_hash=?",
                (judge, prompt_version, model, key),
            ).fetchone()
        return json.loads(row[0]) if row else None

    def put(
        self, judge: str, prompt_version: str, model: str, key: str, payload: dict[str, Any]
    ) -> None:
        """Store (or replace) a payload."""
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO judge_cache VALUES (?,?,?,?,?,?)",
                (
                    judge,
                    prompt_version,
                    model,
                    key,
                    json.dumps(payload, ensure_ascii=False),
                    datetime.now(UTC).isoformat(),
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()
