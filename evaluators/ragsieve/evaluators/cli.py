"""``ragsieve eval`` (offline metrics on a golden set) and ``ragsieve gate`` (the CI gate)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from ragsieve.evaluators.errors import ConfigError, GateError

log = logging.getLogger(__name__)
_CTX = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
_FILE = click.Path(dir_okay=False, path_type=Path)
_IN = click.Path(dir_okay=False, exists=True, path_type=Path)


class ConfigExit(click.ClickException):
    """A usage or config error: one line on stderr, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        """One line on stderr, in the root command's ``error: ...`` format."""
        click.echo(f"error: {self.format_message()}", err=True, file=file)


def _importable_cwd() -> None:
    # A console script does not put the working directory on sys.path; `module:function` specs
    # written from the repo root should import like they do under `python -m`.
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


def _get_judges(names: Sequence[str]) -> list[Any]:
    try:
        from ragsieve.evaluators.judges import get_judge
    except ImportError as exc:
        raise ConfigError(f"judges: the judge registry is not available ({exc})") from exc
    return [get_judge(n) for n in dict.fromkeys(["faithfulness", *names])]


def _run_eval(opts: dict[str, Any]) -> dict[str, Any]:
    from ragsieve.evaluators.golden import load_beir, load_golden
    from ragsieve.evaluators.metrics import DEFAULT_METRICS, expand_metrics
    from ragsieve.evaluators.metrics.report import build_report, dumps, render_text
    from ragsieve.evaluators.runs import (
        BM25Retriever,
        import_object,
        load_corpus,
        load_run,
        paused_gc,
        retrieve_all,
        write_run,
    )

    if (opts["golden"] is None) == (opts["queries"] is None and opts["qrels"] is None):
        raise click.UsageError("give --golden FILE, or --queries and --qrels (BEIR style)")
    if opts["golden"] is None and (opts["queries"] is None or opts["qrels"] is None):
        raise click.UsageError("--queries and --qrels go together")
    sources = [s for s in ("run", "retriever", "baseline") if opts[s]]
    if len(sources) != 1:
        raise click.UsageError("give exactly one of --run, --retriever, --baseline bm25")
    if opts["baseline"] and not opts["corpus"]:
        raise click.UsageError("--baseline bm25 needs --corpus CORPUS.jsonl")
    if opts["judge"] and not opts["answerer"]:
        raise click.UsageError("--judge needs --answerer")
    with paused_gc():  # parsed files hold no cycles; see paused_gc
        golden = (
            load_golden(opts["golden"])
            if opts["golden"]
            else load_beir(opts["queries"], opts["qrels"])
        )
    if not golden.cases:
        raise ConfigError(f"{golden.path}: golden set is empty")
    ks = sorted(set(opts["k"] or (5, 10)))
    metrics = expand_metrics(opts["metrics"] or DEFAULT_METRICS, ks)
    depth = opts["depth"] or max([k for k in ks] + [m.k or 0 for m in metrics])
    texts: dict[str, str] = load_corpus(opts["corpus"]) if opts["corpus"] else {}
    errors: dict[str, str] = {}
    run: Mapping[str, Sequence[str]]
    if opts["run"]:
        run = load_run(opts["run"])
    else:
        _importable_cwd()
        search = (
            BM25Retriever(texts).search if opts["baseline"] else import_object(opts["retriever"])
        )
        got = retrieve_all(search, golden.cases, depth)
        run, errors = got.run, got.errors
        texts = {**got.texts, **texts}
    if opts["save_run"]:
        write_run(opts["save_run"], run)
    source = str(opts["golden"] or f"{opts['queries']} + {opts['qrels']}")
    try:
        with paused_gc():
            report = build_report(
                golden, run, metrics, worst=opts["worst"], worst_by=opts["worst_by"], source=source
            )
    except ValueError as exc:
        raise ConfigError(f"--worst-by: {exc}") from None
    report.retriever_errors = errors
    if opts["answerer"]:
        from ragsieve.evaluators.metrics.generation import generation_metrics

        if not texts:
            raise click.UsageError(
                "--answerer needs chunk texts: give --corpus, or a retriever "
                "that returns objects with .content or .text"
            )
        _importable_cwd()
        answerer = import_object(opts["answerer"])
        judges = _get_judges(opts["judge"])
        report.generation = asyncio.run(
            generation_metrics(
                golden.answerable,
                golden.no_answer,
                run,
                texts,
                answerer,
                judges,
                sample=opts["sample"],
                seed=opts["seed"],
            )
        )
    data = report.to_json()
    with paused_gc():
        if opts["out"]:
            opts["out"].write_bytes(dumps(data, indent=1) + b"\n")
        click.echo(dumps(data) if opts["as_json"] else render_text(report))
    return data


@click.command("eval", context_settings=_CTX)
@click.option("--golden", type=_IN, help="Golden set JSONL (golden_vN.jsonl).")
@click.option("--queries", type=_IN, help="BEIR queries JSONL (with --qrels, instead of --golden).")
@click.option("--qrels", type=_IN, help="BEIR qrels TSV: query-id, corpus-id, score.")
@click.option("--run", type=_IN, help="Run JSONL: {id, retrieved_ids, scores?} per query.")
@click.option("--retriever", metavar="MODULE:FUNCTION", help="search(query, k) -> chunk ids.")
@click.option("--baseline", type=click.Choice(["bm25"]), help="Built-in baseline retriever.")
@click.option("--corpus", type=_IN, help="Corpus JSONL {id, title?, text|content}.")
@click.option(
    "-k",
    "k",
    type=click.IntRange(min=1),
    multiple=True,
    help="Cutoffs for bare metric names (repeatable; default 5 and 10).",
)
@click.option(
    "--metrics",
    multiple=True,
    metavar="NAME[@K],...",
    help="Metrics (default: recall precision hit_rate mrr ndcg context_precision).",
)
@click.option(
    "--depth",
    type=click.IntRange(min=1),
    help="Chunks asked from a retriever (default: the largest k).",
)
@click.option(
    "--worst",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="How many worst queries to list.",
)
@click.option("--worst-by", metavar="METRIC", help="Metric that ranks the worst queries.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--out", type=_FILE, help="Also write the JSON results here (gate input).")
@click.option("--save-run", type=_FILE, help="Write the retrieved rankings as a run file.")
@click.option("--answerer", metavar="MODULE:FUNCTION", help="answer(query, chunks) -> text.")
@click.option("--judge", multiple=True, help="Extra judges for generation (faithfulness always).")
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Cases answered and judged, per group (answerable, no-answer).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed.")
def eval_command(**opts: Any) -> None:
    """Score retrieval on a golden set; optionally judge generated answers on a sample."""
    try:
        _run_eval(opts)
    except ConfigError as exc:
        raise ConfigExit(str(exc)) from None


@click.command("gate", context_settings=_CTX)
@click.option("--baseline", required=True, type=_IN, help="Results JSON of the base branch.")
@click.option("--candidate", required=True, type=_IN, help="Results JSON of the change.")
@click.option("--policy", type=_IN, help="Gate policy TOML ([gate] and [floors]).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "json"]),
    default="table",
    show_default=True,
)
def gate_command(baseline: Path, candidate: Path, policy: Path | None, fmt: str) -> None:
    """Fail (exit 1) on a significant regression, a floor breach or a protected-category drop."""
    from ragsieve.evaluators.gate import GatePolicy, compare, load_policy, load_results, render

    try:
        pol = load_policy(policy) if policy else GatePolicy()
        report = compare(load_results(baseline), load_results(candidate), pol)
    except (ConfigError, GateError) as exc:
        raise ConfigExit(str(exc)) from None
    click.echo(render(report, fmt), nl=False)
    if not report.passed:
        raise click.exceptions.Exit(1)
