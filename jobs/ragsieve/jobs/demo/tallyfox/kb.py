"""The demo knowledge base: Tallyfox help-centre chunks with stable ids and their facts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

_DOC_RE = re.compile(r"^# (doc_\d+) \| (en|es) \| (\w+) \| (.+)$")
_CHUNK_RE = re.compile(r"^## chunk_(\d+)$")
_FACT_RE = re.compile(r"^\? (\w+) (\d+) \| (.+)$")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable passage: ``doc_N#chunk_K`` with its sentences."""

    id: str
    doc_id: str
    lang: str
    topic: str
    title: str
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        """The passage as the retriever and the prompt see it."""
        return " ".join(self.sentences)

    @property
    def metadata(self) -> dict[str, str]:
        """What the retriever reports next to the text."""
        return {"doc_id": self.doc_id, "title": self.title, "lang": self.lang, "topic": self.topic}


@dataclass(frozen=True, slots=True)
class Fact:
    """A question the KB answers: per language, the answering sentence and question phrasings."""

    key: str
    topic: str
    answers: dict[str, tuple[str, int]] = field(
        default_factory=dict
    )  # lang -> (chunk id, sentence)
    questions: dict[str, tuple[str, ...]] = field(default_factory=dict)  # lang -> phrasings

    @property
    def chunk_ids(self) -> frozenset[str]:
        """Every chunk that holds the answer (one per language)."""
        return frozenset(cid for cid, _ in self.answers.values())


@dataclass(frozen=True)
class KnowledgeBase:
    """Chunks in file order plus the facts keyed by name."""

    chunks: tuple[Chunk, ...]
    facts: dict[str, Fact]
    _by_id: dict[str, Chunk] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {c.id: c for c in self.chunks})

    def chunk(self, chunk_id: str) -> Chunk:
        """Look a chunk up by id (KeyError when unknown)."""
        return self._by_id[chunk_id]

    def answer_sentence(self, fact: Fact, lang: str) -> str:
        """The sentence that answers ``fact`` in ``lang`` (falls back to any language)."""
        cid, idx = fact.answers.get(lang) or next(iter(fact.answers.values()))
        return self.chunk(cid).sentences[idx]

    @property
    def topics(self) -> tuple[str, ...]:
        """Topic names in first-seen order."""
        return tuple(dict.fromkeys(c.topic for c in self.chunks))


def parse_kb(text: str) -> KnowledgeBase:
    """Parse the ``kb.md`` format; raises ValueError naming the line on any inconsistency."""
    chunks: list[Chunk] = []
    facts: dict[str, dict] = {}
    doc: tuple[str, str, str, str] | None = None
    sentences: list[str] = []
    chunk_no = -1
    pending: list[tuple[int, str, int, list[str]]] = []

    def close() -> None:
        if doc is None or chunk_no < 0:
            return
        if not sentences:
            raise ValueError(f"{doc[0]}#chunk_{chunk_no} has no sentences")
        cid = f"{doc[0]}#chunk_{chunk_no}"
        chunks.append(Chunk(cid, doc[0], doc[1], doc[2], doc[3], tuple(sentences)))
        for lineno, key, idx, qs in pending:
            if idx >= len(sentences):
                raise ValueError(f"kb.md:{lineno}: sentence {idx} not in {cid}")
            entry = facts.setdefault(key, {"topic": doc[2], "answers": {}, "questions": {}})
            if entry["topic"] != doc[2] or doc[1] in entry["answers"]:
                raise ValueError(f"kb.md:{lineno}: fact {key!r} clashes with an earlier one")
            entry["answers"][doc[1]] = (cid, idx)
            entry["questions"][doc[1]] = tuple(qs)

    in_comment = False
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if in_comment or line.startswith("<!--"):
            in_comment = not line.endswith("-->")
            continue
        if not line:
            continue
        if m := _DOC_RE.match(line):
            close()
            doc, chunk_no, sentences, pending = (m[1], m[2], m[3], m[4]), -1, [], []
        elif m := _CHUNK_RE.match(line):
            close()
            if doc is None or int(m[1]) != chunk_no + 1:
                raise ValueError(f"kb.md:{lineno}: chunks must be numbered 0, 1, 2... per doc")
            chunk_no, sentences, pending = int(m[1]), [], []
        elif m := _FACT_RE.match(line):
            qs = [q.strip() for q in m[3].split("|") if q.strip()]
            pending.append((lineno, m[1], int(m[2]), qs))
        elif chunk_no >= 0:
            sentences.append(line)
        else:
            raise ValueError(f"kb.md:{lineno}: text outside a chunk: {line[:40]!r}")
    close()
    ids = [c.id for c in chunks]
    if len(set(ids)) != len(ids):
        raise ValueError("kb.md: duplicate chunk ids")
    return KnowledgeBase(
        chunks=tuple(chunks),
        facts={k: Fact(k, v["topic"], v["answers"], v["questions"]) for k, v in facts.items()},
    )


@lru_cache(maxsize=1)
def load_kb() -> KnowledgeBase:
    """The packaged Tallyfox knowledge base (parsed once)."""
    text = (
        resources.files("ragsieve.jobs.demo.tallyfox").joinpath("kb.md").read_text(encoding="utf-8")
    )
    return parse_kb(text)
