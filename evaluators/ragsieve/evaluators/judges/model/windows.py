"""Long contexts cut into windows that fit the model, and the windows worth asking about a text.

A chunk longer than the model reads (its ``max_length`` less the special tokens and the longest
claim) is cut into token windows that overlap by the manifest's ``stride``, so a sentence cut by
one window's edge is whole in the next. Which windows a claim is checked against is chosen by
the content words it shares with them (:func:`best_windows`): the model then reads the few
places the claim could come from, not every window of every chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragsieve.evaluators.judges.model.runtime import LocalModel
from ragsieve.evaluators.judges.offline.text.text import content_words


@dataclass(frozen=True, slots=True)
class Window:
    """Characters ``start:end`` of chunk ``chunk``."""

    chunk: str
    start: int
    end: int
    text: str

    @property
    def where(self) -> str:
        """``chunk[start:end]``, as explanations name it."""
        return f"{self.chunk}[{self.start}:{self.end}]"


def budget(model: LocalModel, texts: Sequence[str]) -> int:
    """Tokens a window may hold beside the longest of ``texts`` (at most half the length)."""
    longest = max((len(model.tokens(t)) for t in texts), default=0)
    room = model.manifest.max_length - model.specials
    return max(room - min(longest, room // 2), 4)


def cut(model: LocalModel, chunk: str, text: str, size: int) -> list[Window]:
    """``text`` as windows of at most ``size`` tokens, neighbours sharing the stride."""
    offsets = model.tokens(text)
    if len(offsets) <= size:
        return [Window(chunk, 0, len(text), text)]
    step = max(size - min(model.manifest.stride, size // 2), 1)
    out = []
    for first in range(0, len(offsets), step):
        last = min(first + size, len(offsets)) - 1
        a, b = offsets[first][0], offsets[last][1]
        out.append(Window(chunk, a, b, text[a:b]))
        if last == len(offsets) - 1:
            break
    return out


def best_windows(text: str, windows: Sequence[Window], k: int) -> list[Window]:
    """The ``k`` windows sharing most content words with ``text`` (all when ``k`` covers
    them), ties in context order."""
    if k >= len(windows):
        return list(windows)
    want = set(content_words(text))
    shared = [len(want & set(content_words(w.text))) for w in windows]
    order = sorted(range(len(windows)), key=lambda i: (-shared[i], i))
    return [windows[i] for i in order[:k]]


__all__ = ["Window", "best_windows", "budget", "cut"]
