"""``ragsieve judges list|calibrate|labels|fit``: the judges, their agreement, their fit.

``labels`` counts people's verdicts per source, metric and verdict; ``fit`` fits per metric the
decision threshold and the offline judge's evidence weights on them (k-fold cross-validated),
prints the agreement before and after, and stores the fit as the active calibration when it
changes something and gains in cross-validation (``FitResult.worth_storing``; ``--force``
anyway, ``--dry-run`` never). ``--export`` / ``--import`` move the active calibration between
stores; ``--reset`` goes back to the defaults.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from ragsieve.collector.cliopts import SettingsSource, json_option, opened_store, store_option

if TYPE_CHECKING:
    from ragsieve.collector.store import Store
    from ragsieve.jobs.settings import Settings

_CTX = {"help_option_names": ["-h", "--help"]}


@click.group("judges", context_settings=_CTX)
def judges() -> None:
    """List judges, measure them against labels, fit them to a deployment's labels."""


@judges.command("list", context_settings=_CTX)
@json_option
def list_cmd(as_json: bool) -> None:
    """Show every registered judge (built-ins and plugins)."""
    from ragsieve.evaluators.judges.cli import print_judges

    print_judges(as_json)


@judges.command("calibrate", context_settings=_CTX)
@click.option(
    "--data",
    "data",
    required=True,
    type=click.Path(dir_okay=False),
    help="Labelled JSONL (id, question, contexts, answer, label_*, task, pair_id).",
)
@click.option("--judge", "judge_name", required=True, help="Registry name, e.g. faithfulness.")
@click.option("--task", default=None, help="Only rows of this task.")
@json_option
@click.option("--llm-base-url", default=None, help="OpenAI-compatible endpoint (llm_/cascade_).")
@click.option("--llm-model", default=None, help="Judge model (llm_/cascade_).")
@click.option("--cache", "cache_path", default=None, help="SQLite file for cached LLM verdicts.")
@click.pass_obj
def calibrate_cmd(
    obj: SettingsSource,
    data: str,
    judge_name: str,
    task: str | None,
    as_json: bool,
    llm_base_url: str | None,
    llm_model: str | None,
    cache_path: str | None,
) -> None:
    """Agreement of a judge with a labelled dataset, per task, plus a threshold sweep.

    LLM judges read their key from RAGSIEVE_LLM__API_KEY (the ``llm`` settings).
    """
    from ragsieve.evaluators.judges.cli import print_calibration
    from ragsieve.evaluators.judges.registry import get_judge
    from ragsieve.evaluators.quality.calibration import calibrate, read_rows

    options: dict[str, Any] = {}
    if judge_name.startswith(("llm_", "cascade_")):
        if not llm_base_url or not llm_model:
            raise click.UsageError(f"--judge {judge_name} needs --llm-base-url and --llm-model")
        settings = obj.settings(**{"llm.base_url": llm_base_url, "llm.model": llm_model})
        options = {"llm": settings.llm.to_config(), "cache_path": cache_path}
    judge = get_judge(judge_name, **options)
    report = calibrate(judge, read_rows(data), task=task)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        print_calibration(judge_name, str(judge.version), report)


@judges.command("labels", context_settings=_CTX)
@click.option(
    "--labels", "labels_file", default=None, type=click.Path(dir_okay=False), help="JSONL labels."
)
@json_option
@store_option
@click.pass_obj
def labels_cmd(
    obj: SettingsSource, labels_file: str | None, as_json: bool, store: str | None
) -> None:
    """How many labels per source, metric and verdict, and how many traces a fit would use."""
    from ragsieve.jobs.fitting.labels import read_labels_file, store_labels, summary
    from ragsieve.jobs.results.judgements import load_interactions

    with opened_store(obj, store) as (_, st):
        labels = store_labels(st)
        if labels_file:
            labels += read_labels_file(labels_file, st)
        held = set(load_interactions(st, sorted({x.trace_id for x in labels})))
        out = summary(labels, held)
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(f"labels: {out['labels']}  by source: {_kv(out['by_source'])}")
    click.echo(f"verdicts: {_kv(out['by_verdict'])}")
    for metric, counts in out["by_metric"].items():
        click.echo(f"  {metric:<18} {_kv(counts)}")
    click.echo(
        f"a fit would use {out['fit_labels']} labels on {out['fit_traces']} traces"
        f" ({_kv(out['fit_by_verdict'])})"
    )


def _kv(d: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "none"


@judges.command("fit", context_settings=_CTX)
@click.option(
    "--labels", "labels_file", default=None, type=click.Path(dir_okay=False), help="JSONL labels."
)
@click.option(
    "--force", is_flag=True, help="Store the fit even when cross-validation says it gains nothing."
)
@click.option("--dry-run", is_flag=True, help="Fit and report; store nothing.")
@click.option("--export", "export_file", default=None, help="Write the active calibration here.")
@click.option("--import", "import_file", default=None, help="Make this calibration file active.")
@click.option("--reset", is_flag=True, help="Deactivate every calibration (judge defaults).")
@click.option("--folds", type=click.IntRange(2, 20), default=5, show_default=True, help="CV folds.")
@click.option("--seed", type=int, default=0, show_default=True, help="Folds and bootstrap seed.")
@click.option(
    "--false-flag-cost",
    type=click.FloatRange(0, 100, min_open=True),
    default=None,
    help="What one false flag costs, in missed failures [default: jobs.false_flag_cost, 1].",
)
@json_option
@store_option
@click.pass_obj
def fit_cmd(
    obj: SettingsSource,
    labels_file: str | None,
    force: bool,
    dry_run: bool,
    export_file: str | None,
    import_file: str | None,
    reset: bool,
    folds: int,
    seed: int,
    false_flag_cost: float | None,
    as_json: bool,
    store: str | None,
) -> None:
    """Fit each metric's threshold and the offline judge's evidence weights to the labels."""
    from ragsieve.jobs.judging import calibrations

    if sum(map(bool, (export_file, import_file, reset))) > 1:
        raise click.UsageError("--export, --import and --reset go one at a time")
    overrides: dict[str, Any] = {}
    if false_flag_cost is not None:
        overrides["jobs.false_flag_cost"] = false_flag_cost
    with opened_store(obj, store, **overrides) as (settings, st):
        if export_file or import_file or reset:
            out = _move(st, export_file, import_file, reset)
        else:
            out = _fit(st, settings, labels_file, force, dry_run, folds, seed)
        out["active"] = (lambda c: c.id if c else None)(calibrations.active(st))
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(_render(out))


def _move(
    st: Store, export_file: str | None, import_file: str | None, reset: bool
) -> dict[str, Any]:
    from ragsieve.jobs.judging import calibrations

    if reset:
        return {"reset": calibrations.reset(st)}
    if export_file:
        return {"exported": calibrations.export(st, export_file).id, "file": export_file}
    return {"imported": calibrations.import_(st, str(import_file)).id, "file": import_file}


def _fit(
    st: Store,
    settings: Settings,
    labels_file: str | None,
    force: bool,
    dry_run: bool,
    folds: int,
    seed: int,
) -> dict[str, Any]:
    from ragsieve.jobs.fitting.evidence import build_anchors, build_examples
    from ragsieve.jobs.fitting.fit import run_fit
    from ragsieve.jobs.fitting.labels import read_labels_file, store_labels
    from ragsieve.jobs.fitting.rootcause_weights import fit as fit_causes
    from ragsieve.jobs.fitting.rootcause_weights import labelled_pieces
    from ragsieve.jobs.judging import calibrations
    from ragsieve.jobs.verdicts.verdicts import root_cause_weights

    labels = store_labels(st) + (read_labels_file(labels_file, st) if labels_file else [])
    t0 = time.perf_counter()
    examples, items, counts = build_examples(st, settings, labels)
    anchors, weights = build_anchors(st, settings, [ex.trace_id for ex in examples])
    t1 = time.perf_counter()
    backend = settings.jobs.backend
    result = run_fit(
        examples,
        items,
        settings.jobs.thresholds,
        k=folds,
        seed=seed,
        backend=backend,
        anchors=anchors,
        anchor_weights=weights,
        false_flag_cost=settings.jobs.false_flag_cost,
    )
    report = dict(result.report)
    report["seconds"] = {"evidence": round(t1 - t0, 3), "fit": round(time.perf_counter() - t1, 3)}
    report.update(counts)
    report["root_cause_weights"] = result.report["root_cause_weights"] = fit_causes(
        labelled_pieces(st, labels), root_cause_weights(st)
    )
    moved = report["root_cause_weights"]["weights"] is not None
    write = not dry_run and (result.worth_storing or force or moved)
    report["written"] = None
    if write:
        if not (result.worth_storing or force):  # only the root-cause weights moved
            result = replace(result, params=result.defaults)
        cal = result.calibration(calibrations.next_series(st), time.time())
        report["written"] = calibrations.save(st, cal)
    return report


def _render(out: dict[str, Any]) -> str:
    if "agreement" not in out:
        return ", ".join(f"{k}: {v}" for k, v in out.items())
    a = out["agreement"]
    lines = [
        f"{out['labels']} labels on {out['traces']} traces ({out['failures']} failures,"
        f" {out['passes']} passes), {out['folds']}-fold cross-validation; changes weighed"
        f" against {out.get('anchors', 0)} unlabelled traces",
        f"{'':<18}{'before':>24}{'after':>24}{'change':>24}",
    ]
    cost = out.get("false_flag_cost", 1.0)
    if cost != 1.0:
        lines[0] += f"; a false flag costs {cost:g} missed failures"
    for s in a["after"]:  # the agreement's statistics, the cost-weighted one when it applies
        cells = [_ci(a[k][s]) for k in ("before", "after", "delta")]
        lines.append(f"{s:<18}" + "".join(c.rjust(24) for c in cells))
    rc = out["root_cause_accuracy"]
    lines.append(f"root cause right  {rc['before']} -> {rc['after']} (n={rc['n']})")
    lines.append(_cause_weights(out.get("root_cause_weights") or {}))
    for m, v in out["metrics"].items():
        w = ", ".join(f"{k} {x:g}" for k, x in (v["weights"] or {}).items()) or "score as judged"
        lines.append(f"{m:<18} threshold {v['default_threshold']:g} -> {v['threshold']:g}; {w}")
    verdict = _verdict(out)
    stored = f"stored as {out['written']}" if out["written"] else "nothing stored"
    lines.append(f"{verdict}; {stored}; active calibration: {out['active'] or 'none'}")
    return "\n".join(lines)


def _cause_weights(rc: dict[str, Any]) -> str:
    """One line: what the root-cause decision's refit did on the labelled root causes."""
    if not rc.get("before"):
        return f"root-cause weights: defaults kept ({rc.get('why', 'no labelled root cause')})"
    b, a = rc["before"], rc["after"]
    said = (
        f"stated right {b['stated_right']}/{b['stated']} -> {a['stated_right']}/{a['stated']},"
        f" undetermined {b['undetermined']} -> {a['undetermined']} (n={rc['n']})"
    )
    if rc["weights"] is None:
        return f"root-cause weights: {said}; kept ({rc.get('why')})"
    return f"root-cause weights: {said}; refit: {json.dumps(rc['weights'])}"


def _verdict(out: dict[str, Any]) -> str:
    if not out["changes"]:
        return "the fit changes nothing"
    if out["better"]:
        return "better in cross-validation, beyond noise"
    if out["worth_storing"]:
        return "better in cross-validation, not beyond noise"
    return "no better in cross-validation"


def _ci(x: dict[str, Any]) -> str:
    return f"{x['value']:.3f} [{x['ci'][0]:.3f}, {x['ci'][1]:.3f}]"


__all__ = ["judges"]
