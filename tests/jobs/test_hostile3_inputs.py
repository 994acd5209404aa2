"""Issue 47, the smaller items on the jobs side: files that never end or never open, a window
past the calendar, and golden vectors kept across runs.

Each refusal is one line on stderr and exit 2 from the real CLI in its own process (a FIFO would
hang a process that opened it, so a timeout guards every call).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.tools.embeddings import embed
from ragsieve.jobs.sampling.golden_cache import ENCODER, cache_dir, file_digest, golden_vectors

GOLDEN = [
    {"id": "g1", "query": "How many requests does Starter allow?", "relevant_chunks": ["c1"]},
    {"id": "g2", "query": "How much does Pro cost?", "relevant_chunks": ["c2"]},
]


def ragsieve(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    return subprocess.run(
        [sys.executable, "-m", "ragsieve.jobs", *map(str, args)],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def refused(ran: subprocess.CompletedProcess[str], *words: str) -> None:
    assert ran.returncode == 2, (ran.returncode, ran.stderr[-2000:])
    assert "Traceback" not in ran.stderr and ran.stderr.count("\n") == 1, ran.stderr
    for w in words:
        assert w in ran.stderr, ran.stderr


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.toml"
    os.mkfifo(path)
    return path


def _golden(tmp_path: Path, rows: list[dict] = GOLDEN) -> Path:  # type: ignore[type-arg]
    path = tmp_path / "golden_v1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["/dev/zero", "fifo", "folder"])
def test_config_that_is_not_a_regular_file_is_refused(
    name: str, fifo: Path, tmp_path: Path, store: Store
) -> None:
    path = {"/dev/zero": Path("/dev/zero"), "fifo": fifo, "folder": tmp_path}[name]
    kind = {"/dev/zero": "character device", "fifo": "FIFO", "folder": "directory"}[name]
    refused(ragsieve("--config", path, "jobs", "run", "--store", store.url), str(path), kind)


@pytest.mark.parametrize("name", ["/dev/zero", "fifo"])
def test_golden_that_is_not_a_regular_file_is_refused(
    name: str, fifo: Path, tmp_path: Path, store: Store
) -> None:
    path = Path("/dev/zero") if name == "/dev/zero" else fifo
    kind = "character device" if name == "/dev/zero" else "FIFO"
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"id": "g1", "retrieved_ids": ["c1"]}) + "\n", encoding="utf-8")
    refused(ragsieve("eval", "--golden", path, "--run", run), str(path), kind)
    env = {"RAGSIEVE_GOLDEN__PATH": str(path)}
    refused(ragsieve("jobs", "run", "--store", store.url, env=env), "golden.path", kind)


def test_a_huge_config_is_refused_without_reading_it_all(tmp_path: Path, store: Store) -> None:
    big = tmp_path / "big.toml"
    with big.open("wb") as out:
        out.truncate(64 * 1024 * 1024)  # sparse: 64 MiB of NULs
    refused(ragsieve("--config", big, "jobs", "run", "--store", store.url), "larger than 4 MiB")


def test_a_window_past_the_calendar_is_one_line(store: Store) -> None:
    refused(ragsieve("jobs", "run", "--store", store.url, "--since", "99999999999d"), "--since")
    refused(ragsieve("runs", "list", "--store", store.url, "--since", "99999999999d"), "36500d")


def test_golden_vectors_are_kept_across_runs_by_content(tmp_path: Path) -> None:
    golden, folder = _golden(tmp_path), tmp_path / "cache"
    calls: list[int] = []

    def counting(texts):  # type: ignore[no-untyped-def]
        calls.append(len(texts))
        return embed(texts)

    queries = [r["query"] for r in GOLDEN]
    first = golden_vectors(golden, queries, counting, folder)
    again = golden_vectors(golden, queries, counting, folder)
    assert calls == [2] and np.array_equal(first, again)  # the second read the saved file
    saved = folder / f"golden-{file_digest(golden)[:40]}-{ENCODER}.npy"
    assert saved.exists()
    rows = [*GOLDEN, {"id": "g3", "query": "Is SSO on Starter?", "relevant_chunks": ["c3"]}]
    edited = _golden(tmp_path, rows)  # the same name, other bytes: embedded again
    grown = golden_vectors(edited, [r["query"] for r in rows], counting, folder)
    assert calls == [2, 3] and np.allclose(grown[:2], first, atol=1e-6)
    saved.write_bytes(b"not an array")  # a damaged cache file is recomputed, not trusted
    golden_vectors(golden, queries, counting, folder)
    assert calls == [2, 3, 2]


def test_a_cache_folder_that_cannot_be_written_only_costs_time(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    vecs = golden_vectors(_golden(tmp_path), [r["query"] for r in GOLDEN], embed, blocked / "c")
    assert vecs.shape == (2, 512)
    assert cache_dir("sqlite:////srv/ragsieve/ragsieve.db") == Path("/srv/ragsieve/.ragsieve-cache")


def test_a_second_jobs_run_reads_the_saved_golden_vectors(tmp_path: Path, store: Store) -> None:
    golden = _golden(tmp_path)
    env = {"RAGSIEVE_GOLDEN__PATH": str(golden)}
    first = ragsieve("jobs", "run", "--store", store.url, "--json", env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    saved = list(cache_dir(store.url).glob("golden-*.npy"))
    assert [p.name for p in saved] == [f"golden-{file_digest(golden)[:40]}-{ENCODER}.npy"]
    stamp = saved[0].stat().st_mtime_ns
    second = ragsieve("jobs", "run", "--store", store.url, "--json", env=env)
    assert second.returncode == 0, second.stderr[-2000:]
    assert saved[0].stat().st_mtime_ns == stamp  # read, not written again


def test_not_a_regular_file_error_names_the_kind(tmp_path: Path) -> None:
    from ragsieve.evaluators.tools.userfile import read_capped, regular_file

    with pytest.raises(ConfigError, match="no such file"):
        regular_file(tmp_path / "missing.toml")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(ConfigError, match="cannot read"):
        read_capped(loop)


def test_odd_store_paths_and_deep_env_json_are_one_line_exit_2(tmp_path: Path) -> None:
    loop = tmp_path / "loop.db"
    loop.symlink_to(loop)
    huge = "sqlite:////tmp/" + "a" * 131_000
    deep = {"RAGSIEVE_JOBS__JUDGES": "[" * 65_000}
    refused(ragsieve("jobs", "run", "--store", f"sqlite:///{loop}"), "symbolic links")
    refused(ragsieve("jobs", "run", "--store", f"sqlite:///{tmp_path}"), "is a directory")
    refused(ragsieve("collector", "serve", env={"RAGSIEVE_STORE": huge}), "RAGSIEVE_STORE")
    ran = ragsieve("jobs", "run", env={"RAGSIEVE_STORE": huge})
    refused(ran, "RAGSIEVE_STORE", "at most 255 bytes")
    assert len(ran.stderr) < 400  # the value is cut, not echoed whole
    refused(ragsieve("jobs", "run", env=deep), "RAGSIEVE_JOBS__JUDGES: JSON nested too deeply")
