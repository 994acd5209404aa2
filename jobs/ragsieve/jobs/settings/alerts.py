"""The ``[alerts]`` settings: where alerts go and the rules that raise them.

A rule is a ``[[alerts.rules]]`` table with a ``kind`` and the parameters that kind reads:

- ``failure_rate_above`` (``value``, ``cell``): the latest run's 95% interval lies wholly above
  ``value`` (its lower bound exceeds it), so a noisy small window does not fire it.
- ``failure_rate_rise`` (``baseline``, ``level``, ``min_effect``, ``cell``): a one-sided
  two-sample z test on the weighted estimates says the latest run's rate exceeds the baseline
  window's by more than ``min_effect``, at ``level``.
- ``sustained`` (``value``, ``runs``, ``cell``): the point estimate is above ``value`` in each of
  the last ``runs`` runs (a slow drift no single run proves).
- ``new_category`` (``min_cases``): a failure category the golden set does not cover holds at
  least ``min_cases`` failures; one alert per category.
- ``root_cause_share`` (``value``, ``root_cause``, ``min_cases``, ``cell``): ``root_cause``'s
  share of the weighted failure rate is above ``value``, with at least ``min_cases`` flagged.

``basis = "corrected"`` makes a whole-traffic rate rule read the judge-corrected failure rate
(and its conservative interval) instead of the raw weighted one; a run without reviewed labels
then has no rate for it. ``cell`` names one attribute cell as ``name=value`` (``route=/chat``,
``model=gpt-4o``, ``tenant=acme``; names come from ``report.cells``); without it the rule reads
the whole traffic.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragsieve.collector.timeutil import parse_duration

RuleKind = Literal[
    "failure_rate_above", "failure_rate_rise", "sustained", "new_category", "root_cause_share"
]
NEEDS_VALUE = frozenset({"failure_rate_above", "sustained", "root_cause_share"})
RATE_KINDS = frozenset({"failure_rate_above", "failure_rate_rise", "sustained"})


class AlertRule(BaseModel):
    """One ``[[alerts.rules]]`` table."""

    model_config = ConfigDict(extra="forbid")

    kind: RuleKind = Field(description="What the rule watches (see the table above).")
    name: str | None = Field(
        None, description="Name in payloads and `alerts list` (default: kind[cell])."
    )
    value: float | None = Field(None, ge=0, le=1, description="Threshold rate or share in [0, 1].")
    baseline: str = Field("7d", description="Rise: window of earlier runs compared against.")
    level: float = Field(0.01, gt=0, lt=0.5, description="Rise: one-sided test level.")
    min_effect: float = Field(0.02, ge=0, lt=1, description="Rise: smallest rise worth an alert.")
    runs: int = Field(3, ge=1, description="Sustained: consecutive runs breaching.")
    min_cases: int = Field(1, ge=1, description="new_category / root_cause_share: least cases.")
    root_cause: str = Field("retrieval", description="root_cause_share: the cause watched.")
    cell: str | None = Field(None, description="Attribute cell name=value, e.g. route=/chat.")
    basis: Literal["raw", "corrected"] = Field(
        "raw", description="Rate rules: the weighted rate, or the judge-corrected one."
    )

    @field_validator("baseline")
    @classmethod
    def _duration(cls, text: str) -> str:
        if parse_duration(text).total_seconds() <= 0:  # ConfigError (a ValueError) when malformed
            raise ValueError("baseline must be a positive duration, e.g. 7d")
        return text

    @model_validator(mode="after")
    def _complete(self) -> AlertRule:
        if self.kind in NEEDS_VALUE and self.value is None:
            raise ValueError(f"rule kind {self.kind} needs value = <rate in [0, 1]>")
        if self.cell is not None and "=" not in self.cell:
            raise ValueError(f"cell must be name=value (e.g. route=/chat), got {self.cell!r}")
        if self.cell is not None and self.kind == "new_category":
            raise ValueError("new_category rules take no cell")
        if self.basis == "corrected" and (self.cell is not None or self.kind not in RATE_KINDS):
            raise ValueError("basis = corrected applies to whole-traffic rate rules only")
        return self

    @property
    def label(self) -> str:
        """The rule's name, or ``kind`` with its cell."""
        return self.name or (f"{self.kind}[{self.cell}]" if self.cell else self.kind)


class AlertSettings(BaseModel):
    """Alert sinks and rules (section ``[alerts]``)."""

    model_config = ConfigDict(extra="forbid")

    webhook_url: str | None = Field(None, description="Generic webhook: JSON POST per alert event.")
    slack_webhook_url: str | None = Field(
        None, description="Slack-compatible incoming webhook (payload with `text`)."
    )
    rules: list[AlertRule] = Field(
        default_factory=list, description="`[[alerts.rules]]` tables (kind and parameters)."
    )
    timeout_s: float = Field(5.0, gt=0, description="Per-request timeout of a sink.")
    deliver_s: float = Field(5.0, gt=0, description="Most time a run spends delivering alerts.")
    backoff_s: float = Field(2.0, gt=0, description="First retry delay; doubles each retry.")
    max_backoff_s: float = Field(600.0, gt=0, description="Longest retry delay.")

    @field_validator("webhook_url", "slack_webhook_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError as exc:
            raise ValueError(f"not a URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        return url


__all__ = ["NEEDS_VALUE", "RATE_KINDS", "AlertRule", "AlertSettings", "RuleKind"]
