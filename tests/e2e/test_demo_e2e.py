"""The demo end to end: real collector, real exporter, real job, offline judges; floors hold."""

from __future__ import annotations

import json
import subprocess
import sys


def test_demo_meets_the_scorecard_floors_through_the_console_entry_point(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ragsieve.jobs", "demo", "--queries", "120", "--json"],
        cwd=tmp_path,  # the demo keeps ./ragsieve-demo.db
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    card = json.loads(proc.stdout)
    assert card["n_queries"] == 120
    assert card["n_planted"] == 36
    assert card["planted_recall"] >= 0.85
    assert card["root_cause_accuracy"] >= 0.80
    assert card["false_positive_rate"] <= 0.10
    # every planted kind is represented and detected at least sometimes
    assert set(card["per_kind_recall"]) == {
        "retrieval_miss",
        "wrong_chunk",
        "changed_numbers",
        "unsupported_claim",
        "off_topic",
        "missing_abstention",
    }
    assert all(v is not None and v > 0.5 for v in card["per_kind_recall"].values())
    assert card["n_flagged"] >= card["n_detected"]
