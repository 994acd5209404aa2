"""The ``POST /v1/feedback`` body: what is accepted, and why a stored row is read defensively.

Accepted: one JSON object (``Content-Type: application/json``) with

- ``trace_id`` (32 hex) and/or ``span_id`` (16 hex);
- ``score``: a finite JSON number in [-1, 5] (a fraction in [0, 1], a 1-5 rating, or -1/+1
  thumbs); strings such as ``"0.5"``, booleans, NaN and Infinity are refused;
- ``label``, ``comment``, ``source``: strings of at most 256, 10,000 and 64 characters, without
  lone surrogates (text that cannot be stored as UTF-8);
- ``created_at``: ISO 8601 or Unix seconds, from 2000-01-01 to a day ahead of the server clock
  (naive times are UTC); the server's time when absent.

Anything else is a :class:`BadPayload` (400) whose message starts with the field it is about.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, ValidationError

from ragsieve.evaluators.errors import BadPayload, UnsupportedMediaType
from ragsieve.evaluators.records import Feedback

log = logging.getLogger(__name__)

SCORE_RANGE = (-1.0, 5.0)
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
CLOCK_SKEW = timedelta(days=1)


def _utf8(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"not valid Unicode text (lone surrogate at {exc.start})") from None
    return value


def _plausible_time(value: datetime) -> datetime:
    when = value if value.tzinfo else value.replace(tzinfo=UTC)
    latest = datetime.now(UTC) + CLOCK_SKEW
    if not EARLIEST <= when <= latest:
        raise ValueError(f"{when.isoformat()} is not between 2000-01-01 and a day from now")
    return when.astimezone(UTC)


Text = Annotated[str, Strict(), AfterValidator(_utf8)]


class FeedbackBody(BaseModel):
    """The wire shape, stricter than :class:`Feedback`: types are not coerced."""

    model_config = ConfigDict(extra="forbid")

    trace_id: Text | None = None
    span_id: Text | None = None
    score: (
        Annotated[
            float,
            Strict(),
            Field(ge=SCORE_RANGE[0], le=SCORE_RANGE[1], allow_inf_nan=False),
        ]
        | None
    ) = None
    label: Annotated[Text, Field(max_length=256)] | None = None
    comment: Annotated[Text, Field(max_length=10_000)] | None = None
    source: Annotated[Text, Field(max_length=64)] = "api"
    created_at: Annotated[datetime, AfterValidator(_plausible_time)] | None = None


def require_json(content_type: str | None) -> None:
    """Refuse any media type but ``application/json`` (parameters such as charset allowed)."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    if base != "application/json":
        raise UnsupportedMediaType(
            f"Content-Type {content_type!r} is not accepted: feedback is application/json"
        )


def parse_feedback(raw: bytes) -> Feedback:
    """Validate a request body into a :class:`Feedback`; :class:`BadPayload` names the field."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadPayload(f"body: invalid JSON: {exc}"[:300]) from exc
    if not isinstance(data, dict):
        raise BadPayload("body: must be a JSON object")
    try:
        wire = FeedbackBody.model_validate(data)
        return Feedback.model_validate(wire.model_dump(exclude_none=True))
    except ValidationError as exc:
        raise BadPayload(_first_error(exc)) from exc


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    message = f"{where}: {first['msg']}"
    if where == "score":
        message += f" (score is a finite number in [{SCORE_RANGE[0]:g}, {SCORE_RANGE[1]:g}])"
    return message[:300]


def load_stored(body: str, row_id: object) -> Feedback | None:
    """A stored feedback row, or None (with a warning) when it no longer validates.

    Rows written before validation tightened, or by another writer, must never stop a trace from
    being derived: a bad row is skipped, never raised.
    """
    try:
        fb = Feedback.model_validate_json(body)
    except (ValidationError, ValueError) as exc:
        log.warning("skipping unreadable feedback row %s: %s", row_id, str(exc)[:200])
        return None
    if fb.created_at.tzinfo is None:  # naive times cannot be compared with aware ones
        fb = fb.model_copy(update={"created_at": fb.created_at.replace(tzinfo=UTC)})
    return fb
