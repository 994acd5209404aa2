"""All settings in one table, read once at the CLI edge with a fixed precedence.

Precedence: command-line flags → ``RAGSIEVE_*`` env vars (nested with ``__``, e.g.
``RAGSIEVE_JOBS__BUDGET_CALLS``) → the TOML file given with ``--config`` → defaults. A bad value
fails fast with one line naming its source: ``ragsieve.toml:7: jobs.budget_calls: ...``,
``RAGSIEVE_STORE: ...`` or ``--port: ...``. Secrets (API keys) are read from the environment only.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from ragsieve.collector.settings import CollectorSettings
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.jobs.alerts.rules import AlertSettings
from ragsieve.jobs.report.settings import ReportSettings
from ragsieve.jobs.sampling.sampling import SamplingSettings
from ragsieve.jobs.workers.queue import WorkerSettings

ENV_PREFIX = "RAGSIEVE_"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _known_metric(name: str) -> str:
    """A ``jobs.thresholds`` key: a metric some judge reports (built-in or plugin)."""
    from ragsieve.evaluators.judges.registry import METRICS, available_judges

    known = {*METRICS, *available_judges()}
    if name not in known:
        raise ValueError(f"unknown metric; thresholds exist for {', '.join(METRICS)}")
    return name


MetricName = Annotated[str, AfterValidator(_known_metric)]
# A score threshold: finite and in [0, 1] (nan would flag nothing, inf or 1.7 everything).
Threshold = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class LLMSettings(_Section):
    """An OpenAI-compatible endpoint for LLM judges (section ``[llm]``)."""

    base_url: str | None = Field(
        None, description="OpenAI-compatible base URL (OpenAI, vLLM, Ollama, llama.cpp server)."
    )
    model: str = Field("gpt-4o-mini", description="Judge model name.")
    api_key: SecretStr | None = Field(
        None, description="API key; only from the env var RAGSIEVE_LLM__API_KEY, never from TOML."
    )
    timeout_s: float = Field(30.0, gt=0, description="Per-request timeout.")
    max_retries: int = Field(4, ge=0, description="Retries on 429/5xx/timeouts.")
    concurrency: int = Field(8, ge=1, description="Judge calls in flight at once.")
    n_runs: int = Field(1, ge=1, description="Runs averaged per verdict.")
    price_per_1k_prompt: float = Field(0.0, ge=0, description="USD per 1k prompt tokens.")
    price_per_1k_completion: float = Field(0.0, ge=0, description="USD per 1k completion tokens.")
    redact_pii: bool = Field(True, description="Redact PII before content leaves the machine.")
    backoff_s: float = Field(1.0, ge=0, description="First retry delay; doubles each retry.")
    uncertainty_band: tuple[float, float] = Field(
        (0.35, 0.8), description="Cascade: offline scores inside [lo, hi] go to the LLM judge."
    )
    json_mode: bool = Field(True, description="Ask the endpoint for response_format=json_object.")

    def to_config(self, extra_pii_patterns: list[str] | None = None) -> Any:
        """The judges' ``LLMConfig`` for this endpoint, or None when no base_url is set."""
        if not self.base_url:
            return None
        from ragsieve.evaluators.judges import LLMConfig

        return LLMConfig(
            base_url=self.base_url,
            model=self.model,
            api_key=self.api_key,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            concurrency=self.concurrency,
            n_runs=self.n_runs,
            price_per_1k_prompt=self.price_per_1k_prompt,
            price_per_1k_completion=self.price_per_1k_completion,
            redact_pii=self.redact_pii,
            extra_pii_patterns=tuple(extra_pii_patterns or ()),
            uncertainty_band=self.uncertainty_band,
            json_mode=self.json_mode,
        )


class JobSettings(_Section):
    """The scheduled online evaluator (section ``[jobs]``)."""

    every_minutes: float = Field(5.0, gt=0, description="How often `ragsieve up` runs the job.")
    since: str = Field("2h", description="Default window looked back over by each run.")
    settle_s: float = Field(15.0, ge=0, description="A trace must be quiet this long to count.")
    judges: list[str] = Field(
        default_factory=lambda: ["faithfulness", "answer_relevance", "context_relevance"],
        description="Metrics to judge.",
    )
    backend: Literal["offline", "llm", "cascade"] = Field(
        "offline", description="Judge backend: offline heuristic, LLM, or cascade."
    )
    budget_calls: int | None = Field(None, ge=1, description="Most judge calls per run.")
    budget_usd: float | None = Field(None, gt=0, description="Most judge spend per run (USD).")
    sample_size: int = Field(200, ge=1, description="Traces judged per run (beyond the strata).")
    thresholds: dict[MetricName, Threshold] = Field(
        default_factory=lambda: dict(DEFAULT_THRESHOLDS),
        description=(
            "A score below its threshold fails the metric: the judges label with these and the"
            " job flags with them (one decision per metric)."
        ),
    )
    audit_share: float = Field(
        0.05, ge=0, le=1, description="Share of passing traces routed to review (audit)."
    )
    seed: int = Field(0, description="Seed of the deterministic sampler.")
    cache_path: str | None = Field(None, description="Judge result cache file (SQLite).")
    max_judge_error_rate: float = Field(
        0.5, ge=0, le=1, description="A run whose judge error rate exceeds this exits 1."
    )
    concurrency: int = Field(32, ge=1, description="Judge calls in flight at once in a run.")
    sampling: SamplingSettings = Field(
        default_factory=SamplingSettings, description="Strata, rates and quotas."
    )


class PhoenixSettings(_Section):
    """Where people review traces (section ``[phoenix]``)."""

    base_url: str | None = Field(
        None, description="Phoenix base URL, e.g. http://127.0.0.1:6006 (annotations, datasets)."
    )
    api_key: SecretStr | None = Field(
        None, description="Phoenix API key; only from RAGSIEVE_PHOENIX__API_KEY."
    )
    project: str = Field("default", description="Phoenix project the spans go to.")
    dataset: str = Field("ragsieve-candidates", description="Dataset `golden push` appends to.")
    executable: str | None = Field(
        None, description="`phoenix` executable in its own virtualenv (tests, demo --phoenix)."
    )


class GoldenSettings(_Section):
    """Golden-set growth (section ``[golden]``)."""

    path: str | None = Field(None, description="Current golden file, e.g. golden/golden_v3.jsonl.")
    near_duplicate_cosine: float = Field(
        0.9, gt=0, le=1, description="Embedding cosine above which two queries are duplicates."
    )
    new_category_cosine: float = Field(
        0.5,
        gt=0,
        le=1,
        description="A failure this close to a golden case (query + relevant documents) is"
        " covered; a topic area is new while most of its failures are not.",
    )
    support_cosine: float = Field(
        0.7,
        gt=0,
        le=1,
        description="Query cosine from which a repeat of the same failure (root cause, chunks"
        " or wrong value, key terms) is a duplicate.",
    )
    new_category_min_cases: int = Field(
        3, ge=1, description="Failures a new category needs before it is announced."
    )
    scrub_pii: bool = Field(True, description="Scrub PII from candidates before writing them.")
    pii_patterns: list[str] = Field(
        default_factory=list, description="Extra regexes to scrub from candidates."
    )


class DemoSettings(_Section):
    """`ragsieve demo` (section ``[demo]``)."""

    queries: int = Field(300, ge=1, description="Queries the demo app sends.")
    failure_share: float = Field(0.3, ge=0, le=1, description="Share of planted failures.")
    seed: int = Field(0, description="Traffic seed.")
    min_planted_recall: float = Field(0.85, ge=0, le=1, description="Scorecard floor.")
    min_root_cause_accuracy: float = Field(0.80, ge=0, le=1, description="Scorecard floor.")
    max_false_positive_rate: float = Field(0.10, ge=0, le=1, description="Scorecard ceiling.")


class Settings(BaseSettings):
    """Everything ragsieve reads from flags, env and the config file."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", case_sensitive=False
    )

    store: str = Field(
        "sqlite:///ragsieve.db", description="Store URL (sqlite:/// or postgresql://)."
    )
    collector: CollectorSettings = Field(default_factory=CollectorSettings)
    jobs: JobSettings = Field(default_factory=JobSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    phoenix: PhoenixSettings = Field(default_factory=PhoenixSettings)
    golden: GoldenSettings = Field(default_factory=GoldenSettings)
    demo: DemoSettings = Field(default_factory=DemoSettings)
    workers: WorkerSettings = Field(default_factory=WorkerSettings)
    report: ReportSettings = Field(default_factory=ReportSettings)
    alerts: AlertSettings = Field(default_factory=AlertSettings)

    @field_validator("store")
    @classmethod
    def _known_scheme(cls, url: str) -> str:
        from ragsieve.collector.store import known_schemes

        scheme, sep, _ = url.partition("://")
        if not sep or scheme.split("+", 1)[0].lower() not in known_schemes():
            raise ValueError(
                f"unsupported store URL; use one of {', '.join(sorted(known_schemes()))}://..."
            )
        return url

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = settings_cls.model_config.get("toml_file")
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml:
            sources.append(TomlConfigSettingsSource(settings_cls))
        return tuple(sources)


SECRET_PATHS = {("llm", "api_key"), ("phoenix", "api_key")}


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"jobs.since": "1h"}`` → ``{"jobs": {"since": "1h"}}``; None values are dropped."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if value is None:
            continue
        node = out
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def _toml_line(path: Path, loc: tuple[str, ...]) -> int | None:
    """Line of ``loc`` (section path + key) in a TOML file, by a plain scan.

    An array of tables (``[[alerts.rules]]``) adds its index to the section path, as pydantic's
    error locations do (``alerts.rules.1.baseline``).
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    section: tuple[str, ...] = ()
    arrays: dict[tuple[str, ...], int] = {}
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        head = re.fullmatch(r"(\[+)([^\]]+)\]+", text)
        if head:
            section = tuple(p.strip().strip('"') for p in head.group(2).split("."))
            if len(head.group(1)) == 2:
                arrays[section] = arrays.get(section, -1) + 1
                section = (*section, str(arrays[section]))
            if section == loc:  # an error about the table itself
                return number
            continue
        key = re.match(r"([A-Za-z0-9_.\"-]+)\s*=", text)
        if key:
            full = section + tuple(p.strip('"') for p in key.group(1).split("."))
            if full == loc[: len(full)] and len(full) >= min(len(loc), len(section) + 1):
                return number
        elif section and section == loc[: len(section)] and len(loc) == len(section):
            return number
    return None


def load_settings(
    config: str | Path | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """Build settings from flags (dotted keys, e.g. ``{"jobs.since": "1h"}``), env and TOML.

    Raises:
        ConfigError: one line naming the source of the first bad value.
    """
    env = os.environ
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    toml_path = Path(config) if config else None
    toml_data: dict[str, Any] = {}
    if toml_path is not None:
        try:
            toml_data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{toml_path}: no such config file") from None
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"line (\d+)", str(exc))
            where = f"{toml_path}:{m.group(1)}" if m else str(toml_path)
            raise ConfigError(f"{where}: {str(exc).split(' (at')[0]}") from None
        for section, key in SECRET_PATHS:
            if isinstance(toml_data.get(section), dict) and key in toml_data[section]:
                line = _toml_line(toml_path, (section, key))
                raise ConfigError(
                    f"{toml_path}:{line or 1}: {section}.{key}: secrets are read from the"
                    f" environment only; set {ENV_PREFIX}{section.upper()}__{key.upper()}"
                )
    cls: type[Settings] = Settings
    if toml_path is not None:
        cls = type(
            "FileSettings",
            (Settings,),
            {"model_config": {**Settings.model_config, "toml_file": str(toml_path)}},
        )
    try:
        return cls(**_nest(flags))
    except ValidationError as exc:
        raise ConfigError(_describe(exc, flags, env, toml_path, toml_data)) from None


def _describe(
    exc: ValidationError,
    flags: Mapping[str, Any],
    env: Mapping[str, str],
    toml_path: Path | None,
    toml_data: Mapping[str, Any],
) -> str:
    err = exc.errors()[0]
    # a dict key's own error ends in "[key]" (jobs.thresholds.bogus_metric.[key])
    loc = tuple(str(p) for p in err["loc"] if p != "[key]")
    dotted = ".".join(loc)
    msg = "unknown setting" if err["type"] == "extra_forbidden" else err["msg"]
    msg = msg.removeprefix("Value error, ")
    got = err.get("input")
    shown = got is not None and not isinstance(got, Mapping | list)  # not a whole table
    detail = f"{msg} (got {got!r})" if err["type"] != "extra_forbidden" and shown else msg
    for key in flags:
        if tuple(key.split(".")) == loc[: len(key.split("."))]:
            return f"--{key.split('.')[-1].replace('_', '-')}: {detail}"
    env_name = ENV_PREFIX + "__".join(p.upper() for p in loc)
    for name in env:
        if name.upper() == env_name or env_name.startswith(name.upper() + "__"):
            return f"{name}: {detail}"
    if toml_path is not None:
        node: Any = toml_data
        found = True
        for part in loc:
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                found = False
                break
        if found or err["type"] == "extra_forbidden":
            line = _toml_line(toml_path, loc)
            return f"{toml_path}:{line or 1}: {dotted}: {detail}"
    return f"{dotted}: {detail}"


def reference_table() -> str:
    """Markdown table of every setting, its env var, default and description (for the README)."""
    rows = ["| setting | env var | default | description |", "|---|---|---|---|"]

    def walk(model: type[BaseModel], values: Any, prefix: tuple[str, ...]) -> None:
        # values: the section's effective default instance (a section's default_factory may
        # differ from its class defaults, as the sampling strata's rates and quotas do)
        for name, field in model.model_fields.items():
            ann = field.annotation
            default = (
                getattr(values, name)
                if values is not None
                else field.get_default(call_default_factory=True)
            )
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                walk(ann, default, (*prefix, name))
                continue
            path = (*prefix, name)
            shown = "" if default is None else f"`{default}`"
            rows.append(
                f"| `{'.'.join(path)}` | `{ENV_PREFIX}{'__'.join(p.upper() for p in path)}` "
                f"| {shown} | {field.description or ''} |"
            )

    walk(Settings, None, ())
    return "\n".join(rows)
