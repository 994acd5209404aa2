"""``Client.log_to_phoenix`` against a real Phoenix on loopback: notebook verdicts read back."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from test_run_support import KINDS, send, settings, wait_stored

pd = pytest.importorskip("pandas")

from ragsieve.jobs.api import Client  # noqa: E402
from ragsieve.jobs.run.run import run_once  # noqa: E402

PROJECT = "ragsieve-notebook-annotations"


@pytest.mark.phoenix
def test_notebook_results_land_on_the_root_spans_in_phoenix(
    start_collector: Any, phoenix_server: Any
) -> None:
    col = start_collector(
        quiet_period_s=0.2, settle_interval_s=0.1, forward_otlp=phoenix_server.traces_url
    )
    roots: dict[str, str] = {}
    send(
        col.traces_url,
        [KINDS["good"][0], KINDS["unfaithful"][0]],
        project_name=PROJECT,
        roots=roots,
    )
    wait_stored(col.store, 2)
    run_once(col.store, settings(store=col.store.url), take_all=True)
    with Client(col.store.url) as rs:
        faith = rs.results(evaluator="faithfulness")
        assert len(faith) == 2
        # the collector forwards spans to Phoenix asynchronously: post once Phoenix holds them
        phoenix_server.wait_for_spans(list(roots), 2, project=PROJECT, timeout_s=60)
        assert rs.log_to_phoenix(faith, base_url=phoenix_server.base_url) == {"posted": 2}
    expected = dict(zip(faith["span_id"], faith["label"], strict=True))
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        resp = httpx.get(
            f"{phoenix_server.base_url}/v1/projects/{PROJECT}/span_annotations",
            params=[("span_ids", s) for s in roots.values()] + [("limit", 100)],
        )
        if resp.status_code == 200:
            found = [a for a in resp.json()["data"] if a["name"] == "faithfulness"]
            if len(found) == 2:
                break
        time.sleep(0.5)
    assert {a["span_id"]: a["result"]["label"] for a in found} == expected
    assert sorted(expected.values()) == ["faithful", "unfaithful"]
    assert all(a["annotator_kind"] == "CODE" for a in found)
