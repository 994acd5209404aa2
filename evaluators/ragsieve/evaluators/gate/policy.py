"""What the gate reads: its policy (a TOML file) and two eval results files.

Policy file (TOML)::

    [gate]
    metrics = ["recall@10", "ndcg@10", "mrr"]   # checked for regressions; default: all shared
    confidence = 0.95
    resamples = 1000
    seed = 0
    min_effect = 0.0            # ignore significant drops smaller than this
    protected_categories = ["billing"]
    protected_max_drop = 0.0

    [floors]
    "recall@10" = 0.90
    mrr = 0.70
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.gate.experiments import ConfigValue
from ragsieve.evaluators.golden.runs import LazyJson, paused_gc
from ragsieve.evaluators.golden.sets import first_error
from ragsieve.evaluators.metrics import parse_metric
from ragsieve.evaluators.records import GoldenRole
from ragsieve.evaluators.tools.userfile import MAX_DATA_BYTES, read_capped, read_toml


class GatePolicy(BaseModel):
    """Thresholds of the gate; build with :func:`load_policy` or directly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    floors: dict[str, float] = Field(default_factory=dict, description="metric → minimum mean")
    metrics: tuple[str, ...] | None = Field(default=None, description="metrics to regress-check")
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    resamples: int = Field(default=1000, ge=100, le=1_000_000)
    seed: int = 0
    min_effect: float = Field(default=0.0, ge=0.0, le=1.0)
    protected_categories: tuple[str, ...] = ()
    protected_max_drop: float = Field(default=0.0, ge=0.0, le=1.0)


def _line_of(text: str, table: str, key: str | None) -> int:
    current, header_line = "", 0
    for i, line in enumerate(text.splitlines(), start=1):
        m = re.match(r"^\s*\[([^\]]+)\]", line)
        if m:
            current = m.group(1).strip()
            header_line = i if current == table else header_line
            continue
        km = re.match(r"""^\s*(["']?)([^"'=]+?)\1\s*=""", line)
        if current == table and key is not None and km and km.group(2).strip() == key:
            return i
    return header_line or 1


def load_policy(path: str | Path) -> GatePolicy:
    """Read a gate TOML; errors are ``path:line: field: message``."""
    p = Path(path)
    text, doc = read_toml(p)
    for table in doc:
        if table not in ("gate", "floors"):
            raise ConfigError(
                f"{p}:{_line_of(text, table, None)}: {table}: unknown table; "
                "expected [gate] and [floors]"
            )
    floors = doc.get("floors", {})
    for key, value in floors.items():
        where = f"{p}:{_line_of(text, 'floors', key)}: floors.{key}"
        try:
            parse_metric(key)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ConfigError(f"{where}: must be a number in [0, 1] (got {value!r})")
    gate = doc.get("gate", {})
    for name in gate.get("metrics", []) if isinstance(gate.get("metrics"), list) else []:
        try:
            parse_metric(str(name))
        except ConfigError as exc:
            raise ConfigError(
                f"{p}:{_line_of(text, 'gate', 'metrics')}: gate.metrics: {exc}"
            ) from None
    try:
        return GatePolicy.model_validate({**gate, "floors": floors})
    except ValidationError as exc:
        loc, msg = first_error(exc, "gate")
        key = loc.split(".")[0]
        table = "floors" if key == "floors" else "gate"
        line = _line_of(text, table, None if key == "floors" else key)
        raise ConfigError(f"{p}:{line}: {table}.{key}: {msg}") from None


class EvalResults(BaseModel):
    """The part of an ``ragsieve eval --json`` file the gate reads."""

    model_config = ConfigDict(extra="allow")

    metrics: dict[str, float]
    per_query: Mapping[str, Mapping[str, float]] = Field(default_factory=dict)
    golden_version: int | None = None
    query_category: dict[str, str] = Field(default_factory=dict)
    roles: list[GoldenRole] | None = None
    query_role: dict[str, GoldenRole] = Field(default_factory=dict)
    aggregate_only: bool = False
    spread: dict[str, dict[str, float]] = Field(default_factory=dict)
    by_category: dict[str, dict[str, Any]] = Field(default_factory=dict)
    config: dict[str, ConfigValue] = Field(default_factory=dict)

    @field_validator("metrics", mode="before")
    @classmethod
    def _measured(cls, value: Any) -> Any:
        """A run that scored no answerable query writes ``null`` metrics: nothing to gate."""
        if isinstance(value, dict) and value and all(v is None for v in value.values()):
            raise ValueError("no figure: the run scored no answerable query (n=0); nothing to gate")
        return value


_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ROW = msgspec.json.Decoder(dict[str, float])
_PER_QUERY_PARTS: dict[str, msgspec.json.Decoder[Any]] = {
    "per_query": msgspec.json.Decoder(dict[str, msgspec.Raw]),
    "query_category": msgspec.json.Decoder(dict[str, str]),
    "query_role": msgspec.json.Decoder(dict[str, GoldenRole]),
}


class PerQuery(LazyJson[dict[str, float]]):
    """A results file's ``per_query``: query id → metric → value, each row checked when the
    file is read and kept as its JSON text, decoded (in C) when read.

    200,000 rows of a dozen metrics are 2.4 million numbers: as dicts of floats about 200 MB
    a file; as text they stay in the file's bytes. Each read returns a new dict.
    """

    def __init__(self, rows: Mapping[str, msgspec.Raw]) -> None:
        for raw in rows.values():
            _ROW.decode(raw)  # a value that is not a number is refused now, not when gated
        super().__init__(rows, _ROW)


def load_results(path: str | Path) -> EvalResults:
    """Read an eval results JSON file; errors name the file and the field.

    The file must be a regular file of at most 1 GiB (a FIFO or ``/dev/zero`` is refused, not
    read for ever). Its per-query parts (200,000 queries are millions of numbers) are decoded
    once, straight into their final dicts (msgspec, in C); the rest goes through the pydantic
    model. A file that path declines is read again by the reference path (stdlib ``json``, then
    the whole model), which accepts or rejects it exactly as before, naming the field.
    """
    p = Path(path)
    data = read_capped(p, MAX_DATA_BYTES, what="an eval results file")
    with paused_gc():  # parsed JSON holds no cycles; see paused_gc
        fast = _load_results_fast(p, data)
        return fast if fast is not None else _load_results_checked(p, data)


def _load_results_fast(p: Path, data: bytes) -> EvalResults | None:
    try:
        top = _TOP.decode(data)
        big = {k: dec.decode(top.pop(k)) for k, dec in _PER_QUERY_PARTS.items() if k in top}
        if "per_query" in big:
            big["per_query"] = PerQuery(big["per_query"])
        rest = {k: msgspec.json.decode(v) for k, v in top.items()}
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    if not rest.get("aggregate_only") and "per_query" not in big:
        return None
    try:
        small = EvalResults.model_validate(rest)
    except ValidationError:
        return None
    return small.model_copy(update=big)


def _load_results_checked(p: Path, raw: bytes) -> EvalResults:
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 (byte {exc.start}); re-save the file as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}:{exc.lineno}: json: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{p}: json: nested too deeply") from None
    if isinstance(data, dict) and not data.get("aggregate_only") and "per_query" not in data:
        raise ConfigError(f"{p}: per_query: Field required (only holdout results go without)")
    try:
        return EvalResults.model_validate(data)
    except ValidationError as exc:
        loc, msg = first_error(exc, "results")
        raise ConfigError(f"{p}: {loc}: {msg}") from None
