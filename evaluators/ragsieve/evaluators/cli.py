"""``ragsieve eval`` (offline metrics on a golden set's roles), ``ragsieve gate`` (the CI gate) and
``ragsieve experiments list`` (eval outputs read as an experiment log).

Errors are raised, not printed: ``ConfigError`` (and a gate's ``GateError``, turned into one) and
click's usage errors become one line and exit 2 in the root ``main()``; a failed gate exits 1.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from ragsieve.evaluators.errors import ConfigError, GateError
from ragsieve.evaluators.gate.experiments import ConfigValue, load_config_file, parse_config_pairs
from ragsieve.evaluators.golden.roles import (
    DEFAULT_HOLDOUT_LOOKS,
    DEFAULT_ROLES,
    ROLES,
    parse_roles,
)
from ragsieve.evaluators.records import GoldenRole, utcnow

if TYPE_CHECKING:  # numpy-backed modules load when a command runs, not for `ragsieve --help`
    from ragsieve.evaluators.golden.sets import GoldenSet
    from ragsieve.evaluators.judges import Judge
    from ragsieve.evaluators.metrics.report import EvalReport

log = logging.getLogger(__name__)
_CTX = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
_FILE = click.Path(dir_okay=False, path_type=Path)


class _InFile(click.ParamType):
    """A regular file to read (``click.Path`` lets a FIFO and ``/dev/zero`` through), or one
    line naming the option and the path (exit 2), not click's usage text."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        from ragsieve.evaluators.tools.userfile import regular_file

        try:
            return regular_file(value)
        except ConfigError as exc:
            raise ConfigError(f"{param.opts[-1] if param else 'file'}: {exc}") from None


_IN = _InFile()


def _importable_cwd() -> None:
    # A console script does not put the working directory on sys.path; `module:function` specs
    # written from the repo root should import like they do under `python -m`.
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


def _get_judges(names: Sequence[str]) -> list[Judge]:
    try:
        from ragsieve.evaluators.judges import get_judge
    except ImportError as exc:
        raise ConfigError(f"judges: the judge registry is not available ({exc})") from exc
    return [get_judge(n) for n in dict.fromkeys(["faithfulness", *names])]


class _Ranked(NamedTuple):
    """The rankings scored: query id → chunk ids, chunk texts seen, retriever errors."""

    run: Mapping[str, Sequence[str]]
    texts: dict[str, str]
    errors: dict[str, str]


def _check_usage(opts: Mapping[str, Any], roles: Sequence[GoldenRole] | None) -> None:
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
    if roles and "holdout" in roles:
        if len(roles) > 1:
            raise click.UsageError("the holdout is scored on its own: --role holdout")
        if opts["golden"] is None:
            raise click.UsageError("--role holdout needs --golden (a split golden file)")
        if opts["save_run"]:
            raise click.UsageError("--save-run would show the holdout case by case; not allowed")


def _load(opts: Mapping[str, Any], roles: Sequence[GoldenRole] | None) -> GoldenSet:
    from ragsieve.evaluators.golden.roles import select_roles
    from ragsieve.evaluators.golden.runs import paused_gc
    from ragsieve.evaluators.golden.sets import load_beir, load_golden

    with paused_gc():  # parsed files hold no cycles; see paused_gc
        if opts["golden"]:
            golden = select_roles(load_golden(opts["golden"]), roles)
        elif roles:
            raise click.UsageError("--role needs --golden (BEIR files have no roles)")
        else:
            golden = load_beir(opts["queries"], opts["qrels"])
    if not golden.cases:
        raise ConfigError(f"{golden.path}: golden set is empty")
    return golden


def _rankings(
    opts: Mapping[str, Any], golden: GoldenSet, depth: int, config: Mapping[str, ConfigValue]
) -> _Ranked:
    from ragsieve.evaluators.golden.runs import (
        BM25Retriever,
        import_object,
        load_corpus,
        load_run,
        retrieve_all,
    )

    texts: dict[str, str] = load_corpus(opts["corpus"]) if opts["corpus"] else {}
    if opts["run"]:  # a run file stays lazy: each ranking is decoded when scored (runs.RunFile)
        return _Ranked(load_run(opts["run"]), texts, {})
    _importable_cwd()
    search = BM25Retriever(texts).search if opts["baseline"] else import_object(opts["retriever"])
    got = retrieve_all(search, golden.cases, depth, config=config)
    return _Ranked(got.run, {**got.texts, **texts}, got.errors)


def _retriever_name(opts: Mapping[str, Any]) -> str:
    if opts["run"]:
        return f"run file {opts['run']}"
    return "baseline bm25" if opts["baseline"] else str(opts["retriever"])


def _generation(opts: Mapping[str, Any], golden: GoldenSet, got: _Ranked) -> dict[str, Any]:
    from ragsieve.evaluators.golden.runs import import_object
    from ragsieve.evaluators.metrics.generation import generation_metrics

    if not got.texts:
        raise click.UsageError(
            "--answerer needs chunk texts: give --corpus, or a retriever "
            "that returns objects with .content or .text"
        )
    _importable_cwd()
    answerer = import_object(opts["answerer"])
    judges = _get_judges(opts["judge"])
    return asyncio.run(
        generation_metrics(
            golden.answerable,
            golden.no_answer,
            got.run,
            got.texts,
            answerer,
            judges,
            sample=opts["sample"],
            seed=opts["seed"],
        )
    )


def _pipeline_config(opts: Mapping[str, Any]) -> dict[str, ConfigValue]:
    config = load_config_file(opts["config_file"]) if opts["config_file"] else {}
    return {**config, **parse_config_pairs(opts["config"])}


def _log_holdout(opts: Mapping[str, Any], report: EvalReport) -> None:
    """Record who looked at the holdout, when and with what; warn when it was looked at often."""
    from ragsieve.evaluators.golden.roles import HOLDOUT_ENTRY, holdout_looks, read_rule
    from ragsieve.evaluators.golden.sets import append_changelog

    path: Path = opts["golden"]
    rule = read_rule(path)
    limit = opts["holdout_warn_after"] or (rule.holdout_looks if rule else DEFAULT_HOLDOUT_LOOKS)
    look = holdout_looks(path) + 1
    settings = ", ".join(f"{k}={v}" for k, v in report.config.items()) or "none recorded"
    append_changelog(
        path,
        f"{HOLDOUT_ENTRY} {look} by {opts['by'] or getpass.getuser()}: retriever "
        f"{report.retriever}; settings {settings}; {report.n_queries} queries.",
    )
    if look > limit:
        report.warnings.append(
            f"holdout evaluation {look} of {path.name} (warn after {limit}): every look leaks "
            "a little; tune on dev, and split a fresh holdout before trusting it again"
        )


def _run_eval(opts: dict[str, Any]) -> dict[str, Any]:
    from ragsieve.evaluators.golden.runs import paused_gc, write_run
    from ragsieve.evaluators.metrics import DEFAULT_METRICS, expand_metrics
    from ragsieve.evaluators.metrics.report import build_report

    roles = parse_roles(opts["role"]) if opts["role"] else None
    _check_usage(opts, roles)
    config = _pipeline_config(opts)
    golden = _load(opts, roles)
    ks = sorted(set(opts["k"] or (5, 10)))
    metrics = expand_metrics(opts["metrics"] or DEFAULT_METRICS, ks)
    got = _rankings(opts, golden, opts["depth"] or max(ks + [m.k or 0 for m in metrics]), config)
    if opts["save_run"]:
        write_run(opts["save_run"], got.run)
    source = str(opts["golden"] or f"{opts['queries']} + {opts['qrels']}")
    try:
        with paused_gc():
            report = build_report(
                golden,
                got.run,
                metrics,
                worst=opts["worst"],
                worst_by=opts["worst_by"],
                source=source,
            )
    except ValueError as exc:
        raise ConfigError(f"--worst-by: {exc}") from None
    report.retriever_errors, report.config = got.errors, config
    report.roles = list(roles or DEFAULT_ROLES) if golden.cases[0].role else None
    report.retriever, report.created_at = _retriever_name(opts), utcnow().isoformat()
    if opts["answerer"]:
        report.generation = _generation(opts, golden, got)
    if roles == ("holdout",):
        report.seal()
        _log_holdout(opts, report)
    return _emit(opts, report)


def _emit(opts: Mapping[str, Any], report: EvalReport) -> dict[str, Any]:
    from ragsieve.evaluators.golden.runs import paused_gc
    from ragsieve.evaluators.metrics.report import dumps, render_text

    data = report.to_json(rows=False)  # per-query rows written one at a time (QueryRows)
    with paused_gc():
        if opts["out"]:  # one encoding at a time, none copied (200,000 queries: ~100 MB each)
            with opts["out"].open("wb") as out:
                out.write(dumps(data, indent=1))
                out.write(b"\n")
        click.echo(dumps(data) if opts["as_json"] else render_text(report))
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
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
@click.option(
    "--role",
    multiple=True,
    metavar="ROLE[,ROLE]",
    help="Golden roles scored: dev, regression, holdout (default dev,regression). The holdout "
    "prints aggregates only and each look is logged in the changelog.",
)
@click.option(
    "--config",
    multiple=True,
    metavar="KEY=VALUE",
    help="A pipeline setting of this run, recorded in the output (repeatable).",
)
@click.option("--config-file", type=_IN, help="TOML of pipeline settings, recorded likewise.")
@click.option("--by", default=None, help="Who evaluates the holdout (default: login name).")
@click.option(
    "--holdout-warn-after",
    type=click.IntRange(min=1),
    default=None,
    help="Warn after this many holdout looks at one version (default: the split's, else 5).",
)
def eval_command(**opts: Any) -> None:
    """Score retrieval on a golden set; optionally judge generated answers on a sample."""
    _run_eval(opts)


@click.command("gate", context_settings=_CTX)
@click.option("--baseline", required=True, type=_IN, help="Results JSON of the base branch.")
@click.option("--candidate", required=True, type=_IN, help="Results JSON of the change.")
@click.option("--policy", type=_IN, help="Gate policy TOML ([gate] and [floors]).")
@click.option(
    "--role",
    type=click.Choice(ROLES),
    default="regression",
    show_default=True,
    help="Part of the golden set gated; holdout for a release check.",
)
@click.option(
    "--allow-version-change",
    is_flag=True,
    help="Compare runs on different golden versions or roles (the shared queries only).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "json"]),
    default="table",
    show_default=True,
)
def gate_command(
    baseline: Path,
    candidate: Path,
    policy: Path | None,
    role: GoldenRole,
    allow_version_change: bool,
    fmt: str,
) -> None:
    """Fail (exit 1) on a significant regression, a floor breach or a protected-category drop."""
    from ragsieve.evaluators.gate import GatePolicy, compare, load_policy, load_results, render

    pol = load_policy(policy) if policy else GatePolicy()
    try:
        report = compare(
            load_results(baseline),
            load_results(candidate),
            pol,
            role=role,
            allow_version_change=allow_version_change,
        )
    except GateError as exc:  # inputs that do not compare are a usage error (2), not a finding
        raise ConfigError(str(exc)) from None
    click.echo(render(report, fmt), nl=False)
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    if not report.passed:
        raise click.exceptions.Exit(1)


@click.group("experiments", context_settings=_CTX)
def experiments() -> None:
    """One variable at a time: what each eval run changed, and what it did to the metrics."""


@experiments.command("list")
@click.argument("folder", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--policy", type=_IN, help="Gate policy TOML (metrics, confidence, seed).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run, one per line.")
def experiments_list(folder: Path, policy: Path | None, as_json: bool) -> None:
    """List the eval outputs (``--out``/``--json`` files) in FOLDER, oldest first, each with what
    changed since the previous run on the same golden version and role and the log entry."""
    from ragsieve.evaluators.gate import GatePolicy, load_policy
    from ragsieve.evaluators.gate.log import list_experiments, render_experiments

    rows = list_experiments(folder, load_policy(policy) if policy else GatePolicy())
    if as_json:
        for row in rows:
            click.echo(json.dumps(row.to_json(), ensure_ascii=False))
        return
    click.echo(render_experiments(rows), nl=False)
