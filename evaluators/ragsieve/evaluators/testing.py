"""Public test helpers: a scripted OpenAI-compatible server on loopback, ``make_interaction`` and
``make_result``."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any

from ragsieve.evaluators.records import EvalResult, RagInteraction, RetrievedDocument

_ids = count(1)


def make_interaction(
    query: str | None = "What is the capital of France?",
    context: Sequence[str] = ("Paris is the capital of France.",),
    answer: str | None = "The capital of France is Paris.",
    *,
    model: str | None = "test-generator",
    trace_id: str | None = None,
    **fields: Any,
) -> RagInteraction:
    """A ready-to-judge interaction: ``context`` strings become ranked, in-prompt chunks."""
    n = next(_ids)
    tid = trace_id or f"{n:032x}"
    docs = tuple(
        RetrievedDocument(id=f"doc-{i}", content=c, rank=i, in_prompt=True)
        for i, c in enumerate(context)
    )
    return RagInteraction(
        trace_id=tid,
        span_id=tid[:16],
        started_at=datetime.now(UTC),
        query=query,
        answer=answer,
        documents=docs,
        model=model,
        **fields,
    )


def make_result(
    interaction: RagInteraction, metric: str, label: str, score: float | None, **metadata: Any
) -> EvalResult:
    """A judge's result on ``interaction``, as a judge named ``metric`` would return it."""
    return EvalResult(
        trace_id=interaction.trace_id,
        span_id=interaction.span_id,
        evaluator=metric,
        label=label,
        score=score,
        metadata=metadata,
    )


@dataclass(slots=True)
class Fault:
    """A scripted failure: an HTTP status, a ``delay_s`` longer than the client's timeout, or
    ``malformed`` (200 with content that is not JSON); ``headers`` are added to the response
    (e.g. ``{"Retry-After": "1"}`` on a 429)."""

    status: int | None = None
    delay_s: float = 0.0
    malformed: bool = False
    headers: dict[str, str] = field(default_factory=dict)


Reply = str | dict[str, Any] | Fault


class FakeOpenAIServer:
    """An OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1 with scripted replies.

    Example:
        >>> with FakeOpenAIServer() as server:
        ...     server.enqueue({"reasoning": "ok", "claims": []}, Fault(status=429))
        ...     config = LLMConfig(base_url=server.base_url, model="judge-1")

    Replies are served in order; when the queue is empty ``default`` (a callable receiving the
    request body) answers. Every request body is kept in ``requests`` for assertions, and the
    ``time.monotonic()`` of its arrival in ``request_times``.
    """

    def __init__(
        self,
        default: Callable[[dict[str, Any]], Reply] | None = None,
        usage: tuple[int, int] = (100, 20),
    ) -> None:
        self.default = default
        self.usage = usage
        self.requests: list[dict[str, Any]] = []
        self.request_times: list[float] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def enqueue(self, *replies: Reply) -> None:
        """Append scripted replies (a dict is sent as JSON content; a Fault as a failure)."""
        with self._lock:
            self._queue.extend(replies)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.request_times.append(time.monotonic())
            if self._queue:
                return self._queue.popleft()
        if self.default is None:
            return Fault(status=500)
        return self.default(body)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        if self._server is None:
            raise RuntimeError("server not started; use it as a context manager or call start()")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        """Bind an ephemeral loopback port and serve in a daemon thread."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut the server down and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def prompt_of(request: dict[str, Any]) -> str:
    """The text of the last message of a recorded request."""
    messages: Iterable[dict[str, Any]] = request.get("messages") or []
    return [m.get("content", "") for m in messages][-1] if messages else ""


class _Server(ThreadingHTTPServer):
    owner: FakeOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    """Answers ``POST /v1/chat/completions`` with the owner's next scripted reply."""

    server: _Server

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            body = {}
        reply = owner._next(body)
        if isinstance(reply, Fault):
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.status:
                error = {"message": f"scripted {reply.status}", "type": "scripted"}
                self._send(reply.status, {"error": error}, reply.headers)
                return
            content = "this is {not json" if reply.malformed else "{}"
        else:
            content = reply if isinstance(reply, str) else json.dumps(reply)
        self._send(200, _completion(body.get("model", "fake"), content, owner.usage))

    def _send(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout test)
            pass


def _completion(model: str, content: str, usage: tuple[int, int]) -> dict[str, Any]:
    """An OpenAI chat completion body carrying ``content``."""
    p, c = usage
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
    }
