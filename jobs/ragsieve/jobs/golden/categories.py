"""Failure categories: query clusters within each root cause, named by their most telling terms.

A candidate joins the category (of its root cause) whose centroid is closest, when that cosine
reaches the threshold; otherwise it founds a new one. A category is *new* when none of its
queries is close to any golden case; coverage compares golden cases with production failures.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden.reference import GoldenReference
from ragsieve.jobs.golden.repo import Candidate

STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from into about as is are was were be
    been being do does did doing have has had i me my we our you your he she it its they them
    their what which who whom this that these those am can could should would will shall may
    might must not no nor so than too very just how why when where there here all any both each
    few more most other some such only own same s t don now get got also please need needs
    want wants use using
    el la los las un una unos unas y o pero si de del al a en con por para sin sobre entre como
    que qué es son fue ser está están estar hay mi mis tu tus su sus nuestro nuestra yo tú él
    ella nosotros ellos ellas me te se lo le les nos cómo como cuál cual cuáles cuándo cuando
    dónde donde quién por qué porque muy más menos ya no sí este esta estos estas ese esa eso
    puedo puede pueden hacer tengo tiene tener necesito necesita quiero""".split()
)


def category_id(root_cause: str | None, founder_id: str) -> str:
    """A stable id for a category founded by one candidate: ``<root cause>-<6 hex>``."""
    digest = hashlib.sha256(f"{root_cause}:{founder_id}".encode()).hexdigest()[:6]
    return f"{root_cause or 'unknown'}-{digest}"


def centroid_sums(rows: Sequence[Candidate]) -> dict[str, tuple[str | None, np.ndarray]]:
    """Category id → (root cause, sum of member vectors) over rows that carry an embedding."""
    out: dict[str, tuple[str | None, np.ndarray]] = {}
    for row in rows:
        vec = row.embedding
        if row.category is None or vec is None:
            continue
        cause, total = out.get(row.category, (row.root_cause, np.zeros_like(vec)))
        out[row.category] = (cause, total + vec)
    return out


def centroids(rows: Sequence[Candidate]) -> dict[str, tuple[str | None, np.ndarray]]:
    """Category id → (root cause, unit centroid) over rows that carry an embedding."""
    return {
        cat: (cause, total / max(float(np.linalg.norm(total)), 1e-12))
        for cat, (cause, total) in centroid_sums(rows).items()
    }


def assign(
    vec: np.ndarray,
    root_cause: str | None,
    sums: dict[str, tuple[str | None, np.ndarray]],
    threshold: float,
) -> str | None:
    """The ``root_cause`` category whose centroid is closest to ``vec`` (None below threshold).

    ``sums`` maps category → (root cause, sum of member vectors); centroids are their directions.
    """
    best, best_sim = None, threshold
    for cat, (cause, total) in sums.items():
        if cause != root_cause:
            continue
        sim = float(total @ vec) / max(float(np.linalg.norm(total)), 1e-12)
        if sim >= best_sim:
            best, best_sim = cat, sim
    return best


_TAG = re.compile(r"\[[A-Z_]+\]")  # redaction tags such as [EMAIL] are not topic words


def surface_terms(text: str) -> dict[str, str]:
    """Content words of a query, folded → as written (lower case, accents kept).

    Folded forms drop stop words, numbers and words shorter than 3 letters.
    """
    out: dict[str, str] = {}
    for word in re.findall(r"\w+(?:-\w+)*", _TAG.sub(" ", text).lower()):
        folded = normalize_text(word).replace(" ", "-")
        if len(folded) >= 3 and not folded.isdigit() and folded not in STOPWORDS:
            out.setdefault(folded, word)
    return out


def terms(text: str) -> set[str]:
    """Folded content words of a query (see :func:`surface_terms`)."""
    return set(surface_terms(text))


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

    @property
    def name(self) -> str:
        """The most telling terms, joined: ``password / reset / contraseña``."""
        return " / ".join(self.terms) if self.terms else self.id

    def to_json(self) -> dict[str, object]:
        """Stable JSON for reports and ``--json`` output."""
        return {
            "category": self.id,
            "name": self.name,
            "root_cause": self.root_cause,
            "new": self.new,
            "terms": self.terms,
            "examples": self.examples,
            "candidates": self.candidates,
            "failures_seen": self.failures_seen,
            "golden_cases": self.golden_cases,
            "coverage": round(self.golden_cases / self.failures_seen, 3)
            if self.failures_seen
            else None,
            "nearest_golden": round(self.nearest_golden, 3),
            "golden_category": self.golden_category,
            "statuses": self.statuses,
        }


def summarize(
    rows: Sequence[Candidate],
    reference: GoldenReference,
    *,
    new_threshold: float,
    n_terms: int = 3,
    n_examples: int = 3,
) -> list[CategorySummary]:
    """One summary per category: new categories first, then by failures seen."""
    groups: dict[str, list[Candidate]] = {}
    for row in rows:
        if row.category is not None and row.status != "golden":
            groups.setdefault(row.category, []).append(row)
    if not groups:
        return []
    tf: dict[str, Counter[str]] = {}
    df: Counter[str] = Counter()
    shown: dict[str, str] = {}
    for cat, members in groups.items():
        counts: Counter[str] = Counter()
        for m in members:
            for t, word in surface_terms(m.query).items():
                counts[t] += m.seen
                shown.setdefault(t, word)
        tf[cat] = counts
        df.update(counts.keys())
    cents = centroids([m for ms in groups.values() for m in ms])
    gold = reference.vectors
    owner: list[str | None] = []
    if len(reference) and cents:
        cat_ids = list(cents)
        sims = gold @ np.vstack([cents[c][1] for c in cat_ids]).T
        for i in range(len(reference)):
            j = int(np.argmax(sims[i]))
            owner.append(cat_ids[j] if sims[i, j] >= new_threshold else None)
    out: list[CategorySummary] = []
    n_cats = len(groups)
    for cat, members in groups.items():
        scored = {t: c * math.log(1 + n_cats / df[t]) for t, c in tf[cat].items()}
        # ties go to the longer word: it is usually the more specific one
        top = sorted(scored, key=lambda t: (-scored[t], -len(t), t))[:n_terms]
        vecs = [m.embedding for m in members if m.embedding is not None]
        nearest = float((np.vstack(vecs) @ gold.T).max()) if vecs and len(reference) else 0.0
        covered = any(m.status == "covered" for m in members)
        owned = [i for i, o in enumerate(owner) if o == cat]
        labels = Counter(reference.categories[i] for i in owned if reference.categories[i])
        by_seen = sorted(members, key=lambda m: (-m.seen, m.created_at, m.id))
        out.append(
            CategorySummary(
                id=cat,
                root_cause=members[0].root_cause,
                terms=[shown[t] for t in top],
                examples=[m.query for m in by_seen[:n_examples]],
                candidates=len(members),
                failures_seen=sum(m.seen for m in members),
                golden_cases=len(owned),
                nearest_golden=nearest,
                new=not covered and nearest < new_threshold,
                golden_category=labels.most_common(1)[0][0] if labels else None,
                statuses=dict(Counter(m.status for m in members)),
            )
        )
    out.sort(key=lambda s: (not s.new, -s.failures_seen, s.id))
    return out
