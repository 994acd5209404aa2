"""What makes two flagged failures one case: the question (in any language or spelling) and the
failure itself (root cause, chunks, wrong value).

A :class:`Signature` holds what dedup compares; :func:`duplicate_reason` decides and says why.
A question and its translation, a paraphrase and a typo'd copy are one case; two different
questions about one passage are two cases even when they fail on the same chunk. The rule:

1. the same normalised query merges whatever else differs;
2. otherwise either the query cosine (the multilingual encoder) reaches
   ``near_duplicate_cosine`` (the same question asked another way or in another language), or
   the failure agrees *and* the question does:
   - weak agreement (mostly the same chunks): cosine ``support_cosine`` and a share
     ``term_share`` of key terms found in the other query (typos forgiven, translations found
     across languages; 0 as shipped: the cosine alone decides, see the constants below);
   - strong agreement (the same missed chunk, the same unsupported value, exactly the same
     chunks): what weak agreement takes, or ``cosine + share_weight * key terms >=
     strong_score`` above a cosine floor of ``support_cosine - strong_relief``, with
     ``strong_score`` chosen on licence-clean questions
     (see the constants below): a different question about the same passage misses the same
     chunk too, so the question must decide;
   - both sides agree (the same missed chunk or exactly the same chunks, *and* the same
     unsupported value): the questions need only be about the same subject, cosine
     ``both_sides_floor``. Another question on the passage misses the same chunk, but it does
     not also make up the same value.

Before any of these (all but the same normalised query), the two questions must ask the same thing
(:func:`asks_apart`): a high cosine says two questions are about the same things, not that they
ask the same of them. They are two cases when they expect different kinds of answer (a count /
a duration / a price / a date / a yes or no: ``text.asked.kinds_apart``), in any language and
whatever the failure shares; when, in one language, the chunk that best answers
each does not also answer the other; when they share no key term in any language (unless one
chunk answers both); and, where the failure does not tie them (only the wording, or mostly the
same chunks), when two same-language questions each name a subject the other does not ("the
Pro plan" / "the Basic plan"), or differ by a word in the same frame, in any case ("the pro
plan" / "the basic plan": ``text.asked.told_apart``; a synonym or a typo there is no
difference). Nothing here is fitted. The answering chunk does not merge on its own: other
questions on one passage share it (a missed chunk already counts as strong evidence).

The root cause is not part of the rule: the judges may name one failure's repeats differently
(a paraphrase read as ``retrieval``, its translation as ``no_answer_expected``), and a golden
case is the question, not the judges' first reading of it. The merged candidate keeps the
majority cause (``candidates._merge``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragsieve.evaluators.judges.offline.text.asked import (
    find_term,
    kinds_apart,
    name_keys,
    question_terms,
    told_apart,
)
from ragsieve.evaluators.judges.offline.text.terms import TermIndex, all_values, tokens
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, entities, language
from ragsieve.evaluators.records import EvalResult, RagInteraction, normalize_text

_TAG = re.compile(r"\[[A-Z_]+\]")
# a yes/no answer's particle, capitalised mid-answer ("I think Yes"): one bit two different
# yes/no questions share by chance, not a made-up value that names this failure
_ANSWER_WORDS = frozenset({"yes", "no", "si", "sí"})
CHUNK_OVERLAP = 0.5  # Jaccard of two chunk-id sets that counts as "the same chunks"
# The merge constants below are fitted only on licence-clean questions (RAGTruth QA, HaluEval QA,
# MTRAG: MIT, MIT, Apache-2.0) by bench/paraphrase_clean.py. Those sets hold no re-wordings by
# different people, so only the false-merge side is fitted: each constant is the most merging
# value at which at most 2 % of the question pairs it guards against merge, in every fit source,
# chosen leave-one-source-out; how many re-wordings the rule then merges is measured on XQuAD,
# CoQAR, CANARD and CAsT 2020 (bench/paraphrase_clean.py), never fitted there.
# Strong path (the same missed chunk, value or chunks): cosine + SHARE_WEIGHT * key-term share >=
# STRONG_SCORE. SHARE_WEIGHT is no fit: it puts the key-term share on the cosine's scale (the
# ratio of their spreads over the clean pairs of nearest different questions). STRONG_SCORE: at
# most 2 % of those pairs (each question with its nearest other question, and two turns of one
# MTRAG conversation) merge; every fold picks 0.775-0.8, left out at most 1.0 % merge (MTRAG).
# Measured, not fitted: it merges 0.70 (CANARD) to 0.98 (XQuAD) of re-wordings, and 0.16
# (XQuAD) to 0.36 (CANARD) of other questions on the same paragraph or conversation: the clean
# sets hold no such pairs of stand-alone questions, so this side is bounded on easier pairs.
STRONG_SCORE = 0.775
SHARE_WEIGHT = 0.31
# Weak path (mostly the same chunks, cosine >= support_cosine): the key-term share it also needs.
# At cosine 0.7 at most 1.5 % of the clean nearest pairs (HaluEval, left out) merge with no
# key-term condition at all, so every fold picks 0.
TERM_SHARE = 0.0
# Both sides of the failure agreeing (the same missed chunk or chunks and the same made-up
# value) asks only that the questions be about the same subject: the lowest cosine that at
# most 2 % of pairs of different questions about different passages reach, in every fit source.
# Folds pick 0.45-0.475; left out, at most 2.0 % reach it (RAGTruth). Measured, not fitted: 0.84
# (CANARD) to 1.0 (XQuAD) of re-wordings by other people reach it.
BOTH_SIDES_FLOOR = 0.475
# near_duplicate_cosine (0.9), support_cosine (0.7), strong_relief (0.15) and CHUNK_OVERLAP are
# round settings, not fitted; none of the clean nearest pairs reaches a cosine of 0.9.


@dataclass(frozen=True)
class DedupRule:
    """The thresholds of :func:`duplicate_reason` (from ``golden`` settings)."""

    near_duplicate_cosine: float = 0.9
    support_cosine: float = 0.7
    term_share: float = TERM_SHARE
    strong_relief: float = 0.15
    strong_score: float = STRONG_SCORE
    share_weight: float = SHARE_WEIGHT
    both_sides_floor: float = BOTH_SIDES_FLOOR

    @property
    def floor(self) -> float:
        """The lowest query cosine at which any path may merge."""
        return min(self.support_cosine - self.strong_relief, self.both_sides_floor)


@dataclass(frozen=True)
class Signature:
    """A failure as dedup sees it."""

    query: str
    norm: str
    root_cause: str | None
    chunks: frozenset[str]
    missed: str | None
    values: frozenset[str]
    lang: str
    # the chunks that answer the question, best first: the missed chunk, else the prompt's
    # chunks the context judge found holding what is asked (empty: the job found none)
    answers: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """What a candidate keeps (``body["signature"]``) to be compared in later runs."""
        return {
            "chunks": sorted(self.chunks),
            "missed": self.missed,
            "values": sorted(self.values),
            "lang": self.lang,
            "answers": list(self.answers),
        }


def unsupported_values(answer: str | None, context: Iterable[str], query: str) -> frozenset[str]:
    """Numbers and names the answer states that neither the chunks nor the question hold."""
    if not answer:
        return frozenset()
    answer = _TAG.sub(" ", answer)  # a redaction tag ([EMAIL]) is not a value
    ctx = " ".join(context)
    nums = all_values(answer) - all_values(ctx) - all_values(query)
    names = entities(answer) - entities(ctx) - entities(query) - _ANSWER_WORDS
    low = ctx.lower()
    return frozenset(nums | {n for n in names if n not in low})


def answering_chunks(
    results: Iterable[EvalResult], in_prompt: Iterable[str], missed: str | None
) -> tuple[str, ...]:
    """The chunks that answer the question, best first: the missed chunk (the observed chunk
    that answers it), else the prompt's chunks the context judge scored as holding what is
    asked (its per-chunk ``relevant``), else none."""
    if missed:
        return (missed,)
    used = set(in_prompt)
    for r in results:
        meta = r.metadata if isinstance(r.metadata, Mapping) else {}
        if r.evaluator != "context_relevance" or not isinstance(meta.get("chunks"), list):
            continue
        hits = [
            (float(c.get("score") or 0.0), str(c["id"]))
            for c in meta["chunks"]
            if isinstance(c, Mapping) and c.get("relevant") and str(c.get("id")) in used
        ]
        return tuple(cid for _, cid in sorted(hits, key=lambda h: (-h[0], h[1])))
    return ()


def from_interaction(
    it: RagInteraction,
    query: str,
    answer: str | None,
    root_cause: str | None,
    missed: str | None,
    results: Iterable[EvalResult] = (),
) -> Signature:
    """The signature of a flagged interaction (``query`` and ``answer`` already scrubbed;
    ``results``: its judges' results, where the context judge says which chunks answer)."""
    used = [d for d in it.documents if d.in_prompt is not False]
    norm = normalize_text(query)
    ids = [d.id for d in used if d.id]
    return Signature(
        query=query,
        norm=norm,
        root_cause=root_cause,
        chunks=frozenset(ids),
        missed=missed,
        values=unsupported_values(answer, [d.content or "" for d in used], query),
        lang=language(query),
        answers=answering_chunks(results, ids, missed),
    )


def from_body(body: Mapping[str, Any], norm: str, root_cause: str | None) -> Signature:
    """The signature a candidate row kept (older rows: chunk ids and missed chunk only)."""
    sig = body.get("signature") or {}
    chunks = sig.get("chunks")
    if chunks is None:
        chunks = [c.get("id") for c in body.get("chunks") or [] if c.get("in_prompt") is not False]
    query = str(body.get("query", ""))
    return Signature(
        query=query,
        norm=norm,
        root_cause=root_cause,
        chunks=frozenset(str(c) for c in chunks if c),
        missed=sig.get("missed", body.get("missed_chunk")),
        values=frozenset(sig.get("values") or ()),
        lang=str(sig.get("lang") or language(query)),
        answers=tuple(str(c) for c in sig.get("answers") or ()),
    )


def _content(text: str) -> list[str]:
    return [w for w in tokens(text) if w not in STOPWORDS and len(w) > 1]


def term_share(a: Signature, b: Signature) -> float:
    """Mean strength with which each query's key terms occur in the other (0 when none).

    Exact keys and misspellings always count; translations count when the languages differ.
    """
    cross = a.lang != b.lang
    shares: list[float] = []
    for one, other in ((a, b), (b, a)):
        words = _content(one.query)
        if not words:
            continue
        index = TermIndex([other.query], cross_lingual=cross)
        shares.append(sum(index.find(w).strength for w in words) / len(words))
    return sum(shares) / len(shares) if shares else 0.0


def failure_agrees(a: Signature, b: Signature) -> tuple[str, bool] | None:
    """Why the two failures look like one, and whether that evidence is strong, or None.

    Strong: the same missed chunk, the same unsupported value, or exactly the same chunks (two
    or more). Weak: mostly the same chunks.
    """
    if a.missed and a.missed == b.missed:
        return f"same missed chunk {a.missed}", True
    if a.values & b.values:
        return f"same wrong value {sorted(a.values & b.values)[0]!r}", True
    if len(a.chunks) >= 2 and a.chunks == b.chunks:
        return f"same {len(a.chunks)} chunks", True
    if a.chunks and b.chunks:
        jac = len(a.chunks & b.chunks) / len(a.chunks | b.chunks)
        if jac >= CHUNK_OVERLAP:
            shared, every = len(a.chunks & b.chunks), len(a.chunks | b.chunks)
            return f"mostly the same chunks ({shared} of {every})", False
    return None


def both_sides_agree(a: Signature, b: Signature) -> str | None:
    """The failure agrees on both of its sides, or None: the retrieval side (the same missed
    chunk, or exactly the same chunks) and the generation side (the same unsupported value).

    Another question on the same passage misses the same chunk (one side); it does not also
    make up the same value, which answers *this* question. Two independent sides agreeing is
    the failure repeated, whatever the wording.
    """
    same = sorted(a.values & b.values)
    if not same:
        return None
    if a.missed and a.missed == b.missed:
        return f"same missed chunk {a.missed} and same wrong value {same[0]!r}"
    if len(a.chunks) >= 2 and a.chunks == b.chunks:
        return f"same {len(a.chunks)} chunks and same wrong value {same[0]!r}"
    return None


def duplicate_reason(new: Signature, old: Signature, cosine: float, rule: DedupRule) -> str | None:
    """Why ``new`` is the same case as ``old`` (one line for the merge record), or None.

    With strong failure evidence the query may be further away (down to ``rule.strong_relief``
    off the cosine) when its cosine and key terms together reach ``rule.strong_score``: a
    translation with typos still names the same things, another question on the same passage
    names other things. When both sides of the failure agree (:func:`both_sides_agree`) the
    questions need only be about the same subject (cosine ``rule.both_sides_floor``). Two
    questions :func:`asks_apart` are never merged (asked only of a pair that would merge).
    """
    if new.norm == old.norm:
        return "same normalised query"
    both = both_sides_agree(new, old) if cosine >= rule.both_sides_floor else None
    agrees = failure_agrees(new, old)
    why = _merges(new, old, cosine, rule, both, agrees)
    tied = both is not None or bool(agrees and agrees[1])
    if why is None or asks_apart(new, old, tied=tied, both=bool(both)):
        return None
    return why


def _merges(
    new: Signature,
    old: Signature,
    cosine: float,
    rule: DedupRule,
    both: str | None,
    agrees: tuple[str, bool] | None,
) -> str | None:
    """The paths of :func:`duplicate_reason` (its docstring), before :func:`asks_apart`."""
    if cosine >= rule.near_duplicate_cosine:
        return f"query cosine {cosine:.2f}"
    if both:
        return f"query cosine {cosine:.2f}, {both}"
    if cosine < rule.support_cosine - rule.strong_relief or agrees is None:
        return None
    failure, strong = agrees
    share = term_share(new, old)
    # strong evidence is never asked more than weak evidence is
    weak_ok = cosine >= rule.support_cosine and share >= rule.term_share
    if not (weak_ok or (strong and cosine + rule.share_weight * share >= rule.strong_score)):
        return None
    how = "translation" if new.lang != old.lang and "unknown" not in (new.lang, old.lang) else ""
    parts = [f"query cosine {cosine:.2f}", f"key terms {share:.2f}", failure]
    return (how + ": " if how else "") + ", ".join(parts)


def _names_missing(one: Signature, other: Signature) -> list[str]:
    """The names ``one`` asks about (its capitalised words) that ``other`` does not hold, in
    any spelling (same-language questions only: see :func:`asks_apart`)."""
    names = name_keys(one.query)
    words = [w for k, (w, _) in question_terms(one.query).items() if k in names]
    if not words:
        return []
    index = TermIndex([other.query])
    return [w for w in words if not find_term(index, w, True).strength]


def asks_apart(a: Signature, b: Signature, *, tied: bool = False, both: bool = False) -> str | None:
    """Why two questions ask different things (module docstring), or None.

    ``tied``: the failures agree strongly (the same missed chunk, value or chunks); ``both``:
    on both of their sides (:func:`both_sides_agree`), which is the failure repeated whatever
    the wording, so only different answering chunks (same-language questions: the context
    judge's choice is not comparable across languages) part them. Without strong
    agreement, two same-language questions that each name a subject the other does not are
    about different things; across languages a name takes the other language's form
    ("Warsaw" / "Varsovia"), so names cannot tell there.
    """
    if kinds := kinds_apart(a.query, b.query):  # whatever chunks they share, in any language
        return f"asks for another kind of answer (a {kinds[0]} / a {kinds[1]})"
    # the context judge reads each question in its own language: across languages its choice
    # of chunk is not comparable (a translation's best chunk may be another of the passage's)
    best_elsewhere = bool(a.answers and b.answers) and (
        a.answers[0] not in b.answers or b.answers[0] not in a.answers
    )
    same_lang = a.lang == b.lang != "unknown"  # two questions no language is read from: either
    if same_lang and best_elsewhere:
        return f"answered by different chunks ({a.answers[0]} / {b.answers[0]})"
    if both:
        return None
    one_chunk = bool(set(a.answers) & set(b.answers)) or bool(a.missed and a.missed == b.missed)
    if not one_chunk and _content(a.query) and _content(b.query) and not term_share(a, b):
        return "no key term in common"  # unless one chunk answers both: the same thing asked
    if not tied and same_lang:
        only_a, only_b = _names_missing(a, b), _names_missing(b, a)
        if only_a and only_b:
            return f"names different subjects ({only_a[0]} / {only_b[0]})"
        if differ := told_apart(a.query, b.query):  # the same frame, another word: any case
            return f"names different subjects ({differ[0][0]} / {differ[0][1]})"
    return None


def doc_vector(chunk_vectors: Mapping[str, np.ndarray], sig: Signature) -> np.ndarray | None:
    """The documents a failure is about: its chunks' vectors, the missed chunk counted twice."""
    vecs = [chunk_vectors[c] for c in sorted(sig.chunks) if c in chunk_vectors]
    if sig.missed and sig.missed in chunk_vectors:
        vecs += [chunk_vectors[sig.missed]] * 2
    if not vecs:
        return None
    total = np.sum(vecs, axis=0)
    return np.asarray(total / max(float(np.linalg.norm(total)), 1e-12), dtype=np.float32)


__all__ = [
    "DedupRule",
    "answering_chunks",
    "asks_apart",
    "Signature",
    "both_sides_agree",
    "doc_vector",
    "duplicate_reason",
    "failure_agrees",
    "from_body",
    "from_interaction",
    "term_share",
    "unsupported_values",
]
