"""Entity-span integrity: a multi-word name in an answer must appear in one piece in the sources."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, fold, words

# a word token of the original text, with inner apostrophes, dots and hyphens ("D.C.", "O'Neil")
_TOKEN = re.compile(r"[^\W_][\w'’.\-]*", re.UNICODE)
# lowercase words that may sit inside a name ("Bank of America", "Theo van Gogh")
_JOINERS = frozenset("of the de del la le van von da du di der den al bin y e".split())
# ... of which these also join two names in a list ("Douban y WeChat", "Marfil y Concepción")
_CONJUNCTIONS = frozenset("y e".split())
_SENTENCE_END = re.compile(r"[.!?:\n]")
_POSSESSIVE = re.compile(r"['’]s?$")
MAX_GAP = 3  # a "closest" source span may hold this many extra words


@dataclass(frozen=True, slots=True)
class BrokenSpan:
    """A name of the answer that the sources never write in one piece."""

    span: str
    closest: str | None

    @property
    def reason(self) -> str:
        """A one-line explanation, e.g. "'Amy Johnson' is not in the context (closest: ...)"."""
        why = f"'{self.span}' is not in the context"
        return f"{why} (closest: '{self.closest}')" if self.closest else why


def name_spans(text: str) -> list[str]:
    """Runs of two or more capitalised words (lowercase joiners allowed inside) in ``text``."""
    return [span for span, _ in _spans(text)]


def _spans(text: str) -> list[tuple[str, bool]]:
    """Name spans, each with whether its first word opens a sentence (and so may be capitalised
    only for that reason: "Despite Arbroath's win")."""
    spans: list[tuple[str, bool]] = []
    run: list[str] = []
    starts: list[bool] = []
    last_end, prev = -1, ""

    def flush() -> None:
        while run and (fold(run[-1]) in _JOINERS or fold(run[-1]) in STOPWORDS):
            run.pop()
        while run and fold(run[0]) in STOPWORDS:  # "The Phoenix Suns" -> "Phoenix Suns"
            run.pop(0)
            starts.pop(0)
        if len(run) >= 2:
            spans.append((" ".join(run), starts[0]))
        run.clear()
        starts.clear()

    for m in _TOKEN.finditer(text):
        tok = _POSSESSIVE.sub("", m.group().rstrip("."))
        gap = text[last_end : m.start()] if last_end >= 0 else " "
        if prev.endswith(".") and "." not in prev[:-1]:
            gap = "." + gap  # "process. Despite": the token kept the full stop, not the gap
        if gap.strip() or "\n" in gap:  # punctuation or a line break between words ends a name
            flush()
        if tok[:1].isupper() and fold(tok) in STOPWORDS:
            flush()  # "… the Panthers The Giants …": a capitalised "The" starts a new name
        if tok[:1].isupper() or (run and fold(tok) in _JOINERS):
            run.append(tok)
            starts.append(last_end < 0 or bool(_SENTENCE_END.search(gap)))
        else:
            flush()
        if m.group().endswith(("'s", "’s")):
            flush()  # "Kraft's husband": the name ends at the possessive
        last_end, prev = m.end(), m.group()
    flush()
    return spans


def _closest(span: list[str], source: str) -> str | None:
    """The shortest source passage that starts with the span's first word and ends with its
    last, with at most ``MAX_GAP`` words between (as the source writes it)."""
    first, last = re.escape(span[0]), re.escape(span[-1])
    pattern = rf"\b{first}\b(?:\W+\w+){{0,{len(span) - 2 + MAX_GAP}}}?\W+{last}\b"
    found = re.search(pattern, fold(source))
    if found is None:
        return None
    text = source if len(fold(source)) == len(source) else fold(source)
    return text[found.start() : found.end()]


class _Written:
    """The sources as one stream of folded words, asked whether they write a name."""

    def __init__(self, sources: list[str]) -> None:
        streams = [words(s) for s in sources]
        self.joined = "".join(f" {' '.join(s)} " for s in streams)
        self.vocab = {w for s in streams for w in s}

    def whole(self, toks: list[str]) -> bool:  # "FIFA Women" in "FIFA Women's World Cup"
        said = " ".join(toks)
        return len(toks) < 2 or f" {said} " in self.joined or f" {said} s " in self.joined

    def abbreviated(self, toks: list[str]) -> bool:
        """The sources write some of the name's words as their initials ("NYS Department of
        Financial Services" for "New York State Department of Financial Services")."""
        for i in range(len(toks) - 1):
            for j in range(i + 2, len(toks) + 1):
                if j - i == len(toks):
                    continue  # an acronym for the whole name is the word-level checks' business
                short = "".join(t[0] for t in toks[i:j])
                if f" {' '.join([*toks[:i], short, *toks[j:]])} " in self.joined:
                    return True
        return False

    def listed(self, toks: list[str]) -> bool:
        """Names joined by a conjunction, each written in the sources ("Douban y WeChat")."""
        cuts = [i for i, t in enumerate(toks) if t in _CONJUNCTIONS]
        parts = [toks[a + 1 : b] for a, b in zip([-1, *cuts], [*cuts, len(toks)], strict=True)]
        return bool(cuts) and all(parts) and all(self.whole(p) for p in parts)

    def chained(self, toks: list[str]) -> bool:
        """Two names the sources write, overlapping in two words or more: "Bay Area Rapid
        Transit District" from "Bay Area Rapid Transit" and "Rapid Transit District". One shared
        word is not enough: "Jack Brown University" is not "Jack Brown" and "Brown University"."""
        return any(
            self.whole(toks[:j]) and self.whole(toks[i:])
            for j in range(3, len(toks))
            for i in range(1, j - 1)
            if len(toks) - i >= 2 and toks[i] not in _JOINERS
        )


def broken_spans(answer: str, sources: list[str]) -> list[BrokenSpan]:
    """Names of ``answer`` (two or more words) not written contiguously in any of ``sources``.

    A shorter alias is fine when the sources use it ("Tim McIlrath" inside
    'Timothy James "Tim" McIlrath'), and so is a name chained from two the sources write
    ("IBM Cloud" + "Cloud Trust"); a merged or shortened name that the sources never write
    ("Amy Johnson" for "Amy Jo Johnson") is reported with the closest source span.
    """
    src = _Written(sources)
    out: list[BrokenSpan] = []
    for span, opens_sentence in _spans(answer):
        if all(w.isupper() for w in span.split() if len(w) > 1):
            continue  # "SQL SELECT", "STORED AS": keywords and acronyms, not a person's name
        toks = words(span)
        if src.whole(toks) or (opens_sentence and src.whole(toks[1:])):
            continue
        rest = toks[1:]
        while rest and (rest[0] in _JOINERS or rest[0] in STOPWORDS):
            rest = rest[1:]
        if opens_sentence and src.whole(rest):
            continue  # "Use the Set Limit option": the sentence's verb, then the name
        if src.listed(toks) or src.abbreviated(toks) or src.chained(toks):
            continue  # "Douban y WeChat", "NYS Department of ...", "IBM Cloud Trust"
        if not all(t in src.vocab for t in toks):
            continue  # an unknown word is reported by the word-level checks already
        closest = next((c for s in sources if (c := _closest(toks, s))), None)
        if closest and src.joined.count(f" {toks[-1]} ") > src.joined.count(
            f" {' '.join(words(closest))} "
        ):
            continue  # the sources also use the surname alone: "James Murdoch" is an alias
        out.append(BrokenSpan(span, closest))
    return out
