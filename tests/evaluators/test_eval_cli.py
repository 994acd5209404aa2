"""``ragsieve eval`` and ``ragsieve gate`` end to end through click."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ragsieve.evaluators.cli import eval_command, gate_command
from ragsieve.jobs.cli import main

GOLDEN = [
    {
        "id": "g1",
        "query": "¿Cuántos Grammys ha ganado Lady Gaga?",
        "relevant_chunks": {"c1": 2},
        "category": "music",
    },
    {
        "id": "g2",
        "query": "intercepciones de los Panthers",
        "relevant_chunks": {"c2": 1, "c3": 1},
        "category": "sport",
    },
    {"id": "g3", "query": "white matter diffusion newborns", "relevant_chunks": ["c4"]},
    {"id": "g4", "query": "¿Cuál es la capital de Marte?", "relevant_chunks": []},
]
CORPUS = [
    {"id": "c1", "title": "Lady Gaga", "text": "Lady Gaga ha ganado seis premios Grammy."},
    {"id": "c2", "text": "Los Panthers lideraron las intercepciones de la NFL."},
    {"id": "c3", "content": "Kawann Short lideró al equipo de los Panthers."},
    {"id": "c4", "title": "Newborn brain", "text": "Diffusion tensor imaging of white matter."},
    {"id": "c5", "text": "Clostridium difficile and the gut microbiome."},
]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "golden": _jsonl(tmp_path / "golden_v2.jsonl", GOLDEN),
        "corpus": _jsonl(tmp_path / "corpus.jsonl", CORPUS),
        "run": _jsonl(
            tmp_path / "run.jsonl",
            [
                {"id": "g1", "retrieved_ids": ["c5", "c1", "c1"], "scores": [9, 1, 1]},
                {"id": "g2", "retrieved_ids": ["c2", "c9", "c3"]},
                {"id": "g4", "retrieved_ids": ["c5"]},
            ],
        ),
    }


@dataclass
class Ran:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def _invoke(cmd: click.Command, args: list[object]) -> Ran:
    """Run ``ragsieve <cmd> args`` through the root entry point, which maps errors to exit codes."""
    with CliRunner().isolation() as (out, err, _):
        try:
            main([str(cmd.name), *(str(a) for a in args)])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return Ran(code, out.getvalue().decode(), err.getvalue().decode())


def test_eval_json_object_with_run_file(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    res = _invoke(
        eval_command,
        [
            "--golden",
            files["golden"],
            "--run",
            files["run"],
            "-k",
            "1",
            "-k",
            "3",
            "--metrics",
            "recall,mrr",
            "--json",
            "--out",
            out,
            "--worst",
            "2",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data == json.loads(out.read_text())
    assert data["golden_version"] == 2 and data["n_queries"] == 3 and data["n_no_answer"] == 1
    assert data["n_missing"] == 1  # g3 is not in the run: scores 0, still counted
    assert data["per_query"] == {
        "g1": {"recall@1": 0.0, "recall@3": 1.0, "mrr": 0.5},
        "g2": {"recall@1": 0.5, "recall@3": 1.0, "mrr": 1.0},
        "g3": {"recall@1": 0.0, "recall@3": 0.0, "mrr": 0.0},
    }
    assert data["metrics"] == pytest.approx({"recall@1": 0.5 / 3, "recall@3": 2 / 3, "mrr": 0.5})
    assert data["by_category"]["music"] == {
        "n": 1,
        "metrics": {"recall@1": 0.0, "recall@3": 1.0, "mrr": 0.5},
    }
    assert set(data["by_category"]) == {"music", "sport", "uncategorized"}
    assert data["worst_by"] == "recall@1"
    assert [w["id"] for w in data["worst"]] == ["g1", "g3"]
    assert data["worst"][0]["retrieved"] == [{"id": "c5", "grade": 0}, {"id": "c1", "grade": 2}]
    assert data["worst"][1]["missing_from_run"] is True
    assert data["no_answer"] == [
        {"id": "g4", "query": GOLDEN[3]["query"], "category": None, "retrieved": ["c5"]}
    ]


def test_eval_text_report_lists_categories_and_worst(files: dict[str, Path]) -> None:
    res = _invoke(eval_command, ["--golden", files["golden"], "--run", files["run"], "-k", "3"])
    assert res.exit_code == 0
    text = res.stdout
    assert "(v2)" in text and "3 scored, 1 no-answer (excluded), 1 missing" in text
    assert "per category:" in text and "music" in text
    assert "worst 3 by ndcg@3" in text and "got:      c5, *c1[2]" in text


def test_a_golden_set_with_nothing_answerable_reports_no_figure(
    files: dict[str, Path], tmp_path: Path
) -> None:
    only_no_answer = _jsonl(tmp_path / "golden_v1.jsonl", [GOLDEN[3]])
    out = tmp_path / "n0.json"
    args = ["--golden", only_no_answer, "--run", files["run"], "-k", "3", "--out", out]
    res = _invoke(eval_command, args)
    assert res.exit_code == 0, res.output
    assert "0 scored, 1 no-answer (excluded)" in res.stdout
    assert "no answerable case: n=0" in res.stdout and "0.0000" not in res.stdout
    assert "per category" not in res.stdout  # no category has a scored case
    metrics = json.loads(out.read_text("utf-8"))["metrics"]
    assert metrics and set(metrics.values()) == {None}  # no figure, not zeros
    gated = _invoke(gate_command, ["--baseline", out, "--candidate", out])
    assert gated.exit_code == 2
    assert f"{out}: metrics: no figure: the run scored no answerable query (n=0)" in gated.stderr


def test_bm25_baseline_retriever_and_saved_run(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = tmp_path / "bm25_run.jsonl"
    res = _invoke(
        eval_command,
        [
            "--golden",
            files["golden"],
            "--baseline",
            "bm25",
            "--corpus",
            files["corpus"],
            "-k",
            "1",
            "--json",
            "--save-run",
            saved,
        ],
    )
    assert res.exit_code == 0, res.output
    bm25 = json.loads(res.stdout)
    assert bm25["metrics"]["hit_rate@1"] == 1.0
    assert bm25["per_query"]["g2"]["recall@1"] == 0.5
    again = _invoke(
        eval_command, ["--golden", files["golden"], "--run", saved, "-k", "1", "--json"]
    )
    assert json.loads(again.stdout)["per_query"] == bm25["per_query"]

    (tmp_path / "my_rag.py").write_text(
        "def search(query, k):\n"
        "    if 'Marte' in query:\n        raise TimeoutError('slow')\n"
        "    return [{'id': 'c4', 'text': 'x'}][:k]\n"
    )
    monkeypatch.chdir(tmp_path)
    res = _invoke(
        eval_command,
        ["--golden", files["golden"], "--retriever", "my_rag:search", "-k", "1", "--json"],
    )
    sys.modules.pop("my_rag", None)
    data = json.loads(res.stdout)
    assert data["per_query"]["g3"]["recall@1"] == 1.0 and data["metrics"]["recall@1"] == 1 / 3
    assert data["retriever_errors"] == {"g4": "TimeoutError: slow"}


def test_beir_queries_and_qrels_input(tmp_path: Path, files: dict[str, Path]) -> None:
    q = _jsonl(tmp_path / "queries.jsonl", [{"id": "1", "text": "Panthers intercepciones"}])
    r = tmp_path / "qrels.tsv"
    r.write_text("query-id\tcorpus-id\tscore\n1\tc2\t1\n")
    res = _invoke(
        eval_command,
        [
            "--queries",
            q,
            "--qrels",
            r,
            "--baseline",
            "bm25",
            "--corpus",
            files["corpus"],
            "--metrics",
            "mrr",
            "--json",
        ],
    )
    data = json.loads(res.stdout)
    assert data["metrics"] == {"mrr": 1.0} and data["golden_version"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "RUN"], "give --golden FILE, or --queries and --qrels"),
        (["--golden", "GOLDEN"], "exactly one of --run, --retriever, --baseline"),
        (["--golden", "GOLDEN", "--baseline", "bm25"], "--baseline bm25 needs --corpus"),
        (["--golden", "GOLDEN", "--run", "RUN", "--metrics", "ndcg@x"], "metric 'ndcg@x'"),
        (["--golden", "GOLDEN", "--run", "RUN", "--worst-by", "mrr@7"], "--worst-by"),
        (["--golden", "GOLDEN", "--retriever", "nope_module_x:f"], "cannot import"),
    ],
)
def test_eval_usage_and_config_errors_exit_2(
    files: dict[str, Path], args: list[str], message: str
) -> None:
    args = [
        str(files["golden"]) if a == "GOLDEN" else str(files["run"]) if a == "RUN" else a
        for a in args
    ]
    res = _invoke(eval_command, args)
    assert res.exit_code == 2 and message in res.stderr


def test_bad_golden_line_exits_2_with_one_line(files: dict[str, Path]) -> None:
    with files["golden"].open("a") as f:
        f.write('{"id": "g9", "query": "x", "relevant_chunks": {"c1": 5}}\n')
    res = _invoke(eval_command, ["--golden", files["golden"], "--run", files["run"]])
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {files['golden']}:5: relevant_chunks: ")
    assert res.stderr.count("\n") == 1


def test_gate_exit_codes_and_markdown(files: dict[str, Path], tmp_path: Path) -> None:
    base, cand, worse = tmp_path / "base.json", tmp_path / "cand.json", tmp_path / "worse.json"
    _invoke(eval_command, ["--golden", files["golden"], "--run", files["run"], "--out", base])
    _invoke(eval_command, ["--golden", files["golden"], "--run", files["run"], "--out", cand])
    ok = _invoke(gate_command, ["--baseline", base, "--candidate", cand])
    assert ok.exit_code == 0 and ok.stdout.startswith("gate passed")
    policy = tmp_path / "gate.toml"
    policy.write_text('[floors]\n"recall@10" = 0.9\n')
    res = _invoke(
        gate_command,
        ["--baseline", base, "--candidate", cand, "--policy", policy, "--format", "markdown"],
    )
    assert res.exit_code == 1
    assert res.stdout.startswith("### ❌ ragsieve gate failed: 1 floor breach(es)")
    assert "| recall@10 | 0.6667 | 0.6667 | +0.0000 |" in res.stdout
    data = json.loads(base.read_text())
    data["per_query"]["g2"]["mrr"] = "high"
    worse.write_text(json.dumps(data))
    bad = _invoke(gate_command, ["--baseline", worse, "--candidate", cand])
    assert bad.exit_code == 2 and "per_query.g2.mrr" in bad.stderr
    policy.write_text("[gate]\nconfidence = 2\n")
    bad = _invoke(gate_command, ["--baseline", base, "--candidate", cand, "--policy", policy])
    assert bad.exit_code == 2 and f"{policy}:2: gate.confidence" in bad.stderr
    js = _invoke(gate_command, ["--baseline", base, "--candidate", cand, "--format", "json"])
    assert json.loads(js.stdout)["passed"] is True


def test_eval_on_shared_xquad_es_with_bm25(shared_data: Path, tmp_path: Path) -> None:
    d = shared_data / "xquad_es"
    res = _invoke(
        eval_command,
        [
            "--queries",
            d / "queries_dev.jsonl",
            "--qrels",
            d / "qrels_dev.tsv",
            "--baseline",
            "bm25",
            "--corpus",
            d / "corpus.jsonl",
            "-k",
            "10",
            "--json",
        ],
    )
    data = json.loads(res.stdout)
    assert data["n_queries"] == 297
    # a single-paragraph target in a 240-paragraph corpus: BM25 is strong, not perfect
    assert 0.85 < data["metrics"]["ndcg@10"] < 1.0
    assert data["metrics"]["recall@10"] >= data["metrics"]["hit_rate@10"] - 1e-9


def test_generation_metrics_with_an_answerer(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_answerer.py").write_text(
        "def answer(query, chunks):\n"
        "    if 'Marte' in query:\n        return 'No tengo información sobre eso.'\n"
        "    if 'Panthers' in query:\n        raise RuntimeError('model down')\n"
        "    return chunks[0] if chunks else 'I don\\'t know.'\n"
    )
    monkeypatch.chdir(tmp_path)
    res = _invoke(
        eval_command,
        [
            "--golden",
            files["golden"],
            "--run",
            files["run"],
            "--corpus",
            files["corpus"],
            "--answerer",
            "my_answerer:answer",
            "--judge",
            "answer_relevance",
            "--sample",
            "5",
            "--json",
        ],
    )
    sys.modules.pop("my_answerer", None)
    assert res.exit_code == 0, res.output
    gen = json.loads(res.stdout)["generation"]
    assert set(gen["judges"]) == {"faithfulness", "answer_relevance"}
    assert gen["answerer_errors"] == {"g2": "RuntimeError: model down"}
    assert gen["n_answered"] == 3  # g1, g3 answerable; g4 no-answer
    # the no-answer case got a retrieved chunk, answered "no tengo información": an abstention
    assert gen["n_no_answer_judged"] == 1 and gen["abstention_rate_no_answer"] == 1.0
    assert gen["cases"]["g4"] == {"faithfulness": "abstained"}
    # g1 answers with the retrieved chunk itself, so the faithfulness judge must accept it
    assert gen["cases"]["g1"]["faithfulness"] == "faithful"
    assert gen["judges"]["faithfulness"]["n"] == 2
    text = _invoke(
        eval_command,
        [
            "--golden",
            files["golden"],
            "--run",
            files["run"],
            "--corpus",
            files["corpus"],
            "--answerer",
            "my_answerer:answer",
        ],
    ).stdout
    assert "abstention on no-answer cases: 100% of 1" in text
    assert "answerer errors: 1" in text


def test_answerer_needs_chunk_texts(files: dict[str, Path]) -> None:
    res = _invoke(
        eval_command, ["--golden", files["golden"], "--run", files["run"], "--answerer", "x:y"]
    )
    assert res.exit_code == 2 and "--answerer needs chunk texts" in res.stderr
