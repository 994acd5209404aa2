"""The current golden set as dedup and novelty see it, and what growth reads of the observed corpus.

Each case carries two vectors: its query's (dedup: "is this failure already a golden case?")
and its *topic* (novelty: the query plus the documents of its relevant chunks, read from the
observed corpus when the traces retrieved them; the query alone otherwise).

The observed corpus (``corpus_chunks``, written by the verdicts stage) also gives growth its
chunk vectors and its *chunk twins* (:func:`observed_twins`): a bilingual knowledge base keeps
a page once per language under two ids, and a failure asked in each language retrieves its own
language's copy; twins let dedup read the two copies as one chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.golden.sets import load_golden, parse_version
from ragsieve.evaluators.judges.offline.text.text import language
from ragsieve.evaluators.records import GoldenCase, normalize_text
from ragsieve.evaluators.tools.embeddings import DIM
from ragsieve.evaluators.tools.userfile import regular_file
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.growth.topics import topic_vector, unit
from ragsieve.jobs.sampling.golden_cache import golden_vectors
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase

Embed = Callable[[Sequence[str]], np.ndarray]
# the weight of the documents beside the query in a topic vector. Derived, not fitted: question
# and documents count alike in a topic similarity when w² · sd(d·d') = sd(q·q') over questions
# about different passages of licence-clean sets (bench/categories_clean.py: RAGTruth QA 1.05,
# HaluEval QA 0.92, MTRAG 1.05; mean 1.01)
DOC_WEIGHT = 1.0


@dataclass(frozen=True)
class GoldenReference:
    """Golden cases with their normalised queries and unit vectors, in one order."""

    ids: list[str]
    queries: list[str]
    norms: list[str]
    categories: list[str | None]
    vectors: np.ndarray
    source: str
    relevant: list[list[str]] | None = None
    topics_: np.ndarray | None = None
    # the failure category a case was promoted from (``metadata.category_id``), when it was
    origins: list[str | None] | None = None

    @property
    def topics(self) -> np.ndarray:
        """Topic vectors (query + relevant documents), one row per case."""
        return self.vectors if self.topics_ is None else self.topics_

    def __len__(self) -> int:
        return len(self.ids)

    def exact(self, norm_query: str) -> int | None:
        """Index of a case whose normalised query equals ``norm_query``."""
        try:
            return self.norms.index(norm_query)
        except ValueError:
            return None


def versions(path: str | Path) -> dict[int, Path]:
    """Every existing numbered version of ``path``'s set, ``<stem>_vN<suffix>`` by N (version 0
    is a version; an unversioned ``<stem><suffix>`` is not listed, it counts as version 1)."""
    p = Path(path)
    stem = re.sub(r"_v\d+$", "", p.stem)
    out: dict[int, Path] = {}
    if p.parent.is_dir():
        pattern = re.compile(rf"^{re.escape(stem)}_v(\d+){re.escape(p.suffix or '.jsonl')}$")
        for sib in p.parent.iterdir():
            m = pattern.match(sib.name)
            if m:
                out.setdefault(int(m.group(1)), sib)
    return out


def newest_version(path: str | Path) -> Path:
    """The highest existing ``<stem>_vN`` sibling of ``path`` (``path`` itself when none is newer).

    Promotion writes the next version next to the configured one, so novelty follows it without
    a config change.
    """
    p = Path(path)
    own = parse_version(p)
    best_v = own if own is not None else (1 if p.exists() else 0)
    newer = {v: sib for v, sib in versions(p).items() if v > best_v}
    return newer[max(newer)] if newer else p


def chunk_vectors(store: Store, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """Vectors of the observed corpus (``corpus_chunks``) for the ids it holds."""
    wanted = sorted(set(chunk_ids))
    if not wanted:
        return {}
    rows = store.query_in(
        "SELECT chunk_id, vector FROM corpus_chunks WHERE chunk_id IN ({ids})", wanted
    )
    out: dict[str, np.ndarray] = {}
    for cid, blob in rows:
        if blob:
            out[str(cid)] = np.frombuffer(bytes(blob), dtype=np.float32).copy()
    return out


CHUNK_HEAD = 600  # the part of a chunk the encoder reads (as the observed corpus does)


def observed_vectors(
    store: Store, todo: Sequence[FlaggedCase], embed: Embed
) -> dict[str, np.ndarray]:
    """Chunk id → vector: the observed corpus's, else the encoder's on the chunk's head."""
    content: dict[str, str] = {}
    for f in todo:
        for d in f.interaction.documents:
            if d.id and d.content:
                content.setdefault(d.id, d.content[:CHUNK_HEAD])
        missed = f.metadata.get("missed_chunk")
        if missed:
            content.setdefault(str(missed), "")
    known = chunk_vectors(store, list(content))
    rest = [c for c in content if c not in known and content[c]]
    if rest:
        known.update(zip(rest, embed([content[c] for c in rest]), strict=True))
    return known


def nearest_chunks(ids: Sequence[str], vecs: np.ndarray, wanted: Sequence[str]) -> dict[str, str]:
    """Each wanted chunk's nearest other chunk (cosine of unit vectors; ids not held skipped)."""
    at = {c: i for i, c in enumerate(ids)}
    rows = [at[c] for c in dict.fromkeys(wanted) if c in at]
    if not rows or len(ids) < 2:
        return {}
    sims = vecs[rows] @ vecs.T
    sims[np.arange(len(rows)), rows] = -np.inf  # not itself
    return {ids[r]: ids[int(j)] for r, j in zip(rows, np.argmax(sims, axis=1), strict=True)}


def mutual_twins(nearest: dict[str, str], langs: dict[str, str]) -> dict[str, str]:
    """Chunk → its twin, both ways: two chunks in two languages, each the other's nearest chunk.

    The principle: a page and its translation are nearer each other than either is to any
    other page of its own language; with an incomplete corpus the nearest chunk of the *other*
    language alone would pair unrelated pages (their translations were never retrieved), so a
    chunk whose nearest chunk is of its own language, or of no language the text shows, has no
    twin, and the relation must hold both ways.
    """
    out: dict[str, str] = {}
    for c, t in nearest.items():
        lc, lt = langs.get(c, "unknown"), langs.get(t, "unknown")
        if nearest.get(t) == c and "unknown" not in (lc, lt) and lc != lt:
            out[c], out[t] = t, c
    return out


def observed_twins(store: Store, chunk_ids: Sequence[str]) -> dict[str, str]:
    """The twins (:func:`mutual_twins`) of ``chunk_ids`` among the observed corpus's chunks."""
    wanted = sorted(set(chunk_ids))
    if not wanted:
        return {}
    rows = store.query("SELECT chunk_id, vector FROM corpus_chunks")
    rows = [r for r in rows if r[1]]
    if len(rows) < 2:
        return {}
    ids = [str(r[0]) for r in rows]
    vecs = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32)
    vecs = vecs.reshape(len(rows), DIM)
    near = nearest_chunks(ids, vecs, wanted)
    near |= nearest_chunks(ids, vecs, sorted(set(near.values()) - set(near)))
    text = store.query_in(
        "SELECT chunk_id, content FROM corpus_chunks WHERE chunk_id IN ({ids})",
        sorted(set(near) | set(near.values())),
    )
    return mutual_twins(near, {str(c): language(str(t)[:CHUNK_HEAD]) for c, t in text})


def _topics(
    store: Store, vectors: np.ndarray, relevant: list[list[str]], doc_weight: float
) -> np.ndarray:
    known = chunk_vectors(store, [c for ids in relevant for c in ids])
    out = vectors  # copied on the first topic that differs (a large set often has none)
    for i, ids in enumerate(relevant):
        vecs = [known[c] for c in ids if c in known]
        if vecs:
            if out is vectors:
                out = np.array(vectors, copy=True)
            out[i] = topic_vector(vectors[i], unit(np.sum(vecs, axis=0)), doc_weight)
    return out


def _file_cases(
    path: str | Path, known: set[str], embed: Embed, cache: Path | None
) -> tuple[Path, list[GoldenCase], np.ndarray | None]:
    """The newest version of ``path``, its cases the store does not hold, and their vectors
    when ``cache`` keeps the file's (else None: the caller embeds them)."""
    current = newest_version(path)
    try:
        regular_file(current)  # /dev/zero, a FIFO or a folder is refused, not read
    except ConfigError as exc:
        raise ConfigError(f"golden.path: {exc}") from None
    cases = load_golden(current).cases
    fresh = [i for i, c in enumerate(cases) if c.id not in known]
    saved = None
    if fresh and cache is not None:
        every = golden_vectors(current, [c.query for c in cases], embed, cache)
        saved = every if len(fresh) == len(cases) else every[fresh]  # no copy when all are new
    return current, [cases[i] for i in fresh], saved


def _stacked(vecs: list[np.ndarray], saved: np.ndarray | None) -> np.ndarray:
    """The store's vectors, then the file's cached ones (joined in one copy)."""
    matrix = (
        np.vstack(vecs).astype(np.float32, copy=False) if vecs else np.zeros((0, DIM), np.float32)
    )
    if saved is not None:
        matrix = np.concatenate([matrix, np.asarray(saved, dtype=np.float32)])
    return matrix


def load_reference(
    repo: CandidateRepo,
    path: str | Path | None,
    embed: Embed,
    *,
    doc_weight: float = DOC_WEIGHT,
    cache: Path | None = None,
) -> GoldenReference:
    """Golden rows of the store, plus the newest version of ``path`` when one is configured.

    ``cache``: a folder keeping the file's query vectors across runs (``sampling.golden_cache``;
    only for the built-in encoder, which is what ``embed`` must then be).
    """
    ids: list[str] = []
    relevant: list[list[str]] = []
    queries: list[str] = []
    cats: list[str | None] = []
    origins: list[str | None] = []
    vecs: list[np.ndarray] = []
    missing: list[int] = []
    for row in repo.select(["golden"]):
        ids.append(str(row.body.get("case_id", row.id)))
        queries.append(row.query)
        cats.append(row.category)
        # the category's id, not its name (``row.category``): a name may change, and
        # ``categories._owners`` keys categories by id
        origins.append(((row.body.get("case") or {}).get("metadata") or {}).get("category_id"))
        relevant.append(list((row.body.get("case") or {}).get("relevant_chunks") or {}))
        vec = row.embedding
        if vec is None:
            missing.append(len(vecs))
            vec = np.zeros(DIM, dtype=np.float32)
        vecs.append(vec)
    source, saved = "store", None
    if path is not None:
        current, fresh, saved = _file_cases(path, set(ids), embed, cache)
        source = str(current)
        for case in fresh:
            ids.append(case.id)
            queries.append(case.query)
            cats.append(case.category)
            origins.append((case.metadata or {}).get("category_id"))
            relevant.append(list(case.relevant_chunks))
            if saved is None:
                missing.append(len(vecs))
                vecs.append(np.zeros(DIM, np.float32))
    matrix = _stacked(vecs, saved)
    if missing:
        matrix[missing] = embed([queries[i] for i in missing])
    return GoldenReference(
        ids=ids,
        queries=queries,
        norms=[normalize_text(q) for q in queries],
        categories=cats,
        vectors=matrix,
        source=source,
        relevant=relevant,
        topics_=_topics(repo.store, matrix, relevant, doc_weight) if len(ids) else None,
        origins=origins,
    )
