"""Issue 47: every option that names a file to read refuses a FIFO, ``/dev/zero``, a folder and a
file too large, with one line naming the path and exit 2, before opening it.

Before: ``gate --policy`` on a FIFO hung in ``open()``; ``gate --baseline /dev/zero`` and
``eval --run /dev/zero`` read until ``MemoryError``; a folder given to ``--policy`` printed
click's usage text. Each case runs the real CLI in its own process, with a timeout (a FIFO hangs
a process that opens it) and an address-space limit (``/dev/zero`` read whole would take the
machine's memory), so a missing guard fails the test instead of hanging or swapping it.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

RESULTS = {"metrics": {"mrr": 0.5}, "per_query": {"q1": {"mrr": 0.5}}}
GOLDEN = {"id": "q1", "query": "How do I export an invoice?", "relevant_chunks": ["c1"]}
RUN = {"id": "q1", "retrieved_ids": ["c1"]}
CAP_4_MIB = 4 * 1024 * 1024
CAP_1_GIB = 1024 * 1024 * 1024


def _limit_memory() -> None:
    two_gib = 2 * 1024**3  # far above what these commands need; far below the machine's
    resource.setrlimit(resource.RLIMIT_DATA, (two_gib, two_gib))


def ragsieve(*args: object) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    return subprocess.run(
        [sys.executable, "-m", "ragsieve.jobs", *map(str, args)],
        env=clean,
        capture_output=True,
        text=True,
        timeout=90,
        preexec_fn=_limit_memory,  # noqa: PLW1509 (a plain rlimit, no threads yet)
    )


def _write(path: Path, value: object, *, jsonl: bool = False) -> Path:
    text = json.dumps(value) + "\n" if jsonl else json.dumps(value)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def good(tmp_path: Path) -> dict[str, Path]:
    """A valid file for every option, so the hostile one is the only thing wrong."""
    (tmp_path / "ok").mkdir()
    ok = tmp_path / "ok"
    qrels = ok / "qrels.tsv"
    qrels.write_text("q1\tc1\t1\n", encoding="utf-8")
    policy = ok / "gate.toml"
    policy.write_text("[gate]\nseed = 1\n", encoding="utf-8")
    return {
        "golden": _write(ok / "golden_v1.jsonl", GOLDEN, jsonl=True),
        "queries": _write(ok / "queries.jsonl", {"id": "q1", "text": GOLDEN["query"]}, jsonl=True),
        "run": _write(ok / "run.jsonl", RUN, jsonl=True),
        "results": _write(ok / "results.json", RESULTS),
        "qrels": qrels,
        "policy": policy,
    }


Files = dict[str, Path]
Argv = Callable[[Files, Path], list[object]]
# (name, cap past which a regular file is refused or None, argv given the good files and the bad)
Case = tuple[str, int | None, Argv]
CASES: list[Case] = [
    (
        "gate --policy",
        CAP_4_MIB,
        lambda g, b: [
            "gate",
            "--baseline",
            g["results"],
            "--candidate",
            g["results"],
            "--policy",
            b,
        ],
    ),
    (
        "gate --baseline",
        CAP_1_GIB,
        lambda g, b: ["gate", "--baseline", b, "--candidate", g["results"]],
    ),
    (
        "gate --candidate",
        CAP_1_GIB,
        lambda g, b: ["gate", "--baseline", g["results"], "--candidate", b],
    ),
    (
        "eval --config-file",
        CAP_4_MIB,
        lambda g, b: ["eval", "--golden", g["golden"], "--run", g["run"], "--config-file", b],
    ),
    ("eval --run", None, lambda g, b: ["eval", "--golden", g["golden"], "--run", b]),
    (
        "eval --qrels",
        CAP_1_GIB,
        lambda g, b: ["eval", "--queries", g["queries"], "--qrels", b, "--run", g["run"]],
    ),
    (
        "eval --queries",
        None,
        lambda g, b: ["eval", "--queries", b, "--qrels", g["qrels"], "--run", g["run"]],
    ),
    (
        "experiments list --policy",
        CAP_4_MIB,
        lambda g, b: ["experiments", "list", g["results"].parent, "--policy", b],
    ),
    (
        "judges calibrate --data",
        CAP_1_GIB,
        lambda g, b: ["judges", "calibrate", "--data", b, "--judge", "faithfulness"],
    ),
    (
        "golden import",
        None,
        lambda g, b: ["golden", "import", b, "--dry-run", "--store", "sqlite:///:memory:"],
    ),
]
IDS = [name for name, _, _ in CASES]
CLICK_REFUSES_FOLDERS = {"judges calibrate --data"}  # a jobs command's own option type


def refused(ran: subprocess.CompletedProcess[str], path: Path, *words: str) -> None:
    assert ran.returncode == 2, (ran.returncode, ran.stderr[-2000:])
    assert "Traceback" not in ran.stderr and ran.stderr.count("\n") == 1, ran.stderr
    assert str(path) in ran.stderr, ran.stderr
    for w in words:
        assert w in ran.stderr, ran.stderr


@pytest.mark.parametrize(("name", "cap", "argv"), CASES, ids=IDS)
def test_a_fifo_is_refused_not_opened(
    name: str, cap: int | None, argv: Argv, good: Files, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    refused(ragsieve(*argv(good, fifo)), fifo, "FIFO")


@pytest.mark.parametrize(("name", "cap", "argv"), CASES, ids=IDS)
def test_dev_zero_is_refused_not_read(name: str, cap: int | None, argv: Argv, good: Files) -> None:
    zero = Path("/dev/zero")
    refused(ragsieve(*argv(good, zero)), zero, "character device")


@pytest.mark.parametrize(("name", "cap", "argv"), CASES, ids=IDS)
def test_a_folder_is_one_line(
    name: str, cap: int | None, argv: Argv, good: Files, tmp_path: Path
) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    ran = ragsieve(*argv(good, folder))
    if name in CLICK_REFUSES_FOLDERS:  # click.Path(dir_okay=False): its usage text, exit 2
        assert ran.returncode == 2 and str(folder) in ran.stderr and "Traceback" not in ran.stderr
        return
    refused(ran, folder, "directory")


CAPPED = [c for c in CASES if c[1] is not None]


@pytest.mark.parametrize(("name", "cap", "argv"), CAPPED, ids=[c[0] for c in CAPPED])
def test_a_file_past_its_cap_is_refused_before_reading(
    name: str, cap: int, argv: Argv, good: Files, tmp_path: Path
) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as out:
        out.truncate(cap + 1)  # sparse: no disk used, and nothing read
    refused(ragsieve(*argv(good, big)), big, "larger than")


def test_a_fifo_among_eval_outputs_does_not_hang_the_experiment_log(
    good: Files, tmp_path: Path
) -> None:
    os.mkfifo(good["results"].parent / "zz-pipe.json")
    ran = ragsieve("experiments", "list", good["results"].parent, "--json")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert [json.loads(line)["file"] for line in ran.stdout.splitlines()] == ["results.json"]


def test_a_fifo_as_the_golden_changelog_is_refused(good: Files, tmp_path: Path) -> None:
    golden = _write(tmp_path / "golden_v1.jsonl", {**GOLDEN, "role": "holdout"}, jsonl=True)
    log = tmp_path / "golden.CHANGELOG.md"
    os.mkfifo(log)
    ran = ragsieve("eval", "--golden", golden, "--run", good["run"], "--role", "holdout")
    refused(ran, log, "FIFO")


def test_a_run_file_past_the_whole_read_cap_is_read_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragsieve.evaluators.golden import runs

    big = tmp_path / "run.jsonl"
    big.write_text(json.dumps(RUN) + "\n" + " " * 64 + "\n", encoding="utf-8")
    monkeypatch.setattr(runs, "MAX_DATA_BYTES", 16)  # the file is larger: not read whole
    got = runs.load_run(big)
    assert dict(got) == {"q1": ["c1"]} and not isinstance(got, runs.RunFile)
