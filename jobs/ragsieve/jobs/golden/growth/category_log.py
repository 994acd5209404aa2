"""The category map's memory across runs: names, when a new category was announced, and every
merge and split (tables ``categories`` and ``category_events``, written by golden growth only).

A new category is announced once: the run in which it first qualifies (new, with at least
``golden.new_category_min_cases`` failures) lists it; later runs do not, while ``golden status``
keeps showing it as new until the golden set covers it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.jobs.golden.growth.categories import CategorySummary
from ragsieve.jobs.golden.growth.topics import Event


class CategoryLog:
    """Reads and writes ``categories`` and ``category_events``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def announced(self) -> dict[str, float]:
        """Category id → when it was announced as new."""
        rows = self.store.query(
            "SELECT id, announced_at FROM categories WHERE announced_at IS NOT NULL"
        )
        return {str(r[0]): float(r[1]) for r in rows}

    def history(self, category: str | None = None) -> list[dict[str, Any]]:
        """Merges and splits, oldest first (of one category when given)."""
        sql = "SELECT at, kind, category, other, members FROM category_events"
        params: list[Any] = []
        if category is not None:
            sql += " WHERE category = ? OR other = ?"
            params = [category, category]
        rows = self.store.query(sql + " ORDER BY at, category, other", params)
        keys = ("at", "kind", "category", "other", "members")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def record(
        self,
        summaries: Sequence[CategorySummary],
        events: Iterable[Event],
        announce: Iterable[str],
        *,
        now: float,
        run_id: str | None,
    ) -> None:
        """Upsert every category's name; stamp ``announce``; append the events."""
        fresh = set(announce)
        with self.store.transaction() as cur:
            for s in summaries:
                cur.execute(
                    self.store.sql(
                        "INSERT INTO categories (id, root_cause, name, announced_at, updated_at,"
                        " body) VALUES (?,?,?,?,?,?) ON CONFLICT (id) DO UPDATE SET"
                        " name = excluded.name, updated_at = excluded.updated_at,"
                        " body = excluded.body, announced_at ="
                        " COALESCE(categories.announced_at, excluded.announced_at)"
                    ),
                    (
                        s.id,
                        s.root_cause,
                        s.name,
                        now if s.id in fresh else None,
                        now,
                        json.dumps({"terms": s.terms, "language": s.language, "run_id": run_id}),
                    ),
                )
            for e in events:
                cur.execute(
                    self.store.sql(
                        "INSERT INTO category_events (at, kind, category, other, members, body)"
                        " VALUES (?,?,?,?,?,?)"
                    ),
                    (now, e.kind, e.category, e.other, e.members, json.dumps({"run_id": run_id})),
                )


def announcement_json(s: CategorySummary) -> dict[str, Any]:
    """A new category as a run report announces it."""
    return {
        "category": s.id,
        "name": s.name,
        "problem": s.problem,
        "terms": s.terms,
        "language": s.language,
        "examples": s.examples,
        "root_cause": s.root_cause,
        "failures_seen": s.failures_seen,
        "nearest_golden": round(s.nearest_golden, 3),
    }


__all__ = ["CategoryLog", "announcement_json"]
