"""The fast ``ragsieve eval`` path (msgspec, rankings decoded when read) gives the old results.

The old path is still in the code: :class:`RunLine` validated line by line with the stdlib
parser, which ``load_run`` falls back on. Each test feeds one input to both and compares.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsieve.evaluators.cli import eval_command
from ragsieve.evaluators.golden.runs import RunFile, RunLine, load_run, paused_gc
from ragsieve.evaluators.golden.sets import load_golden, load_models
from ragsieve.evaluators.metrics import METRICS, expand_metrics
from ragsieve.evaluators.metrics.report import build_report, dumps

IDS = ["c1", "c2", "c3", "ç\u00e9", 'quo"te', "back\\slash", "\u2028", "😀", "c1 ", ""]


def _reference_run(path: Path) -> dict[str, list[str]]:
    return {row.id: row.retrieved_ids for _, row in load_models(path, RunLine)}


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines), "utf-8")
    return path


run_lines = st.lists(
    st.tuples(
        st.lists(st.sampled_from(IDS), max_size=12),
        st.booleans(),  # with scores
        st.sampled_from(["\n", "\r\n", "\n\n", "\n  \n"]),  # line endings and blank lines
        st.booleans(),  # ASCII-escaped
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(rows=run_lines)
def test_fast_run_reader_equals_the_reference_reader(tmp_path_factory, rows) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("run") / "run.jsonl"
    lines = []
    for i, (ids, scored, end, ascii_only) in enumerate(rows):
        obj: dict[str, object] = {"id": f"q{i}", "retrieved_ids": ids, "extra": {"k": [1]}}
        if scored:
            obj["scores"] = [float(len(ids) - j) for j in range(len(ids))]
        lines.append(json.dumps(obj, ensure_ascii=ascii_only) + end)
    _write(path, lines)
    run = load_run(path)
    assert isinstance(run, RunFile)  # well-formed: the fast reader took it
    assert dict(run) == _reference_run(path)
    assert list(run) == [f"q{i}" for i in range(len(rows))]


@pytest.mark.parametrize(
    "line",
    [
        '{"id": "q1", "retrieved_ids": ["a"], "scores": ["0.5"]}',  # lax float: accepted before
        '{"id": "q1", "retrieved_ids": ["a"], "scores": [NaN]}',  # stdlib-only literal
        '\ufeff{"id": "q1", "retrieved_ids": ["\\ud800"]}',  # BOM, lone surrogate
    ],
)
def test_lines_the_fast_reader_declines_read_as_before(tmp_path: Path, line: str) -> None:
    path = _write(tmp_path / "run.jsonl", [line + "\n"])
    try:
        expected = _reference_run(path)
    except Exception as exc:  # the reference rejects it: load_run must reject it the same way
        with pytest.raises(type(exc)) as info:
            load_run(path)
        assert str(info.value) == str(exc)
        return
    got = load_run(path)
    assert not isinstance(got, RunFile) and got == expected


def test_run_file_is_a_read_only_mapping_that_decodes_on_read(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "run.jsonl",
        ['{"id": "q1", "retrieved_ids": ["a", "b", "a"]}\n', '{"id": "q2", "retrieved_ids": []}\n'],
    )
    run = load_run(path)
    assert len(run) == 2 and "q1" in run and "q3" not in run
    assert run["q1"] == ["a", "b", "a"] and run.get("q3") is None
    first = run["q1"]
    first.append("x")  # each read is a new list: the file's ranking is unchanged
    assert run["q1"] == ["a", "b", "a"]
    assert run == {"q1": ["a", "b", "a"], "q2": []}


def test_paused_gc_restores_the_collector_state() -> None:
    import gc

    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def _golden_and_run(tmp_path: Path, n: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(60)] + ["é", 'q"t']
    golden, run = [], []
    for q in range(n):
        rel = {c: rng.randint(0, 3) for c in rng.sample(pool, rng.randint(0, 4))}
        cat = rng.choice([None, "music", "sport", "ciencia"])
        golden.append({"id": f"g{q}", "query": f"pregunta {q}", "relevant_chunks": rel})
        if cat:
            golden[-1]["category"] = cat
        if rng.random() < 0.9:  # some queries are missing from the run
            ids = [rng.choice(pool) for _ in range(rng.randint(0, 25))]  # with repeats
            run.append({"id": f"g{q}", "retrieved_ids": ids})
    g = _write(tmp_path / "golden_v3.jsonl", [json.dumps(r) + "\n" for r in golden])
    r = _write(tmp_path / "run.jsonl", [json.dumps(r) + "\n" for r in run])
    return g, r


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_report_from_the_fast_reader_equals_the_old_report(tmp_path: Path, seed: int) -> None:
    golden_path, run_path = _golden_and_run(tmp_path, 300, seed)
    golden = load_golden(golden_path)
    specs = expand_metrics(METRICS, [1, 3, 10, 30])
    fast = build_report(golden, load_run(run_path), specs, worst=7).to_json()
    old = build_report(golden, _reference_run(run_path), specs, worst=7).to_json()
    assert fast == old
    # msgspec writes what the stdlib wrote, value for value
    assert json.loads(dumps(fast, indent=1)) == json.loads(json.dumps(old, ensure_ascii=False))
    assert json.loads(dumps(fast)) == old


def test_eval_cli_writes_the_values_the_stdlib_path_wrote(tmp_path: Path) -> None:
    golden_path, run_path = _golden_and_run(tmp_path, 200, 7)
    out = tmp_path / "results.json"
    args = ["--golden", golden_path, "--run", run_path, "-k", "1", "-k", "5", "--out", out]
    res = CliRunner().invoke(eval_command, [str(a) for a in [*args, "--json"]])
    assert res.exit_code == 0, res.output
    written = json.loads(out.read_text("utf-8"))
    assert json.loads(res.stdout) == written
    golden = load_golden(golden_path)
    specs = expand_metrics(
        ["recall", "precision", "hit_rate", "mrr", "ndcg", "context_precision"], [1, 5]
    )
    old = build_report(golden, _reference_run(run_path), specs, source=str(golden_path))
    old.retriever, old.created_at = f"run file {run_path}", written["created_at"]
    assert written == json.loads(json.dumps(old.to_json(), ensure_ascii=False))
    assert out.read_text("utf-8").startswith('{\n "golden"')  # one member per line, as before


def test_report_keys_that_msgspec_refuses_are_written_by_the_stdlib() -> None:
    data = {"generation": {"judges": {"faithfulness": {"labels": {None: 2, "faithful": 1}}}}}
    assert json.loads(dumps(data)) == json.loads(json.dumps(data))
