"""PII redaction of text before it leaves the machine: emails, phones, card and ID numbers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
# 13-19 digits with optional single spaces/dashes: payment-card-like (checked with Luhn below)
_CARD = re.compile(r"(?<![\w-])(?:\d[ -]?){12,18}\d(?![\w-])")
# ID-like: US SSN, Spanish DNI/NIE, IBAN
_ID = re.compile(
    r"\b\d{3}-\d{2}-\d{4}\b"
    r"|\b\d{8}[- ]?[A-HJ-NP-TV-Z]\b"
    r"|\b[XYZ][- ]?\d{7}[- ]?[A-Z]\b"
    r"|\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b"
)
# phone numbers: optional +country code, 9-15 digits with separators; not a plain year or count
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}(?!\w)"
)

# phone numbers without separators: "+" and 9-15 digits (E.164), or a bare run of 9-12 digits.
# Bare runs of 13+ digits are left alone (order numbers, millisecond timestamps); card-like
# runs were already handled by the Luhn-checked pattern.
_PHONE_PLAIN = re.compile(r"(?<![\w+.,])(?:\+\d{9,15}|\d{9,12})(?![\w.,]?\d)(?!\w)")


def _luhn_ok(digits: str) -> bool:
    total, alt = 0, False
    for ch in reversed(digits):
        d = int(ch)
        if alt:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
        alt = not alt
    return total % 10 == 0


@lru_cache(maxsize=64)
def _compile(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    out = []
    for p in patterns:
        try:
            out.append(re.compile(p))
        except re.error as exc:
            raise ValueError(f"extra PII pattern {p!r} is not a valid regex: {exc}") from exc
    return tuple(out)


def redact(text: str, extra_patterns: Iterable[str] = ()) -> tuple[str, dict[str, int]]:
    """Replace PII in ``text`` with ``[EMAIL]``-style tags; return the text and counts per kind.

    Kinds: ``email``, ``card``, ``id``, ``phone`` (with separators, or 9-12 bare digits, or
    ``+`` and 9-15 digits) and ``custom`` (the user's ``extra_patterns``,
    regular expressions applied first). A card-like number is only redacted when it passes the
    Luhn check, so long order numbers and timestamps survive.

    Example:
        >>> redact("mail ana@example.com or call +34 612 345 678")
        ('mail [EMAIL] or call [PHONE]', {'email': 1, 'phone': 1})
    """
    counts: dict[str, int] = {}

    def sub(pattern: re.Pattern[str], tag: str, kind: str, text: str, check=None) -> str:  # type: ignore[no-untyped-def]
        def repl(m: re.Match[str]) -> str:
            if check is not None and not check(m.group(0)):
                return m.group(0)
            counts[kind] = counts.get(kind, 0) + 1
            return tag

        return pattern.sub(repl, text)

    for pat in _compile(tuple(extra_patterns)):
        text = sub(pat, "[REDACTED]", "custom", text)
    text = sub(_EMAIL, "[EMAIL]", "email", text)
    text = sub(_CARD, "[CARD]", "card", text, check=lambda s: _luhn_ok(re.sub(r"\D", "", s)))
    text = sub(_ID, "[ID]", "id", text)
    text = sub(
        _PHONE, "[PHONE]", "phone", text, check=lambda s: 9 <= len(re.sub(r"\D", "", s)) <= 15
    )
    text = sub(_PHONE_PLAIN, "[PHONE]", "phone", text)
    return text, counts


# keys whose values are identifiers (chunk, trace and span ids): "doc-00-03" is not a phone number
_ID_KEYS = frozenset(
    {"id", "chunk", "chunk_id", "chunks_id", "evidence_chunks", "trace_id", "span_id"}
)


def redact_value(value: Any, extra_patterns: Iterable[str] = (), key: str | None = None) -> Any:
    """``value`` with every string inside it (dicts and lists walked) redacted, identifiers
    (values under keys such as ``id`` or ``evidence_chunks``) left as they are."""
    if key in _ID_KEYS:
        return value
    if isinstance(value, str):
        return redact(value, extra_patterns)[0]
    if isinstance(value, Mapping):
        return {k: redact_value(v, extra_patterns, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, extra_patterns, key) for v in value]
    return value


class RedactingJudge:
    """Wraps a judge so its results carry no PII: explanation and metadata (claims, evidence)
    are redacted before anything stores, exports or annotates them. Name and version are the
    inner judge's, so checkpoints and caches are unchanged."""

    def __init__(self, inner: Any, extra_patterns: Iterable[str] = ()) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.version: str = inner.version
        self.patterns = tuple(extra_patterns)
        if hasattr(inner, "judge_model"):
            self.judge_model = inner.judge_model

    async def evaluate(self, interaction: Any) -> list[Any]:
        """The inner judge's results, redacted."""
        out = []
        for r in await self.inner.evaluate(interaction):
            explanation = redact(r.explanation, self.patterns)[0] if r.explanation else None
            out.append(
                r.model_copy(
                    update={
                        "explanation": explanation,
                        "metadata": redact_value(dict(r.metadata), self.patterns),
                    }
                )
            )
        return out
