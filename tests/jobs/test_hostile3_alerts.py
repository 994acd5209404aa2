"""Issue 47: a webhook that answers 3xx is a permanent failure naming its Location, not a retry
for ever. A real receiver on loopback answers every POST with a redirect."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragsieve.collector.store import Store
from ragsieve.jobs.alerts import sinks
from ragsieve.jobs.cli import cli
from ragsieve.jobs.settings import load_settings

MOVED_TO = "https://hooks.example.invalid/v2/alerts"


class Redirecting:
    """Answers every POST with ``status`` and a Location; counts the posts."""

    def __init__(self, status: int) -> None:
        self.posts = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.posts += 1
                self.send_response(status)
                self.send_header("Location", MOVED_TO)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(params=[301, 302, 307, 308])
def moved(request: pytest.FixtureRequest) -> Iterator[Redirecting]:
    r = Redirecting(request.param)
    yield r
    r.close()


def _config(tmp_path: Path, store: Store, url: str) -> Path:
    cfg = tmp_path / "ragsieve.toml"
    cfg.write_text(
        f'store = "{store.url}"\n[alerts]\nwebhook_url = "{url}"\nbackoff_s = 0.01\n'
        "max_backoff_s = 0.01\n",
        encoding="utf-8",
    )
    return cfg


def test_a_redirecting_webhook_is_dead_lettered_once_naming_the_location(
    tmp_path: Path, store: Store, moved: Redirecting
) -> None:
    settings = load_settings(_config(tmp_path, store, moved.url))
    store.enqueue(sinks.WEBHOOK_TOPIC, b'{"status": "firing"}', sinks.CONTENT_TYPE)
    for _ in range(3):  # three job runs, each delivering what is due
        asyncio.run(sinks.deliver(store, settings.alerts))
    assert moved.posts == 1  # asked once, not again every run
    assert store.outbox_stats()[sinks.WEBHOOK_TOPIC] == {"pending": 0, "dead": 1, "delivered": 0}
    (error,) = [r[0] for r in store.query("SELECT last_error FROM outbox")]
    assert "redirect to " + MOVED_TO in error and error.startswith("dead letter:")


def test_alerts_test_names_where_the_webhook_moved(
    tmp_path: Path, store: Store, moved: Redirecting
) -> None:
    out = CliRunner().invoke(
        cli, ["--config", str(_config(tmp_path, store, moved.url)), "alerts", "test"]
    )
    assert f"redirect to {MOVED_TO}" in out.output, out.output
