"""Traffic for the end-to-end verdict benchmark, built from XQuAD (not from text we wrote).

XQuAD (``../shared/data/xquad_en``, ``xquad_es``) holds 240 Wikipedia paragraphs from 48 articles
and human questions with their answer span, the same questions in English and Spanish. Every
trace here is one RAG turn built from a question: which paragraphs the retriever returned, and an
answer phrased as a chat model would (a full sentence, in either language). Each trace carries
what it is (``kind``) and what a correct verdict is (``expect``: ``pass`` or the root cause).

Kinds (one trace each):
- ``clean``: the gold paragraph is retrieved among distractors; a correct full-sentence answer.
- ``clean_xling``: as clean, but the question and answer are in one language, the chunks in the
  other.
- ``clean_typo``: as clean, with typos in one or two of the question's words.
- ``correct_abstention``: the question's paragraph is in no trace at all (out of corpus); the
  retriever returned distractors; the answer declines.
- ``changed_value``: a correct answer whose value is replaced by another question's answer of the
  same shape (a number by a number, a name by a name) → ``generation``.
- ``added_claim``: a correct answer plus a sentence from a paragraph of the same article that was
  not retrieved → ``generation``.
- ``off_topic``: the gold paragraph is retrieved; the answer states something else from the
  context that does not answer the question → ``generation``.
- ``wrong_abstention``: the gold paragraph is retrieved; the answer declines →
  ``abstained_wrongly``.
- ``retrieval_miss``: the gold paragraph is not retrieved (other traces retrieved it); the answer
  states an invented value → ``retrieval``.
- ``out_of_corpus``: the question's paragraph is in no trace; distractors retrieved; the answer
  states an invented value → ``no_answer_expected``.
- ``miss_abstention`` (``build(miss_abstentions=True)``): a retrieval miss's chunks (paragraphs of
  the same article that lack the answer), and the model correctly says it cannot tell: its
  refusal is right for its prompt, the retriever missed the paragraph other traces retrieved →
  ``retrieval`` (never ``abstained_wrongly``).
- ``miss_recalled`` (``build(miss_recalls=True)``): a retrieval miss's chunks, answered with the
  question's right value, phrased as ``retrieval_miss`` phrases its invented one: the model
  answered from memory what the missed paragraph holds → ``retrieval``. A real miss comes both
  ways; ``retrieval_miss``'s invented value never sits in the missed paragraph, this one always
  does, so "the answer's value sits only in a chunk the retriever missed" is measured here.

Articles are split in two halves by their order in the corpus: ``tune`` (the first 24) and
``heldout`` (the last 24). Figures are reported on held-out articles only.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CLEAN_KINDS = ("clean", "clean_xling", "clean_typo", "correct_abstention")
EXPECT = {
    "clean": "pass",
    "clean_xling": "pass",
    "clean_typo": "pass",
    "correct_abstention": "pass",
    "changed_value": "generation",
    "added_claim": "generation",
    "off_topic": "generation",
    "wrong_abstention": "abstained_wrongly",
    "retrieval_miss": "retrieval",
    "out_of_corpus": "no_answer_expected",
}
FAILURE_KINDS = tuple(k for k in EXPECT if k not in CLEAN_KINDS)
# added after the kinds above, so the traffic they plant stays as it was
EXPECT["miss_abstention"] = "retrieval"
EXPECT["miss_recalled"] = "retrieval"
OUT_OF_CORPUS_SHARE = 0.12  # of paragraphs never shown in any trace

ABSTAIN = {
    "en": [
        "I'm sorry, but the provided documents don't contain that information.",
        "The context does not mention this, so I can't give a reliable answer.",
        "I couldn't find an answer to that question in the available sources.",
        "Based on the information I have, I'm not able to answer this question.",
    ],
    "es": [
        "Lo siento, pero los documentos proporcionados no contienen esa información.",
        "No tengo información suficiente en los documentos para responder a esa pregunta.",
        "No puedo responder con la información disponible.",
        "El contexto no menciona ese dato, así que no puedo confirmarlo.",
    ],
}


@dataclass
class Trace:
    """One planned RAG turn and what a correct verdict says about it."""

    trace_key: str
    kind: str
    expect: str
    split: str
    article: str
    qid: str
    question: str
    answer: str
    q_lang: str
    c_lang: str
    chunks: list[dict[str, str]]
    gold: str | None
    meta: dict[str, object] = field(default_factory=dict)


def _load(data: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for lang in ("en", "es"):
        root = data / f"xquad_{lang}"
        corpus = {d["id"]: d for d in map(json.loads, (root / "corpus.jsonl").open())}
        queries = {d["id"]: d for d in map(json.loads, (root / "queries_dev.jsonl").open())}
        qrels: dict[str, str] = {}
        for line in (root / "qrels_dev.tsv").read_text().splitlines()[1:]:
            qid, cid, _ = line.split("\t")
            qrels[qid] = cid
        out[lang] = {"corpus": corpus, "queries": queries, "qrels": qrels}
    return out


_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-ZÁÉÍÓÚÑ¿¡\"“(])")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text.strip().lstrip("\ufeff")) if s.strip()]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _strip_q(q: str) -> str:
    return q.strip().lstrip("¿").rstrip("?").strip()


def declarative(question: str, answer: str, lang: str) -> str | None:
    """A full-sentence answer built from the question's own words, or None when no frame fits."""
    q = _strip_q(question)
    if lang == "en":
        frames = [
            (r"^(?:who|what|which \w+) (is|was|are|were) (.+)$", "{2} {1} {a}."),
            (r"^who (\w+ed|\w+s) (.+)$", "{a} {1} {2}."),
            (r"^(?:what|which) (\w+) (did|does|do) (.+)$", "{3}: {a}."),
            (
                r"^how (?:many|much) (.+?) (are|were|is|was|have been|has been) (.+)$",
                "{a} {1} {2} {3}.",
            ),
            (r"^how (?:many|much) (.+?) (?:did|does|do|has|have) (.+)$", "{2}: {a} {1}."),
            (r"^when (did|was|were|is|does) (.+)$", "That was in {a}: {2}."),
            (r"^where (is|was|are|were|did|does) (.+)$", "{2} {1} in {a}."),
            (r"^what (?:is|was) the (.+?) of (.+)$", "The {1} of {2} is {a}."),
        ]
    else:
        frames = [
            (
                r"^(?:qué|quién|quiénes|cuál|cuáles) (es|era|fue|son|eran|fueron) (.+)$",
                "{2} {1} {a}.",
            ),
            (r"^quién (\w+ó) (.+)$", "{a} {1} {2}."),
            (r"^cuánt[oa]s (\w+(?: de \w+)?) (.+)$", "En total, {a} {1}."),
            (r"^cuándo (.+)$", "Fue en {a}: {1}."),
            (r"^dónde (.+)$", "{1}: en {a}."),
        ]
    for pattern, frame in frames:
        m = re.match(pattern, q, flags=re.IGNORECASE)
        if m:
            text = frame.format(None, *m.groups(), a=answer)
            return _cap(re.sub(r"\s+", " ", text))
    return None


def phrase(question: str, answer: str, lang: str, paragraph: str, rng: random.Random) -> str:
    """A correct answer as a chat model might write it: a frame from the question, the clause of
    the paragraph that holds the answer, or the short answer followed by a supporting detail."""
    style = rng.random()
    sents = _sentences(paragraph)
    holding = [s for s in sents if answer.lower() in s.lower()]
    if style < 0.4:
        made = declarative(question, answer, lang)
        if made:
            return made
    if style < 0.75 and holding:
        s = holding[0]
        words = s.split()
        if len(words) > 30:  # a model quotes the clauses that matter
            clauses = re.split(r"(?<=[,;:])\s+", s)
            at = next(i for i, c in enumerate(clauses + [answer]) if answer.lower() in c.lower())
            at = min(at, len(clauses) - 1)
            lo, hi = at, at + 1
            while sum(len(c.split()) for c in clauses[lo:hi]) < 10 and (
                lo > 0 or hi < len(clauses)
            ):
                lo, hi = max(0, lo - 1), min(len(clauses), hi + 1)
            s = _cap(" ".join(clauses[lo:hi]).rstrip(",;:. ")) + "."
        lead = {
            "en": ["", "According to the text, ", "The documents say that "],
            "es": ["", "Según el texto, ", "Los documentos indican que "],
        }[lang]
        pre = rng.choice(lead)
        first = s.split(" ", 1)[0]
        if pre and first in (
            "The",
            "It",
            "In",
            "He",
            "She",
            "They",
            "El",
            "La",
            "Los",
            "Las",
            "En",
        ):
            s = s[:1].lower() + s[1:]
        return pre + s
    short = {"en": "The answer is {a}.", "es": "La respuesta es {a}."}[lang].format(a=answer)
    detail = [s for s in sents if s not in holding and len(s.split()) < 40]
    return short + (" " + rng.choice(detail) if detail else "")


def typo(question: str, rng: random.Random) -> str:
    """One or two of the question's longer words misspelt (swap, drop or double a letter)."""
    words = question.split()
    idx = [i for i, w in enumerate(words) if len(w.strip("¿?,.")) >= 5]
    for i in rng.sample(idx, min(len(idx), rng.choice((1, 2)))):
        w = words[i]
        j = rng.randrange(1, len(w.strip("¿?,.")) - 2)
        op = rng.choice(("swap", "drop", "double"))
        if op == "swap":
            w = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
        elif op == "drop":
            w = w[:j] + w[j + 1 :]
        else:
            w = w[:j] + w[j] + w[j:]
        words[i] = w
    return " ".join(words)


def _shape(value: str) -> str:
    if re.search(r"\d", value):
        return "number"
    if value[:1].isupper():
        return "name"
    return "other"


def refusals_after_miss(traces: list[Trace], seed: int) -> list[Trace]:
    """For every retrieval miss, the same prompt answered with a (correct) refusal: the chunks
    share the question's topic and lack its answer (``miss_abstention``, expected ``retrieval``).
    Its own random stream, so the rest of the traffic is unchanged."""
    rng = random.Random(f"miss-abstention:{seed}")
    return [
        Trace(
            f"miss_abstention:{t.qid}",
            "miss_abstention",
            EXPECT["miss_abstention"],
            t.split,
            t.article,
            t.qid,
            t.question,
            rng.choice(ABSTAIN[t.q_lang]),
            t.q_lang,
            t.c_lang,
            t.chunks,
            None,
            dict(t.meta),
        )
        for t in traces
        if t.kind == "retrieval_miss" and not t.meta.get("repeat")
    ]


def recalls_after_miss(traces: list[Trace], data: Path) -> list[Trace]:
    """For every retrieval miss, the same prompt answered with the question's right value (the
    value the missed paragraph holds; ``miss_recalled``, expected ``retrieval``), in the frame
    ``retrieval_miss`` gives its invented value. No random draw: the rest is unchanged."""
    queries = {lang: d["queries"] for lang, d in _load(data).items()}
    out = []
    for t in traces:
        if t.kind != "retrieval_miss" or t.meta.get("repeat"):
            continue
        right = queries[t.q_lang][t.qid]["answers"][0]
        if any(right.lower() in c["content"].lower() for c in t.chunks):
            continue  # the prompt holds the value after all: no miss
        answer = declarative(t.question, right, t.q_lang) or {
            "en": "The answer is {a}.",
            "es": "La respuesta es {a}.",
        }[t.q_lang].format(a=right)
        out.append(
            Trace(
                f"miss_recalled:{t.qid}",
                "miss_recalled",
                EXPECT["miss_recalled"],
                t.split,
                t.article,
                t.qid,
                t.question,
                answer,
                t.q_lang,
                t.c_lang,
                t.chunks,
                None,
                dict(t.meta),
            )  # fmt: skip
        )
    return out


def build(
    data: Path = DATA, seed: int = 7, miss_abstentions: bool = False, miss_recalls: bool = False
) -> list[Trace]:
    """Every planned trace, deterministic for ``seed`` (``miss_abstentions``: with the
    ``miss_abstention`` kind added, :func:`refusals_after_miss`; ``miss_recalls``: with the
    ``miss_recalled`` kind added, :func:`recalls_after_miss`)."""
    rng = random.Random(seed)
    d = _load(data)
    corpus_en, corpus_es = d["en"]["corpus"], d["es"]["corpus"]
    articles = list(dict.fromkeys(doc["title"] for doc in corpus_en.values()))
    split_of = {
        a: ("tune" if i < len(articles) // 2 else "heldout") for i, a in enumerate(articles)
    }
    by_article: dict[str, list[str]] = defaultdict(list)
    for cid, doc in corpus_en.items():
        by_article[doc["title"]].append(cid)
    qids = sorted(d["en"]["queries"])
    hidden = {
        cid
        for cid in corpus_en
        if int(hashlib.sha256(f"{seed}:{cid}".encode()).hexdigest()[:8], 16) / 2**32
        < OUT_OF_CORPUS_SHARE
    }
    answers_by_shape: dict[tuple[str, str], list[str]] = defaultdict(list)
    for lang in ("en", "es"):
        for qid in qids:
            a = d[lang]["queries"][qid]["answers"][0]
            answers_by_shape[(lang, _shape(a))].append(a)

    def text(cid: str, lang: str) -> str:
        return (corpus_en if lang == "en" else corpus_es)[cid]["text"].lstrip("\ufeff")

    def chunk(cid: str, lang: str) -> dict[str, str]:
        return {"id": f"{cid}-{lang}", "content": text(cid, lang)}

    def distractors(cid: str, n: int, exclude: set[str]) -> list[str]:
        art = corpus_en[cid]["title"]
        same = [c for c in by_article[art] if c != cid and c not in exclude and c not in hidden]
        rng.shuffle(same)
        pool = [c for c in corpus_en if c not in exclude and c not in hidden and c != cid]
        out = same[: max(1, n - 1)]
        while len(out) < n:
            c = rng.choice(pool)
            if c not in out:
                out.append(c)
        return out

    def wrong_value(right: str, lang: str, context: str) -> str:
        options = [
            a
            for a in answers_by_shape[(lang, _shape(right))]
            if a.lower() not in context.lower() and a.lower() != right.lower()
        ]
        return rng.choice(options)

    traces: list[Trace] = []
    for n, qid in enumerate(qids):
        gold = d["en"]["qrels"][qid]
        art = corpus_en[gold]["title"]
        split = split_of[art]
        lang = rng.choice(("en", "es"))
        other = "es" if lang == "en" else "en"
        q = d[lang]["queries"][qid]["text"]
        a = d[lang]["queries"][qid]["answers"][0]

        def add(
            kind: str,
            question: str,
            answer: str,
            q_lang: str,
            c_lang: str,
            cids: list[str],
            gold_in: bool,
            _where: tuple[str, str, str, str] = (qid, split, art, gold),
            **meta: object,
        ) -> None:
            qid_, split_, art_, gold_ = _where  # bound now, not when the loop has moved on
            chunks = [chunk(c, c_lang) for c in cids]
            traces.append(
                Trace(
                    f"{kind}:{qid_}",
                    kind,
                    EXPECT[kind],
                    split_,
                    art_,
                    qid_,
                    question,
                    answer,
                    q_lang,
                    c_lang,
                    chunks,
                    f"{gold_}-{c_lang}" if gold_in else None,
                    dict(meta),
                )
            )

        if gold in hidden:  # out of corpus: a correct abstention, or an invented value
            cids = distractors(gold, 3, {gold})
            ctx = " ".join(text(c, lang) for c in cids)
            add("correct_abstention", q, rng.choice(ABSTAIN[lang]), lang, lang, cids, False)
            wrong = wrong_value(a, lang, ctx + text(gold, lang))
            invented = declarative(q, wrong, lang) or {"en": "It is {a}.", "es": "Es {a}."}[
                lang
            ].format(a=wrong)
            add("out_of_corpus", q, invented, lang, lang, cids, False)
            continue
        cids = [gold, *distractors(gold, 2, {gold})]
        rng.shuffle(cids)
        para = text(gold, lang)
        good = phrase(q, a, lang, para, rng)
        add("clean", q, good, lang, lang, cids, True)
        # same question, same language, chunks in the other language
        add("clean_xling", q, phrase(q, a, lang, para, rng), lang, other, cids, True)
        add(
            "clean_typo",
            typo(q, rng),
            phrase(q, a, lang, para, rng),
            lang,
            lang,
            cids,
            True,
        )
        kind = FAILURE_KINDS[n % len(FAILURE_KINDS)]
        if kind == "out_of_corpus":
            kind = "changed_value"
        ctx = " ".join(text(c, lang) for c in cids)
        if kind == "changed_value":
            wrong = wrong_value(a, lang, ctx)
            answer = good.replace(a, wrong) if a in good else declarative(q, wrong, lang)
            answer = answer or {"en": "The answer is {a}.", "es": "La respuesta es {a}."}[
                lang
            ].format(a=wrong)
            add(kind, q, answer, lang, lang, cids, True, wrong=wrong)
        elif kind == "added_claim":
            unseen = [c for c in by_article[art] if c not in cids]
            pool = unseen or [c for c in corpus_en if c not in cids]
            extra = rng.choice(_sentences(text(rng.choice(pool), lang)))
            add(kind, q, good + " " + extra, lang, lang, cids, True, added=extra)
        elif kind == "off_topic":
            sents = [s for c in cids if c != gold for s in _sentences(text(c, lang))]
            sents = [s for s in sents if a.lower() not in s.lower() and 6 <= len(s.split()) < 40]
            add(kind, q, rng.choice(sents), lang, lang, cids, True)
        elif kind == "wrong_abstention":
            add(kind, q, rng.choice(ABSTAIN[lang]), lang, lang, cids, True)
        elif kind == "retrieval_miss":
            miss = distractors(gold, 3, {gold})
            mctx = " ".join(text(c, lang) for c in miss)
            wrong = wrong_value(a, lang, mctx + para)
            invented = declarative(q, wrong, lang) or {
                "en": "The answer is {a}.",
                "es": "La respuesta es {a}.",
            }[lang].format(a=wrong)
            add(kind, q, invented, lang, lang, miss, False, missed=f"{gold}-{lang}")
    return (
        traces
        + (refusals_after_miss(traces, seed) if miss_abstentions else [])
        + (recalls_after_miss(traces, data) if miss_recalls else [])
    )


if __name__ == "__main__":  # a look at the traffic: one example per kind
    seen: set[str] = set()
    for t in build():
        if t.kind not in seen:
            seen.add(t.kind)
            print(
                f"[{t.kind} → {t.expect}] ({t.q_lang}/{t.c_lang}) Q: {t.question}\n  A: {t.answer}"
            )


# --- planted repeats for bench/categories.py (additive: build() above is unchanged) -------------

_ASK = {
    "en": ["Quick question: ", "Can you tell me: ", "I'd like to know, ", "Do you know "],
    "es": ["Una pregunta: ", "¿Me puedes decir ", "Quisiera saber: ", "Dime, "],
}


def paraphrase(question: str, lang: str, rng: random.Random) -> str:
    """The question as another user might ask it: a different opening, often a typo or two."""
    core = _strip_q(question)
    lead = rng.choice(_ASK[lang])
    body = core[:1].lower() + core[1:] if not core[:2].isupper() else core
    text = f"{lead}{body}?"
    if lang == "es" and not lead.startswith("¿"):
        text = f"{lead}¿{body}?"
    return typo(text, rng) if rng.random() < 0.5 else text


def _wrong_of(t: Trace, pool: list[str]) -> str | None:
    """The value a failing answer invented: the longest known answer it holds, not the question."""
    hits = [a for a in pool if a and a in t.answer and a not in t.question]
    return max(hits, key=len) if hits else None


def translated(t: Trace, data: Path, rng: random.Random) -> Trace | None:
    """The same failure asked in the other language (XQuAD's human translation of the question):
    the same chunks, the answer rebuilt in that language with the same wrong value or claim."""
    d = _load(data)
    lang = "es" if t.q_lang == "en" else "en"
    q2 = d[lang]["queries"][t.qid]["text"]
    a2 = d[lang]["queries"][t.qid]["answers"][0]
    gold = d["en"]["qrels"][t.qid]
    corpus = d[lang]["corpus"]
    fallback = {"en": "The answer is {a}.", "es": "La respuesta es {a}."}[lang]
    if t.kind == "wrong_abstention":
        answer = rng.choice(ABSTAIN[lang])
    elif t.kind in ("changed_value", "retrieval_miss", "out_of_corpus"):
        pool = [q["answers"][0] for q in d[t.q_lang]["queries"].values()]
        wrong = str(t.meta.get("wrong") or _wrong_of(t, pool) or "")
        if not wrong:
            return None
        answer = declarative(q2, wrong, lang) or fallback.format(a=wrong)
    elif t.kind == "added_claim":
        cids = {c["id"].rsplit("-", 1)[0] for c in t.chunks}
        title = corpus[gold]["title"]
        unseen = [c for c, doc in corpus.items() if doc["title"] == title and c not in cids]
        if not unseen:
            return None
        extra = rng.choice(_sentences(corpus[rng.choice(unseen)]["text"].lstrip("\ufeff")))
        answer = phrase(q2, a2, lang, corpus[gold]["text"], rng) + " " + extra
    elif t.kind == "off_topic":
        others = [c["id"].rsplit("-", 1)[0] for c in t.chunks if c["id"].rsplit("-", 1)[0] != gold]
        sents = [s for c in others for s in _sentences(corpus[c]["text"].lstrip("\ufeff"))]
        sents = [s for s in sents if a2.lower() not in s.lower() and 6 <= len(s.split()) < 40]
        if not sents:
            return None
        answer = rng.choice(sents)
    else:
        return None
    return Trace(
        f"translated:{t.qid}", t.kind, t.expect, t.split, t.article, t.qid, q2, answer, lang,
        t.c_lang, t.chunks, t.gold, {**t.meta, "repeat_of": t.trace_key, "repeat": "translated"},
    )  # fmt: skip


def paraphrased(t: Trace, rng: random.Random) -> Trace:
    """The same failure (same chunks, same answer) with the question asked another way."""
    return Trace(
        f"paraphrased:{t.qid}", t.kind, t.expect, t.split, t.article, t.qid,
        paraphrase(t.question, t.q_lang, rng), t.answer, t.q_lang, t.c_lang, t.chunks, t.gold,
        {**t.meta, "repeat_of": t.trace_key, "repeat": "paraphrased"},
    )  # fmt: skip
