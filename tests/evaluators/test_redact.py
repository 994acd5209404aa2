"""PII redaction: what is replaced, what is kept, and the counts."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.tools.redact import redact


def test_redacts_each_kind_and_counts():
    text = (
        "Write to ana@example.com or +34 612 345 678; card 4111 1111 1111 1111; "
        "DNI 12345678Z; SSN 123-45-6789."
    )
    out, counts = redact(text)
    assert "ana@example.com" not in out and "4111" not in out and "12345678Z" not in out
    assert counts == {"email": 1, "phone": 1, "card": 1, "id": 2}


def test_keeps_years_amounts_and_non_luhn_numbers():
    text = "Released on March 14, 2023 with 2,121 units; order 1234567890123."
    assert redact(text) == (text, {})


def test_extra_patterns_and_bad_regex():
    out, counts = redact("ticket ACME-4411 opened", extra_patterns=[r"ACME-\d+"])
    assert out == "ticket [REDACTED] opened" and counts == {"custom": 1}
    with pytest.raises(ValueError, match="not a valid regex"):
        redact("x", extra_patterns=["("])


def test_phone_numbers_without_separators_are_redacted():
    out, counts = redact("call 612345678 or +14155552671.")
    assert out == "call [PHONE] or [PHONE]." and counts == {"phone": 2}
    # bounded: a 13-digit order number and a decimal survive
    kept = "order 1234567890123, pi 3.14159265358"
    assert redact(kept) == (kept, {})
