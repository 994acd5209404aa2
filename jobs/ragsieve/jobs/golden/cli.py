"""``ragsieve golden candidates|review|push|pull|promote|import|status``."""

from __future__ import annotations

import getpass
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ragsieve.collector.cliopts import clip, json_option, store_option
from ragsieve.jobs.golden.context import GoldenContext
from ragsieve.jobs.golden.growth.repo import STATUSES, Candidate
from ragsieve.jobs.golden.review.audit import is_audit

if TYPE_CHECKING:
    from ragsieve.jobs.cli import AppContext
    from ragsieve.jobs.golden.growth.categories import CategorySummary


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def candidate_json(c: Candidate, summary: Any) -> dict[str, Any]:
    """The stable JSON line of ``golden candidates --json``."""
    b = c.body
    audit = is_audit(c)
    return {
        "id": c.id,
        "kind": "audit" if audit else "failure",
        "audit": audit,
        "query": c.query,
        "status": c.status,
        "root_cause": c.cause,  # as reviewed (the job's: judged_root_cause)
        "judged_root_cause": c.root_cause,
        "root_causes": b.get("root_causes") or {},  # every merged failure's, counted
        "merged_because": b.get("merged_because") or {},  # source trace -> why it merged
        "askings": b.get("askings") or [c.query],  # every distinct wording merged here
        "category": c.category,
        "category_name": summary.name if summary else None,
        "new_category": bool(summary and summary.new),
        "source_trace_ids": c.source_trace_ids,
        "seen": c.seen,
        "reference_answer": b.get("reference_answer"),
        "relevant_chunks": b.get("relevant_chunks") or {},
        "suggested_chunk_ids": b.get("suggested_chunk_ids") or [],
        "golden_id": b.get("golden_id"),
        "review": b.get("review"),
        "judge_verdict": "pass" if audit else "fail",
        "promoted_in": b.get("promoted_in"),
        "created_at": _iso(c.created_at),
        "updated_at": _iso(c.updated_at),
    }


def _resolve_category(ctx: GoldenContext, category: str | None) -> str | None:
    """Accept a category id or its name (``password / reset``) or one of its terms."""
    if category is None:
        return None
    sums = ctx.summaries()
    if category in sums:
        return category
    for s in sums.values():
        if category.casefold() in (s.name.casefold(), *(t.casefold() for t in s.terms)):
            return str(s.id)
    raise click.UsageError(
        f"--category {category!r}: no such category; see `ragsieve golden status`"
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def golden() -> None:
    """Grow the golden set from flagged production traces: review, promote, track coverage."""


@golden.command("candidates")
@click.option(
    "--status",
    type=click.Choice([s for s in STATUSES if s != "golden"]),
    default=None,
    help="Only this status (default: all).",
)
@click.option("--category", default=None, help="Only this category (id, name or term).")
@json_option
@store_option
@click.pass_obj
def candidates_cmd(
    obj: AppContext, status: str | None, category: str | None, as_json: bool, store: str | None
) -> None:
    """List golden-set candidates, most seen first."""
    with GoldenContext(obj, store) as ctx:
        cat = _resolve_category(ctx, category)
        statuses = [status] if status else [s for s in STATUSES if s != "golden"]
        rows = ctx.repo.select(statuses, category=cat)
        sums = ctx.summaries()
        for c in rows:
            s = sums.get(c.category or "")
            if as_json:
                click.echo(json.dumps(candidate_json(c, s), ensure_ascii=False))
            else:
                new = "NEW " if s and s.new else ""
                name = s.name if s else (c.category or "-")
                click.echo(
                    f"{c.id}  {c.status:<9} seen {c.seen:<4} {c.cause or '-':<12}"
                    f" {new}{clip(name, 30):<30}  {clip(c.query, 60)}"
                )


@golden.command("review")
@click.option("--category", default=None, help="Only this category (id, name or term).")
@click.option("--limit", type=int, default=None, help="Review at most N candidates.")
@click.option("--reviewer", default=None, help="Your name for the record (default: login name).")
@click.option(
    "--kind",
    type=click.Choice(["all", "failures", "audits"]),
    default="all",
    show_default=True,
    help="Flagged failures, audited passes (is it really a pass?), or both (failures first).",
)
@click.option("--audit", is_flag=True, help="Audit items only (same as --kind audits).")
@store_option
@click.pass_obj
def review_cmd(
    obj: AppContext,
    category: str | None,
    limit: int | None,
    reviewer: str | None,
    kind: str,
    audit: bool,
    store: str | None,
) -> None:
    """Review open candidates and audited passes in the terminal: accept / edit / reject / skip,
    or say the judge was wrong (a label for ``ragsieve judges fit``, golden set untouched)."""
    from ragsieve.jobs.golden.review.audit import OPEN
    from ragsieve.jobs.golden.review.review import review

    kind = "audits" if audit else kind
    with GoldenContext(obj, store) as ctx:
        cat = _resolve_category(ctx, category)
        sums = ctx.summaries()
        rows = [] if kind == "audits" else ctx.repo.select(["candidate"], category=cat)
        rows.sort(key=lambda c: (not getattr(sums.get(c.category or ""), "new", False), -c.seen))
        if kind != "failures" and cat is None:
            rows += sorted(ctx.repo.select([OPEN]), key=lambda c: (c.created_at, c.id))
        if limit is not None:
            rows = rows[: max(limit, 0)]
        if not rows:
            click.echo("no open candidates")
            return
        rep = review(ctx.repo, rows, sums, reviewer=reviewer or getpass.getuser())
        n = len(rep.false_alarms)
        alarms = f" (of them {n} false alarm{'s' if n > 1 else ''})" if n else ""
        split = f", {len(rep.split_off)} split off" if rep.split_off else ""
        split += f", {len(rep.merged)} merged as duplicates" if rep.merged else ""
        click.echo(
            f"reviewed: {len(rep.accepted)} accepted,"
            f" {len(rep.rejected) + len(rep.false_alarms)} rejected{alarms},"
            f" {len(rep.skipped)} skipped, {len(rep.edited)} edits{split};"
            f" audits: {len(rep.audit_passes)} confirmed passes,"
            f" {len(rep.audit_misses)} missed failures"
        )


def _phoenix(ctx: GoldenContext) -> Any:
    from ragsieve.jobs.golden.review.phoenix import PhoenixDatasets

    cfg = ctx.settings.phoenix
    key = cfg.api_key.get_secret_value() if cfg.api_key else None
    return PhoenixDatasets(cfg.base_url or "", api_key=key)


@golden.command("push")
@click.option("--dataset", default=None, help="Phoenix dataset (default: phoenix.dataset).")
@click.option("--phoenix-url", default=None, help="Phoenix base URL (default: phoenix.base_url).")
@click.option("--dry-run", is_flag=True, help="Count what would be pushed; send nothing.")
@json_option
@store_option
@click.pass_obj
def push_cmd(
    obj: AppContext,
    dataset: str | None,
    phoenix_url: str | None,
    dry_run: bool,
    as_json: bool,
    store: str | None,
) -> None:
    """Append open candidates to a Phoenix dataset (examples linked to their spans)."""
    from ragsieve.jobs.golden.review.phoenix import push

    with GoldenContext(
        obj, store, **{"phoenix.dataset": dataset, "phoenix.base_url": phoenix_url}
    ) as ctx:
        with _phoenix(ctx) as client:
            out = push(
                ctx.repo, client, ctx.settings.phoenix.dataset, ctx.summaries(), dry_run=dry_run
            )
        click.echo(json.dumps(out) if as_json else _kv(out))


@golden.command("pull")
@click.option("--dataset", default=None, help="Phoenix dataset (default: phoenix.dataset).")
@click.option("--phoenix-url", default=None, help="Phoenix base URL (default: phoenix.base_url).")
@json_option
@store_option
@click.pass_obj
def pull_cmd(
    obj: AppContext, dataset: str | None, phoenix_url: str | None, as_json: bool, store: str | None
) -> None:
    """Read reviewers' edits and decisions back from the Phoenix dataset."""
    from ragsieve.jobs.golden.review.phoenix import pull

    with GoldenContext(
        obj, store, **{"phoenix.dataset": dataset, "phoenix.base_url": phoenix_url}
    ) as ctx:
        with _phoenix(ctx) as client:
            out = pull(ctx.repo, client, ctx.settings.phoenix.dataset)
        click.echo(json.dumps(out) if as_json else _kv(out))


@golden.command("import")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="Validate only.")
@json_option
@store_option
@click.pass_obj
def import_cmd(
    obj: AppContext, file: Path, dry_run: bool, as_json: bool, store: str | None
) -> None:
    """Bring an existing golden set in (Spanish/English aliases) so dedup and novelty use it."""
    from ragsieve.evaluators.golden.sets import load_golden
    from ragsieve.evaluators.tools.embeddings import embed
    from ragsieve.jobs.golden.growth.repo import encode_vector
    from ragsieve.jobs.golden.review.promote import golden_row

    gs = load_golden(file)  # ConfigError path:line: field: message → exit 2
    with GoldenContext(obj, store) as ctx:
        known = {r.id for r in ctx.repo.select(["golden"])}
        rows = [golden_row(c, None, origin=file.name) for c in gs.cases]
        fresh = [r for r in rows if r.id not in known]
        if not dry_run and rows:
            for row, vec in zip(rows, embed([r.query for r in rows]), strict=True):
                row.body["embedding"] = encode_vector(vec)
            ctx.repo.save(rows)
        out = {
            "file": str(file),
            "cases": len(gs.cases),
            "new": len(fresh),
            "updated": len(rows) - len(fresh),
            "no_answer": len(gs.no_answer),
            "dry_run": dry_run,
        }
        click.echo(json.dumps(out) if as_json else _kv(out))


@golden.command("status")
@json_option
@store_option
@click.pass_obj
def status_cmd(obj: AppContext, as_json: bool, store: str | None) -> None:
    """New failure categories first, then coverage per category, category changes and counts."""
    from ragsieve.jobs.golden.growth.category_log import CategoryLog

    with GoldenContext(obj, store) as ctx:
        sums = list(ctx.summaries().values())
        counts = ctx.repo.counts()
        catlog = CategoryLog(ctx.store)
        announced = {k: _iso(v) for k, v in catlog.announced().items()}
        history = catlog.history()[-20:]
        due = ctx.settings.golden.new_category_min_cases
        if as_json:
            new = [
                {**s.to_json(), "announced_at": announced.get(s.id)}
                for s in sums
                if s.new and (s.id in announced or s.failures_seen >= due)
            ]
            payload = {
                "new_categories": new,
                "categories": [s.to_json() for s in sums],
                "category_events": [{**e, "at": _iso(e["at"])} for e in history],
                "counts": counts,
            }
            click.echo(json.dumps(payload, ensure_ascii=False))
            return
        loose = sum(r.category is None for r in ctx.repo.select(["candidate"]))
        _print_status(sums, counts, announced, history, due)
        _print_counts(counts, loose)


def _print_status(
    sums: list[CategorySummary],
    counts: dict[str, int],
    announced: dict[str, str],
    history: list[dict[str, Any]],
    due: int,
) -> None:
    # an announced category stays new while it is one (categories.summarize)
    new = [s for s in sums if s.new and (s.id in announced or s.failures_seen >= due)]
    out = sys.stdout
    if new:
        click.echo(
            f"NEW FAILURE CATEGORIES ({len(new)}): no golden case in their topic area", file=out
        )
        for s in new:
            when = announced.get(s.id, "this run")[:16]
            click.echo(
                f"  * {s.name}  [{s.id}, {s.root_cause}]  seen {s.failures_seen},"
                f" nearest golden {s.nearest_golden:.2f}, announced {when}",
                file=out,
            )
            for q in s.examples:
                click.echo(f"      e.g. {q}", file=out)
        click.echo("", file=out)
    click.echo("COVERAGE per failure category (golden cases vs production failures)", file=out)
    click.echo(
        f"  {'category':<40} {'root cause':<14} {'golden':>6} {'failures':>8}  open", file=out
    )
    for s in sums:
        mark = "NEW " if s.new else ""
        open_n = s.statuses.get("candidate", 0)
        click.echo(
            f"  {(mark + s.name)[:40]:<40} {s.root_cause or '-':<14} {s.golden_cases:>6}"
            f" {s.failures_seen:>8}  {open_n}",
            file=out,
        )
    if history:
        click.echo("\nCATEGORY CHANGES (latest last)", file=out)
        for e in history[-5:]:
            click.echo(f"  {_iso(e['at'])[:16]}  {_event_line(e)}", file=out)


def _event_line(e: dict[str, Any]) -> str:
    """One line of CATEGORY CHANGES."""
    if e["kind"] == "rename":
        return f"{e['category']} renamed: {e['other']} -> {e['to']}"
    if e["kind"] == "merge":
        return f"{e['other']} merged into {e['category']} ({e['members']} candidates)"
    return f"{e['category']} split from {e['other']} ({e['members']} candidates)"


def _print_counts(counts: dict[str, int], loose: int) -> None:
    """The candidates by status (``candidate`` is said ``open``), and the open ones no category
    holds: a failure sharing its topic with no other is in no row of the table above."""
    if loose:
        click.echo(
            f"  + {loose} open candidate(s) in no category (each shares its topic with no other"
            " failure): ragsieve golden candidates --status candidate"
        )
    said = {"candidate": "open"}
    click.echo("")
    click.echo(
        "candidates by status: "
        + (", ".join(f"{said.get(k, k)} {v}" for k, v in sorted(counts.items())) or "none")
    )


def _kv(out: dict[str, Any]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in out.items())


from ragsieve.jobs.golden.promote_cli import promote_cmd  # noqa: E402
from ragsieve.jobs.golden.split_cli import split_cmd  # noqa: E402

golden.add_command(promote_cmd)
golden.add_command(split_cmd)
