"""The observed corpus: every chunk any stored trace retrieved, searchable for a missed answer.

When nothing relevant reached the prompt, the job needs to know whether the knowledge base could
have answered: if some chunk the retriever returned for *other* traces holds the answer, the
retriever missed it (root cause ``retrieval``); if none does, the system should have abstained
(``no_answer_expected``). ragsieve never sees the knowledge base itself, only what traces
retrieved; that is the corpus here (the golden set, which holds chunk ids but no text, speaks
through its own "answerable" expectation instead).

Tables (written by the job only): ``corpus_chunks`` (one row per distinct chunk id: content, the
encoder's vector of its head, how many traces retrieved it, token count) and ``corpus_terms``
(an inverted index: term key → chunk id, term frequency) for BM25. ``update`` reads only traces
not indexed before, so a run costs O(new chunks). ``find_answer`` takes the BM25 and the
embedding top hits, fuses their ranks, and scores the candidates with the context judge's
own per-chunk evidence (:func:`ragsieve.evaluators.judges.offline.context.chunk_evidence`): a
hit reaches the context-relevance threshold, holds most of the question's terms, beats every
chunk the trace retrieved by a margin, and is not one of them in other words (a copy or a
translation). The hit must also name what the question names in the question's own words
(:func:`holds_question`): every name it asks about, and half of its weighted key terms as
written or misspelt, a near-certain translation counting half. A translation alone is weak
evidence: a chunk in the other language that shares the question's topic words ("football",
"learning") matches them as well by translation as the one that answers (unless the trace's
own retriever served chunks in that language: then the knowledge base answers across them).
A question that names nothing specific ("What more details do I need to know?") is never given
a missed chunk: any page "has details".
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass

import numpy as np

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges.offline.context import chunk_evidence, question_terms
from ragsieve.evaluators.judges.offline.text.terms import Match, TermIndex, key, tokens
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, language, sentences
from ragsieve.evaluators.records import RagInteraction
from ragsieve.evaluators.tools.embeddings import DIM, embed
from ragsieve.jobs.results.resultstore import load_interactions

HEAD_CHARS = 600  # the part of a chunk the encoder reads for search
CANDIDATES = 8  # chunks scored by the context judge per search
BM25_K1, BM25_B = 1.2, 0.75
# a missed chunk must answer clearly better than every chunk the trace retrieved: when it only
# fits as well, it shares the question's topic, and blaming the retriever would be a guess
HIT_LEAD = 0.1
# when a faithful, on-question answer already vouches for a retrieved chunk, a missed chunk must
# lead by more (retrieved chunks in the question's other language score lower on words alone)
VOUCHED_LEAD = 0.25
# a question whose key terms weigh this little (rarity summed: "help", "info", "details") names
# nothing specific: no chunk elsewhere can be shown to answer it
MIN_QUESTION_WEIGHT = 2.0
HIT_MIN_TERMS = 0.5  # share of the question's weighted terms a missed chunk must hold
HIT_MIN_WORDS = 0.5  # ... and of them, the share it must hold as written (exact or misspelt)
TRANSLATION_CREDIT = 0.5  # what a term found only by translation counts towards HIT_MIN_WORDS
SURE_TRANSLATION = 0.95  # ... and only a near-certain one
NAME_MIN = 0.8  # strength a name's match needs (a translated name only when near certain)
SAME_PASSAGE = 0.72  # cosine between two chunks' heads above which they are one passage


@dataclass(frozen=True, slots=True)
class CorpusHit:
    """A chunk of the observed corpus that answers a question the prompt could not."""

    chunk_id: str
    score: float
    traces: int  # traces that retrieved it
    window: str  # the sentences that answer
    holds_answer: bool = False  # the trace's answer is faithful to this chunk alone
    best_seen: float | None = None  # the best score among the chunks the trace retrieved

    def evidence(self) -> str:
        """One line for the verdict: which chunk, how sure, how often it was retrieved."""
        held = ", and it holds what the answer says" if self.holds_answer else ""
        return (
            f"the retriever missed {self.chunk_id} (answer score {self.score:.2f}, retrieved by"
            f" {self.traces} other trace(s){held}): '{self.window[:160]}'"
        )


@dataclass(frozen=True, slots=True)
class CorpusSearch:
    """A search's hit (the chunk the retriever missed), or the best chunk that answers as well
    as the retrieved ones without deciding it (``rival``)."""

    hit: CorpusHit | None
    rival: CorpusHit | None


def _terms(text: str) -> Counter[str]:
    return Counter(key(t) for t in tokens(text) if t not in STOPWORDS and len(t) > 1)


def holds_question(question: str, content: str, served: Set[str] = frozenset()) -> bool:
    """True when ``content`` names what ``question`` names: every name it asks about (found
    as written, misspelt or, near certainly, translated) and at least ``HIT_MIN_WORDS`` of its
    weighted key terms, a word found as written or misspelt counting in full and one found
    only by a near-certain translation counting ``TRANSLATION_CREDIT`` (a chunk in the other
    language that shares the question's topic words matches them as well by translation as the
    chunk that answers; the one that answers also holds what the question names as written).
    A chunk in another language is held to names only when the retriever ``served`` this trace
    chunks in that language: then this knowledge base answers the question across languages."""
    terms = question_terms(question)
    if not terms:
        return True
    qlang, clang = language(question), language(content)
    other = "unknown" not in (qlang, clang) and qlang != clang
    index = TermIndex(sentences(content) or [content], cross_lingual=other)
    names = {key(t) for w in re.findall(r"[^\W\d_][\w'-]*", question)[1:] if w[:1].isupper()
             for t in tokens(w)}  # fmt: skip
    found = {
        k: index.find(word, transposed=True, indel=k not in names) for k, (word, _) in terms.items()
    }
    if any(found[k].strength < NAME_MIN for k in names if k in found):
        return False  # the question asks about a name the chunk does not hold
    if other and clang in served:
        return True
    total = sum(w for _, w in terms.values())
    held = sum(w * _credit(found[k]) for k, (_, w) in terms.items())
    return held >= HIT_MIN_WORDS * total


def _credit(m: Match) -> float:
    if m.via in ("exact", "typo"):
        return 1.0
    return TRANSLATION_CREDIT if m.via == "translation" and m.strength >= SURE_TRANSLATION else 0.0


class ObservedCorpus:
    """Chunks seen in traces, with BM25 and embedding search."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._ids: list[str] | None = None
        self._at: dict[str, int] = {}  # chunk id -> row of the vector matrix
        self._vecs: np.ndarray | None = None

    def size(self) -> int:
        """Distinct chunks indexed."""
        return int(self.store.query("SELECT COUNT(*) FROM corpus_chunks")[0][0])

    def update(self, interactions: Iterable[RagInteraction]) -> int:
        """Index the chunks of traces not indexed before; returns how many chunks were new."""
        items = list(interactions)
        if not items:
            return 0
        seen = self._indexed([i.trace_id for i in items])
        fresh = [i for i in items if i.trace_id not in seen]
        if not fresh:
            return 0
        counts: Counter[str] = Counter()
        content: dict[str, str] = {}
        for it in fresh:
            for doc in {d.id: d for d in it.documents if d.id and d.content}.values():
                counts[doc.id] += 1
                content.setdefault(doc.id, doc.content or "")
        return self.add(content, counts, [i.trace_id for i in fresh])

    def index_window(
        self, trace_ids: Sequence[str], loaded: Mapping[str, RagInteraction], batch: int = 500
    ) -> int:
        """Index every trace of a run's window not indexed before (``loaded`` saves reloading
        the sampled ones); returns how many chunks were new."""
        new = 0
        done = self._indexed(trace_ids)
        todo = [t for t in dict.fromkeys(trace_ids) if t not in done]
        for i in range(0, len(todo), batch):
            part = todo[i : i + batch]
            have = {t: loaded[t] for t in part if t in loaded}
            missing = [t for t in part if t not in have]
            if missing:
                have.update(load_interactions(self.store, missing))
            new += self.update(have.values())
        return new

    def _indexed(self, trace_ids: Sequence[str]) -> set[str]:
        return {
            r[0]
            for r in self.store.query_in(
                "SELECT trace_id FROM corpus_traces WHERE trace_id IN ({ids})", list(trace_ids)
            )
        }

    def add(
        self,
        content: dict[str, str],
        counts: Counter[str] | None = None,
        traces: Sequence[str] = (),
    ) -> int:
        """Index chunks by id (new ids only; known ids get their trace counts raised)."""
        counts = counts or Counter()
        known = {
            r[0]
            for r in self.store.query_in(
                "SELECT chunk_id FROM corpus_chunks WHERE chunk_id IN ({ids})", list(content)
            )
        }
        new = [cid for cid in content if cid not in known]
        vecs = embed([content[c][:HEAD_CHARS] for c in new]) if new else np.zeros((0, DIM))
        now = time.time()
        with self.store.transaction() as cur:
            for cid, vec in zip(new, vecs, strict=True):
                terms = _terms(content[cid])
                cur.execute(
                    self.store.sql(
                        "INSERT INTO corpus_chunks (chunk_id, content, first_seen, traces, length,"
                        " vector) VALUES (?, ?, ?, ?, ?, ?)"
                    ),
                    (
                        cid,
                        content[cid],
                        now,
                        counts[cid],
                        sum(terms.values()),
                        vec.astype(np.float32).tobytes(),
                    ),
                )
                cur.executemany(
                    self.store.sql(
                        "INSERT INTO corpus_terms (term, chunk_id, tf) VALUES (?, ?, ?)"
                    ),
                    [(t, cid, n) for t, n in terms.items()],
                )
            for cid in known:
                if counts[cid]:
                    cur.execute(
                        self.store.sql(
                            "UPDATE corpus_chunks SET traces = traces + ? WHERE chunk_id = ?"
                        ),
                        (counts[cid], cid),
                    )
            cur.executemany(
                self.store.sql("INSERT INTO corpus_traces (trace_id) VALUES (?)"),
                [(t,) for t in traces],
            )
        if new:
            self._ids = self._vecs = None  # reload the vectors on the next search
        return len(new)

    def _vectors(self) -> tuple[list[str], np.ndarray]:
        if self._ids is None or self._vecs is None:
            rows = self.store.query("SELECT chunk_id, vector FROM corpus_chunks")
            self._ids = [r[0] for r in rows]
            self._at = {cid: i for i, cid in enumerate(self._ids)}
            self._vecs = (
                np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32).reshape(
                    len(rows), DIM
                )
                if rows
                else np.zeros((0, DIM), dtype=np.float32)
            )
        return self._ids, self._vecs

    def _bm25(self, question: str, limit: int) -> list[str]:
        q = list(_terms(question))
        if not q:
            return []
        n_docs, avg = self.store.query("SELECT COUNT(*), AVG(length) FROM corpus_chunks")[0]
        if not n_docs:
            return []
        avg = float(avg or 1)  # PostgreSQL's AVG of integers is a Decimal
        rows = self.store.query_in(
            "SELECT t.term, t.chunk_id, t.tf, c.length FROM corpus_terms t JOIN corpus_chunks c"
            " ON c.chunk_id = t.chunk_id WHERE t.term IN ({ids})",
            q,
        )
        df = Counter(r[0] for r in rows)
        scores: dict[str, float] = {}
        for term, cid, tf, length in rows:
            idf = math.log(1 + (n_docs - df[term] + 0.5) / (df[term] + 0.5))
            norm = tf + BM25_K1 * (1 - BM25_B + BM25_B * (length or 1) / avg)
            scores[cid] = scores.get(cid, 0.0) + idf * tf * (BM25_K1 + 1) / norm
        return sorted(scores, key=lambda c: -scores[c])[:limit]

    def candidates(self, question: str, exclude: set[str], k: int = CANDIDATES) -> list[str]:
        """Chunk ids most likely to answer ``question``: BM25 and embedding ranks fused (RRF)."""
        ids, vecs = self._vectors()
        fused: dict[str, float] = {}
        for rank, cid in enumerate(c for c in self._bm25(question, 4 * k) if c not in exclude):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (60 + rank)
        if len(ids):
            sims = vecs @ embed([question])[0]
            order = np.argsort(-sims)[: 4 * k + len(exclude)]
            dense = [ids[i] for i in order if ids[i] not in exclude]
            for rank, cid in enumerate(dense):
                fused[cid] = fused.get(cid, 0.0) + 1.0 / (60 + rank)
        return sorted(fused, key=lambda c: -fused[c])[:k]

    def _copy_of(self, cid: str, others: set[str]) -> bool:
        """True when ``cid`` is one of ``others`` in other words (a translation, a copy)."""
        _, vecs = self._vectors()
        at = self._at
        rows = [at[o] for o in others if o in at]
        if cid not in at or not rows:
            return False
        return bool((vecs[rows] @ vecs[at[cid]]).max() >= SAME_PASSAGE)

    def find_answer(
        self,
        question: str,
        exclude: Iterable[str],
        threshold: float,
        lead: float = 0.0,
        typed: str | None = None,
        holds: Callable[[str, str], bool] | None = None,
    ) -> CorpusHit | None:
        """The best chunk outside ``exclude`` (the chunks the trace retrieved) that answers
        ``question`` clearly better than any of them, or None (:meth:`search`'s hit)."""
        return self.search(question, exclude, threshold, lead, typed, holds).hit

    def search(
        self,
        question: str,
        exclude: Iterable[str],
        threshold: float,
        lead: float = 0.0,
        typed: str | None = None,
        holds: Callable[[str, str], bool] | None = None,
    ) -> CorpusSearch:
        """The best chunk outside ``exclude`` (the chunks the trace retrieved) that answers
        ``question`` clearly better than any of them (``hit``), and, when there is none, the
        best that answers it at least as well as they do (``rival``: evidence for the retriever
        that does not decide alone). ``typed``: for a follow-up read with words carried from
        earlier turns, the turn as typed, whose own terms the chunk must hold too (the carried
        words name the earlier subject, whose passages would otherwise be found again: "fun
        things to do there (Tokyo sushi restaurants)"). ``holds(chunk_id, content)``: when
        given, the hit must also hold what the trace's answer says (the best such chunk among
        those that answer clearly better)."""
        none = CorpusSearch(None, None)
        if sum(w for _, w in question_terms(question).values()) < MIN_QUESTION_WEIGHT:
            return none  # "What more details do I need?" names nothing a chunk could answer
        exclude = set(exclude)
        picked = [c for c in self.candidates(question, exclude) if not self._copy_of(c, exclude)]
        if not picked:
            return none
        rows = {
            r[0]: (r[1], int(r[2]))
            for r in self.store.query_in(
                "SELECT chunk_id, content, traces FROM corpus_chunks WHERE chunk_id IN ({ids})",
                [*picked, *exclude],
            )
        }
        order = [c for c in picked if c in rows]
        seen = [c for c in exclude if c in rows]
        # scored together, so terms every chunk shares (the topic) weigh the same for all
        # words as written: a near word lifts the retrieved chunks and the missed one alike, but
        # a chunk that answers holds the question's own words
        scored = chunk_evidence(question, [rows[c][0] for c in [*order, *seen]], near_words=False)
        best_seen = max((e.score for e in scored[len(order) :]), default=0.0)
        served = {language(rows[c][0]) for c in seen}
        ranked = sorted(zip(order, scored[: len(order)], strict=True), key=lambda p: -p[1].score)
        rival: CorpusHit | None = None
        for cid, ev in ranked if holds is not None else ranked[:1]:
            if ev.score < threshold or ev.terms < HIT_MIN_TERMS:
                break  # a miss must hold most of what the question names, not its type
            content = rows[cid][0]
            if not holds_question(question, content, served):
                continue  # it shares the question's topic, or only its words' translations
            if typed is not None and not holds_question(typed, content, served):
                continue  # it answers the earlier turn, not what this one asks
            found = CorpusHit(cid, ev.score, rows[cid][1], ev.window, holds is not None, best_seen)
            if ev.score - best_seen < max(lead, HIT_LEAD):
                if rival is None and ev.score >= best_seen:
                    rival = found
                break  # no better than what was retrieved: the topic, not a missed answer
            if holds is not None and not holds(cid, content):
                rival = rival or found
                continue  # it answers the question, but not with what the answer says
            return CorpusSearch(found, None)
        return CorpusSearch(None, rival)

    def by_words(self, text: str, exclude: Set[str], k: int) -> list[tuple[str, str]]:
        """``(chunk id, content)`` of the ``k`` chunks outside ``exclude`` that BM25 ranks
        first for ``text`` (an answer: where its words sit)."""
        ids = [c for c in self._bm25(text, k + len(exclude)) if c not in exclude][:k]
        if not ids:
            return []
        rows = dict(
            self.store.query_in(
                "SELECT chunk_id, content FROM corpus_chunks WHERE chunk_id IN ({ids})", ids
            )
        )
        return [(c, str(rows[c])) for c in ids if c in rows]


__all__ = ["CorpusHit", "CorpusSearch", "ObservedCorpus", "holds_question"]
