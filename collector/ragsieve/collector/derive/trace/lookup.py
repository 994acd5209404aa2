"""Indexes built once per trace, so deriving a trace stays linear in its spans (issue 47).

Choosing the generation asked, for each LLM leaf, which PROMPT span ended before it (a scan of
every span) and how many retrieved chunks its prompt quotes (every chunk against every prompt):
16k spans took 22 s, 50k 255 s. :class:`PromptIndex` answers the first by bisection and
:class:`NeedleIndex` the second in one pass over the prompt.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

from ragsieve.collector.derive.trace.attrs import get_str, mapping, parse_object
from ragsieve.collector.wire.spans import SpanRecord

KEY_CHARS = 16  # needles are found by their first KEY_CHARS characters, then checked whole
DIRECT_NEEDLES = 48  # up to this many distinct needles, ``in`` per needle is the faster way


def has_template(span: SpanRecord) -> bool:
    """The span carries a prompt template or its variables (what ``template_info`` reads)."""
    attrs = mapping(span.attributes)
    template = get_str(attrs, "llm.prompt_template.template")
    return bool(template or parse_object(attrs.get("llm.prompt_template.variables")))


class PromptIndex:
    """PROMPT spans carrying a template, by end time: the latest that ended by a given time."""

    def __init__(self, spans: Iterable[SpanRecord], roles: Mapping[str, str]) -> None:
        ranked = [
            (s.end_ns, -i, s)
            for i, s in enumerate(spans)
            if roles.get(s.span_id) == "PROMPT" and s.end_ns and has_template(s)
        ]
        ranked.sort(key=lambda r: (r[0], r[1]))
        self._ends = [r[0] for r in ranked]
        self._spans = [r[2] for r in ranked]

    def ended_by(self, t_ns: int, exclude: set[str]) -> Iterator[SpanRecord]:
        """Spans that ended at or before ``t_ns``, latest first (ties in trace order)."""
        for k in range(bisect.bisect_right(self._ends, t_ns) - 1, -1, -1):
            span = self._spans[k]
            if span.span_id not in exclude:
                yield span


class NeedleIndex:
    """How many of a list of needles (with repeats) a text contains, in one pass over it."""

    def __init__(self, needles: Iterable[str]) -> None:
        self.counts = Counter(n for n in needles if n)
        self._short = [n for n in self.counts if len(n) < KEY_CHARS]
        self._by_key: dict[str, list[str]] = {}
        for n in self.counts:
            if len(n) >= KEY_CHARS:
                self._by_key.setdefault(n[:KEY_CHARS], []).append(n)

    def count_in(self, text: str | None) -> int:
        """Sum of the counts of the needles found in ``text``."""
        if not text or not self.counts:
            return 0
        if len(self.counts) <= DIRECT_NEEDLES:
            return sum(c for n, c in self.counts.items() if n in text)
        found = {n for n in self._short if n in text}
        by_key = self._by_key
        for i in range(len(text) - KEY_CHARS + 1):
            bucket = by_key.get(text[i : i + KEY_CHARS])
            if bucket:
                found.update(n for n in bucket if text.startswith(n, i))
        return sum(self.counts[n] for n in found)


def llm_leaves(
    spans: list[SpanRecord], roles: Mapping[str, str], parent: Mapping[str, str | None]
) -> list[SpanRecord]:
    """LLM spans with no LLM span below them, found by walking up once from each LLM span.

    ``parent`` maps a span id to its parent's id within the trace (None at the top).
    """
    above_llm: set[str] = set()  # spans with an LLM descendant
    for span in spans:
        if roles.get(span.span_id) != "LLM":
            continue
        seen = {span.span_id}
        cur = parent.get(span.span_id)
        while cur is not None and cur not in above_llm and cur not in seen:
            above_llm.add(cur)
            seen.add(cur)
            cur = parent.get(cur)
    return [s for s in spans if roles.get(s.span_id) == "LLM" and s.span_id not in above_llm]


__all__ = ["NeedleIndex", "PromptIndex", "has_template", "llm_leaves"]
