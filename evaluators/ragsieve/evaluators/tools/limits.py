"""How much text a judge and the golden set read per field, and what happens past it.

A golden case is a person's file: a ``query`` or ``reference_answer`` past its limit is refused
(``path:line: query: String should have at most 8192 characters``), since a case cannot be
guessed at. A trace is traffic that already happened: its question, answer and each chunk are
cut to their limit where the interaction record is built, and the record (or the chunk) says
``possibly_truncated``. The judges' cost grows with these lengths, so the limits bound a job's
cost per trace (README, "Limits on hostile input").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_QUESTION_CHARS = 8_192
MAX_ANSWER_CHARS = 32_768
MAX_CHUNK_CHARS = 16_384


def clip_fields(data: Any, limits: Mapping[str, int]) -> Any:
    """``data`` (a record's raw fields) with each string in ``limits`` cut to its length and
    ``possibly_truncated`` set when anything was cut; anything else is returned as given."""
    if not isinstance(data, Mapping):
        return data
    cut = {
        k: data[k][:n]
        for k, n in limits.items()
        if isinstance(data.get(k), str) and len(data[k]) > n
    }
    return {**data, **cut, "possibly_truncated": True} if cut else data


__all__ = ["MAX_ANSWER_CHARS", "MAX_CHUNK_CHARS", "MAX_QUESTION_CHARS", "clip_fields"]
