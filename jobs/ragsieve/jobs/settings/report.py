"""The ``[report]`` settings: where ``ragsieve up`` writes the HTML report and what it shows."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ragsieve.jobs.settings.sections import Duration


def _default_cells() -> dict[str, str]:
    return {"route": "http.route", "model": "model", "tenant": "metadata.tenant"}


class ReportSettings(BaseModel):
    """The run history report (section ``[report]``)."""

    model_config = ConfigDict(extra="forbid")

    html_path: str | None = Field(
        None, description="`ragsieve up` rewrites this HTML report after each run."
    )
    since: Duration = Field("14d", description="Run history the report covers.")
    url: str | None = Field(None, description="Where people open the report (linked in alerts).")
    cells: dict[str, str] = Field(
        default_factory=_default_cells,
        description="Attribute cells: name -> interaction attribute (failure rate per value).",
    )
    max_cells: int = Field(20, ge=1, description="Most values per cell name kept per run.")
    max_flagged_cases: int = Field(50, ge=0, description="Flagged cases kept per run report.")


__all__ = ["ReportSettings"]
