"""Sessions: results by session, the session view, session ids in the report and annotations, and
failure rates of first turns against follow-ups; conversations sent through the real exporter."""

from __future__ import annotations

import json
import time
from typing import Any

from click.testing import CliRunner
from conversations import ChatTurn, send_conversation
from test_run_support import KINDS, settings, wait_stored

from ragsieve.collector.derive.sessions import session_turns
from ragsieve.jobs.cli import cli
from ragsieve.jobs.run.report import render_table
from ragsieve.jobs.run.run import run_once
from ragsieve.jobs.sinks.annotations import TOPIC

GOOD, GOOD_REFUND, UNFAITHFUL = KINDS["good"][0], KINDS["good_refund"][0], KINDS["unfaithful"][0]


def _turn(t: Any) -> ChatTurn:
    return ChatTurn(t.question, t.docs, t.answer)


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _traffic(collector: Any) -> tuple[list[str], list[str], list[str]]:
    """chat-A: good, unfaithful, good; chat-B: one good turn; one turn without a session."""
    a = send_conversation(
        collector.traces_url, "chat-A", [_turn(GOOD), _turn(UNFAITHFUL), _turn(GOOD_REFUND)]
    )
    b = send_conversation(collector.traces_url, "chat-B", [_turn(GOOD_REFUND)], doc_prefix="b")
    c = send_conversation(collector.traces_url, None, [_turn(GOOD)], doc_prefix="c")
    wait_stored(collector.store, 5)
    return a, b, c


def test_sessions_in_results_report_view_and_annotations(collector: Any) -> None:
    a, b, c = _traffic(collector)
    out = run_once(collector.store, settings(store=collector.store.url), take_all=True)
    url = collector.store.url
    assert [f.interaction.trace_id for f in out.flagged] == [a[1]]

    # the run report: the flagged case names its session and turn; rates per turn position
    (case,) = out.report["flagged_cases"]
    assert case["session_id"] == "chat-A" and case["turn"] == "2"
    # its failure category is the one the run counts it under (the golden set's beside it)
    assert out.report["flagged_by_category"] == {case["category"]: 1}
    assert case["golden_category"] == "uncategorized"
    by_turn = out.report["failure_rate_by_turn"]
    first, follow = by_turn["position=first"], by_turn["position=follow_up"]
    assert (first["n"], first["failed"], first["estimate"]) == (3, 0, 0.0)
    assert (follow["n"], follow["failed"], follow["estimate"]) == (2, 1, 0.5)
    assert by_turn["turn=2"]["failed"] == 1 and by_turn["turn=3"]["failed"] == 0
    assert follow["cause_share"] == {"generation": 1.0}
    assert "first 0.0% (n=3), follow-up 50.0% (n=2)" in render_table(out.report)

    # results list --session keeps the session's turns only
    rows = [
        json.loads(x)
        for x in _invoke(
            "results", "list", "--store", url, "--session", "chat-A", "--json"
        ).stdout.splitlines()
    ]
    assert {r["trace_id"] for r in rows} == set(a) and len(rows) == 3 * 3
    # in the conversation's order, as the session view reads it, whatever the results' times
    assert list(dict.fromkeys(r["trace_id"] for r in rows)) == a
    flagged = _invoke(
        "results", "list", "--store", url, "--session", "chat-A", "--flagged", "--json"
    ).stdout.splitlines()
    assert {json.loads(x)["trace_id"] for x in flagged} == {a[1]}
    one = _invoke("results", "list", "--store", url, "--session", "chat-B", "--limit", "2")
    head, *rows = one.stdout.splitlines()
    assert head.startswith("TRACE") and len(rows) == 2 and b[0] in one.stdout
    none = _invoke("results", "list", "--store", url, "--session", "nope")
    assert none.stdout == "" and none.stderr.startswith("no results match")
    exported = _invoke("results", "export", "--store", url, "--session", "chat-B")
    assert {json.loads(x)["trace_id"] for x in exported.stdout.splitlines()} == {b[0]}

    # the session view: every turn in order, the flagged one marked
    view = json.loads(
        _invoke("interactions", "show", "--session", "chat-A", "--store", url, "--json").stdout
    )
    assert [t["trace_id"] for t in view["turns"]] == a
    assert [t["turn"] for t in view["turns"]] == [1, 2, 3]
    assert [t["turn_in_prompt"] for t in view["turns"]] == [1, 2, 3]
    assert [t["flagged"] for t in view["turns"]] == [False, True, False]
    assert view["turns"][1]["root_cause"] == "generation" and view["flagged"] == 1
    text = _invoke("interactions", "show", "--session", "chat-A", "--store", url).stdout
    lines = text.splitlines()
    assert lines[0] == "session chat-A: 3 turn(s), 1 flagged"
    assert lines[2].startswith("!  2  " + a[1]) and "FLAGGED generation" in lines[2]
    assert lines[1].startswith("   1  " + a[0]) and "pass" in lines[1]
    shown = _invoke("interactions", "show", a[2], "--store", url)
    assert json.loads(shown.stdout)["session_id"] == "chat-A"
    assert "turn 3 of 3 in session chat-A" in shown.stderr
    assert "session" not in _invoke("interactions", "show", c[0], "--store", url).stderr
    missing = CliRunner().invoke(cli, ["interactions", "show", "--session", "x", "--store", url])
    assert missing.exit_code == 2 and "no interaction in session x" in missing.output
    both = CliRunner().invoke(cli, ["interactions", "show", a[0], "--session", "chat-A"])
    assert both.exit_code == 2

    # Phoenix annotations carry the session id in their metadata
    payloads = [
        json.loads(bytes(p))
        for (p,) in collector.store.query("SELECT payload FROM outbox WHERE topic = ?", (TOPIC,))
    ]
    sessions = {p["metadata"]["trace_id"]: p["metadata"]["session_id"] for p in payloads}
    assert {sessions[t] for t in a} == {"chat-A"} and sessions[b[0]] == "chat-B"
    assert sessions[c[0]] is None


def test_session_ids_with_like_wildcards_match_exactly(collector: Any) -> None:
    a = send_conversation(collector.traces_url, "s_1%", [_turn(GOOD)], doc_prefix="w")
    b = send_conversation(collector.traces_url, "sx1abc", [_turn(GOOD)], doc_prefix="x")
    q = send_conversation(collector.traces_url, 'q"1\\', [_turn(GOOD)], doc_prefix="q")
    wait_stored(collector.store, 3)
    url = collector.store.url
    deadline = time.monotonic() + 15
    while len(collector.store.list_interactions()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t.trace_id for t in session_turns(collector.store, "s_1%")] == a
    assert [t.trace_id for t in session_turns(collector.store, "sx1abc")] == b
    assert [t.trace_id for t in session_turns(collector.store, 'q"1\\')] == q
    view = _invoke("interactions", "show", "--session", "s_1%", "--store", url)
    assert "1 turn(s), 0 flagged" in view.stdout and "not judged" in view.stdout
