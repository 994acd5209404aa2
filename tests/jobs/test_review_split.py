"""A reviewer splits one asking off a merged candidate: as a false alarm, or as its own failure."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from console_script import ragsieve_script
from golden_plant import PORTS_EN, flagged, stream, write_golden_v3

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.settings import GoldenSettings, Settings

OTHER = "Which ports does the on-prem agent need opened?"  # merged into PORTS_EN (trace 3)


def _row(repo: CandidateRepo, query: str):  # type: ignore[no-untyped-def]
    row = repo.get(candidate_id(normalize_text(query)))
    assert row is not None, query
    return row


def _review(store: Store, tmp_path: Path, v3: Path, answers: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    env.update(RAGSIEVE_GOLDEN__PATH=str(v3), RAGSIEVE_STORE=store.url, COLUMNS="120")
    out = subprocess.run(
        [str(ragsieve_script()), "golden", "review", "--reviewer", "alice"],
        input=answers, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_false_alarm_leaves_a_merged_candidate_and_the_rest_stays(
    store: Store, tmp_path: Path
) -> None:
    v3 = write_golden_v3(tmp_path)
    grow(store, stream(), Settings(golden=GoldenSettings(path=str(v3))))
    repo = CandidateRepo(store)
    before = _row(repo, PORTS_EN)
    assert before.body["askings"] == [PORTS_EN, OTHER] and before.seen == 4
    # the screen numbers each merged asking and offers the split; p, then w with a reason
    said = _review(store, tmp_path, v3, "p\nw\nits answer was right\nq\n")
    assert f"2. {OTHER}" in said and "s[p]lit an asking off" in said
    assert "1 split off" in said
    ports, alarm = _row(repo, PORTS_EN), _row(repo, OTHER)
    # the candidate keeps its other failures, still open for review
    assert ports.status == "candidate" and ports.body["askings"] == [PORTS_EN]
    assert ports.seen == 3 and ports.source_trace_ids == [f"{n:032x}" for n in (1, 2, 10)]
    assert [s["query"] for s in ports.body["sources"]].count(OTHER) == 0
    assert ports.body["root_causes"] == {"retrieval": 3}
    (gone,) = ports.body["split_off"]
    assert (gone["query"], gone["as"], gone["into"]) == (OTHER, "false_alarm", alarm.id)
    assert gone["trace_ids"] == [f"{3:032x}"]
    # what was split off is what "the judge was wrong" records: a rejected false alarm...
    assert alarm.status == "rejected" and alarm.false_alarm
    assert alarm.source_trace_ids == [f"{3:032x}"] and alarm.body["split_from"] == ports.id
    # ...and a pass label on its own trace, none on the candidate's
    labels = store.query("SELECT trace_id, verdict, reason FROM labels")
    assert labels == [(f"{3:032x}", "pass", "its answer was right")]
    # the screen shows what left the candidate
    again = _review(store, tmp_path, v3, "q\n")
    assert f"split off: {OTHER} (false_alarm, {alarm.id})" in " ".join(again.split())


def test_a_different_failure_becomes_its_own_candidate_and_its_repeats_follow_it(
    store: Store, tmp_path: Path
) -> None:
    v3 = write_golden_v3(tmp_path)
    settings = Settings(golden=GoldenSettings(path=str(v3)))
    grow(store, stream(), settings)
    said = _review(store, tmp_path, v3, "p\no\nq\n")
    assert "its own candidate" in said
    repo = CandidateRepo(store)
    ports, own = _row(repo, PORTS_EN), _row(repo, OTHER)
    assert own.status == "candidate" and own.body["askings"] == [OTHER]
    assert own.source_trace_ids == [f"{3:032x}"] and own.root_cause == "retrieval"
    assert OTHER not in ports.body["askings"]
    # the same wording failing again joins the row it was split into, not the one it left
    grow(store, [flagged(OTHER, "retrieval", 99, run_id="run-2")], settings)
    own, ports = _row(repo, OTHER), _row(repo, PORTS_EN)
    assert own.source_trace_ids == [f"{3:032x}", f"{99:032x}"]
    assert f"{99:032x}" not in ports.source_trace_ids


def test_a_refused_split_labels_nothing(store: Store, tmp_path: Path) -> None:
    # a row of the wording exists already (another reviewer's): the split is refused, and its
    # trace, still a failure inside the candidate, gets no pass label
    from ragsieve.jobs.golden.growth.repo import Candidate

    v3 = write_golden_v3(tmp_path)
    grow(store, stream(), Settings(golden=GoldenSettings(path=str(v3))))
    repo = CandidateRepo(store)
    norm = normalize_text(OTHER)
    repo.save([Candidate(candidate_id(norm), "rejected", norm, body={"query": OTHER})])
    said = _review(store, tmp_path, v3, "p\nw\nits answer was right\nq\nq\n")
    assert "already holds" in said and "1 split off" not in said
    assert store.query("SELECT trace_id, verdict FROM labels") == []
    assert OTHER in _row(repo, PORTS_EN).body["askings"]
