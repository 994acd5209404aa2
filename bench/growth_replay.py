"""Keep a job run's flagged cases, then re-run golden growth alone on them with the current code.

Used by ``bench/categories.py`` and ``bench/categories_fresh.py`` with ``--replay DIR``: judging
a few hundred traces takes the job 10-25 minutes on a loaded machine, while growth (what these
benches measure) takes seconds. The first time, :func:`keep_run` sends the traffic to
``ragsieve collector serve``, imports the golden file with ``ragsieve golden import`` and runs
``ragsieve jobs run --all`` through the CLI's own ``main`` in this process; the one difference
from the plain CLI is a hook on the job's call into golden growth that keeps what it was given
(the flagged cases, pickled) and the store as it was just before. :func:`regrow` then copies that
store, calls :func:`ragsieve.jobs.golden.grow` (what the job calls) on the kept cases with the
default settings, and reads ``golden status --json`` and ``golden candidates --json`` through the
CLI, as a full run does. A replayed figure is the job's own decision on the kept run, with the
growth code of the commit that replays it.
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from e2e import collect


def _backup(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite file (its WAL included)."""
    a, b = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        a.backup(b)
    finally:
        b.close()
        a.close()


def keep_run(
    traces: list[Any], golden: list[dict[str, Any]], covered: set[str], keep: Path, cli: Any
) -> None:
    """Collector ← traffic, golden import, ``jobs run --all``; keeps ``keep/pre.db``,
    ``keep/flagged.pkl`` and ``keep/plan.pkl``. ``cli`` runs a ``ragsieve`` subcommand."""
    import ragsieve.jobs.run.run as job
    from ragsieve.jobs.cli import main

    keep.mkdir(parents=True, exist_ok=True)
    db = keep / "run.db"
    store = f"sqlite:///{db}"
    sent = collect(traces, store)
    gfile = keep / "golden_v1.jsonl"
    gfile.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in golden))
    cli(["golden", "import", str(gfile), "--json"], {**os.environ, "RAGSIEVE_STORE": store})
    inner = job._grow

    def kept(store_: Any, flagged: list[Any], settings: Any) -> Any:
        (keep / "flagged.pkl").write_bytes(pickle.dumps(flagged))
        _backup(db, keep / "pre.db")
        return inner(store_, flagged, settings)

    job._grow = kept  # type: ignore[assignment]
    plan = {"sent": sent, "covered": sorted(covered), "golden": golden}
    (keep / "plan.pkl").write_bytes(pickle.dumps(plan))
    try:
        main(["jobs", "run", "--store", store, "--since", "24h", "--settle", "0", "--all"])
    except SystemExit as exc:
        if exc.code not in (0, 1, None):
            raise
    finally:
        job._grow = inner  # type: ignore[assignment]


def regrow(keep: Path, cli: Any) -> tuple[dict[str, Any], set[str]]:
    """Golden growth on the kept run with the current code: the ``out`` that
    ``categories.score`` reads, and the covered topics."""
    from ragsieve.collector.store import open_store
    from ragsieve.jobs.golden import grow
    from ragsieve.jobs.settings import Settings

    plan = pickle.loads((keep / "plan.pkl").read_bytes())
    flagged = pickle.loads((keep / "flagged.pkl").read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "regrow.db"
        _backup(keep / "pre.db", db)
        url = f"sqlite:///{db}"
        report = grow(open_store(url), flagged, Settings().golden)
        env = {**os.environ, "RAGSIEVE_STORE": url}
        status = json.loads(cli(["golden", "status", "--json"], env))
        cands = [json.loads(x) for x in cli(["golden", "candidates", "--json"], env).splitlines()]
    out = {
        "sent": plan["sent"],
        "report": {"golden": report},
        "status": status,
        "candidates": cands,
        "judged": {f.interaction.trace_id: f.root_cause for f in flagged},
        "s": None,
    }
    return out, set(plan["covered"])
