"""``eval --role``, the sealed holdout and its changelog, ``gate --role``, and one variable at a
time (``--config``, what changed, the log line, ``experiments list``), through the root command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragsieve.evaluators.golden.roles import split_golden
from ragsieve.evaluators.golden.sets import changelog_path, load_golden, write_golden
from ragsieve.evaluators.records import GoldenCase
from ragsieve.jobs.cli import main

CATS = {"billing": 20, "shipping": 14, "returns": 6}


def ran(args: list[object]) -> tuple[int, str, str]:
    with CliRunner().isolation() as (out, err, _):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue().decode(), err.getvalue().decode()


def _run_file(path: Path, cases: list[GoldenCase], good: set[str]) -> Path:
    """A run: queries in ``good`` get their relevant chunk first, the others a miss then it."""
    lines = []
    for c in cases:
        rel = next(iter(c.relevant_chunks))
        ids = [rel, "x1", "x2"] if c.id in good else ["x1", "x2", "x3", "x4", "x5", rel]
        lines.append(json.dumps({"id": c.id, "retrieved_ids": ids}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def split(tmp_path: Path) -> dict[str, object]:
    cases = [
        GoldenCase(
            id=f"{cat}-{i}",
            query=f"secret {cat} question number {i}",
            relevant_chunks={f"c-{cat}-{i}": 1},
            category=cat,
        )
        for cat, n in CATS.items()
        for i in range(n)
    ]
    write_golden(tmp_path / "golden_v1.jsonl", cases)
    split_golden(tmp_path / "golden_v1.jsonl", by="ana", salt="feedbeef", holdout_looks=2)
    v2 = load_golden(tmp_path / "golden_v2.jsonl")
    ids = [c.id for c in v2.cases]
    return {
        "golden": tmp_path / "golden_v2.jsonl",
        "cases": v2.cases,
        "role": {c.id: c.role for c in v2.cases},
        "base": _run_file(tmp_path / "base.jsonl", v2.cases, set(ids[::2])),
        "cand": _run_file(tmp_path / "cand.jsonl", v2.cases, set(ids)),
    }


def test_eval_scores_dev_and_regression_by_default_and_records_roles(split: dict) -> None:
    code, out, err = ran(["eval", "--golden", split["golden"], "--run", split["base"], "--json"])
    assert code == 0, err
    data = json.loads(out)
    wanted = {q for q, r in split["role"].items() if r in ("dev", "regression")}
    assert set(data["per_query"]) == wanted and data["roles"] == ["dev", "regression"]
    assert data["query_role"] == {q: split["role"][q] for q in wanted}
    code, out, _ = ran(
        ["eval", "--golden", split["golden"], "--run", split["base"], "--role", "dev", "--json"]
    )
    assert set(json.loads(out)["per_query"]) == {q for q, r in split["role"].items() if r == "dev"}


def test_holdout_output_never_names_a_query_and_each_look_is_logged(
    split: dict, tmp_path: Path
) -> None:
    holdout = [c for c in split["cases"] if c.role == "holdout"]
    assert {c.category for c in holdout} == set(CATS)
    out_file = tmp_path / "holdout.json"
    args = ["eval", "--golden", split["golden"], "--run", split["base"], "--role", "holdout"]
    code, out, err = ran([*args, "--json", "--out", out_file, "--by", "ana", "--worst", "50"])
    assert code == 0, err
    code_text, text, _ = ran([*args, "--by", "ben", "--worst", "50"])
    assert code_text == 0
    for shown in (out, out_file.read_text(), text):
        for c in split["cases"]:
            assert c.id not in shown and c.query not in shown
    data = json.loads(out)
    assert data["aggregate_only"] is True and data["n_queries"] == len(holdout)
    assert not {"per_query", "query_role", "query_category", "worst", "no_answer"} & set(data)
    per_cat = {c: sum(h.category == c for h in holdout) for c in CATS}
    assert per_cat == {"billing": 4, "shipping": 3, "returns": 1}
    # a category of one holdout case would show that case's values: it is pooled, unshown
    assert data["by_category"]["(categories under 3 cases)"] == {"n": 1, "categories": 1}
    assert set(data["by_category"]) == {"billing", "shipping", "(categories under 3 cases)"}
    assert data["roles"] == ["holdout"]
    log = changelog_path(split["golden"]).read_text()
    assert log.count("Holdout evaluation") == 2
    assert f"Holdout evaluation 1 by ana: retriever run file {split['base']}" in log
    assert "Holdout evaluation 2 by ben:" in log
    code, _, err = ran([*args, "--save-run", tmp_path / "leak.jsonl"])
    assert code == 2 and "--save-run would show the holdout" in err
    assert log == changelog_path(split["golden"]).read_text()  # a refused look is not logged


def test_a_warning_after_n_holdout_looks(split: dict) -> None:
    args = ["eval", "--golden", split["golden"], "--run", split["base"], "--role", "holdout"]
    for _ in (1, 2):  # the split set holdout_looks=2
        code, out, err = ran([*args, "--json"])
        assert code == 0 and "warning" not in err and json.loads(out)["warnings"] == []
    code, out, err = ran([*args, "--json"])
    assert code == 0
    assert "warning: holdout evaluation 3 of golden_v2.jsonl (warn after 2)" in err
    assert json.loads(out)["warnings"][0].startswith("holdout evaluation 3")
    code, _, err = ran([*args, "--holdout-warn-after", "10"])
    assert code == 0 and "warning" not in err


def _eval(split: dict, run: str, out: Path, *extra: object) -> None:
    code, _, err = ran(
        [
            "eval",
            "--golden",
            split["golden"],
            "--run",
            split[run],
            "--out",
            out,
            "-k",
            "1",
            "-k",
            "5",
            *extra,
        ]
    )
    assert code == 0, err


def test_gate_checks_the_regression_part_and_holdout_on_request(
    split: dict, tmp_path: Path
) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    _eval(split, "base", base)
    _eval(split, "cand", cand)
    code, out, err = ran(["gate", "--baseline", base, "--candidate", cand, "--format", "json"])
    report = json.loads(out)
    n_regression = sum(r == "regression" for r in split["role"].values())
    assert report["role"] == "regression" and report["n_paired"] == n_regression
    assert code == 0 and report["passed"]  # the candidate ranks every relevant chunk first
    code, out, _ = ran(["gate", "--baseline", cand, "--candidate", base])
    assert code == 1 and "regression" in out
    hb, hc = tmp_path / "hb.json", tmp_path / "hc.json"
    _eval(split, "base", hb, "--role", "holdout")
    _eval(split, "cand", hc, "--role", "holdout")
    code, _, err = ran(["gate", "--baseline", hb, "--candidate", hc])
    assert code == 2 and "holdout (aggregate-only) results file has no queries to pair" in err
    code, out, _ = ran(["gate", "--baseline", hc, "--candidate", hb, "--role", "holdout"])
    assert code == 1 and "Unpaired normal interval over" in out
    code, out, _ = ran(["gate", "--baseline", hb, "--candidate", hc, "--role", "holdout"])
    assert code == 0 and "queries of the holdout part" in out
    code, _, err = ran(["gate", "--baseline", base, "--candidate", hc, "--role", "holdout"])
    assert code == 2 and "both files must come from `ragsieve eval --role holdout`" in err


def test_one_variable_at_a_time(split: dict, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (tmp_path / "run.toml").write_text('embedder = "bge-m3"\n[chunking]\nsize = 800\n')
    _eval(
        split,
        "base",
        runs / "1.json",
        "--config",
        "chunking.size=512",
        "--config",
        "embedder=bge-m3",
    )
    _eval(split, "cand", runs / "2.json", "--config-file", tmp_path / "run.toml")
    _eval(
        split,
        "cand",
        runs / "3.json",
        "--config",
        "chunking.size=512",
        "--config",
        "k=8",
        "--config",
        "embedder=e5",
    )
    assert json.loads((runs / "2.json").read_text())["config"] == {
        "embedder": "bge-m3",
        "chunking.size": 800,
    }
    code, out, err = ran(["gate", "--baseline", runs / "1.json", "--candidate", runs / "2.json"])
    assert code == 0 and "changed: chunking.size 512 → 800" in out and "warning" not in err
    line = next(x for x in out.splitlines() if x.startswith("log: "))
    assert line.startswith("log: chunking.size 512 → 800: recall@1 +")
    assert "mrr +" in line and " [+" in line
    code, out, err = ran(["gate", "--baseline", runs / "2.json", "--candidate", runs / "3.json"])
    assert "warning: 3 settings changed (chunking.size, embedder, k)" in err
    assert "changed: chunking.size 800 → 512, embedder bge-m3 → e5, k (unset) → 8" in out

    code, out, err = ran(["experiments", "list", runs, "--json"])
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and [r["file"] for r in rows] == ["1.json", "2.json", "3.json"]
    assert rows[0]["compared_with"] is None and rows[1]["compared_with"] == "1.json"
    assert rows[1]["log_line"].startswith("chunking.size 512 → 800: recall@1 +")
    assert rows[1]["warnings"] == [] and rows[2]["warnings"][0].startswith("3 settings changed")
    code, text, _ = ran(["experiments", "list", runs])
    assert "vs 1.json: chunking.size 512 → 800: recall@1" in text


def test_different_golden_versions_are_refused_unless_allowed(split: dict, tmp_path: Path) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    _eval(split, "base", base)
    extra = GoldenCase(
        id="billing-new",
        query="a new billing question",
        relevant_chunks={"c-new": 1},
        category="billing",
    )
    write_golden(tmp_path / "golden_v3.jsonl", [*split["cases"], extra])
    split_golden(tmp_path / "golden_v3.jsonl", by="ana")
    code, _, err = ran(
        [
            "eval",
            "--golden",
            tmp_path / "golden_v4.jsonl",
            "--run",
            split["cand"],
            "--out",
            cand,
            "-k",
            "1",
            "-k",
            "5",
        ]
    )
    assert code == 0, err
    code, _, err = ran(["gate", "--baseline", base, "--candidate", cand])
    assert code == 2 and "golden versions differ (baseline v2, candidate v4)" in err
    code, out, _ = ran(["gate", "--baseline", base, "--candidate", cand, "--allow-version-change"])
    assert code == 0 and "mixes the pipeline's and the golden set's" in out


def test_small_categories_are_pooled_with_weighted_means() -> None:
    from ragsieve.evaluators.metrics.report import pool_small_categories

    rows = {
        "big": {"n": 5, "metrics": {"mrr": 0.5}},
        "one": {"n": 1, "metrics": {"mrr": 1.0}},
        "two": {"n": 2, "metrics": {"mrr": 0.25}},
    }
    pooled = pool_small_categories(rows)
    assert pooled["big"] == rows["big"]
    assert pooled["(categories under 3 cases)"] == {
        "n": 3,
        "categories": 2,
        "metrics": {"mrr": pytest.approx(0.5)},  # (1.0 + 2 × 0.25) / 3
    }
    assert pool_small_categories({"big": rows["big"]}) == {"big": rows["big"]}


def test_experiments_list_never_compares_across_golden_versions(
    split: dict, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    _eval(split, "base", runs / "a.json", "--config", "k=5")
    extra = GoldenCase(id="returns-new", query="a new returns question", relevant_chunks={"x": 1})
    write_golden(tmp_path / "golden_v3.jsonl", [*split["cases"], extra])
    split_golden(tmp_path / "golden_v3.jsonl", by="ana")
    code, _, err = ran(
        [
            "eval",
            "--golden",
            tmp_path / "golden_v4.jsonl",
            "--run",
            split["cand"],
            "--out",
            runs / "b.json",
            "--config",
            "k=8",
        ]
    )
    assert code == 0, err
    (runs / "gate.json").write_text('{"passed": true}')  # not an eval output: left out
    code, out, _ = ran(["experiments", "list", runs, "--json"])
    rows = [json.loads(x) for x in out.splitlines()]
    assert [(r["file"], r["golden_version"], r["compared_with"]) for r in rows] == [
        ("a.json", 2, None),
        ("b.json", 4, None),
    ]
