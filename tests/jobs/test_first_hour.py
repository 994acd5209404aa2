"""The first hour as a new user lives it, through the real console script and real processes.

The docs' helper snippet runs as pasted against ``ragsieve collector serve``; read-only commands
refuse a missing SQLite file; a port in use is one line and exit 2; secrets never print; the
reference table carries the real defaults; the run report's categories agree with the candidates'.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from console_script import ragsieve_script

REPO = Path(__file__).resolve().parents[2]
INSTRUMENTING = (REPO / "docs" / "instrumenting.md").read_text(encoding="utf-8")
REFERENCE = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ragsieve(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(
        [str(ragsieve_script()), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def _readme_snippet() -> str:
    text = INSTRUMENTING
    section = text[text.index("1. **The helper**") : text.index("2. **OpenInference")]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "the helper snippet is gone from docs/instrumenting.md"
    return textwrap.dedent(block.group(1))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """``ragsieve collector serve`` on a free port with a fresh SQLite store (default settling)."""
    url = f"sqlite:///{tmp_path / 'app.db'}"
    port = _free_port()
    proc = subprocess.Popen(
        [str(ragsieve_script()), "collector", "serve", "--port", str(port), "--grpc-port", "0"]
        + ["--store", url],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "collector did not start"
        time.sleep(0.1)
    yield url, port
    proc.terminate()
    proc.wait(20)


@pytest.fixture
def slow_settle(monkeypatch: pytest.MonkeyPatch) -> float:
    """A quiet period no loaded machine outruns: three CLI starts fit inside it (each imports numpy
    and the encoder, seconds apiece on a busy CI core), so "still settling" is what they see."""
    quiet = 120.0
    monkeypatch.setenv("RAGSIEVE_COLLECTOR__QUIET_PERIOD_S", str(quiet))
    return quiet


def test_readme_snippet_runs_as_pasted_and_the_chunks_reach_the_judges(
    slow_settle, served, tmp_path
):
    url, port = served
    code = _readme_snippet().replace("127.0.0.1:4318", f"127.0.0.1:{port}")
    assert code.count(f"127.0.0.1:{port}") == 1
    script = tmp_path / "app.py"
    script.write_text(code, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr

    # within the quiet period the trace is stored but not derived yet, and both commands say so
    listed = _ragsieve("interactions", "list", "--store", url, cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout == ""
    assert re.search(r"^1 trace still settling .*all due within \d+ s, by", listed.stderr, re.M)
    first = _ragsieve("jobs", "run", "--store", url, "--json", cwd=tmp_path)
    report = json.loads(first.stdout)
    assert report["discovered"] == 0
    settling = report["settling"]
    assert settling["traces"] == 1 and 0 < settling["due_within_s"] <= slow_settle
    table = _ragsieve("jobs", "run", "--store", url, cwd=tmp_path)
    assert re.search(r"^still settling\s+1 trace still settling", table.stdout, re.M)

    done = json.loads(
        _ragsieve(
            "jobs", "run", "--store", url, "--settle", "0", "--all", "--json", cwd=tmp_path
        ).stdout
    )
    assert done["judged"] == 1 and done["settling"]["traces"] == 0
    rec = json.loads(
        _ragsieve("interactions", "list", "--store", url, "--json", cwd=tmp_path).stdout
    )
    assert [(d["id"], d["in_prompt"]) for d in rec["documents"]] == [
        ("plans#starter", True),
        ("plans#pro", True),
    ]
    rows = [
        json.loads(line)
        for line in _ragsieve(
            "results", "list", "--store", url, "--json", cwd=tmp_path
        ).stdout.splitlines()
    ]
    labels = {r["evaluator"]: r["label"] for r in rows}
    assert set(labels) == {"faithfulness", "answer_relevance", "context_relevance"}
    assert "skipped" not in labels.values(), labels
    assert labels["faithfulness"] == "faithful"

    # the docs' curl feedback example, sent as written (JSON, with its content type)
    curl = next(
        ln for ln in INSTRUMENTING.splitlines() if "curl -XPOST" in ln and "/v1/feedback" in ln
    )
    argv = shlex.split(curl[curl.index("curl") : curl.rindex("`")])
    header = argv[argv.index("-H") + 1]
    assert header.lower() == "content-type: application/json"
    body = json.loads(argv[argv.index("-d") + 1].replace("…", rec["trace_id"]))
    answer = httpx.post(
        f"http://127.0.0.1:{port}/v1/feedback",
        content=json.dumps(body),
        headers=dict([tuple(p.strip() for p in header.split(":", 1))]),
    )
    assert answer.status_code in (200, 202), answer.text


@pytest.mark.parametrize(
    "command",
    [
        ["golden", "status"],
        ["interactions", "list"],
        ["results", "list"],
        ["jobs", "run"],
    ],
)
def test_read_only_commands_refuse_a_missing_sqlite_file(tmp_path, command):
    missing = tmp_path / "typo.db"
    res = _ragsieve(*command, "--store", f"sqlite:///{missing}", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        f"error: store sqlite:///{missing}: no such SQLite file (only `ragsieve collector serve`"
        " and `ragsieve up` create one; check --store / RAGSIEVE_STORE)"
    ]
    assert not missing.exists() and not (tmp_path / "ragsieve.db").exists()


@pytest.mark.parametrize("command", [["collector", "serve"], ["up"]])
def test_a_port_in_use_is_one_line_and_exit_2(tmp_path, command):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        store = f"sqlite:///{tmp_path / 'x.db'}"
        # gRPC off: another collector on this machine may hold 4317, which adds a warning line
        res = _ragsieve(
            *command, "--port", str(port), "--grpc-port", "0", "--store", store, cwd=tmp_path
        )
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.splitlines() == [
        f"error: --port {port}: 127.0.0.1:{port} is already in use (another collector?);"
        " stop it or choose another --port"
    ]


def test_config_show_masks_every_secret(tmp_path):
    env = {
        "RAGSIEVE_STORE": "postgresql://ragsieve:hunter2@db.internal:5432/ragsieve",
        "RAGSIEVE_COLLECTOR__FORWARD_HEADERS": '{"authorization": "Bearer s3cr3t-token"}',
        "RAGSIEVE_LLM__API_KEY": "sk-live-123",
        "RAGSIEVE_PHOENIX__API_KEY": "phx-456",
    }
    res = _ragsieve("config", "show", cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr
    for secret in ("hunter2", "s3cr3t", "sk-live-123", "phx-456"):
        assert secret not in res.stdout + res.stderr
    shown = json.loads(res.stdout)
    assert shown["store"] == "postgresql://ragsieve:***@db.internal:5432/ragsieve"
    assert shown["collector"]["forward_headers"] == {"authorization": "***"}
    assert shown["llm"]["api_key"] == "***" and shown["phoenix"]["api_key"] == "***"


def test_reference_table_shows_the_strata_real_rates_and_quotas():
    from ragsieve.jobs.settings import SamplingSettings, StratumRule

    defaults = SamplingSettings()
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(
            r"^\| `(jobs\.sampling\.[a-z_.]+)` \| `[A-Z_]+` \| (`[^`]*`|) \|", REFERENCE, re.M
        )
    }
    strata = [n for n, f in SamplingSettings.model_fields.items() if f.annotation is StratumRule]
    assert len(strata) == 6
    for name in strata:
        rule = getattr(defaults, name)
        assert rows[f"jobs.sampling.{name}.rate"] == f"`{rule.rate}`", name
        assert rows[f"jobs.sampling.{name}.quota"] == (
            "" if rule.quota is None else f"`{rule.quota}`"
        )
    assert rows["jobs.sampling.low_retrieval.rate"] == "`0.5`"
    assert rows["jobs.sampling.novel.quota"] == "`25`"


def test_demo_keeps_its_store_puts_the_scorecard_first_and_says_what_next(tmp_path):
    res = _ragsieve("demo", "--queries", "40", "--seed", "3", cwd=tmp_path, timeout=240)
    assert res.returncode in (0, 1), res.stderr[-2000:]
    out = res.stdout.splitlines()
    assert re.fullmatch(
        r"== ragsieve demo: 40 queries, \d+ flagged, failure rate .*,"
        r" \d+ new failure categor(y|ies)",
        out[0],
    )
    order = [
        next(i for i, ln in enumerate(out) if ln.startswith(h))
        for h in ("== planted-failure scorecard", "== run report")
    ]
    cases = next(i for i, ln in enumerate(out) if ln.startswith("== flagged cases"))
    assert order[0] == 1 and order[0] < cases < order[1]
    flagged = int(re.search(r"(\d+) flagged", out[0]).group(1))
    listed = [ln for ln in out[cases + 1 :] if re.match(r"[0-9a-f]{12}  ", ln)]
    assert len(listed) == min(flagged, 10)
    if flagged > 10:
        assert "--verbose for all" in out[cases]
    store = "sqlite:///ragsieve-demo.db"
    assert (tmp_path / "ragsieve-demo.db").is_file()
    # named by a path that works where the venv is not active (test_demo_next_commands.py)
    review = rf"  (\S+/)?ragsieve golden review --store {re.escape(store)}"
    assert any(re.fullmatch(review, ln) for ln in out), out[-6:]
    # the printed next commands work as pasted, on the kept store
    status = _ragsieve(*shlex.split(f"golden candidates --store {store} --json"), cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    candidates = [json.loads(line) for line in status.stdout.splitlines()]
    # the report's "by category" is the candidates' categories, summing to what was flagged
    import sqlite3

    with sqlite3.connect(tmp_path / "ragsieve-demo.db") as db:
        (report,) = db.execute("SELECT report FROM runs").fetchone()
    by_category = json.loads(report)["flagged_by_category"]
    assert sum(by_category.values()) == flagged
    # a failure that shares its topic with no other stays uncategorised (no category written)
    named = {c["category"] for c in candidates if c.get("category")}
    assert set(by_category) - {"no_query", "uncategorised"} <= named
    assert "uncategorized" not in by_category
