"""``ragsieve demo`` with a real Phoenix: traces forwarded, verdicts read back, Phoenix stopped."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from fixtures_phoenix import PhoenixServer, find_phoenix, free_port

from ragsieve.collector.store import open_store
from ragsieve.jobs.verdicts.rootcause import ROOT_CAUSES

PROJECT = "ragsieve-demo"  # resource attribute the demo app's exporter sets
SPANS_PER_TRACE = 4  # CHAIN root -> RETRIEVER, RERANKER, LLM


def _ragsieve() -> list[str]:
    """The installed console entry point beside this interpreter, else the module."""
    exe = Path(sys.executable).with_name("ragsieve")
    return [str(exe)] if os.access(exe, os.X_OK) else [sys.executable, "-m", "ragsieve.jobs"]


def _annotations(base_url: str, span_ids: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with httpx.Client(base_url=base_url, timeout=30) as client:
        for i in range(0, len(span_ids), 50):
            params: list[tuple[str, str | int]] = [("span_ids", s) for s in span_ids[i : i + 50]]
            cursor: str | None = None
            while True:
                page = params + [("limit", 1000)] + ([("cursor", cursor)] if cursor else [])
                resp = client.get(f"/v1/projects/{PROJECT}/span_annotations", params=page)
                resp.raise_for_status()
                data = resp.json()
                out.extend(data["data"])
                cursor = data.get("next_cursor")
                if not cursor:
                    break
    return out


def _store_view(db: Path) -> tuple[dict[str, str], dict[str, tuple[str, str | None]]]:
    """Root span id per trace, and (verdict, root cause) per judged trace, from the demo's store."""
    store = open_store(f"sqlite:///{db}")
    try:
        roots = {it.trace_id: it.span_id for it in store.list_interactions()}
        rows = store.query("SELECT trace_id, verdict, root_cause FROM samples")
    finally:
        store.close()
    return roots, {t: (v, rc) for t, v, rc in rows}


@pytest.mark.phoenix
@pytest.mark.skipif(
    find_phoenix() is None,
    reason="no `phoenix` executable: set RAGSIEVE_TEST_PHOENIX or create .phoenix-venv",
)
def test_demo_forwards_traces_and_annotates_verdicts_in_phoenix(
    phoenix_server: PhoenixServer, tmp_path: Path
) -> None:
    db = tmp_path / "demo.db"
    proc = subprocess.run(
        [
            *_ragsieve(),
            "demo",
            "--phoenix-url",
            phoenix_server.base_url + "/",
            "--queries",
            "40",
            "--json",
            "--store",
            f"sqlite:///{db}",
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,  # a guard, not a speed goal: Phoenix and the demo start slowly on loaded cores
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]  # 1: scorecard below floors
    card = json.loads(proc.stdout)
    assert card["phoenix_url"] == phoenix_server.base_url
    assert f"Phoenix with the annotated traces: {phoenix_server.base_url}" in proc.stderr
    assert "outbox delivered" in proc.stderr, proc.stderr[-3000:]
    assert card["n_queries"] == 40

    roots, verdicts = _store_view(db)
    assert len(roots) == 40 and set(verdicts) == set(roots)
    flagged = {t for t, (v, _) in verdicts.items() if v == "fail"}
    assert len(flagged) == card["n_flagged"] > 0
    assert len(flagged) < 40  # clean traffic passes

    # every span of every demo trace reached Phoenix through the collector's forwarder
    spans = phoenix_server.wait_for_spans(
        roots, SPANS_PER_TRACE * 40, project=PROJECT, timeout_s=20
    )
    by_trace: dict[str, set[str]] = {}
    for span in spans:
        by_trace.setdefault(span["context"]["trace_id"], set()).add(span["context"]["span_id"])
    assert set(by_trace) == set(roots)
    assert all(len(ids) == SPANS_PER_TRACE for ids in by_trace.values())
    assert all(roots[t] in ids for t, ids in by_trace.items())

    # the demo returned only after delivery, so the annotations are there now
    found = _annotations(phoenix_server.base_url, sorted(roots.values()))
    on_root = {(a["span_id"], a["name"]): a for a in found}
    for trace_id, (verdict, root_cause) in verdicts.items():
        ann = on_root.get((roots[trace_id], "ragsieve_verdict"))
        assert ann is not None, f"no verdict annotation on the root span of {trace_id}"
        assert ann["annotator_kind"] == "CODE"
        assert ann["result"]["label"] == verdict
        assert ann["metadata"]["trace_id"] == trace_id
        assert ann["metadata"]["run_id"] == card["run_id"]
        if verdict == "fail":
            assert ann["result"]["score"] == 0.0
            assert root_cause in ROOT_CAUSES
            assert ann["metadata"]["root_cause"] == root_cause
            assert ann["result"]["explanation"].startswith(f"{root_cause}: ")
        else:
            assert verdict == "pass"
            assert ann["result"]["score"] == 1.0
            assert ann["metadata"]["root_cause"] is None
    # judge annotations sit beside the verdict and carry the same root cause
    judge_anns = [a for a in found if a["name"] != "ragsieve_verdict"]
    assert judge_anns
    span_to_trace = {s: t for t, s in roots.items()}
    for ann in judge_anns:
        assert ann["metadata"]["root_cause"] == verdicts[span_to_trace[ann["span_id"]]][1]


def test_phoenix_url_that_does_not_answer_is_a_usage_error(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.run(
        [*_ragsieve(), "demo", "--phoenix-url", url, "--queries", "5"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,  # a guard, not a speed goal: Phoenix and the demo start slowly on loaded cores
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert "--phoenix-url" in proc.stderr and f"no Phoenix answering at {url}" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.phoenix
@pytest.mark.slow
@pytest.mark.skipif(
    find_phoenix() is None,
    reason="no `phoenix` executable: set RAGSIEVE_TEST_PHOENIX or create .phoenix-venv",
)
def test_demo_phoenix_starts_its_own_phoenix_and_stops_it_on_exit(tmp_path: Path) -> None:
    env = {**os.environ, "RAGSIEVE_PHOENIX__EXECUTABLE": str(find_phoenix())}
    proc = subprocess.run(
        [*_ragsieve(), "demo", "--phoenix", "--no-wait", "--queries", "6", "--json"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,  # a guard, not a speed goal: Phoenix and the demo start slowly on loaded cores
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert f"starting Phoenix from {find_phoenix()}" in proc.stderr
    card = json.loads(proc.stdout)
    url = card["phoenix_stopped_url"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url), url
    assert card["phoenix_url"] is None  # a URL that dies with the demo is never offered
    assert f"Phoenix with the annotated traces: {url}" not in proc.stderr
    assert f"stopping the Phoenix the demo started at {url} (--no-wait)" in proc.stderr
    assert "outbox delivered" in proc.stderr, proc.stderr[-3000:]
    with pytest.raises(httpx.TransportError):  # stopped with the demo, port released
        httpx.get(f"{url}/healthz", timeout=2)
