"""Against a real Phoenix on loopback: spans forwarded by the collector, verdicts read back."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from test_run_support import KINDS, send, settings, wait_stored

from ragsieve.jobs.run.run import run_once

PROJECT = "ragsieve-job-annotations"


@pytest.mark.phoenix
def test_verdicts_land_on_root_spans_in_phoenix(start_collector: Any, phoenix_server: Any) -> None:
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
    out = run_once(
        col.store,
        settings(**{"store": col.store.url, "phoenix.base_url": phoenix_server.base_url}),
        take_all=True,
    )
    assert out.report["flagged"] == 1
    deadline = time.monotonic() + 60
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        if out.report["annotations"].get("pending"):
            import asyncio

            from ragsieve.jobs.sinks.annotations import deliver

            asyncio.run(
                deliver(col.store, phoenix_server.base_url, base_backoff_s=0.2, max_backoff_s=1.0)
            )
        resp = httpx.get(
            f"{phoenix_server.base_url}/v1/projects/{PROJECT}/span_annotations",
            params=[("span_ids", s) for s in roots.values()] + [("limit", 100)],
        )
        if resp.status_code == 200:
            found = resp.json()["data"]
            if len(found) == 8:
                break
        time.sleep(0.5)
    assert len(found) == 8, found
    verdicts = {
        a["span_id"]: a["result"]["label"] for a in found if a["name"] == "ragsieve_verdict"
    }
    bad = out.flagged[0].interaction.trace_id
    assert verdicts[roots[bad]] == "fail"
    assert sorted(verdicts.values()) == ["fail", "pass"]
    faith = [a for a in found if a["name"] == "faithfulness" and a["span_id"] == roots[bad]][0]
    assert faith["annotator_kind"] == "CODE"
    assert faith["metadata"]["root_cause"] == "generation"
    assert faith["metadata"]["run_id"] == out.run_id
