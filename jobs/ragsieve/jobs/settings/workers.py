"""The ``[workers]`` settings: the procrastinate queue, batches, heartbeats, budget window."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class WorkerSettings(BaseModel):
    """Queue workers (section ``[workers]``)."""

    model_config = ConfigDict(extra="forbid")

    queue: str = Field("ragsieve-judge", description="procrastinate queue the judge batches use.")
    concurrency: int = Field(1, ge=1, description="Batches one worker process runs at once.")
    batch_size: int = Field(20, ge=1, description="Traces per enqueued judge batch.")
    schedule_every_s: float = Field(30.0, gt=0, description="Pause between scheduler passes.")
    heartbeat_s: float = Field(10.0, gt=0, description="Worker heartbeat interval.")
    stalled_after_s: float = Field(
        30.0, gt=0, description="A running batch whose worker is silent this long is retried."
    )
    max_attempts: int = Field(5, ge=1, description="Attempts per batch before it fails.")
    outage_give_up_s: float = Field(
        300.0, gt=0, description="A worker rides out a database outage this long, then exits 1."
    )
    budget_window_s: float = Field(
        3600.0, gt=0, description="Window the global judge budget (jobs.budget_*) applies to."
    )
    usd_per_call_estimate: float = Field(
        0.0, ge=0, description="USD reserved per judge call before the real cost is known."
    )


__all__ = ["WorkerSettings"]
