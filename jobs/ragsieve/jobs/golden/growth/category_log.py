"""What is said about a category (:class:`CategorySummary`: its name, its problem line, whether
it is new) and the category map's memory across runs: names, when a new category was announced,
and every merge, split and rename (tables ``categories`` and ``category_events``, written by
golden growth only). A name changes only in a run, which logs the rename; between runs the
golden commands show the name last recorded (``GoldenContext.summaries``).

A new category is announced once: the run in which it first qualifies (new, with at least
``golden.new_category_min_cases`` failures) lists it; later runs do not, while ``golden status``
keeps showing it as new until the golden set covers it or reviewers reject what made it new
(``categories.py``: a false alarm is no failure).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.jobs.golden.growth.topics import Event

WHAT_GOES_WRONG = {  # a root cause as a reviewer reads it in a category's problem line
    "retrieval": "the answer was not retrieved",
    "generation": "the answer is not what the documents say",
    "both": "neither retrieved nor answered right",
    "no_answer_expected": "answered what the documents do not hold",
    "abstained_wrongly": "refused although the documents answer it",
    "ambiguous_query": "the question is unclear",
    "undetermined": "failing, cause undetermined",
}


@dataclass
class CategorySummary:
    """What the report and ``golden status`` say about one category."""

    id: str
    root_cause: str | None
    terms: list[str]
    examples: list[str]
    candidates: int
    failures_seen: int
    golden_cases: int
    nearest_golden: float
    new: bool
    golden_category: str | None = None
    statuses: dict[str, int] = field(default_factory=dict)
    language: str = "unknown"
    nearest_golden_id: str | None = None
    topic: str | None = None
    root_causes: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The most telling terms, joined: ``password / reset / contraseña``."""
        return " / ".join(self.terms) if self.terms else self.id

    @property
    def problem(self) -> str:
        """The topic area and what goes wrong there, for a reviewer:
        ``passport / renew: the answer was not retrieved (3 of 4)``."""
        total = sum(self.root_causes.values())
        what = WHAT_GOES_WRONG.get(str(self.root_cause), str(self.root_cause))
        top = self.root_causes.get(str(self.root_cause), 0)
        return f"{self.name}: {what}" + (f" ({top} of {total})" if 0 < top < total else "")

    def to_json(self) -> dict[str, object]:
        """Stable JSON for reports and ``--json`` output."""
        return {
            "category": self.id,
            "name": self.name,
            "problem": self.problem,
            "root_cause": self.root_cause,
            "root_causes": self.root_causes,
            "new": self.new,
            "terms": self.terms,
            "language": self.language,
            "examples": self.examples,
            "candidates": self.candidates,
            "failures_seen": self.failures_seen,
            "golden_cases": self.golden_cases,
            "coverage": round(self.golden_cases / self.failures_seen, 3)
            if self.failures_seen
            else None,
            "nearest_golden": round(self.nearest_golden, 3),
            "nearest_golden_id": self.nearest_golden_id,
            "golden_category": self.golden_category,
            "topic": self.topic,
            "statuses": self.statuses,
        }


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

    def names(self) -> dict[str, list[str]]:
        """Category id → the terms of the name it was last given."""
        out: dict[str, list[str]] = {}
        for cid, body in self.store.query("SELECT id, body FROM categories"):
            terms = (json.loads(body) if body else {}).get("terms")
            if isinstance(terms, list) and terms:
                out[str(cid)] = [str(t) for t in terms]
        return out

    def history(self, category: str | None = None) -> list[dict[str, Any]]:
        """Merges, splits and renames (``to``: the new name), oldest first (of one category
        when given)."""
        sql = "SELECT at, kind, category, other, members, body FROM category_events"
        params: list[Any] = []
        if category is not None:
            sql += " WHERE category = ? OR other = ?"
            params = [category, category]
        rows = self.store.query(sql + " ORDER BY at, category, other", params)
        keys = ("at", "kind", "category", "other", "members")
        out = []
        for r in rows:
            event = dict(zip(keys, r[:5], strict=True))
            if event["kind"] == "rename":
                event["to"] = (json.loads(r[5]) if r[5] else {}).get("to")
            out.append(event)
        return out

    def record(
        self,
        summaries: Sequence[CategorySummary],
        events: Iterable[Event],
        announce: Iterable[str],
        *,
        now: float,
        run_id: str | None,
    ) -> None:
        """Upsert every category's name; stamp ``announce``; append the events, and a
        ``rename`` event (``other``: the name it had, body ``to``: the new one) for each
        category whose name changes: a reviewer finds what they reviewed under its old name."""
        fresh = set(announce)
        before = self.names()
        renamed = [s for s in summaries if before.get(s.id) not in (None, s.terms)]
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
            for s in renamed:
                cur.execute(
                    self.store.sql(
                        "INSERT INTO category_events (at, kind, category, other, members, body)"
                        " VALUES (?,?,?,?,?,?)"
                    ),
                    (now, "rename", s.id, " / ".join(before[s.id]), s.candidates,
                     json.dumps({"run_id": run_id, "to": s.name})),
                )  # fmt: skip

    def announce(
        self,
        summaries: Sequence[CategorySummary],
        due: Sequence[CategorySummary],
        events: Iterable[Event],
        now: float,
        run_id: str | None,
    ) -> list[CategorySummary]:
        """The ``due`` categories not announced before; records them, every name and the events.

        A category is due when it is new (its topic area has no golden case) and has itself at
        least ``golden.new_category_min_cases`` failures, or was announced before and is still
        new (``categories.summarize``).
        """
        done = self.announced()
        fresh = [s for s in due if s.id not in done]
        self.record(summaries, events, [s.id for s in fresh], now=now, run_id=run_id)
        return fresh


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


__all__ = ["WHAT_GOES_WRONG", "CategoryLog", "CategorySummary", "announcement_json"]
