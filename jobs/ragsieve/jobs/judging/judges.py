"""The judges a job pass runs, built by registry name from settings and the active calibration."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from ragsieve.evaluators.judges.combined.calibrated import Calibration
    from ragsieve.jobs.settings import Settings

log = logging.getLogger(__name__)


def make_judges(
    settings: Settings,
    names: Sequence[str] | None = None,
    *,
    store: Store | None = None,
    calibration: Calibration | None | bool = True,
) -> list[Any]:
    """Build the configured judges (backend, LLM endpoint, cache) from settings.

    ``calibration``: ``True`` (default) applies the store's active calibration (``ragsieve
    judges fit``), read from ``store`` or, without one, from the store ``settings.store`` names;
    ``False`` or ``None`` builds the judges uncalibrated; a ``Calibration`` is applied as given.
    """
    from ragsieve.evaluators.judges import build_judges

    cal = load_active(settings, store) if calibration is True else calibration or None
    llm = settings.llm.to_config(settings.golden.pii_patterns)
    from ragsieve.evaluators.judges.registry import METRICS

    builtin = set(names or settings.jobs.judges) & set(METRICS)  # a plugin may need no endpoint
    if llm is None and settings.jobs.backend not in ("offline", "model") and builtin:
        raise ConfigError(
            f"jobs.backend: {settings.jobs.backend!r} needs an LLM endpoint: set llm.base_url"
            f" ([llm] base_url = ..., or RAGSIEVE_LLM__BASE_URL)"
        )
    judges = build_judges(
        list(names or settings.jobs.judges),
        backend=settings.jobs.backend,
        llm=llm,
        cache_path=settings.jobs.cache_path,
        thresholds=settings.jobs.thresholds,
        calibration=cal,
        model=settings.model.to_config(),
    )
    return redacting(judges, settings)


def load_active(settings: Settings | None, store: Store | None = None) -> Calibration | None:
    """The active calibration of ``store`` (else of the store ``settings.store`` names, when it
    exists); None when there is none or the store predates calibrations."""
    if store is not None:
        return _active_or_none(store)
    url = settings.store if settings is not None else ""
    if not url or ":memory:" in url:
        return None
    from ragsieve.collector.store import open_store

    try:
        opened = open_store(url, create=False)
    except ConfigError:  # no such store (yet): nothing was fitted
        return None
    try:
        return _active_or_none(opened)
    finally:
        opened.close()


def _active_or_none(store: Store) -> Calibration | None:
    from ragsieve.jobs.judging.calibrations import active

    try:
        cal: Calibration | None = active(store)
    except (StoreError, ConfigError) as exc:  # a bad row: say so and judge uncalibrated
        log.warning("no calibration applied: %s", exc)
        return None
    return cal


def redacting(judges: list[Any], settings: Settings) -> list[Any]:
    """With ``golden.scrub_pii`` on, results are redacted before they are stored, exported or
    sent to Phoenix (an answer's e-mail address must not survive in ``metadata.claims``)."""
    from ragsieve.evaluators.tools.redact import RedactingJudge

    if not settings.golden.scrub_pii:
        return judges
    return [RedactingJudge(j, settings.golden.pii_patterns) for j in judges]


__all__ = ["load_active", "make_judges", "redacting"]
