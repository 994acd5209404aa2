"""The model backend through the real collector and CLI: ``jobs run`` judges with the local model,
``judges fit`` calibrates its stored scores like any backend's, and the next run applies the fit.
The model is a tiny real ONNX graph the test builds (``judges.model.standin``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_run_support import KINDS, send, wait_stored

from ragsieve.evaluators.judges.model.standin import nli_standin
from ragsieve.evaluators.records import EvalResult
from ragsieve.jobs.cli import cli


def _run(*args: str) -> tuple[int, Any, str]:
    res = CliRunner().invoke(cli, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    try:
        return res.exit_code, json.loads(res.stdout), res.output
    except ValueError:
        return res.exit_code, None, res.output


def test_the_model_backend_judges_is_fitted_and_judges_again_under_the_fit(
    collector: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # backs what names Paris, refutes what names Marseille or 1850 (the "unfaithful" kind)
    folder = nli_standin(tmp_path / "nli", ["paris"], ["marseille", "1850"], max_length=128)
    monkeypatch.setenv("RAGSIEVE_JOBS__BACKEND", "model")
    monkeypatch.setenv("RAGSIEVE_MODEL__FAITHFULNESS", str(folder))
    monkeypatch.setenv("RAGSIEVE_MODEL__ESCALATE", "all")
    store = collector.store.url
    kinds = ["good", "unfaithful"] * 20  # a fit needs 20 of each
    ids = send(collector.traces_url, [KINDS[k][0] for k in kinds])
    wait_stored(collector.store, len(ids))
    run = ("jobs", "run", "--store", store, "--since", "1h", "--settle", "0", "--all", "--json")
    code, rep, out = _run(*run)
    assert code == 0, out
    faith = next(j for j in rep["judges"] if j["name"] == "faithfulness")
    assert faith["version"].startswith("tiers-1:") and "model=model-1:" in faith["version"]
    rows = collector.store.query(
        "SELECT trace_id, body FROM results WHERE evaluator = ?", ("faithfulness",)
    )
    by_trace = {tid: EvalResult.model_validate_json(body) for tid, body in rows}
    for tid, kind in zip(ids, kinds, strict=True):
        r = by_trace[tid]
        assert r.metadata["tier"] == "model" and r.judge_version == faith["version"]
        assert str(r.judge_model).startswith("standin-nli (onnx sha256:")
        assert r.label == ("faithful" if kind == "good" else "unfaithful")

    labels = tmp_path / "labels.jsonl"
    with labels.open("w") as f:
        for tid, kind in zip(ids, kinds, strict=True):
            f.write(json.dumps({"trace_id": tid, "verdict": "pass" if kind == "good" else "fail"}))
            f.write("\n")
    code, fit, out = _run(
        "judges", "fit", "--store", store, "--labels", str(labels), "--force", "--json"
    )
    assert code == 0, out
    assert fit["backend"] == "model" and fit["written"] and fit["without_results"] == 0
    code, rep, out = _run(*run)
    assert code == 0, out
    faith = next(j for j in rep["judges"] if j["name"] == "faithfulness")
    assert faith["calibration"] == fit["written"] and fit["written"] in faith["version"]
