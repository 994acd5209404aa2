"""The store is checked, not assumed (issue 47, rows 1, 2 and 9, and readiness).

A real collector on loopback, the real OTel SDK exporter, a real SQLite file made read-only
(``chattr +i`` as root, whom file modes do not stop; ``chmod`` otherwise), deleted, replaced, on a
real full file system (a small tmpfs, when this process may mount one), or migrated by a newer
version; and the same refusal on a real PostgreSQL.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from console_script import ragsieve_script
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from ragsieve.collector.store import open_store
from ragsieve.collector.store.migrations import MIGRATIONS
from ragsieve.collector.store.sql import SchemaTooNew
from ragsieve.collector.wire.spans import SpanRecord
from ragsieve.evaluators.errors import ConfigError, StoreError


class Recording(OTLPSpanExporter):
    """The real OTLP/HTTP exporter, keeping each export's result (no retries: one attempt)."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(endpoint=endpoint, timeout=5)
        self.results: list[SpanExportResult] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = super().export(spans)
        self.results.append(result)
        return result


@contextmanager
def exporter_to(url: str) -> Iterator[tuple[Recording, Callable[[str], str]]]:
    """``(exporter, send)``: ``send(question)`` exports one two-span RAG trace, returns its id."""
    exporter = Recording(f"{url}/v1/traces")
    provider = TracerProvider(resource=Resource.create({"service.name": "store-checked"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("store-checked")

    def send(question: str) -> str:
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", question)
            root.set_attribute("output.value", "an answer")
            with tracer.start_as_current_span("llm") as llm:
                llm.set_attribute("openinference.span.kind", "LLM")
                llm.set_attribute("llm.model_name", "m")
                llm.set_attribute("output.value", "an answer")
        return f"{root.get_span_context().trace_id:032x}"

    try:
        yield exporter, send
    finally:
        provider.shutdown()


def _readonly(path: Path, on: bool) -> None:
    """Make ``path`` read-only (or writable again) for this process, root included."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("running as root without chattr: cannot make a file read-only")
        flag = "+i" if on else "-i"
        done = subprocess.run(["chattr", flag, str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"chattr {flag} refused here: {done.stderr.decode().strip()}")
    else:
        path.chmod(0o444 if on else 0o644)


def _wait(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := cond():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_a_store_read_only_at_first_write_recovers_once_writable(
    tmp_path: Path, start_collector: Any
) -> None:
    live = start_collector(quiet_period_s=0.2, settle_interval_s=0.05)
    db = Path(live.store.path)
    _readonly(db, True)
    try:
        with exporter_to(live.url) as (exporter, send):
            time.sleep(0.3)  # settler threads open their connections while the file is read-only
            send("while read-only")  # two spans, two exports (SimpleSpanProcessor)
            assert exporter.results == [SpanExportResult.FAILURE] * 2
            ready = httpx.get(f"{live.url}/readyz")
            assert ready.status_code == 503 and "read-only" in ready.json()["error"]
            _readonly(db, False)
            trace = send("writable again")
            assert exporter.results[2:] == [SpanExportResult.SUCCESS] * 2  # no restart
            assert httpx.get(f"{live.url}/readyz").status_code == 200
            got = _wait(lambda: live.store.get_interaction(trace), 10, "the trace to settle")
            assert got.query == "writable again"
    finally:
        _readonly(db, False)


def _wal_files(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_store_file_deleted_or_replaced_stops_acknowledging(
    tmp_path: Path, start_collector: Any, how: str
) -> None:
    live = start_collector(quiet_period_s=0.2, settle_interval_s=0.05)
    db = Path(live.store.path)
    with exporter_to(live.url) as (exporter, send):
        kept = send("before")
        assert exporter.results == [SpanExportResult.SUCCESS] * 2
        if how == "replaced":  # a re-provisioned volume: another store at the same path
            open_store(f"sqlite:///{tmp_path / 'other.db'}").close()
        for f in _wal_files(db)[1:] if how == "replaced" else _wal_files(db):
            f.unlink(missing_ok=True)
        if how == "replaced":  # in one step: a settle pass between an unlink and a rename
            (tmp_path / "other.db").rename(db)  # would see "deleted", and that is sticky
        send("after")
        assert exporter.results[2:] == [SpanExportResult.FAILURE] * 2  # never a 200 it would lose
        r = httpx.post(f"{live.url}/v1/traces", json={"resourceSpans": [_one_span()]})
        assert r.status_code == 503 and how in r.json()["message"], r.text
        ready = httpx.get(f"{live.url}/readyz")
        assert ready.status_code == 503 and how in ready.json()["error"]
    assert kept  # the trace acknowledged before the deletion went with the file


def _one_span() -> dict[str, Any]:
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "rag",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
    }
    return {"scopeSpans": [{"spans": [span]}]}


@contextmanager
def small_tmpfs(folder: Path, size: str = "4m") -> Iterator[Path]:
    """A real, small file system (tmpfs) at ``folder``; skips where mounting is not allowed."""
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def test_readiness_turns_false_with_the_disk_full_and_back(tmp_path: Path) -> None:
    from ragsieve.collector.serve.app import create_app
    from ragsieve.collector.serve.server import ServerThread
    from ragsieve.collector.settings import CollectorSettings

    with small_tmpfs(tmp_path / "fs") as fs:
        store = open_store(f"sqlite:///{fs / 'ragsieve.db'}")
        server = ServerThread(create_app(store, CollectorSettings(port=0)), port=0).start()
        try:
            assert httpx.get(f"{server.url}/readyz").status_code == 200
            with open(fs / "filler", "wb") as out, pytest.raises(OSError):
                while True:  # until ENOSPC
                    out.write(b"\0" * 65536)
                    out.flush()
            ready = httpx.get(f"{server.url}/readyz")
            assert ready.status_code == 503 and "disk full" in ready.json()["error"]
            (fs / "filler").unlink()
            assert httpx.get(f"{server.url}/readyz").status_code == 200
        finally:
            server.stop()
            store.close()


def _stamp_newer(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO _migrations (name, applied_at) VALUES ('099_from_the_future', 0)")
    conn.commit()
    conn.close()


def test_a_store_from_a_newer_version_is_refused_at_start_with_one_line(tmp_path: Path) -> None:
    db = tmp_path / "newer.db"
    open_store(f"sqlite:///{db}").close()
    _stamp_newer(db)
    with pytest.raises(SchemaTooNew):
        open_store(f"sqlite:///{db}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    out = subprocess.run(
        [str(ragsieve_script()), "collector", "serve", "--port", "0", "--grpc-port", "0",
         "--store", f"sqlite:///{db}"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "099_from_the_future" in lines[0] and MIGRATIONS[-1][0] in lines[0]


@pytest.mark.postgres
def test_a_postgres_store_from_a_newer_version_is_refused(pg_database: str) -> None:
    open_store(pg_database).close()
    import psycopg

    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("INSERT INTO _migrations (name, applied_at) VALUES ('099_from_the_future', 0)")
    with pytest.raises(SchemaTooNew, match="099_from_the_future") as exc:
        open_store(pg_database)
    assert isinstance(exc.value, ConfigError) and isinstance(exc.value, StoreError)


@pytest.mark.postgres
def test_a_read_only_postgres_is_not_ready(pg_database: str) -> None:
    import psycopg

    from ragsieve.collector.store.postgres import PostgresStore

    store = open_store(pg_database)
    assert store.write_problem() is None
    store.close()
    name = pg_database.rsplit("/", 1)[1]
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    readonly = PostgresStore(pg_database, migrate=False)  # its sessions open read-only
    try:
        assert "only reads" in (readonly.write_problem() or "")
        spans = [
            SpanRecord(trace_id="ab" * 16, span_id=f"{i:016x}", parent_span_id=None, name="rag")
            for i in (1, 2)
        ]
        with pytest.raises(StoreError, match="read-only"):  # retryable (503), not a data error
            readonly.write_spans(spans[:1])
        with psycopg.connect(pg_database, autocommit=True) as conn:
            conn.execute("SET default_transaction_read_only = off")
            conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = off')
        outcomes = []
        for span in spans:  # a session left from the read-only time fails once, then is gone
            try:
                outcomes.append(readonly.write_spans([span]).written)
            except StoreError:
                outcomes.append(0)
        assert outcomes[-1] == 1 and readonly.write_problem() is None
    finally:
        readonly.close()
