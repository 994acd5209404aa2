"""CollectorSettings: how the receiver listens, limits, settles traces and forwards spans."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CollectorSettings(BaseModel):
    """Settings of ``ragsieve collector serve`` (section ``[collector]``)."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="Address to bind; loopback unless told otherwise.")
    port: int = Field(4318, ge=0, le=65535, description="OTLP/HTTP port (0 picks a free one).")
    grpc_port: int = Field(
        4317, ge=0, le=65535, description="OTLP/gRPC port (0 = off), same semantics as HTTP."
    )
    forward_otlp: str | None = Field(
        None, description="OTLP/HTTP traces URL to forward every span to (e.g. Phoenix)."
    )
    token_env: str | None = Field(
        None, description="Name of the env var holding the bearer token clients must send."
    )
    max_body_bytes: int = Field(
        64 * 1024 * 1024, ge=1024, description="Largest request body, compressed or not (413)."
    )
    max_inflight_bytes: int = Field(
        256 * 1024 * 1024,
        ge=1024,
        description="Decompressed bytes held by requests in flight before answering 429.",
    )
    max_spans_per_request: int = Field(
        200_000, ge=1, description="Spans in one request before answering 413."
    )
    max_queued_writes: int = Field(
        256, ge=1, description="Requests waiting for the store before answering 503."
    )
    max_inflight_requests: int = Field(
        512, ge=1, description="Requests being read/decoded at once before answering 429."
    )
    max_connections: int = Field(
        1024,
        ge=1,
        description="Open HTTP connections at once; past it a request gets 503 and is closed.",
    )
    retry_after_s: int = Field(1, ge=1, le=30, description="Retry-After sent with 429/503.")
    quiet_period_s: float = Field(
        15.0, ge=0, description="A trace with a root settles after this long without new spans."
    )
    max_wait_s: float = Field(
        300.0,
        gt=0,
        description="A trace settles this long after its first span (or last settle) regardless.",
    )
    late_window_s: float = Field(
        86400.0, ge=0, description="Late spans within this window re-derive the interaction."
    )
    settle_interval_s: float = Field(1.0, gt=0, description="How often the settler runs.")
    max_trace_spans: int = Field(
        20_000, ge=1, description="A trace settles from its first this many spans (truncated)."
    )
    max_trace_settle_s: float = Field(
        30.0,
        gt=0,
        description="Seconds one trace's settling may take: a large trace settles from as many"
        " of its first spans as fit, at the pace measured on earlier ones (truncated).",
    )
    forward_headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra headers for forwarding (e.g. Phoenix auth); prefer env over TOML.",
    )
    outbox_retention_s: float = Field(
        86400.0, ge=0, description="Delivered outbox rows are deleted after this long."
    )
    retention_days: float | None = Field(
        None,
        gt=0,
        description="Traces (spans, interactions) and outbox rows older than this are deleted"
        " by the job, in batches; results, candidates and feedback are kept (unset: keep all).",
    )
    forward_max_spans_per_s: float = Field(
        200.0, gt=0, description="Pace of forwarding (Phoenix stores ~200 spans/s per process)."
    )
