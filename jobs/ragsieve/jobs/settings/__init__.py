"""Settings: the one table ragsieve reads, at the bottom of the job (it imports no stage).

Takes: command-line flags, ``RAGSIEVE_*`` env vars and a TOML file, in that precedence, over the
defaults. Gives: a validated :class:`Settings` (:func:`load_settings`; a bad value is one
``ConfigError`` line naming its source) and the README's settings reference
(:func:`reference_table`). Every stage reads its section from here, so no stage is needed to
build the table.

Modules: ``settings`` (the root table and how it is read), ``sections`` (``[jobs]``, ``[llm]``,
``[phoenix]``, ``[golden]``, ``[demo]``), one module per stage that has a section of its own
(``sampling`` for ``[jobs.sampling]``, ``workers``, ``report``, ``alerts`` with its rules,
``model`` for the local-model judge tier), and
``reference`` (the Markdown table).
"""

from __future__ import annotations

from ragsieve.jobs.settings.alerts import AlertRule, AlertSettings
from ragsieve.jobs.settings.model import ModelSettings
from ragsieve.jobs.settings.reference import reference_table
from ragsieve.jobs.settings.report import ReportSettings
from ragsieve.jobs.settings.sampling import SamplingSettings, StratumRule
from ragsieve.jobs.settings.sections import (
    DemoSettings,
    GoldenSettings,
    JobSettings,
    LLMSettings,
    PhoenixSettings,
)
from ragsieve.jobs.settings.settings import ENV_PREFIX, Settings, load_settings
from ragsieve.jobs.settings.workers import WorkerSettings

__all__ = [
    "ENV_PREFIX",
    "AlertRule",
    "AlertSettings",
    "DemoSettings",
    "GoldenSettings",
    "JobSettings",
    "LLMSettings",
    "ModelSettings",
    "PhoenixSettings",
    "ReportSettings",
    "SamplingSettings",
    "Settings",
    "StratumRule",
    "WorkerSettings",
    "load_settings",
    "reference_table",
]
