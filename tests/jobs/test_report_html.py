"""`ragsieve report --html`: one self-contained page, opened in a real headless Chromium.

The browser test drives Chromium over the DevTools protocol (a websocket on loopback): it
loads the file, checks every chart is a non-empty SVG with drawn paths, that the console and
the page raised nothing and no request left ``file://``, and keeps a full-page screenshot under
``.artifacts/`` (gitignored; ``RAGSIEVE_TEST_ARTIFACTS`` moves it).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import utcnow
from ragsieve.jobs.cli import cli
from ragsieve.jobs.run.simulate import HistorySpec, simulate, store_run

BROWSERS = ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome")
ARTIFACTS = Path(
    os.environ.get("RAGSIEVE_TEST_ARTIFACTS") or Path(__file__).resolve().parents[2] / ".artifacts"
)
EVIL = '<img src=x onerror="alert(1)">'


def _history(store: Store, runs: int = 72) -> None:
    start = (utcnow() - timedelta(hours=runs - 0.5)).replace(microsecond=0)
    spec = HistorySpec(
        runs=runs, rate=lambda i: 0.04 if i < runs - 20 else 0.1, start=start, new_category_at=[30]
    )
    for i, (started, report) in enumerate(simulate(spec)):
        if i == runs - 1:
            report["flagged_cases"][0]["query"] = EVIL
        store_run(store, started, report)


FIRST_CASE = 1_700_000_000.0  # 2023-11-14 22:13 UTC: the category's first candidate


def _write(tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGSIEVE_PHOENIX__BASE_URL", "http://127.0.0.1:6006")
    _history(store)
    store.execute(
        "INSERT INTO candidates (id, status, category, root_cause, norm_query, created_at,"
        " updated_at, body) VALUES ('q_1', 'candidate', 'cat_00', 'retrieval', 'q', ?, ?, '{}')",
        (FIRST_CASE, FIRST_CASE),
    )
    out = tmp_path / "report.html"
    res = CliRunner().invoke(
        cli, ["report", "--store", store.url, "--since", "7d", "--html", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"wrote {out}: 72 runs")
    return out


def test_report_is_one_self_contained_file(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = _write(tmp_path, store, monkeypatch).read_text(encoding="utf-8")
    assert page.count("<svg") >= 7  # rate, causes, strata, 3 cells, agreement, cost
    for loaded in (r"<(script|link|img|iframe|object|embed|image)\b", r"@import", r"url\((?!#)"):
        assert not re.search(loaded, page), loaded  # nothing fetched to render the page
    assert EVIL not in page and html_escaped(EVIL) in page
    assert page.count('href="http://127.0.0.1:6006/redirects/traces/') == 100  # latest flagged
    assert "questions about annual billing" in page  # the new category, with its examples
    assert "<td>2023-11-14 22:13</td>" in page  # first seen: its first candidate
    assert "How long does a refund take for annual billing?" in page
    assert ">72<" in page  # runs tile


def html_escaped(text: str) -> str:
    import html

    return html.escape(text)


def _browser() -> str | None:
    return next((p for b in BROWSERS if (p := shutil.which(b))), None)


@pytest.fixture
def devtools(tmp_path: Path) -> Iterator[Any]:
    exe = _browser()
    if exe is None:
        pytest.skip("no Chromium on PATH (tests/run installs chromium-headless-shell via apt)")
    from websockets.sync.client import connect

    profile = tmp_path / "profile"
    args = [exe, "--remote-debugging-port=0", f"--user-data-dir={profile}", "--no-sandbox",
            "--no-first-run", "--disable-gpu", "--window-size=1100,900", "about:blank"]  # fmt: skip
    if not exe.endswith("headless-shell"):
        args.insert(1, "--headless=new")
    # its own process group: Chromium forks helpers that outlive a terminated parent
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            assert time.monotonic() < deadline, "Chromium did not open its DevTools port"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        pages = httpx.get(f"http://127.0.0.1:{port}/json/list").json()
        url = next(p["webSocketDebuggerUrl"] for p in pages if p["type"] == "page")
        with connect(url, max_size=64 * 1024 * 1024) as ws:
            yield _CDP(ws)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):  # helpers that ignored the TERM
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


class _CDP:
    """Just enough of the DevTools protocol: commands and the events seen meanwhile."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self._id = 0

    def __call__(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=30))
            if msg.get("id") == self._id:
                assert "error" not in msg, msg
                return dict(msg.get("result") or {})
            self.events.append(msg)

    def wait_for(self, event: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == event for e in self.events):
            self.events.append(
                json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            )


CHECK_SVGS = """JSON.stringify(Array.from(document.querySelectorAll('svg')).map(s => {
  const r = s.getBoundingClientRect();
  return {w: r.width, h: r.height, paths: s.querySelectorAll('path').length,
          texts: s.querySelectorAll('text').length};
}))"""


def test_report_renders_in_headless_chromium(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch, devtools: Any
) -> None:
    page = _write(tmp_path, store, monkeypatch)
    for domain in ("Runtime", "Log", "Network", "Page"):
        devtools(f"{domain}.enable")
    devtools("Page.navigate", url=page.as_uri())
    devtools.wait_for("Page.loadEventFired")
    svgs = json.loads(devtools("Runtime.evaluate", expression=CHECK_SVGS)["result"]["value"])
    assert len(svgs) >= 7
    for s in svgs:
        assert s["w"] > 100 and s["h"] > 50 and s["paths"] > 5 and s["texts"] > 2, s
    problems = [
        e for e in devtools.events
        if e.get("method") == "Runtime.exceptionThrown"
        or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
        or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
    ]  # fmt: skip
    assert problems == []
    requests = [
        e["params"]["request"]["url"]
        for e in devtools.events
        if e.get("method") == "Network.requestWillBeSent"
    ]
    assert requests and all(u.startswith("file://") for u in requests), requests
    metrics = devtools("Page.getLayoutMetrics")["cssContentSize"]
    shot = devtools(
        "Page.captureScreenshot", format="png", captureBeyondViewport=True,
        clip={"x": 0, "y": 0, "width": metrics["width"], "height": metrics["height"], "scale": 1},
    )  # fmt: skip
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    png = base64.b64decode(shot["data"])
    assert png.startswith(b"\x89PNG") and len(png) > 50_000
    (ARTIFACTS / "report.png").write_bytes(png)


def test_an_empty_history_still_writes_a_page(tmp_path: Path, store: Store) -> None:
    out = tmp_path / "empty.html"
    res = CliRunner().invoke(cli, ["report", "--store", store.url, "--html", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    assert "from 0 runs" in page and "No new failure categories" in page
    bad = CliRunner().invoke(cli, ["report", "--store", store.url, "--since", "3x", "--html", "x"])
    assert bad.exit_code == 2 and "Invalid value for '--since': duration '3x'" in bad.output


def test_a_category_no_longer_new_leaves_the_reports_new_categories() -> None:
    # announced in the first run; a reviewer rejected its failures (or the golden set covered
    # it), so the latest run lists it no more: the page's "new categories" is what is new now
    from ragsieve.jobs.history.runs import RunRecord
    from ragsieve.jobs.report.data import collect

    office = {"category": "c1", "name": "office / lisbon", "failures_seen": 3}
    ports = {"category": "c2", "name": "ports", "failures_seen": 4}
    first = RunRecord("r1", 1.0, 2.0, {"golden": {"new_categories": [office, ports]}})
    later = RunRecord("r2", 3.0, 4.0, {"golden": {"new_categories": [ports]}})
    assert [c["category"] for c in collect([first]).categories] == ["c2", "c1"]
    assert [c["category"] for c in collect([first, later]).categories] == ["c2"]
