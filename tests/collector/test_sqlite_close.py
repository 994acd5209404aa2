"""Closing a SQLite store while another thread is still querying it must not crash the process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import sys, threading, time
    from ragsieve.collector.store import open_store
    from ragsieve.evaluators.errors import StoreError

    store = open_store(f"sqlite:///{sys.argv[1]}")
    stop = threading.Event()
    done = []

    def reader():
        while not stop.is_set():
            try:
                store.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
                            " WHERE x < 20000) SELECT COUNT(*) FROM c")
                done.append(1)
            except StoreError:
                pass

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        store.close()  # as a fixture teardown does while a settler thread still runs
        time.sleep(0.001)
    stop.set()
    for t in threads:
        t.join()
    store.close()
    print("queries", len(done))
    """
)


def test_close_while_other_threads_query_does_not_crash(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.split()[-1]) > 0
