"""``ragsieve results list|show|export``: the job's stored verdicts (one trace's whole with
``show``) as text, JSON lines or Parquet."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from ragsieve.collector.cliopts import DURATION, json_option, opened_store, store_option
from ragsieve.jobs.cli import AppContext

COLUMNS = (
    "trace_id",
    "span_id",
    "evaluator",
    "label",
    "score",
    "explanation",
    "flagged",
    "root_cause",
    "judge_version",
    "judge_model",
    "annotator_kind",
    "run_id",
    "created_at",
    "metadata",  # a JSON object (in Parquet: its text)
)


def _rows(
    obj: AppContext,
    store: str | None,
    since: str | None,
    flagged: bool,
    limit: int | None,
    session: str | None = None,
    *,
    verdicts: bool = False,
) -> list[dict[str, Any]]:
    from ragsieve.collector.derive.sessions import session_turns
    from ragsieve.collector.timeutil import parse_duration
    from ragsieve.jobs.results.resultstore import list_results
    from ragsieve.jobs.results.show import failed_metrics

    lo = (datetime.now(UTC) - parse_duration(since)).timestamp() if since else None
    with opened_store(obj, store) as (_, st):
        traces = [t.trace_id for t in session_turns(st, session)] if session else None
        rows = list_results(st, since=lo, flagged=flagged, limit=limit, trace_ids=traces)
        if traces:  # a session reads as its conversation: turns in order, not newest first
            turn = {tid: i for i, tid in enumerate(traces)}
            rows.sort(key=lambda r: turn[r["trace_id"]])
        failed = failed_metrics(st, [r["trace_id"] for r in rows]) if verdicts else {}
    for r in rows:
        r["created_at"] = datetime.fromtimestamp(r["created_at"], UTC).isoformat()
        if verdicts:  # did this result's metric fail the trace (None: no run decided it)
            metrics = failed.get(r["trace_id"])
            r["metric_failed"] = None if metrics is None else r["evaluator"] in metrics
    return rows


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def results() -> None:
    """Verdicts stored by the job."""


@results.command("list")
@store_option
@click.option("--flagged", is_flag=True, help="Only results of failing interactions.")
@click.option(
    "--since", type=DURATION, default=None, help="Only results written in this window, e.g. 1h."
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many.")
@click.option("--session", default=None, help="Only results of this session's turns.")
@json_option
@click.pass_obj
def list_command(
    obj: AppContext,
    store: str | None,
    flagged: bool,
    since: str | None,
    limit: int | None,
    session: str | None,
    as_json: bool,
) -> None:
    """List results (one per judge of a trace), newest first; with --session, in the
    conversation's turn order.

    RESULT says what that metric did to the trace: FAILED it, passed, audit (its judge could not
    call it: a pass that is audited), waived (a failing label the verdict set aside, as for a
    correct abstention's answer relevance), older (an earlier judge version's result, which
    the verdict no longer reads), or - (no score, or no run decided the trace); TRACE VERDICT is
    the trace's own (FLAGGED with its root cause, or pass), given on its first row only."""
    from ragsieve.jobs.results.show import metric_mark

    rows = _rows(obj, store, since, flagged, limit, session, verdicts=True)
    first: dict[str, int] = {}  # a trace's rows together, where its newest one falls
    for i, r in enumerate(rows):
        first.setdefault(r["trace_id"], i)
    rows.sort(key=lambda r: first[r["trace_id"]])
    if not rows and not as_json:  # on stderr: the listing itself stays empty, as with --json
        click.echo("no results match (the store was read; see --since, --flagged)", err=True)
    elif not as_json:
        head = f"{'TRACE':<32}  {'METRIC':<18} {'LABEL':<11} {'SCORE':>5}  {'RESULT':<6}"
        click.echo(head + "  TRACE VERDICT")
    said: set[str] = set()
    judged: set[tuple[str, str]] = set()  # a metric's newest result is the one verdicts read
    for r in rows:
        if as_json:
            click.echo(json.dumps(r, ensure_ascii=False))
            continue
        score = "-" if r["score"] is None else f"{r['score']:.2f}"
        mark = metric_mark(r["label"], r["score"], r["metric_failed"])
        if (r["trace_id"], r["evaluator"]) in judged:
            mark = "older"  # an earlier judge version's result: no verdict reads it now
        judged.add((r["trace_id"], r["evaluator"]))
        verdict = f"FLAGGED {r['root_cause']}" if r["flagged"] else "pass"
        if r["metric_failed"] is None and not r["flagged"]:
            verdict = "-"  # no run decided this trace
        verdict = "" if r["trace_id"] in said else verdict
        said.add(r["trace_id"])
        click.echo(
            f"{r['trace_id']:<32}  {r['evaluator']:<18} {r['label']:<11} {score:>5}"
            f"  {mark:<6}  {verdict}".rstrip()
        )


@results.command("show")
@click.argument("trace_id")
@store_option
@json_option
@click.pass_obj
def show_command(obj: AppContext, trace_id: str, store: str | None, as_json: bool) -> None:
    """One trace's verdict whole: root cause, its evidence (both lines of an undetermined one),
    every piece weighed, and each judge's explanation.

    TRACE_ID may be a unique prefix of at least 6 hex digits, as ``results list`` shows."""
    from ragsieve.collector.cli import resolve_trace_id
    from ragsieve.jobs.results.show import find_trace, render, trace_verdict

    with opened_store(obj, store) as (_, st):
        tid = resolve_trace_id(st, trace_id)
        doc = trace_verdict(st, tid) or trace_verdict(st, find_trace(st, tid))
        if doc is None:
            raise click.UsageError(_no_verdict(st, tid, trace_id))
    click.echo(json.dumps(doc, indent=2, ensure_ascii=False) if as_json else render(doc))


def _no_verdict(st: Any, tid: str, given: str) -> str:
    """Why a trace has no verdict: a run sampled it and left it unjudged, no run sampled it
    yet, or the store has no such trace."""
    sampled = st.query("SELECT verdict FROM samples WHERE trace_id = ? LIMIT 1", (tid,))
    if sampled:  # picked, but no judge result was usable yet
        return (
            f"no verdict for trace {tid}: a run sampled it and left it {sampled[0][0]}"
            " (a judge had no usable result yet); the next run decides it"
        )
    if st.get_interaction(tid) is not None:  # a run judges a sample of its window
        return (
            f"no verdict for trace {tid}: no run of the job has sampled it yet (a run judges a"
            " sample of each window's traces; `ragsieve jobs run --all` judges every trace)"
        )
    return f"no verdict for trace {given}: the store has no such trace"


@results.command("export")
@store_option
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "parquet"]), default="jsonl", show_default=True
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Output file (jsonl default: stdout; parquet needs a file).",
)
@click.option("--flagged", is_flag=True, help="Only results of failing interactions.")
@click.option(
    "--since", type=DURATION, default=None, help="Only results written in this window, e.g. 1h."
)
@click.option("--session", default=None, help="Only results of this session's turns.")
@click.option("--dry-run", is_flag=True, help="Count the rows; write nothing.")
@click.pass_obj
def export_command(
    obj: AppContext,
    store: str | None,
    fmt: str,
    out: Path | None,
    flagged: bool,
    since: str | None,
    session: str | None,
    dry_run: bool,
) -> None:
    """Export results for pandas (``pd.read_json(lines=True)`` or ``pd.read_parquet``)."""
    if fmt == "parquet" and out is None:
        raise click.UsageError("--format parquet needs --out FILE")
    rows = _rows(obj, store, since, flagged, None, session)
    if dry_run:
        click.echo(f"{len(rows)} result(s) would be exported", err=True)
        return
    if fmt == "jsonl":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        if out is None:
            sys.stdout.write(text)
        else:
            out.write_text(text, encoding="utf-8")
    elif out is not None:
        from ragsieve.evaluators.tools.extras import require

        require("parquet", "parquet export")
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        schema = pa.schema(
            [
                ("trace_id", pa.string()),
                ("span_id", pa.string()),
                ("evaluator", pa.string()),
                ("label", pa.string()),
                ("score", pa.float64()),
                ("explanation", pa.string()),
                ("flagged", pa.bool_()),
                ("root_cause", pa.string()),
                ("judge_version", pa.string()),
                ("judge_model", pa.string()),
                ("annotator_kind", pa.string()),
                ("run_id", pa.string()),
                ("created_at", pa.string()),
                ("metadata", pa.string()),
            ]
        )
        flat = [{**r, "metadata": json.dumps(r.get("metadata") or {})} for r in rows]
        table = pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in flat], schema)
        pq.write_table(table, out)
    if out is not None:
        click.echo(f"exported {len(rows)} result(s) to {out}", err=True)


__all__ = ["export_command", "list_command", "results", "show_command"]
