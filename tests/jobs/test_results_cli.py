"""`ragsieve results list|export` over what a job run stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from test_run_support import BANANA, KINDS, Turn, send, settings, wait_stored

from ragsieve.evaluators.records import EvalResult
from ragsieve.jobs.cli import cli
from ragsieve.jobs.results.judgements import Judgement, save_judgements
from ragsieve.jobs.run.run import run_once


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_list_and_export(collector: Any, tmp_path: Path) -> None:
    ids = send(collector.traces_url, [KINDS["good"][0], KINDS["unfaithful"][0]])
    wait_stored(collector.store, 2)
    run_once(collector.store, settings(store=collector.store.url), take_all=True)
    url = collector.store.url
    res = invoke("results", "list", "--store", url, "--json")
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(rows) == 6 and {r["trace_id"] for r in rows} == set(ids)
    for key in ("trace_id", "evaluator", "label", "score", "explanation", "flagged", "root_cause"):
        assert all(key in r for r in rows)
    # each result carries what its judge read (the README's judged_question, claims, ...)
    relevance = [r for r in rows if r["evaluator"] == "answer_relevance"]
    assert relevance and all(r["metadata"].get("judged_question") for r in relevance)
    flagged = [
        json.loads(x)
        for x in invoke(
            "results", "list", "--store", url, "--flagged", "--since", "1h", "--json"
        ).stdout.splitlines()
    ]
    assert len(flagged) == 3 and {r["root_cause"] for r in flagged} == {"generation"}
    assert all(r["flagged"] for r in flagged)
    text = invoke("results", "list", "--store", url).stdout.splitlines()
    assert text[0].split() == ["TRACE", "METRIC", "LABEL", "SCORE", "RESULT", "TRACE", "VERDICT"]
    bad = {r["trace_id"] for r in flagged}
    for tid in ids:  # the verdict once per trace; each metric row says whether it failed
        at = [i for i, line in enumerate(text[1:]) if line.startswith(tid)]
        assert at == list(range(at[0], at[0] + 3)), "a trace's rows stand together"
        mine = [text[1 + i].split() for i in at]
        assert mine[0][5:], "the verdict is on the trace's first row"
        verdicts = [" ".join(cells[5:]) for cells in mine if cells[5:]]
        assert verdicts == (["FLAGGED generation"] if tid in bad else ["pass"])
        result = {cells[1]: cells[4] for cells in mine}
        failed = {"faithfulness": "FAILED"} if tid in bad else {}
        assert result == {
            m: failed.get(m, "passed")
            for m in ("faithfulness", "answer_relevance", "context_relevance")
        }
    assert all("metric_failed" in r for r in rows)

    out = tmp_path / "r.parquet"
    invoke("results", "export", "--store", url, "--format", "parquet", "--out", str(out))
    table = pq.read_table(out)
    assert table.num_rows == 6
    assert sum(table.column("flagged").to_pylist()) == 3
    judged = {json.loads(m).get("judged_question") for m in table.column("metadata").to_pylist()}
    assert judged - {None}
    res = invoke("results", "export", "--store", url, "--format", "jsonl")
    assert len(res.stdout.splitlines()) == 6
    assert invoke("results", "export", "--store", url, "--format", "parquet").exit_code == 2


def test_show_gives_one_verdict_whole_and_a_one_line_error(collector: Any, capfd: Any) -> None:
    good, bad = send(collector.traces_url, [KINDS["good"][0], KINDS["unfaithful"][0]])
    wait_stored(collector.store, 2)
    run_once(collector.store, settings(store=collector.store.url), take_all=True)
    url = collector.store.url
    doc = json.loads(invoke("results", "show", bad[:8], "--store", url, "--json").stdout)
    assert (doc["verdict"], doc["root_cause"]) == ("fail", "generation")
    assert doc["evidence"] and {j["evaluator"] for j in doc["judges"]} == {
        "faithfulness", "answer_relevance", "context_relevance"
    }  # fmt: skip
    # which question the judges read, and what kind of turn it was: a reviewer trusts a verdict
    # on a follow-up only when it says so
    for j in doc["judges"]:
        assert {"judged_question", "question_source", "turn_kind"} <= set(j)
    asked = {(j["judged_question"], j["question_source"], j["turn_kind"]) for j in doc["judges"]}
    asked.discard((None, None, None))
    assert asked and all(q and src and kind for q, src, kind in asked)
    text = invoke("results", "show", good, "--store", url).stdout
    assert f"trace {good}   verdict: pass" in text and "judges:" in text
    assert "judged question (" in text and ", turn: " in text
    shown = invoke("results", "show", bad, "--store", url).stdout
    assert " FAILED" in shown.split("judges:")[1]  # the metric that failed the trace, named
    # through the console entry point: one line on stderr, exit 2
    from ragsieve.jobs.cli import main

    capfd.readouterr()
    try:
        main(["results", "show", "0123456789ab", "--store", url])
    except SystemExit as exc:
        code = exc.code
    err = capfd.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: no verdict for trace")


def test_a_bare_group_prints_its_help_not_an_error(capfd: Any) -> None:
    from ragsieve.jobs.cli import main

    for argv in ([], ["results"]):
        try:
            main(argv)
        except SystemExit:
            pass
        out = capfd.readouterr()
        text = out.out + out.err
        assert "Usage: ragsieve" in text and "Commands:" in text and "error:" not in text


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (
            ["results", "show", "c59ff7c1fc26", "--config", "ragsieve.toml"],
            "(--config FILE goes before the command: ragsieve --config FILE results show ...)",
        ),
        (["results", "list", "-v"], "(-v goes before the command: ragsieve -v results list ...)"),
        (["results", "list", "--bogus"], "(see 'ragsieve results list --help')"),
        # --version acts alone: nothing goes before a command with it
        (["results", "list", "--version"], "(see 'ragsieve results list --help')"),
    ],
)
def test_a_root_option_after_the_command_says_where_it_goes(
    capfd: Any, args: list[str], hint: str
) -> None:
    from ragsieve.jobs.cli import main

    capfd.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(args)
    err = capfd.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert err[0].startswith("error: No such option") and err[0].endswith(hint)


def test_a_failing_label_the_verdict_set_aside_reads_waived_not_passed(collector: Any) -> None:
    """A correct abstention passes though its answer relevance reads ``irrelevant``: the listing
    and the verdict say that judge's label was set aside, not that it passed (a new user read
    "irrelevant 0.20 passed" as a contradiction)."""
    declined = Turn(
        "Who won the 1930 football world cup final?",
        [BANANA],
        "Sorry, I don't have that information.",
    )
    (tid,) = send(collector.traces_url, [declined])
    wait_stored(collector.store, 1)
    run_once(collector.store, settings(store=collector.store.url), take_all=True)
    url = collector.store.url
    rows = [line.split() for line in invoke("results", "list", "--store", url).stdout.splitlines()]
    result = {cells[1]: (cells[2], cells[4]) for cells in rows[1:]}
    assert result["answer_relevance"] == ("irrelevant", "waived")
    assert result["faithfulness"] == ("abstained", "-")  # no score: nothing to pass or fail
    shown = invoke("results", "show", tid, "--store", url).stdout
    assert f"trace {tid}   verdict: pass" in shown
    (line,) = [x for x in shown.splitlines() if x.strip().startswith("answer_relevance")]
    assert line.split()[1:2] == ["irrelevant"] and " waived" in line and "passed" not in line


def test_an_earlier_judge_versions_result_reads_older(collector: Any) -> None:
    """A trace judged again by a newer judge version keeps the old row; the verdict reads the
    newest, so the old row's failing label is neither the verdict's nor set aside by it."""
    (tid,) = send(collector.traces_url, [KINDS["good"][0]])
    wait_stored(collector.store, 1)
    run_once(collector.store, settings(store=collector.store.url), take_all=True)
    old = EvalResult(
        trace_id=tid, span_id="0" * 16, evaluator="faithfulness", label="unfaithful", score=0.2
    )
    save_judgements(
        collector.store, "old-run", [Judgement(tid, "faithfulness", "v0", [old], False)], 1.0
    )
    rows = [
        line.split()
        for line in invoke("results", "list", "--store", collector.store.url).stdout.splitlines()
    ]
    faith = [(cells[2], cells[4]) for cells in rows[1:] if cells[1] == "faithfulness"]
    assert faith == [("faithful", "passed"), ("unfaithful", "older")]


@pytest.mark.parametrize(
    ("label", "score", "failed", "mark"),
    [
        ("unfaithful", 0.2, True, "FAILED"),
        ("faithful", 0.9, False, "passed"),
        ("uncertain", 0.65, False, "audit"),  # never flagged, always audited
        ("irrelevant", 0.2, False, "waived"),
        ("abstained", None, False, "-"),
        ("faithful", 0.9, None, "-"),  # no run decided the trace
    ],
)
def test_what_a_metric_did_to_its_trace(label, score, failed, mark) -> None:
    from ragsieve.jobs.results.show import metric_mark

    assert metric_mark(label, score, failed) == mark
