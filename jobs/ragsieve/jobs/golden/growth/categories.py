"""Failure categories: a topic area (question + documents) whatever the root causes in it,
named by its telling terms, *new* when no golden case lies in it.

:func:`categorise` clusters every candidate's topic vector (see ``topics.py``: the question,
and the documents as far as they relate to it); a failure that shares its topic with no other
stays uncategorised (``category`` None), so three unrelated questions that happened to
retrieve the same chunks make no category. Ids carry over from the previous run, merges and
splits are returned as events. :func:`summarize` says what the report and ``golden status`` show: a
category's root cause is the one most of its failures have (all are counted in
``root_causes``); it is new when most of its failures have no golden case (query and relevant
chunks' documents) within ``new_category_cosine``, no golden case lies in it (nearest to it of
all areas) and it has at least ``min_cases`` failures, whatever mix of root causes they have.

What people decided counts: a candidate rejected as a false alarm ("the judge was wrong") is no
failure, so it is in no category's failures, causes, names or examples (it still clusters, so a
repeat of it merges into it); a category is judged on the failures left, so one mixing false
alarms with open candidates is new only when those open ones alone make it new. A category whose
candidates are all rejected (duplicates, out of scope) is not new: nothing in it is left to
review or to cover.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragsieve.evaluators.judges.offline.text.text import language
from ragsieve.evaluators.judges.offline.text.typos import misspelt_among
from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden.growth.balance import BALANCE_FROM, MAX_SHARE, adopt, balanced
from ragsieve.jobs.golden.growth.category_log import WHAT_GOES_WRONG, CategorySummary
from ragsieve.jobs.golden.growth.reference import DOC_WEIGHT, GoldenReference
from ragsieve.jobs.golden.growth.repo import Candidate, decode_vector
from ragsieve.jobs.golden.growth.topics import (
    NAME_STOPWORDS,
    Event,
    carry_ids,
    cluster,
    fresh_id,
    unit,
)

# the cut of the topic tree is searched in this range of cosine distance. Neither is fitted to
# how categories form (the licence-clean sets hold too few questions per topic for that):
# MIN_CUT is where two queries count as repeats of one failure (1 - support_cosine 0.7): a finer
# area would split one failure's askings; MAX_CUT keeps average linkage from joining areas no
# closer than unrelated failures get: 1 - the 95th percentile of the topic cosine of questions
# about different passages, the strictest licence-clean set deciding (bench/categories_clean.py:
# HaluEval QA 0.43 -> 0.55; RAGTruth QA and MTRAG alone would allow 0.675, and then 0.156 of
# HaluEval's unrelated pairs fall inside the cut)
MIN_CUT, MAX_CUT = 0.3, 0.55
MIN_FAILURES = 2  # failures (as seen) a category groups: one failure is no category
# an area is new unless most (more than half) of its failures are near a golden case: a plain
# majority, not fitted (two of four is no majority)
NEW_SHARE = 0.5


def category_id(founder_id: str) -> str:
    """A stable id for a category founded by one candidate: ``topic-<6 hex>``."""
    return fresh_id("topic", founder_id)


def topic_of(row: Candidate) -> np.ndarray | None:
    """The row's topic vector (question + documents); its query vector for older rows."""
    vec = decode_vector(row.body.get("topic_embedding"))
    return unit(vec) if vec is not None else row.embedding


def topic_groups(
    vectors: np.ndarray, seen: Sequence[int], chunks: Sequence[frozenset[str]] | None = None
) -> list[list[int]]:
    """Index groups of failures that share a topic; the rest belong to no group.

    A group needs ``MIN_FAILURES`` failures (as seen): a question that failed once and shares
    its topic with no other is no category. No group holds more than ``MAX_SHARE`` of the
    candidates (once there are ``BALANCE_FROM``): a deployment about one subject (a town hall,
    a product) has every failure near every other, and one category of everything tells a
    reviewer nothing, so an oversized area is split along its own tree. A failure left alone
    joins the nearest group whose centre lies within the widest cut and one of whose failures
    shares a chunk with it (``chunks``: retrieved, missed or answering): in a deployment about
    one subject every failure lies that near every area, so nearness alone would file unrelated
    questions together.
    """
    labels = cluster(vectors, min_cut=MIN_CUT, max_cut=MAX_CUT)
    groups = [np.flatnonzero(labels == k).tolist() for k in np.unique(labels)]
    groups = balanced(vectors, groups, MAX_SHARE, BALANCE_FROM, min_cut=MIN_CUT)
    kept = [g for g in groups if sum(seen[i] for i in g) >= MIN_FAILURES]
    alone = [i for g in groups if g not in kept for i in g]
    n = len(vectors)
    cap = max(1, int(MAX_SHARE * n)) if n >= BALANCE_FROM else n  # few failures: no balance
    return adopt(vectors, kept, alone, cap=cap, max_cut=MAX_CUT, chunks=chunks)


def categorise(rows: Sequence[Candidate]) -> tuple[dict[str, str | None], list[Event]]:
    """Row id → category id (None: uncategorised) for every row with a topic vector, and the
    merges/splits seen.

    A category is a topic area (all root causes together: its failures' mix of causes is one
    area's, and a reviewer reads one area at a time); a failure that shares its topic with no
    other stays uncategorised.
    """
    have = [(r, v) for r in rows if (v := topic_of(r)) is not None]
    if not have:
        return {}, []
    vectors = np.vstack([v for _, v in have])
    groups = {
        n: [have[i][0].id for i in g]
        for n, g in enumerate(
            topic_groups(vectors, [r.seen for r, _ in have], [_documents(r) for r, _ in have])
        )
    }
    previous = {r.id: r.category for r, _ in have}
    names, events = carry_ids(groups, previous, dict.fromkeys(groups, "topic"))
    of = {m: names[g] for g, ms in groups.items() for m in ms}
    out: dict[str, str | None] = {}
    for row, _ in have:
        out[row.id] = of.get(row.id)
        row.body["topic"] = of.get(row.id)
    return out, events


_TAG = re.compile(r"\[[A-Z_]+\]")  # redaction tags such as [EMAIL] are not topic words
_NAME_STOP = frozenset(normalize_text(w) for w in NAME_STOPWORDS)  # as words are compared: folded


def surface_terms(text: str) -> dict[str, str]:
    """Content words of a query, folded → as written (lower case, accents kept).

    Folded forms drop stop words, numbers and words shorter than 3 letters.
    """
    out: dict[str, str] = {}
    for word in re.findall(r"\w+(?:-\w+)*", _TAG.sub(" ", text).lower()):
        folded = normalize_text(word).replace(" ", "-")
        if len(folded) >= 3 and not folded.isdigit() and folded not in _NAME_STOP:
            out.setdefault(folded, word)
    return out


def terms(text: str) -> set[str]:
    """Folded content words of a query (see :func:`surface_terms`)."""
    return set(surface_terms(text))


def _majority_language(members: Sequence[Candidate]) -> str:
    langs: Counter[str] = Counter()
    for m in members:
        langs[language(m.query)] += m.seen
    known = [(n, lang) for lang, n in langs.items() if lang != "unknown"]
    return max(known)[1] if known else "unknown"


def name_terms(
    groups: Mapping[str, Sequence[Candidate]], n_terms: int
) -> dict[str, tuple[list[str], str]]:
    """Category → (its most telling terms, the language they are in).

    Terms come from the queries in the category's majority language and are scored by
    tf × log(1 + categories / categories holding the term), so words every category shares
    (question words, the product name) lose to the ones that set this one apart.
    """
    tf: dict[str, Counter[str]] = {}
    support: dict[str, Counter[str]] = {}  # how many questions hold the term
    df: Counter[str] = Counter()
    shown: dict[str, str] = {}
    langs: dict[str, str] = {}
    for cat, members in groups.items():
        langs[cat] = lang = _majority_language(members)
        tf[cat], support[cat] = Counter(), Counter()
        for m in members:
            if lang != "unknown" and language(m.query) not in (lang, "unknown"):
                continue
            for t, word in surface_terms(m.query).items():
                tf[cat][t] += m.seen
                support[cat][t] += 1
                shown.setdefault(t, word)
        df.update(tf[cat].keys())
    out: dict[str, tuple[list[str], str]] = {}
    typed = sum(tf.values(), Counter[str]())
    for cat, counts in tf.items():
        scored = {t: c * math.log(1 + len(groups) / df[t]) for t, c in counts.items()}
        if len(groups) > 1 and any(df[t] < len(groups) for t in scored):  # a word every
            scored = {t: v for t, v in scored.items() if df[t] < len(groups)}  # one has names none
        # a misspelt word ("aplciación", "tlalyfox") names a category only when nothing else can;
        # a term two questions share beats one question's word; ties: the longer, more specific
        slip = {t: misspelt_among(t, typed) for t in scored}
        top = sorted(
            scored, key=lambda t: (slip[t], -min(support[cat][t], 2), -scored[t], -len(t), t)
        )[:n_terms]
        out[cat] = ([shown[t] for t in top], langs[cat])
    return out


@dataclass(frozen=True)
class Coverage:
    """How close the golden set comes to one topic area, and how many failures the area has."""

    nearest: float
    golden_id: str | None
    failures: int = 0
    near_share: float = 0.0  # share of the area's failures near a golden case


def topic_coverage(
    groups: Mapping[str, Sequence[Candidate]], reference: GoldenReference, near: float
) -> dict[str, Coverage]:
    """Topic id → how close the golden set comes to it (topic vectors: query + documents).

    A failure is *near* the golden set when some golden case comes within cosine ``near`` of
    it; an area counts its failures (as seen) that are. Most failures of a covered area are near
    a case about its documents even when worded far from it, while an area mixed into a
    cluster with a few failures of a covered neighbour stays mostly far.
    """
    members = [(m, v) for ms in groups.values() for m in ms if (v := topic_of(m)) is not None]
    topic = [str(m.body.get("topic") or m.category) for m, _ in members]
    failures: Counter[str] = Counter()
    for (m, _), t in zip(members, topic, strict=True):
        failures[t] += m.seen
    if not members or not len(reference):
        return {t: Coverage(0.0, None, failures[t]) for t in failures}
    sims = np.vstack([v for _, v in members]) @ reference.topics.T
    close: Counter[str] = Counter()
    for (m, _), t, best in zip(members, topic, sims.max(axis=1), strict=True):
        close[t] += m.seen * int(float(best) >= near)
    out: dict[str, Coverage] = {}
    for t in failures:
        sub = sims[[i for i, x in enumerate(topic) if x == t]]
        j = int(np.argmax(sub.max(axis=0)))
        share = close[t] / failures[t]
        out[t] = Coverage(float(sub[:, j].max()), reference.ids[j], failures[t], share)
    return out


def _vectors(members: Sequence[Candidate]) -> list[np.ndarray]:
    return [v for m in members if (v := topic_of(m)) is not None]


def _owners(
    groups: Mapping[str, Sequence[Candidate]], reference: GoldenReference, threshold: float
) -> dict[str, list[int]]:
    """Category → golden cases promoted from it, else those whose relevant chunks two or more of
    its failures retrieved or missed (the nearest such category), else those whose nearest
    category (by centroid) it is, above threshold. A case lies where its documents are: a
    neighbouring area may be as near in meaning without holding the case's pages."""
    cats = [c for c, ms in groups.items() if any(topic_of(m) is not None for m in ms)]
    if not len(reference) or not cats:
        return {}
    cents = np.vstack([unit(np.sum(_vectors(groups[c]), axis=0)) for c in cats])
    sims = reference.topics @ cents.T
    origins = reference.origins or [None] * len(reference)
    relevant = reference.relevant or [[] for _ in range(len(reference))]
    docs = {c: Counter(d for m in groups[c] for d in _documents(m)) for c in cats}
    out: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(sims):
        # one failure's chunk may be any page the retriever returned; two make it the area's
        held = [sum(docs[c][d] for d in relevant[i]) >= 2 for c in cats]
        j = max(range(len(cats)), key=lambda k: (held[k], row[k]))
        if origins[i] in groups:
            out[str(origins[i])].append(i)
        elif held[j] or row[j] >= threshold:
            out[cats[j]].append(i)
    return out


def _documents(row: Candidate) -> frozenset[str]:
    sig = row.body.get("signature") or {}
    ids = [*(sig.get("chunks") or ()), sig.get("missed"), *(sig.get("answers") or ())]
    return frozenset(str(c) for c in ids if c)


def kept_names(
    groups: Mapping[str, Sequence[Candidate]],
    named: Mapping[str, tuple[list[str], str]],
    recorded: Mapping[str, Sequence[str]],
) -> dict[str, tuple[list[str], str]]:
    """Each category's name: the one it was last given (``recorded``: the category log) while
    every term of it is still a word of one of the category's failures and one a name may take
    (:func:`surface_terms`), else the new one.

    A category is one thing from run to run (its id); its name changes only when it no longer
    describes the failures in it, not whenever the most telling terms reorder (one false alarm
    rejected, one more failure seen).
    """
    out = dict(named)
    for cat, members in groups.items():
        old = [str(t) for t in recorded.get(cat) or ()]
        words = set().union(*(terms(m.query) for m in members))
        kept = surface_terms(" ".join(old))  # a name word the name rules now refuse: renamed
        if old and cat in named and len(kept) == len(old) and set(kept) <= words:
            out[cat] = (old, named[cat][1])
    return out


def summarize(
    rows: Sequence[Candidate],
    reference: GoldenReference,
    *,
    new_threshold: float,
    min_cases: int = 3,
    n_terms: int = 3,
    n_examples: int = 3,
    recorded: Mapping[str, Sequence[str]] | None = None,
    announced: Collection[str] = (),
) -> list[CategorySummary]:
    """One summary per category: new categories first, then by failures seen.

    ``recorded``: the names the category log holds (:func:`kept_names`); ``announced``: the
    categories already announced as new, which stay new while they are uncovered and still
    categories (``MIN_FAILURES`` failures left): ``min_cases`` is what announcing takes, and one
    false alarm rejected does not take the announcement back.
    """
    groups: dict[str, list[Candidate]] = defaultdict(list)
    for row in rows:
        if row.category is not None and row.status != "golden" and not row.false_alarm:
            groups[row.category].append(row)
    named = kept_names(groups, name_terms(groups, n_terms), recorded or {})
    cover = topic_coverage(groups, reference, new_threshold)
    owners = _owners(groups, reference, new_threshold)
    out = [
        _summary(cat, members, named[cat], cover, owners.get(cat, []), reference, n_examples)
        for cat, members in groups.items()
    ]
    for s in out:
        area = cover.get(s.topic or "", Coverage(0.0, None))
        # covered: most of its failures lie near a golden case, or a golden case lies in it
        # (promoted from it, or nearest to it of all areas): a golden set holding two questions
        # of a topic covers it, also when the failures ask about its other passages
        s.new = (
            s.new
            and area.near_share <= NEW_SHARE
            and area.failures >= (MIN_FAILURES if s.id in announced else min_cases)
            and s.golden_cases == 0
            and s.statuses.get("rejected", 0) < s.candidates
        )
    out.sort(key=lambda s: (not s.new, -s.failures_seen, s.id))
    return out


def _summary(
    cat: str,
    members: Sequence[Candidate],
    named: tuple[list[str], str],
    cover: Mapping[str, Coverage],
    owned: Sequence[int],
    reference: GoldenReference,
    n_examples: int,
) -> CategorySummary:
    topic = str(members[0].body.get("topic") or cat)
    near = cover.get(topic, Coverage(0.0, None))
    labels = Counter(reference.categories[i] for i in owned if reference.categories[i])
    causes: Counter[str] = Counter()
    for m in members:  # a reviewer's corrected cause stands for all of its failures
        reviewed = (m.body.get("review") or {}).get("root_cause")
        tally = {reviewed: m.seen} if reviewed else m.body.get("root_causes")
        for cause, n in (tally or {str(m.root_cause): m.seen}).items():
            causes[str(cause)] += int(n)
    root = min(causes, key=lambda c: (-causes[c], c)) if causes else None
    # examples show the category's problem: failures of its root cause first, most seen first
    by_seen = sorted(members, key=lambda m: (m.cause != root, -m.seen, m.created_at, m.id))
    return CategorySummary(
        id=cat,
        root_cause=root,
        root_causes=dict(causes.most_common()),
        terms=named[0],
        examples=[m.query for m in by_seen[:n_examples]],
        candidates=len(members),
        failures_seen=sum(m.seen for m in members),
        golden_cases=len(owned),
        nearest_golden=near.nearest,
        new=not any(m.status == "covered" for m in members),
        golden_category=labels.most_common(1)[0][0] if labels else None,
        statuses=dict(Counter(m.status for m in members)),
        language=named[1],
        nearest_golden_id=near.golden_id,
        topic=topic,
    )


__all__ = [
    "DOC_WEIGHT",
    "WHAT_GOES_WRONG",
    "CategorySummary",
    "Coverage",
    "adopt",
    "categorise",
    "category_id",
    "kept_names",
    "name_terms",
    "summarize",
    "surface_terms",
    "terms",
    "topic_coverage",
    "topic_groups",
    "topic_of",
]
