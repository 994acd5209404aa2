"""Peak and settled RSS of a collector under concurrent decompression bombs, HTTP and gRPC.

Each scenario starts a fresh collector process (both receivers, default settings, SQLite in a
temporary directory) and fires waves of concurrent requests at it on loopback:

- ``http_gzip``: OTLP/HTTP bodies of gzip'd zeros inflating to 256 MiB (4x ``max_body_bytes``);
- ``grpc_gzip``: OTLP/gRPC messages of 70 MiB of zeros sent with gzip (over the limit inflated);
- ``grpc_plain``: OTLP/gRPC messages of 60 MiB sent as they are (no compression: grpc holds
  each whole before the receiver sees it, so these are bounded by the wire, not the budget).

It reads the process's RSS before (idle), its peak (``VmHWM``) after each wave, and its RSS
2 s after the last wave (settled). ``--baseline REV`` runs the same scenarios on the collector
as of a git revision (extracted with ``git archive``) in the same run, so before and after
share the machine's state. Results go to ``bench/results/bombs.json``.

    python bench/bombs.py --baseline 87a97c2
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
import httpx

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "bombs.json"
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
SERVE = """
import sys, uvicorn
import ragsieve.collector
from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import uvicorn_config
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import open_store
print("collector from", ragsieve.collector.__file__, file=sys.stderr, flush=True)
app = create_app(open_store(sys.argv[1]), CollectorSettings(), run_settler=False,
                 grpc_port=int(sys.argv[3]))
uvicorn.Server(uvicorn_config(app, "127.0.0.1", int(sys.argv[2]))).run()
"""
SCENARIOS: dict[str, dict[str, Any]] = {
    "http_gzip": {"streams": 40, "waves": 3, "mib": 256},
    "grpc_gzip": {"streams": 40, "waves": 3, "mib": 70},
    "grpc_plain": {"streams": 16, "waves": 2, "mib": 60},
}


def status_mib(pid: int, key: str) -> float:
    """A ``/proc/<pid>/status`` memory figure (kB there) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    raise KeyError(key)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gzip_bomb(mib: int) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zero = bytes(1 << 20)
    return b"".join([*(comp.compress(zero) for _ in range(mib)), comp.flush()])


def extract(rev: str, into: Path) -> list[str]:
    """The collector and evaluators packages as of ``rev``; the PYTHONPATH entries to use them."""
    archive = into / "src.tar"
    with archive.open("wb") as fh:
        subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "collector", "evaluators"],
            stdout=fh,
            check=True,
        )
    with tarfile.open(archive) as tar:
        tar.extractall(into / "src", filter="data")
    return [str(into / "src" / "collector"), str(into / "src" / "evaluators")]


class Collector:
    """A collector process on two free loopback ports."""

    def __init__(self, workdir: Path, pythonpath: list[str]) -> None:
        self.http, self.grpc = free_port(), free_port()
        env = dict(os.environ)
        if pythonpath:
            env["PYTHONPATH"] = os.pathsep.join([*pythonpath, env.get("PYTHONPATH", "")])
        store = f"sqlite:///{workdir / 'bombs.db'}"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, store, str(self.http), str(self.grpc)], env=env
        )
        self.url = f"http://127.0.0.1:{self.http}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the collector did not start")
            time.sleep(0.1)
        time.sleep(1.0)  # let the gRPC server settle too

    def rss(self, key: str = "VmRSS") -> float:
        return status_mib(self.proc.pid, key)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def firer(kind: str, c: Collector, mib: int) -> Any:
    """A function sending one request and returning its outcome (status code or gRPC code)."""
    if kind == "http_gzip":
        bomb = gzip_bomb(mib)
        headers = {"content-type": "application/x-protobuf", "content-encoding": "gzip"}

        def fire_http() -> str:
            try:
                r = httpx.post(f"{c.url}/v1/traces", content=bomb, headers=headers, timeout=300)
            except httpx.TransportError as exc:
                return type(exc).__name__
            return str(r.status_code)

        return fire_http
    message = bytes(mib << 20)
    compression = grpc.Compression.Gzip if kind == "grpc_gzip" else None
    channel = grpc.insecure_channel(
        f"127.0.0.1:{c.grpc}", options=[("grpc.max_send_message_length", -1)]
    )
    stub = channel.unary_unary(TRACE_EXPORT)

    def fire_grpc() -> str:
        try:
            stub(message, timeout=300, compression=compression)
        except grpc.RpcError as exc:
            return str(exc.code().name)
        return "OK"

    return fire_grpc


def wave(fire: Any, n: int) -> list[str]:
    """``n`` requests at once; their outcomes."""
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(fire())) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def good_export(c: Collector) -> str:
    """One small valid request after the bombs: is the collector still taking data?"""
    r = httpx.post(f"{c.url}/v1/traces", json={"resourceSpans": []}, timeout=30)
    return str(r.status_code)


def scenario(name: str, pythonpath: list[str]) -> dict[str, Any]:
    spec = SCENARIOS[name]
    with tempfile.TemporaryDirectory(prefix="bombs-") as tmp:
        c = Collector(Path(tmp), pythonpath)
        try:
            fire = firer(name, c, spec["mib"])
            idle = c.rss()
            outcomes: Counter[str] = Counter()
            waves = []
            started = time.monotonic()
            for _ in range(spec["waves"]):
                outcomes.update(wave(fire, spec["streams"]))
                waves.append({"peak_mib": c.rss("VmHWM"), "now_mib": c.rss()})
            seconds = round(time.monotonic() - started, 1)
            time.sleep(2.0)
            return {
                **spec,
                "idle_mib": idle,
                "peak_mib": c.rss("VmHWM"),
                "settled_mib": c.rss(),
                "waves_measured": waves,
                "outcomes": dict(sorted(outcomes.items())),
                "good_request_after": good_export(c),
                "seconds": seconds,
            }
        finally:
            c.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", help="git revision to measure too, in the same run")
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="scenarios to run")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    names = args.only or list(SCENARIOS)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    versions: list[tuple[str, str, list[str]]] = []
    with tempfile.TemporaryDirectory(prefix="bombs-src-") as src:
        if args.baseline:
            rev = subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            versions.append(("baseline", rev, extract(rev, Path(src))))
        versions.append(("current", f"{head} + working tree", []))
        report: dict[str, Any] = {
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
            "settings": "defaults: max_body_bytes 64 MiB, max_inflight_bytes 256 MiB",
        }
        for label, rev, path in versions:
            report[label] = {"revision": rev}
            for name in names:
                result = scenario(name, path)
                report[label][name] = result
                print(
                    f"{label:8} {name:10} {spec_text(result)}: idle {result['idle_mib']} MiB,"
                    f" peak {result['peak_mib']} MiB, settled {result['settled_mib']} MiB,"
                    f" {result['outcomes']}, then {result['good_request_after']}"
                    f" ({result['seconds']} s)",
                    flush=True,
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


def spec_text(result: dict[str, Any]) -> str:
    return f"{result['streams']} x {result['mib']} MiB x {result['waves']}"


if __name__ == "__main__":
    main()
