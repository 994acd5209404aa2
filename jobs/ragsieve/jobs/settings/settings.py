"""The settings table and how it is read: once, at the CLI edge, with a fixed precedence.

Precedence: command-line flags → ``RAGSIEVE_*`` env vars (nested with ``__``, e.g.
``RAGSIEVE_JOBS__BUDGET_CALLS``) → the TOML file given with ``--config`` → defaults. A bad value
fails fast with one line naming its source: ``ragsieve.toml:7: jobs.budget_calls: ...``,
``RAGSIEVE_STORE: ...`` or ``--port: ...``. Secrets (API keys) are read from the environment only.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from ragsieve.collector.settings import CollectorSettings
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.tools.userfile import read_capped
from ragsieve.jobs.settings.alerts import AlertSettings
from ragsieve.jobs.settings.model import ModelSettings
from ragsieve.jobs.settings.report import ReportSettings
from ragsieve.jobs.settings.sections import (
    DemoSettings,
    GoldenSettings,
    JobSettings,
    LLMSettings,
    PhoenixSettings,
)
from ragsieve.jobs.settings.workers import WorkerSettings

ENV_PREFIX = "RAGSIEVE_"


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
    model: ModelSettings = Field(default_factory=ModelSettings)
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
        if scheme.lower() == "sqlite":
            _sqlite_path_ok(url.removeprefix(f"{scheme}://").split("?", 1)[0])
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


def _sqlite_path_ok(path: str) -> None:
    """Refuse a SQLite path no file can have, or a folder, before anything opens it."""
    path = path.removeprefix("/")  # sqlite:///x is "x", sqlite:////x is "/x"
    if path in ("", ":memory:"):
        return
    if len(path.encode()) > 4096 or any(len(p.encode()) > 255 for p in path.split("/")):
        raise ValueError(f"a path of {len(path)} characters (a file name is at most 255 bytes)")
    try:
        if os.path.isdir(path):
            raise ValueError(f"{path} is a directory, not a SQLite file")
        os.stat(path)
    except FileNotFoundError:
        pass  # created on first start (`collector serve`, `up`)
    except OSError as exc:  # a symlink loop, no permission on a folder
        raise ValueError(f"{path}: {exc.strerror or exc}") from None


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
            text = read_capped(toml_path).decode("utf-8")  # no FIFO, no /dev/zero
            if text.startswith("\ufeff"):
                raise ConfigError(
                    f"{toml_path}:1: the file starts with a byte-order mark (BOM), which TOML"
                    " does not allow; save it as UTF-8 without BOM"
                )
            toml_data = tomllib.loads(text)
        except ConfigError as exc:
            raise ConfigError(
                str(exc).replace("cannot read: no such file", "no such config file")
            ) from None
        except UnicodeDecodeError as exc:
            at = exc.object[: exc.start].count(b"\n") + 1
            raise ConfigError(f"{toml_path}:{at}: not UTF-8; save the file as UTF-8") from None
        except OSError as exc:  # a directory, no permission
            raise ConfigError(f"{toml_path}: cannot read: {exc.strerror or exc}") from None
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
    except RecursionError:  # a list or table in an env var nested past the parser's depth
        name = next((k for k in env if k.startswith(ENV_PREFIX) and _too_deep(env[k])), "a value")
        raise ConfigError(f"{name}: JSON nested too deeply") from None
    except ValidationError as exc:
        raise ConfigError(_describe(exc, flags, env, toml_path, toml_data)) from None
    except SettingsError as exc:  # an env value a list or table needs as JSON, and is not
        raise ConfigError(_not_json(exc, env)) from None


def _too_deep(value: str) -> bool:
    try:
        json.loads(value)
    except RecursionError:
        return True
    except ValueError:
        return False
    return False


def _not_json(exc: SettingsError, env: Mapping[str, str]) -> str:
    """The env variable whose value a list or table setting could not read as JSON."""
    for name, value in sorted(env.items()):
        parts = name.upper().removeprefix(ENV_PREFIX).lower().split("__")
        kind = _structured(Settings, parts) if name.upper().startswith(ENV_PREFIX) else None
        if kind is None:
            continue
        try:
            json.loads(value)
        except ValueError:
            example = '["a", "b"]' if kind == "list" else '{"key": "value"}'
            return f"{name}: a {kind} is written as JSON here, e.g. '{example}' (got {value!r})"
    return str(exc)


def _structured(model: type[BaseModel], parts: list[str]) -> str | None:
    """``"list"`` or ``"table"`` when the setting at ``parts`` (``["jobs", "judges"]``) is one
    (a section is a table), else None."""
    hint: Any = model
    for part in parts:
        hint = _bare(hint)
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            field = hint.model_fields.get(part)
            if field is None:
                return None
            hint = field.annotation
        elif get_origin(hint) is dict:
            hint = get_args(hint)[1]
        else:
            return None
    hint = _bare(hint)
    if get_origin(hint) in (list, tuple, set, frozenset):
        return "list"
    table = get_origin(hint) is dict or (isinstance(hint, type) and issubclass(hint, BaseModel))
    return "table" if table else None


def _bare(hint: Any) -> Any:
    """``hint`` without ``Annotated[...]`` and ``| None``."""
    while True:
        if get_origin(hint) is Annotated:
            hint = get_args(hint)[0]
        elif get_origin(hint) in (Union, types.UnionType):
            hint = next(a for a in get_args(hint) if a is not type(None))
        else:
            return hint


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
    text = repr(got) if len(repr(got)) <= 200 else repr(got)[:160] + f"... ({len(repr(got))} chars)"
    detail = f"{msg} (got {text})" if err["type"] != "extra_forbidden" and shown else msg
    for key in flags:
        if tuple(key.split(".")) == loc[: len(key.split("."))]:
            return f"--{key.split('.')[-1].replace('_', '-')}: {detail}"
    env_name = ENV_PREFIX + "__".join(p.upper() for p in loc)
    for name in env:
        up = name.upper()
        if up == env_name or env_name.startswith(up + "__") or up.startswith(env_name + "__"):
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


__all__ = ["ENV_PREFIX", "SECRET_PATHS", "Settings", "load_settings"]
