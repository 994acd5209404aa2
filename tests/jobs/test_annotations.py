"""Annotation delivery from the outbox against a small Phoenix-like HTTP server on loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from ragsieve.evaluators.records import EvalResult
from ragsieve.jobs.sinks import annotations

TRACE = "ab" * 16


class AnnotationServer:
    """Accepts ``POST /v1/span_annotations?sync=true`` like Phoenix: 404 for unknown spans."""

    def __init__(self) -> None:
        self.known: set[str] = set()
        self.stored: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.bodies: list[dict[str, Any]] = []
        self.script: list[tuple[int, dict[str, str]]] = []  # forced replies, served first
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                url = urlsplit(self.path)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append({"path": url.path, "query": parse_qs(url.query), "body": body})
                if owner.script:
                    status, headers = owner.script.pop(0)
                    return self._send(status, {"detail": "scripted"}, headers)
                missing = [d["span_id"] for d in body["data"] if d["span_id"] not in owner.known]
                if missing:
                    return self._send(404, {"detail": f"Spans with IDs {missing} do not exist."})
                for d in body["data"]:
                    owner.stored[(d["span_id"], d["name"], d["identifier"])] = d
                return self._send(200, {"data": [{"id": str(len(owner.stored))}]})

            def _send(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def phoenix_like() -> Iterator[AnnotationServer]:
    server = AnnotationServer()
    yield server
    server.close()


def verdicts(span_id: str, label: str = "unfaithful") -> list[dict[str, Any]]:
    r = EvalResult(
        trace_id=TRACE,
        span_id=span_id,
        evaluator="faithfulness",
        label=label,
        score=0.2,
        explanation="claim 2 unsupported",
        annotator_kind="LLM",
    )
    return annotations.build_annotations(
        span_id,
        [r],
        verdict="fail",
        root_cause="generation",
        evidence="doc-1 relevant; unfaithful",
        run_id="run-1",
    )


async def test_payload_shape_404_retry_and_update(store: Any, phoenix_like: Any) -> None:
    phoenix_like.known.add("1111111111111111")
    annotations.queue(store, verdicts("1111111111111111") + verdicts("2222222222222222"))
    # the second span shares the trace: its identifiers are the same, so it replaced the first
    assert store.outbox_stats()[annotations.TOPIC]["pending"] == 2
    annotations.queue(store, verdicts("2222222222222222"))
    out = await annotations.deliver(store, phoenix_like.url, base_backoff_s=0.05, max_backoff_s=0.1)
    assert out["delivered"] == 0 and out["pending"] == 2 and "404" in out["last_error"]
    sent = phoenix_like.bodies[0]
    assert sent["path"] == "/v1/span_annotations" and sent["query"] == {"sync": ["true"]}
    item = sent["body"]["data"][0]
    assert set(item) == {"span_id", "name", "annotator_kind", "result", "metadata", "identifier"}
    assert item["annotator_kind"] == "LLM"
    assert item["result"] == {
        "label": "unfaithful",
        "score": 0.2,
        "explanation": "claim 2 unsupported",
    }
    assert item["metadata"]["root_cause"] == "generation"
    assert item["metadata"]["run_id"] == "run-1"
    phoenix_like.known.add("2222222222222222")  # the span reached Phoenix meanwhile
    time.sleep(0.25)
    out = await annotations.deliver(store, phoenix_like.url, base_backoff_s=0.05, max_backoff_s=0.1)
    assert out["delivered"] == 2 and out["pending"] == 0
    names = sorted(k[1] for k in phoenix_like.stored)
    assert names == ["faithfulness", annotations.VERDICT_NAME]
    # Re-queuing after delivery re-posts with the same identifier: an update, not a duplicate.
    annotations.queue(store, verdicts("2222222222222222", label="faithful"))
    out = await annotations.deliver(store, phoenix_like.url)
    assert out["delivered"] == 2 and len(phoenix_like.stored) == 2
    key = ("2222222222222222", "faithfulness", annotations.identifier(TRACE, "faithfulness"))
    assert phoenix_like.stored[key]["result"]["label"] == "faithful"


async def test_unavailable_and_bad_payload(store: Any, phoenix_like: Any) -> None:
    phoenix_like.known.add("1111111111111111")
    annotations.queue(store, verdicts("1111111111111111"))
    phoenix_like.script = [(503, {"Retry-After": "0.1"})]
    out = await annotations.deliver(store, phoenix_like.url)
    assert out["delivered"] == 0 and out["retried"] == 1 and out["pending"] == 2
    time.sleep(0.15)
    phoenix_like.script = [(422, {})]
    out = await annotations.deliver(store, phoenix_like.url)
    assert out["dead_lettered"] == 1
    row = store.query("SELECT last_error FROM outbox WHERE last_error LIKE 'dead letter%'")
    assert len(row) == 1  # parked with its error, still in the outbox
