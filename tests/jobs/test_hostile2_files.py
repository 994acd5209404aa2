"""Hostile inputs, second round: files and flags a user hands the CLI (issue 28 rows 5, 11, 12).

Every refusal is one ``path:line`` (or flag) line on stderr and exit 2, never a traceback: a
calibration with a non-finite weight, a lone surrogate, nesting 100,000 deep, a byte that is
not UTF-8, ``--config`` values JSON cannot record, and a ``--config`` key given twice.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges.combined.calibrated import DEFAULT_WEIGHTS
from ragsieve.jobs.cli import main

GOLDEN = [
    {"id": "g1", "query": "How many requests does Starter allow?", "relevant_chunks": ["c1"]},
    {"id": "g2", "query": "How much does Pro cost?", "relevant_chunks": ["c2"]},
]
RUN = [{"id": "g1", "retrieved_ids": ["c1", "c2"]}, {"id": "g2", "retrieved_ids": ["c2"]}]
DEEP = "[" * 100_000 + "\n"


@dataclass
class Ran:
    code: int
    out: str
    err: str


def ragsieve(*args: object) -> Ran:
    with CliRunner().isolation() as (out, err, _):
        code = 0
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return Ran(code, out.getvalue().decode(), err.getvalue().decode())


def refused(ran: Ran, where: str, why: str) -> None:
    assert ran.code == 2, ran
    assert "Traceback" not in ran.err and ran.err.count("\n") == 1, ran.err
    assert where in ran.err and why in ran.err, ran.err


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "golden": _jsonl(tmp_path / "golden_v1.jsonl", GOLDEN),
        "run": _jsonl(tmp_path / "run.jsonl", RUN),
    }


def _calibration(metric: str, weight: float) -> dict:
    weights = {k: 1.0 / len(DEFAULT_WEIGHTS[metric]) for k in DEFAULT_WEIGHTS[metric]}
    first = sorted(weights)[0]
    weights[first] = weight
    return {"backend": "offline", "metrics": {metric: {"threshold": 0.5, "weights": weights}}}


@pytest.mark.parametrize("weight", [math.nan, math.inf, -math.inf])
def test_a_calibration_with_a_non_finite_weight_is_not_imported(
    tmp_path: Path, store: Store, weight: float
) -> None:
    url = store.url
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(_calibration("faithfulness", weight)), encoding="utf-8")
    ran = ragsieve("judges", "fit", "--store", url, "--import", path, "--json")
    refused(ran, f"{path}: metrics.faithfulness.weights.", "not a finite number")
    listed = ragsieve("judges", "fit", "--store", url, "--export", tmp_path / "out.json")
    assert listed.code == 2 and "no active calibration" in listed.err  # nothing became active
    path.write_text(json.dumps(_calibration("faithfulness", 0.5)), encoding="utf-8")
    assert ragsieve("judges", "fit", "--store", url, "--import", path, "--json").code == 0
    path.write_text(DEEP, encoding="utf-8")
    refused(ragsieve("judges", "fit", "--store", url, "--import", path), str(path), "nested")


def test_a_lone_surrogate_in_a_run_file_names_its_line(files: dict[str, Path]) -> None:
    files["run"].write_text(
        json.dumps(RUN[0]) + "\n" + '{"id": "g2", "retrieved_ids": ["c2\\ud800"]}\n',
        encoding="utf-8",
    )
    ran = ragsieve("eval", "--golden", files["golden"], "--run", files["run"], "--json")
    refused(ran, f"{files['run']}:2: ", "surrogate")
    # a surrogate *pair* is one character (an emoji), and is fine
    files["run"].write_text(
        json.dumps(RUN[0]) + "\n" + '{"id": "g2", "retrieved_ids": ["c2\\ud83d\\ude00"]}\n',
        encoding="utf-8",
    )
    ran = ragsieve("eval", "--golden", files["golden"], "--run", files["run"], "--json")
    assert ran.code == 0, ran.err


@pytest.mark.parametrize("which", ["golden", "run"])
def test_nesting_100000_deep_names_the_line(files: dict[str, Path], which: str) -> None:
    first = (GOLDEN if which == "golden" else RUN)[0]
    files[which].write_text(json.dumps(first) + "\n" + DEEP, encoding="utf-8")
    ran = ragsieve("eval", "--golden", files["golden"], "--run", files["run"])
    refused(ran, f"{files[which]}:2: ", "nested too deeply")


def test_nesting_100000_deep_in_a_calibration_dataset(tmp_path: Path) -> None:
    data = tmp_path / "labelled.jsonl"
    data.write_text(DEEP, encoding="utf-8")
    ran = ragsieve("judges", "calibrate", "--data", data, "--judge", "faithfulness")
    refused(ran, f"{data}:1: ", "nested too deeply")


def test_a_byte_that_is_not_utf8_in_a_golden_file_names_line_and_column(
    files: dict[str, Path], store: Store
) -> None:
    files["golden"].write_bytes(
        (json.dumps(GOLDEN[0]) + "\n").encode() + b'{"id": "g2", "query": "caf\xe9"}\n'
    )
    ran = ragsieve("eval", "--golden", files["golden"], "--run", files["run"])
    refused(ran, f"{files['golden']}:2: not UTF-8 (byte 0xe9 at column 27)", "UTF-8")
    ran = ragsieve("golden", "import", files["golden"], "--store", store.url)
    refused(ran, f"{files['golden']}:2: ", "not UTF-8")


def test_config_values_json_cannot_record_are_refused(files: dict[str, Path]) -> None:
    base = ["eval", "--golden", files["golden"], "--run", files["run"], "--json"]
    for value in ("inf", "nan", "-inf", "+inf"):
        refused(ragsieve(*base, "--config", f"k={value}"), "--config k: ", "not a finite number")
    refused(ragsieve(*base, "--config", "k=\udcff"), "--config ", "not UTF-8")
    refused(ragsieve(*base, "--config", "k=1", "--config", "k=2"), "--config k: ", "twice")
    ran = ragsieve(*base, "--config", 'k="inf"', "--config", "j=0.5")
    assert ran.code == 0, ran.err
    assert json.loads(ran.out)["config"] == {"k": "inf", "j": 0.5}
