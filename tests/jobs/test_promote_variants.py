"""A repeat merged into a case already promoted reaches the golden set: the next promotion
writes the case with the new wording among its ``metadata.variants``, and its changelog says
so. Before, a promoted candidate was never looked at again: the wording merged into it (by
dedup or a reviewer's ``[d]uplicate``) stayed in the store, and ``promote`` said "nothing to
promote". Growth runs on a real SQLite store; promotion through the real CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from console_script import ragsieve_script
from golden_plant import flagged

from ragsieve.collector.store import Store
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.decisions import decide
from ragsieve.jobs.golden.review.review import prefill
from ragsieve.jobs.settings import GoldenSettings, Settings
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase

KB = [
    ("kb-cooling", "You may cancel the policy within 14 days of purchase for a full refund."),
    ("kb-claims", "Claims are reported online or by phone within 30 days of the loss."),
]
ASKED = "What is the cooling-off period on my policy?"
AGAIN = "what is the cooling off period on my polcy"
SETTINGS = Settings(golden=GoldenSettings(path=None))


def _case(query: str, n: int, run: str) -> FlaggedCase:
    f = flagged(query, "generation", n, run_id=run, chunks=KB)
    it = f.interaction.model_copy(update={"answer": "The cooling-off period is 21 days."})
    return FlaggedCase(it, f.results, f.root_cause, f.evidence, run, f.stratum, f.inclusion_p)


def _promote(store: Store, cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    env.update(RAGSIEVE_STORE=store.url)
    out = subprocess.run(
        [str(ragsieve_script()), "golden", "promote", "--by", "ana", *args], env=env, cwd=cwd,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_wording_merged_after_promotion_joins_the_case_in_the_next_version(
    store: Store, tmp_path: Path
) -> None:
    grow(store, [_case(ASKED, 1, "run-1")], SETTINGS)
    repo = CandidateRepo(store)
    [c] = repo.select(["candidate"])
    prefill(c)
    decide(repo, c, "accepted", "ana", None)
    _promote(store, tmp_path, "--start", "golden_v1.jsonl")
    grow(store, [_case(AGAIN, 2, "run-2")], SETTINGS)  # the same failure, asked again
    [row] = repo.select(["accepted"])
    assert row.body["askings"] == [ASKED, AGAIN]  # the premise: dedup merged it into the case

    said = _promote(store, tmp_path, "--golden", "golden_v1.jsonl")
    assert "new variants of 1 promoted case" in said
    [case] = [json.loads(line) for line in (tmp_path / "golden_v2.jsonl").read_text().splitlines()]
    assert case["id"] == c.id and case["metadata"]["variants"] == [AGAIN]
    log = (tmp_path / "golden.CHANGELOG.md").read_text()
    assert f"- {c.id}: {AGAIN!r}" in log
    # nothing new since: nothing to write
    assert "nothing to promote" in _promote(store, tmp_path, "--golden", "golden_v2.jsonl")
