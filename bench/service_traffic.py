"""Service-desk traffic for ``bench/service.py``, built from public text this project did not write.

English: Doc2Dial (``../shared/data/multiturn/doc2dial/dev.jsonl``), goal-oriented dialogues on
US government service pages (DMV, SSA, VA, student aid). Each row is a user's turn, the page block
that grounds the agent's reply and the annotated grounding span. Questions are kept when they
stand alone (a question mark, five words or more, no pronoun pointing back into the dialogue);
the clean answer is the grounding span widened to the whole sentences that hold it (annotators
marked clause fragments such as "For security reasons ,"; an extractive assistant replies in
sentences), and a span that is a question (a page's heading: "Can I get free VA health care?")
is no reply. A topic is the service page (``doc_id``).

Spanish: MEMERAG es (``../shared/data/realrag/memerag_en_es/dev.jsonl``), questions people wrote
in Spanish, five retrieved Wikipedia passages each and answers by real models with per-sentence
support labels. The clean answer is one labelled faithful; its gold passage is the one sharing
most words with it, and the trace carries all five passages it was written from (with fewer, a
faithful answer names what the trace never showed). A topic is the question.

A service desk is also asked what it does not cover: English questions from MEMERAG (Wikipedia
topics) go to the service desk, whose retriever returns service pages; these, and the Spanish
questions of hidden topics, give the correct abstentions and out-of-corpus answers. (A Doc2Dial
page is never hidden: service pages overlap, so another page often does answer.)

Kinds and expectations are ``bench/e2e_traffic.py``'s (clean, changed_value, added_claim,
off_topic, wrong_abstention, retrieval_miss; a hidden topic, one no trace ever retrieves, gives
correct_abstention and out_of_corpus). Each planted failure also comes back once paraphrased (the
same failure asked another way, ``repeat_of``), to see whether one failure keeps one root cause.
Topics are split by a hash into ``tune`` and ``heldout`` halves.

``build_licence_clean`` plants the same kinds in licence-clean text only (the data README: numbers
fitted from it may ship): MTRAG's questions that stand alone, one domain per collection (IBM Cloud
docs, FiQA finance, ClapNQ Wikipedia, US government pages), and RAGTruth's MS MARCO web queries,
each with a faithful answer a real model or a person wrote from its passages.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from pathlib import Path

from e2e_traffic import (
    ABSTAIN,
    DATA,
    EXPECT,
    FAILURE_KINDS,
    Trace,
    paraphrased,
    refusals_after_miss,
)

DOC2DIAL = Path("multiturn") / "doc2dial" / "dev.jsonl"
MEMERAG = Path("realrag") / "memerag_en_es" / "dev.jsonl"
# licence-clean text (the data README: numbers fitted from these may ship)
MTRAG = Path("realrag") / "mtrag" / "dev.jsonl"
RAGTRUTH = Path("realrag") / "ragtruth_qa" / "dev.jsonl"
HIDDEN_SHARE = 0.22  # topics no trace retrieves (correct abstentions and out-of-corpus answers)
OFF_DOMAIN_SHARE = 0.6  # of MEMERAG's English questions, asked of the (English) service desk
MAX_PER_TOPIC = 3  # Doc2Dial questions kept per service page
WIDEN_CHARS = 160  # a span is widened to a sentence boundary this near (pages lack punctuation)
_BACK_REFERENCE = re.compile(
    r"(?i)^\W*(?:and|but|so|ok|okay|alright|ah|what about|how about|what if)\b"
    r"|\b(?:it|its|this|that|they|them|these|those|there|he|she|his|her)\b"
)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NAME = re.compile(r"(?<![.!?]\s)(?<=\s)[A-ZÁÉÍÓÚÑ][\wáéíóúñ]{3,}(?:\s[A-ZÁÉÍÓÚÑ][\wáéíóúñ]+)*")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-ZÁÉÍÓÚÑ¿¡\"(])")


def _h(text: str, salt: str = "") -> float:
    return int(hashlib.sha256(f"{salt}:{text}".encode()).hexdigest()[:8], 16) / 2**32


def _pid(text: str) -> str:
    return "p" + hashlib.sha256(text.encode()).hexdigest()[:10]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text.strip()) if s.strip()]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.casefold()) if len(w) > 3}


class _Item:
    """One question with its gold passage, the passages retrieved with it and a clean answer."""

    def __init__(self, qid: str, topic: str, lang: str, question: str, answer: str, gold: str,
                 retrieved: list[str], pool: str) -> None:  # fmt: skip
        self.qid, self.topic, self.lang, self.question = qid, topic, lang, question
        self.answer, self.gold, self.retrieved, self.pool = answer, gold, retrieved, pool


_BOUNDARY = re.compile(r"[.!?](?=\s)|\n")


def _whole_sentences(passage: str, span: str) -> str:
    """``span`` widened to the sentences of ``passage`` that hold it (``span`` if not found)."""
    at = passage.find(span)
    if at < 0:
        return span
    stop = at + len(span)
    starts = [m.end() for m in _BOUNDARY.finditer(passage, max(0, at - WIDEN_CHARS), at + 1)]
    ends = _BOUNDARY.finditer(passage, stop - 1, stop + WIDEN_CHARS)
    start = starts[-1] if starts else (0 if at <= WIDEN_CHARS else at)
    tail = len(passage) if len(passage) - stop <= WIDEN_CHARS else stop
    end = next((m.end() for m in ends), tail)
    return passage[start:end].strip()


def _doc2dial(data: Path) -> list[_Item]:
    rows = [json.loads(line) for line in (data / DOC2DIAL).open(encoding="utf-8")]
    out: list[_Item] = []
    per_topic: dict[str, int] = defaultdict(int)
    for r in rows:
        q = r["question"].strip()
        span = (r["meta"].get("grounding_span") or "").strip()
        topic = r["meta"]["doc_id"]
        if not q.endswith("?") or len(q.split()) < 5 or _BACK_REFERENCE.search(q):
            continue
        if len(span.split()) < 6 or per_topic[topic] >= MAX_PER_TOPIC:
            continue
        if span.rstrip().endswith("?"):  # a page's heading ("Can I get ...?"), not a reply
            continue
        per_topic[topic] += 1
        span = _whole_sentences(r["passages"][0], span)
        answer = span[:1].upper() + span[1:]
        answer = answer if answer.endswith((".", "!", "?")) else answer + "."
        out.append(
            _Item(r["id"], topic, "en", q, answer, r["passages"][0], [], r["meta"]["domain"])
        )
    return out


def _memerag(data: Path, lang: str = "es") -> list[_Item]:
    rows = [json.loads(line) for line in (data / MEMERAG).open(encoding="utf-8")]
    out: dict[str, _Item] = {}
    for r in rows:
        if f":{lang}:" not in r["id"] or r["label_faithful"] is not True:
            continue
        qid = r["id"].split("#")[0]
        if qid in out:
            continue
        words = _words(r["answer"])
        gold = max(r["contexts"], key=lambda c: len(words & _words(c)))
        others = [c for c in r["contexts"] if c != gold]
        out[qid] = _Item(qid, qid, lang, r["question"].strip(), r["answer"].strip(), gold,
                         others, f"memerag-{lang}")  # fmt: skip
    return list(out.values())


def _answered(path: Path, source: str) -> list[_Item]:
    """Licence-clean items: each question that stands alone (of MTRAG's conversations: five
    words or more, no pronoun pointing back; RAGTruth's web queries: three words or more) with
    a faithful answer a real model or a person wrote
    from its passages; the gold passage shares most words with the answer, the others are the
    passages retrieved with it. The domain is MTRAG's collection (IBM Cloud docs, FiQA finance,
    ClapNQ Wikipedia, US government pages) or RAGTruth's MS MARCO web passages."""
    out: dict[str, _Item] = {}
    for r in map(json.loads, path.open(encoding="utf-8")):
        q = " ".join(r["question"].split())
        if r["label_faithful"] is not True or not r["contexts"] or q in out:
            continue
        if source == "mtrag" and (len(q.split()) < 5 or _BACK_REFERENCE.search(q)):
            continue  # a follow-up sent without its conversation
        if len(q.split()) < 3:
            continue
        words = _words(r["answer"])
        gold = max(r["contexts"], key=lambda c: len(words & _words(c)))
        collection = str((r["meta"].get("extra") or {}).get("collection") or "")
        pool = f"{source}_{collection.split('-')[2]}" if collection else source
        qid = f"{source}:{hashlib.sha256(q.encode()).hexdigest()[:10]}"
        others = [c for c in r["contexts"] if c != gold]
        out[q] = _Item(qid, qid, "en", q, r["answer"].strip(), gold, others, pool)
    return list(out.values())


def _changed(answer: str, question: str, context: str, values: list[str],
             rng: random.Random) -> tuple[str, str] | None:  # fmt: skip
    """The answer with one of its values (a number, else a name) replaced by another value of
    the same shape that neither the question nor the context states."""
    for pattern in (_NUMBER, _NAME):
        held = [m.group() for m in pattern.finditer(answer) if m.group() not in question]
        if not held:
            continue
        right = rng.choice(held)
        options = [v for v in values if pattern.fullmatch(v) and v not in context and v != right]
        if pattern is _NUMBER and not options:
            options = [str(int(re.sub(r"\D", "", right)[:6] or "1") + rng.randint(3, 40))]
        if options:
            wrong = rng.choice(options)
            return answer.replace(right, wrong, 1), wrong
    return None


def _domain(it: _Item) -> str:
    """The trace's domain for leave-one-domain-out figures: the Doc2Dial service (dmv, ssa,
    va, studentaid), Spanish Wikipedia, or English Wikipedia asked of a service desk."""
    if it.qid.startswith(("doc2dial", "mtrag", "ragtruth")):
        return it.pool
    return f"wikipedia_{it.lang}"


def build(data: Path = DATA, seed: int = 26, miss_abstentions: bool = True) -> list[Trace]:
    """Every planned trace, deterministic for ``seed``; ``miss_abstentions``: each retrieval
    miss also answered with a correct refusal (``miss_abstention``, expected ``retrieval``; added
    after the rest, so the rest is unchanged)."""
    service = _doc2dial(data)
    # English questions the service pages do not cover: MEMERAG's, asked of the service desk
    domains = sorted({it.pool for it in service})
    offdomain = [it for it in _memerag(data, "en") if _h(it.topic, "off") < OFF_DOMAIN_SHARE]
    for it in offdomain:
        it.pool = domains[int(_h(it.topic, "pool") * len(domains))]
    spanish = _memerag(data, "es")
    items = service + spanish + offdomain
    hidden = {it.topic for it in spanish if _h(it.topic, "hidden") < HIDDEN_SHARE}
    hidden |= {it.topic for it in offdomain}
    return _plant(items, hidden, seed, miss_abstentions)


def build_licence_clean(data: Path = DATA, seed: int = 26) -> list[Trace]:
    """The same kinds planted in licence-clean text only (MTRAG's four collections and
    RAGTruth's MS MARCO passages: five domains), a share of each domain's questions hidden
    (correct abstentions and out-of-corpus answers)."""
    items = _answered(data / MTRAG, "mtrag") + _answered(data / RAGTRUTH, "ragtruth")
    hidden = {it.topic for it in items if _h(it.topic, "hidden") < HIDDEN_SHARE}
    return _plant(items, hidden, seed, True)


def _plant(items: list[_Item], hidden: set[str], seed: int, miss_abstentions: bool) -> list[Trace]:
    rng = random.Random(seed)
    split = {it.topic: ("tune" if _h(it.topic, "split") < 0.5 else "heldout") for it in items}
    shown = {p for it in items if it.topic not in hidden for p in [it.gold, *it.retrieved]}
    never = {p for it in items if it.topic in hidden for p in [it.gold, *it.retrieved]} - shown
    pools: dict[str, list[str]] = defaultdict(list)
    for it in items:
        for p in [it.gold, *it.retrieved]:
            if p not in never and p not in pools[it.pool]:
                pools[it.pool].append(p)
    values = [
        m.group() for it in items for pat in (_NUMBER, _NAME) for m in pat.finditer(it.answer)
    ]
    traces: list[Trace] = []

    def distractors(it: _Item, n: int) -> list[str]:
        pool = [p for p in pools[it.pool] if p != it.gold and p not in it.retrieved]
        return rng.sample(pool, n)

    def add(it: _Item, kind: str, answer: str, chunks: list[str], gold_in: bool,
            **meta: object) -> Trace:  # fmt: skip
        t = Trace(
            f"{kind}:{it.qid}", kind, EXPECT[kind], split[it.topic], it.topic, it.qid,
            it.question, answer, it.lang, it.lang,
            [{"id": _pid(c), "content": c} for c in chunks],
            _pid(it.gold) if gold_in else None, {"domain": _domain(it), **meta},
        )  # fmt: skip
        traces.append(t)
        return t

    kinds = [k for k in FAILURE_KINDS if k != "out_of_corpus"]
    for n, it in enumerate(items):
        if it.topic in hidden:
            chunks = distractors(it, 3)
            add(it, "correct_abstention", rng.choice(ABSTAIN[it.lang]), chunks, False)
            add(it, "out_of_corpus", it.answer, chunks, False)
            continue
        chunks = [it.gold, *(it.retrieved or distractors(it, 2))]
        rng.shuffle(chunks)
        add(it, "clean", it.answer, chunks, True)
        ctx = " ".join(chunks)
        kind = kinds[n % len(kinds)]
        changed = _changed(it.answer, it.question, ctx, values, rng)
        if kind == "changed_value" and changed is None:
            kind = "added_claim"
        if kind == "changed_value" and changed is not None:
            add(it, kind, changed[0], chunks, True, wrong=changed[1])
        elif kind == "added_claim":
            others = [p for p in pools[it.pool] if p not in chunks]
            extra = rng.choice(_sentences(rng.choice(others)) or [others[0]])
            add(it, kind, f"{it.answer} {extra}", chunks, True, added=extra)
        elif kind == "off_topic":
            sents = [s for c in chunks if c != it.gold for s in _sentences(c)]
            sents = [s for s in sents if 6 <= len(s.split()) < 40] or sents
            add(it, kind, rng.choice(sents), chunks, True)
        elif kind == "wrong_abstention":
            add(it, kind, rng.choice(ABSTAIN[it.lang]), chunks, True)
        elif kind == "retrieval_miss":  # the page's answer, given from pages that do not hold it
            answer = changed[0] if changed is not None else it.answer
            add(it, kind, answer, distractors(it, 3), False, missed=_pid(it.gold))
    planted = [t for t in traces if t.expect != "pass"]
    traces += [paraphrased(t, rng) for t in planted]
    if miss_abstentions:  # after the rest: their own random stream, the rest unchanged
        traces += refusals_after_miss(traces, seed)
    return traces


if __name__ == "__main__":  # a look at the traffic: one example per kind and language
    seen: set[tuple[str, str]] = set()
    all_traces = build()
    print(len(all_traces), "traces")
    for t in all_traces:
        if (t.kind, t.q_lang) not in seen:
            seen.add((t.kind, t.q_lang))
            print(f"[{t.kind} {t.q_lang} → {t.expect}] Q: {t.question}\n  A: {t.answer[:200]}")
