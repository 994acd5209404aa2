"""Calibration statistics on hand-computed cases and the `judges calibrate` CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.quality.calibration import (
    LabelledRow,
    Scored,
    auc,
    binary_stats,
    pairwise_accuracy,
    read_rows,
)
from ragsieve.jobs.fitting.cli import judges


def test_binary_stats_hand_computed():
    # truth: 2 faithful, 2 not; predicted failure on one of each
    s = binary_stats([True, True, False, False], [True, False, True, False])
    assert s["accuracy"] == 0.5 and s["precision"] == 0.5 and s["recall"] == 0.5
    assert s["kappa"] == pytest.approx(0.0)
    perfect = binary_stats([True, False], [False, True])
    assert perfect["f1"] == 1.0 and perfect["kappa"] == 1.0 and perfect["balanced_accuracy"] == 1.0


def test_auc_and_pairwise_with_ties():
    assert auc([True, False, True, False], [0.9, 0.1, 0.5, 0.5]) == pytest.approx(0.875)
    rows = [LabelledRow(id=str(i), pair_id=p) for i, p in enumerate("aabb")]
    scored = [
        Scored(rows[0], True, 0.9, False),
        Scored(rows[1], False, 0.2, True),
        Scored(rows[2], True, 0.5, False),
        Scored(rows[3], False, 0.5, True),
    ]
    assert pairwise_accuracy(scored) == (0.75, 2)


def _write(tmp_path, rows):
    p = tmp_path / "data.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return p


def test_cli_calibrate_json(tmp_path):
    ctx = ["GPT-4 was released by OpenAI on March 14, 2023."]
    rows = [
        {
            "id": "a",
            "question": "When was GPT-4 released?",
            "contexts": ctx,
            "answer": "GPT-4 was released on March 14, 2023.",
            "label_faithful": True,
            "task": "faithfulness",
            "pair_id": "p1",
        },
        {
            "id": "b",
            "question": "When was GPT-4 released?",
            "contexts": ctx,
            "answer": "GPT-4 was released in 2025 by Google.",
            "label_faithful": False,
            "task": "faithfulness",
            "pair_id": "p1",
        },
    ]
    res = CliRunner().invoke(
        judges,
        ["calibrate", "--data", str(_write(tmp_path, rows)), "--judge", "faithfulness", "--json"],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)["faithfulness"]
    assert out["n"] == 2 and out["accuracy"] == 1.0 and out["pairwise_accuracy"] == 1.0
    assert {"balanced_accuracy", "precision", "recall", "f1", "kappa"} <= set(out)


def test_bad_line_names_path_and_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"id": "a"}\n{"id": 3, "contexts": "x"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.jsonl:2: "):
        read_rows(p)


def test_cli_list_and_llm_options(tmp_path):
    res = CliRunner().invoke(judges, ["list", "--json"])
    assert res.exit_code == 0 and "llm_faithfulness" in json.loads(res.output)
    res = CliRunner().invoke(
        judges, ["calibrate", "--data", str(tmp_path / "x.jsonl"), "--judge", "llm_faithfulness"]
    )
    assert res.exit_code == 2 and "--llm-base-url" in res.output


def test_non_utf8_file_is_a_config_error_with_its_line(tmp_path):
    p = tmp_path / "latin1.jsonl"
    p.write_bytes(b'{"id": "a", "label_faithful": true}\n{"id": "b", "answer": "caf\xe9"}\n')
    with pytest.raises(ConfigError, match=r"latin1.jsonl:2: not UTF-8"):
        read_rows(p)


def test_a_line_that_is_not_an_object_is_named(tmp_path):
    p = tmp_path / "arr.jsonl"
    p.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"arr.jsonl:1: row: expected a JSON object, got an array"
    ):
        read_rows(p)


def test_no_row_with_the_judges_label_is_a_config_error(tmp_path):
    from ragsieve.evaluators.judges import get_judge
    from ragsieve.evaluators.quality.calibration import calibrate

    rows = [LabelledRow(id="a", question="q", contexts=["c"], answer="x", label_relevant=True)]
    with pytest.raises(ConfigError, match=r"label_faithful: no row carries this label"):
        calibrate(get_judge("faithfulness"), rows)
