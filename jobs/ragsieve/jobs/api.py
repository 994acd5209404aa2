"""``Client``: the store as pandas DataFrames, for notebooks (Phoenix and RAGAS users live there).

    >>> from ragsieve.jobs.api import Client  # doctest: +SKIP
    >>> rs = Client("sqlite:///ragsieve.db")
    >>> rs.interactions(since="2h").head()
    >>> rs.results(flagged=True)
    >>> rs.runs()[["run_id", "failure_rate", "ci_low", "ci_high"]]

The store URL comes from the argument, else ``RAGSIEVE_STORE``, the config file
(``RAGSIEVE_CONFIG``) and the default, as on the command line; a missing SQLite file is refused,
never created. Every method reads; only :meth:`Client.log_to_phoenix` writes, to Phoenix.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx

from ragsieve.collector.store import open_store
from ragsieve.collector.timeutil import parse_duration, parse_window
from ragsieve.evaluators.dataframe import require_pandas
from ragsieve.evaluators.errors import ConfigError
from ragsieve.jobs.results.reviews import list_results
from ragsieve.jobs.settings import Settings, load_settings
from ragsieve.jobs.sinks.annotations import identifier

if TYPE_CHECKING:
    import pandas as pd

INTERACTION_COLUMNS = [
    "trace_id",
    "span_id",
    "query",
    "answer",
    "model",
    "documents",
    "status",
    "latency",
    "tokens",
    "feedback",
    "start_time",
]
RESULT_COLUMNS = [
    "trace_id",
    "span_id",
    "evaluator",
    "label",
    "score",
    "explanation",
    "flagged",
    "root_cause",
    "judge_version",
    "run_id",
    "created_at",
    "metadata",
]
RUN_COLUMNS = [
    "run_id",
    "started_at",
    "finished_at",
    "discovered",
    "judged",
    "flagged",
    "failure_rate",
    "ci_low",
    "ci_high",
    "n",
]
METRIC_SUFFIXES = ("_label", "_score", "_explanation")
ANNOTATION_BATCH = 100


def _ts(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(float(seconds), UTC)


class Client:
    """Read the store into DataFrames; post notebook verdicts to Phoenix.

    Args:
        store: store URL (default: ``RAGSIEVE_STORE``, then the config file, then
            ``sqlite:///ragsieve.db``).
        config: TOML config file (default: ``RAGSIEVE_CONFIG`` when set).
        settings: ready settings instead of ``store``/``config`` (tests, embedding).
    """

    def __init__(
        self,
        store: str | None = None,
        *,
        config: str | None = None,
        settings: Settings | None = None,
    ) -> None:
        if settings is None:
            # a notebook is an edge like the CLI: it may read the config file's env var
            settings = load_settings(config or os.environ.get("RAGSIEVE_CONFIG"), {"store": store})
        elif store is not None:
            settings = settings.model_copy(update={"store": store})
        self.settings = settings
        self._pd = require_pandas()
        self.store = open_store(settings.store, create=False)

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads ---------------------------------------------------------------------------------
    def interactions(self, since: str | None = None, window: str | None = None) -> pd.DataFrame:
        """One row per derived interaction, newest first.

        ``since`` is a duration back from now (``"2h"``), ``window`` an explicit
        ``START..END`` (ISO 8601, UTC); both filter on the trace's start time.
        """
        if since and window:
            raise ConfigError("since and window are mutually exclusive")
        lo = hi = None
        if window:
            lo, hi = parse_window(window)
        elif since:
            lo = datetime.now(UTC) - parse_duration(since)
        rows = []
        for rec in self.store.list_interactions(since=lo, until=hi):
            rows.append(
                {
                    "trace_id": rec.trace_id,
                    "span_id": rec.span_id,
                    "query": rec.query,
                    "answer": rec.answer,
                    "model": rec.model,
                    "documents": [d.model_dump(mode="json") for d in rec.documents],
                    "status": rec.status,
                    "latency": rec.latency_ms,
                    "tokens": rec.tokens.total,
                    "feedback": [f.model_dump(mode="json") for f in rec.feedback],
                    "start_time": rec.started_at,
                }
            )
        return self._frame(rows, INTERACTION_COLUMNS)

    def results(
        self,
        flagged: bool | None = None,
        since: str | None = None,
        evaluator: str | None = None,
    ) -> pd.DataFrame:
        """Judge results, newest first: ``flagged`` True/False filters, None keeps both."""
        lo = (datetime.now(UTC) - parse_duration(since)).timestamp() if since else None
        rows = [
            {**r, "created_at": _ts(r["created_at"])}
            for r in list_results(self.store, since=lo, flagged=bool(flagged))
            if (flagged is None or r["flagged"] == flagged)
            and (evaluator is None or r["evaluator"] == evaluator)
        ]
        return self._frame(rows, RESULT_COLUMNS)

    def candidates(self, status: str | None = None) -> pd.DataFrame:
        """Golden-set candidates (``golden candidates --json`` rows), most seen first."""
        from ragsieve.jobs.golden.cli import candidate_json
        from ragsieve.jobs.golden.growth.repo import STATUSES, CandidateRepo

        statuses = [status] if status else [s for s in STATUSES if s != "golden"]
        if status is not None and status not in STATUSES:
            raise ConfigError(f"status {status!r}: use one of {', '.join(STATUSES)}")
        rows = [candidate_json(c, None) for c in CandidateRepo(self.store).select(statuses)]
        return self._frame(rows, list(rows[0]) if rows else ["id", "query", "status"])

    def runs(self) -> pd.DataFrame:
        """One row per job run, oldest first, with the failure-rate estimate and its 95% CI."""
        rows = []
        for run_id, started, finished, report in self.store.query(
            "SELECT run_id, started_at, finished_at, report FROM runs ORDER BY started_at"
        ):
            rep: dict[str, Any] = json.loads(report) if report else {}
            fr = rep.get("failure_rate") or {}
            rows.append(
                {
                    "run_id": run_id,
                    "started_at": _ts(started),
                    "finished_at": _ts(finished),
                    "discovered": rep.get("discovered"),
                    "judged": rep.get("judged"),
                    "flagged": rep.get("flagged"),
                    "failure_rate": fr.get("estimate"),
                    "ci_low": fr.get("ci_low"),
                    "ci_high": fr.get("ci_high"),
                    "n": fr.get("n"),
                }
            )
        return self._frame(rows, RUN_COLUMNS)

    # -- Phoenix -------------------------------------------------------------------------------
    def log_to_phoenix(
        self, results: pd.DataFrame, *, base_url: str | None = None, timeout_s: float = 10.0
    ) -> dict[str, int]:
        """Post ``results`` to Phoenix as span annotations, in the job's format.

        ``results`` is either long (``evaluator``/``label``/``score``/``explanation``, as from
        :meth:`results`) or wide (``<metric>_label``/``_score``/``_explanation``, as from
        ``evaluate_dataframe``), with ``span_id`` and ``trace_id`` columns. Identifiers are the
        job's, so posting again updates the annotations. Returns ``{"posted": n}``.
        """
        url = (base_url or self.settings.phoenix.base_url or "").rstrip("/")
        if not url:
            raise ConfigError("log_to_phoenix needs phoenix.base_url (or base_url=...)")
        missing = [c for c in ("span_id", "trace_id") if c not in results.columns]
        if missing:
            raise ConfigError(f"log_to_phoenix needs columns {missing} (from Client.interactions)")
        annotations = list(_annotations(results))
        key = self.settings.phoenix.api_key
        headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key else {}
        with httpx.Client(timeout=timeout_s, headers=headers) as http:
            for i in range(0, len(annotations), ANNOTATION_BATCH):
                resp = http.post(
                    f"{url}/v1/span_annotations",
                    params={"sync": "true"},
                    json={"data": annotations[i : i + ANNOTATION_BATCH]},
                )
                if not resp.is_success:
                    raise ConfigError(
                        f"Phoenix at {url} answered {resp.status_code}: {resp.text[:200]}"
                    )
        return {"posted": len(annotations)}

    def _frame(self, rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
        frame: pd.DataFrame = self._pd.DataFrame(rows, columns=columns)
        return frame


def _clean(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _annotations(df: pd.DataFrame) -> Iterator[dict[str, Any]]:
    """The job's annotation objects for each (row, metric) of a long or wide results frame."""
    long = "evaluator" in df.columns
    metrics = sorted(
        {c.removesuffix("_label") for c in df.columns if c.endswith("_label")} if not long else ()
    )
    for row in df.to_dict("records"):
        cells: list[tuple[str, Mapping[str, Any]]]
        if long:
            cells = [(str(row["evaluator"]), row)]
        else:
            cells = [(m, {k[1:]: row.get(m + k) for k in METRIC_SUFFIXES}) for m in metrics]
        for name, cell in cells:
            if _clean(cell.get("label")) is None:
                continue
            yield {
                "span_id": str(row["span_id"]),
                "name": name,
                "annotator_kind": "CODE",
                "result": {
                    "label": str(cell["label"]),
                    "score": _clean(cell.get("score")),
                    "explanation": _clean(cell.get("explanation")),
                },
                "metadata": {
                    "trace_id": str(row["trace_id"]),
                    "source": "notebook",
                    "run_id": _clean(row.get("run_id")),
                    "judge_version": _clean(row.get("judge_version")),
                },
                "identifier": identifier(str(row["trace_id"]), name),
            }


__all__ = ["Client"]
