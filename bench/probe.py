"""The limit probe: what one core can store durably with nothing but the unavoidable work.

Per request: gunzip, protobuf decode, then each span kept as it came (its own protobuf bytes,
``bytes``) or with its attributes flattened to JSON (``json``, stdlib ``json`` as a plain
implementation would), inserted into SQLite (WAL, ``synchronous=FULL``) with a primary key on
(trace_id, span_id), one commit per 8 requests. No HTTP, no validation, no bookkeeping: a ceiling,
not a collector. Run in a child process pinned to one core, on the bench's own payloads.
"""

from __future__ import annotations

import base64
import gzip
import json
import multiprocessing as mp
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

REQUESTS_PER_COMMIT = 8


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(v.bytes_value).decode()
    return getattr(v, kind)


def _json_span(s: Any) -> bytes:
    return json.dumps(
        {
            "name": s.name,
            "parent": s.parent_span_id.hex(),
            "start": s.start_time_unix_nano,
            "end": s.end_time_unix_nano,
            "attributes": {kv.key: _value(kv.value) for kv in s.attributes},
        },
        ensure_ascii=False,
    ).encode()


def _run(bodies: list[bytes], mode: str, core: int | None, out: Any) -> None:
    if core is not None:
        os.sched_setaffinity(0, {core})
    with tempfile.TemporaryDirectory(prefix="ragsieve-probe-") as tmp:
        conn = sqlite3.connect(str(Path(tmp) / "probe.db"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(
            "CREATE TABLE spans (trace_id BLOB NOT NULL, span_id BLOB NOT NULL, body BLOB NOT NULL,"
            " PRIMARY KEY (trace_id, span_id))"
        )
        encode = _json_span if mode == "json" else (lambda s: s.SerializeToString())
        stored = 0
        t0, cpu0 = time.perf_counter(), time.process_time()
        for start in range(0, len(bodies), REQUESTS_PER_COMMIT):
            rows = []
            for body in bodies[start : start + REQUESTS_PER_COMMIT]:
                req = ExportTraceServiceRequest.FromString(gzip.decompress(body))
                for rs in req.resource_spans:
                    for ss in rs.scope_spans:
                        rows.extend((s.trace_id, s.span_id, encode(s)) for s in ss.spans)
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO spans VALUES (?,?,?)", rows)
            conn.execute("COMMIT")
            stored += len(rows)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        conn.close()
    out.put(
        {
            "mode": mode,
            "spans": stored,
            "elapsed_s": elapsed,
            "spans_per_s": stored / elapsed,
            "cpu_us_per_span": round(cpu / stored * 1e6, 1),
        }
    )


def limit_probe(bodies: list[bytes], mode: str, core: int | None) -> dict[str, Any]:
    """Spans/s the probe stores in ``mode`` ("bytes" or "json"), pinned to ``core``.

    Every body is stored once (they must carry distinct span ids, as the bench's payloads do);
    the rate is spans over the time from the first decode to the last commit.
    """
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_run, args=(bodies, mode, core, q))
    proc.start()
    result: dict[str, Any] = q.get(timeout=600)
    proc.join()
    result["core"] = core
    result["spans_per_s"] = round(result["spans_per_s"], 1)
    return result


def gzip_bodies(raw: list[bytes]) -> list[bytes]:
    """The HTTP bodies of the bench (gzip level 1)."""
    return [gzip.compress(r, 1) for r in raw]
