"""Golden cases with history: a flagged follow-up keeps its conversation and the app's rewrite from
trace to candidate to golden file, and ``ragsieve eval`` hands the history to the retriever."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conversations import ChatTurn, send_conversation
from golden_plant import write_golden_v3
from test_run_support import PARIS, settings, wait_stored

from ragsieve.evaluators.golden.sets import dump_case, load_golden
from ragsieve.evaluators.records import GoldenCase, Message
from ragsieve.jobs.cli import cli
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.categories import summarize
from ragsieve.jobs.golden.growth.reference import load_reference
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.promote import promote
from ragsieve.jobs.golden.review.review import decide, render
from ragsieve.jobs.run.run import run_once

FIRST = ChatTurn("What is the capital of France?", [PARIS], "The capital of France is Paris.")
REWRITE = "Since when has Paris been the seat of the French government?"
FOLLOW = ChatTurn(
    "and since when?",
    [PARIS],
    "Paris has been the seat of the French government since 1850, after Marseille.",
    rewrite=REWRITE,
)


def test_follow_up_candidate_keeps_history_and_rewrite_into_golden(
    collector: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    v3 = write_golden_v3(tmp_path)
    ids = send_conversation(collector.traces_url, "chat-G", [FIRST, FOLLOW])
    wait_stored(collector.store, 2)
    s = settings(store=collector.store.url, **{"golden.path": str(v3)})
    out = run_once(collector.store, s, take_all=True)
    assert [f.interaction.trace_id for f in out.flagged] == [ids[1]]

    repo = CandidateRepo(collector.store)
    (cand,) = [c for c in repo.select(["candidate"]) if ids[1] in c.source_trace_ids]
    assert cand.query == "and since when?"
    assert cand.body["chat_history"] == [
        {"role": "user", "content": FIRST.question},
        {"role": "assistant", "content": FIRST.answer},
    ]
    assert cand.body["standalone_query"] == REWRITE
    # the review screen shows the conversation and the app's rewrite above the question
    screen = render(cand, None)
    assert (
        screen.index("CONVERSATION") < screen.index(FIRST.question[:30]) < screen.index("QUESTION")
    )
    assert "as the app rewrote it:" in screen and REWRITE[:30] in screen

    cand.body["relevant_chunks"] = {"doc-1-0": 2}
    decide(repo, cand, "accepted", "alice", None)
    ref = load_reference(repo, v3, _embed())
    sums = {x.id: x for x in summarize(repo.select(["accepted"]), ref, new_threshold=0.5)}
    res = promote(repo, v3, sums, by="bob")
    lines = res.path.read_text(encoding="utf-8").splitlines()
    gs = load_golden(res.path)
    (case,) = [c for c in gs.cases if c.source == "production"]
    assert case.query == "and since when?" and case.standalone_query == REWRITE
    assert [(m.role, m.content) for m in case.chat_history] == [
        ("user", FIRST.question),
        ("assistant", FIRST.answer),
    ]
    # single-turn cases are written as before: no empty history fields
    plain = [json.loads(x) for x in lines if json.loads(x)["id"] != case.id]
    assert plain and not any("chat_history" in p or "standalone_query" in p for p in plain)


def _embed() -> Any:
    from ragsieve.evaluators.tools.embeddings import embed

    return embed


RETRIEVERS = """
CALLS = []

def with_history(query, k, history):
    CALLS.append(("with_history", query, history))
    return ["doc-1-0"] if history else ["kb-none"]

def plain(query, k):
    CALLS.append(("plain", query))
    return ["doc-1-0"] if "Paris" in query else ["kb-none"]

async def async_history(query, k, *, history, config=None):
    CALLS.append(("async_history", query, history, config))
    return [{"id": "doc-1-0"}]
"""


def _golden(tmp_path: Path) -> Path:
    follow = GoldenCase(
        id="f1",
        query="and since when?",
        relevant_chunks={"doc-1-0": 2},
        chat_history=(
            Message(role="user", content=FIRST.question),
            Message(role="assistant", content=FIRST.answer),
        ),
        standalone_query=REWRITE,
    )
    single = GoldenCase(id="s1", query="Where is the Louvre?", relevant_chunks={"doc-9": 1})
    path = tmp_path / "golden_v1.jsonl"
    path.write_text(dump_case(follow) + "\n" + dump_case(single) + "\n", encoding="utf-8")
    return path


def _eval(golden: Path, retriever: str, *extra: str) -> dict[str, Any]:
    res = CliRunner().invoke(
        cli,
        ["eval", "--golden", str(golden), "--retriever", retriever, "-k", "2", "--json", *extra],
        catch_exceptions=False,
    )
    assert res.exit_code in (0, 1), res.output
    data: dict[str, Any] = json.loads(res.stdout)
    return data


def test_eval_passes_history_to_a_retriever_that_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "conv_retrievers.py").write_text(RETRIEVERS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    golden = _golden(tmp_path)
    try:
        _eval(golden, "conv_retrievers:with_history")
        _eval(golden, "conv_retrievers:plain")
        _eval(golden, "conv_retrievers:async_history", "--config", "top_k=2")
        calls = sys.modules["conv_retrievers"].CALLS  # type: ignore[attr-defined]
    finally:
        sys.modules.pop("conv_retrievers", None)
    history = [
        {"role": "user", "content": FIRST.question},
        {"role": "assistant", "content": FIRST.answer},
    ]
    assert calls[:2] == [
        ("with_history", "and since when?", history),
        ("with_history", "Where is the Louvre?", []),
    ]
    # a retriever without a history argument searches with the follow-up's reviewed meaning
    assert calls[2:4] == [("plain", REWRITE), ("plain", "Where is the Louvre?")]
    assert calls[4][:3] == ("async_history", "and since when?", history)
    assert calls[4][3] == {"top_k": 2}


def test_golden_ids_of_the_same_follow_up_in_two_conversations_differ() -> None:
    a = GoldenCase.model_validate(
        {"query": "and on Saturdays?", "chat_history": [{"role": "user", "content": "Bank?"}]}
    )
    b = GoldenCase.model_validate(
        {"query": "and on Saturdays?", "chat_history": [{"role": "user", "content": "Post?"}]}
    )
    c = GoldenCase.model_validate({"query": "and on Saturdays?"})
    assert len({a.id, b.id, c.id}) == 3
    assert c.id == candidate_id("and on saturdays")  # single-turn ids are unchanged
