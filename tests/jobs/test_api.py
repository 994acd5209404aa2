"""The pandas API on real frames: ``Client`` over a store filled by the real exporter and job,
``evaluate_dataframe`` with the offline judges and with the LLM judges against a loopback server,
and ``log_to_phoenix`` posting to a loopback HTTP server in the job's annotation format."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest

from ragsieve.collector.instrument import instrument, llm_span, rag_span, retriever_span
from ragsieve.evaluators import evaluate_dataframe
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges import LLMConfig
from ragsieve.evaluators.testing import FakeOpenAIServer
from ragsieve.jobs.api import INTERACTION_COLUMNS, RESULT_COLUMNS, RUN_COLUMNS, Client
from ragsieve.jobs.run.run import run_once
from ragsieve.jobs.settings import load_settings

CHUNKS = [
    {"id": "plans#starter", "content": "The Starter plan allows 120 requests per minute."},
    {"id": "plans#pro", "content": "The Pro plan allows 600 requests per minute and SSO."},
]
TRAFFIC = [
    (
        "How many requests per minute does the Starter plan allow?",
        "Starter allows 120 requests per minute.",
    ),
    ("Does the Pro plan include SSO?", "Yes, the Pro plan includes SSO."),
    (
        "How many requests per minute does the Pro plan allow?",
        "The Pro plan allows 9000 requests per minute and costs 5 euros.",
    ),
]


class AnnotationSink:
    """A loopback HTTP server standing in for Phoenix's span annotation endpoint."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.posts.append((self.path, json.loads(body)))
                out = b'{"data": []}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sink() -> Iterator[AnnotationSink]:
    s = AnnotationSink()
    yield s
    s.close()


@pytest.fixture
def judged(tmp_path: Path, start_collector) -> tuple[str, str]:
    """A store with three traces sent by the real exporter, settled and judged by one run."""
    live = start_collector(quiet_period_s=0.2, settle_interval_s=0.1)
    provider = instrument("api-test", live.traces_url, set_global=False, flush_on_exit=False)
    for question, answer in TRAFFIC:
        with rag_span(question, tracer_provider=provider) as rag:
            with retriever_span(question, tracer_provider=provider) as r:
                r.record(CHUNKS)
            with llm_span(
                "gpt-4o-mini",
                [{"role": "user", "content": question}],
                documents=CHUNKS,
                tracer_provider=provider,
            ) as g:
                g.record(answer)
            rag.record(answer)
    provider.force_flush()
    provider.shutdown()
    deadline = time.monotonic() + 20
    while len(live.store.list_interactions()) < 3:
        assert time.monotonic() < deadline, "traces did not settle"
        time.sleep(0.1)
    url = live.store.url
    settings = load_settings(None, {"store": url})
    report = run_once(live.store, settings, take_all=True, settle_s=0).report
    assert report["judged"] == 3
    return url, report["run_id"]


def test_client_reads_the_store_as_frames(judged, sink):
    url, run_id = judged
    with Client(url) as rs:
        inter = rs.interactions(since="1h")
        assert list(inter.columns) == INTERACTION_COLUMNS and len(inter) == 3
        assert set(inter["query"]) == {q for q, _ in TRAFFIC}
        assert all(
            [d["id"] for d in docs] == ["plans#starter", "plans#pro"] and docs[0]["in_prompt"]
            for docs in inter["documents"]
        )
        assert inter["model"].eq("gpt-4o-mini").all()
        assert pd.api.types.is_datetime64_any_dtype(inter["start_time"])
        assert rs.interactions(window="2000-01-01T00:00Z..2000-01-02T00:00Z").empty

        res = rs.results()
        assert list(res.columns) == RESULT_COLUMNS and len(res) == 9
        assert set(res["run_id"]) == {run_id}
        faith = rs.results(evaluator="faithfulness")
        assert len(faith) == 3 and set(faith["evaluator"]) == {"faithfulness"}
        flagged, passed = rs.results(flagged=True), rs.results(flagged=False)
        assert len(flagged) + len(passed) == 9
        assert flagged["flagged"].all() and not passed["flagged"].any()
        bad = inter.loc[inter["answer"].str.contains("9000"), "trace_id"].item()
        assert bad in set(flagged["trace_id"])
        assert faith.set_index("trace_id").loc[bad, "label"] == "unfaithful"

        runs = rs.runs()
        assert list(runs.columns) == RUN_COLUMNS and runs["run_id"].tolist() == [run_id]
        row = runs.iloc[0]
        assert row["judged"] == 3 and row["ci_low"] <= row["failure_rate"] <= row["ci_high"]

        cands = rs.candidates()
        assert bad in {t for ids in cands["source_trace_ids"] for t in ids}
        assert set(rs.candidates(status="candidate")["status"]) <= {"candidate"}

        posted = rs.log_to_phoenix(faith, base_url=sink.url)
    assert posted == {"posted": 3}
    [(path, body)] = sink.posts
    assert path == "/v1/span_annotations?sync=true"
    by_span = {a["span_id"]: a for a in body["data"]}
    assert set(by_span) == set(faith["span_id"])
    one = by_span[faith.set_index("trace_id").loc[bad, "span_id"]]
    assert one["name"] == "faithfulness" and one["result"]["label"] == "unfaithful"
    assert one["identifier"] == f"ragsieve:{bad}:faithfulness"  # the job's: re-posting updates


def test_notebook_judging_round_trip_to_phoenix(judged, sink):
    url, _ = judged
    with Client(url) as rs:
        inter = rs.interactions()
        frame = inter.assign(contexts=inter["documents"])
        verdicts = evaluate_dataframe(frame, judges=("faithfulness",))
        assert rs.log_to_phoenix(verdicts, base_url=sink.url) == {"posted": 3}
    names = {a["name"] for _, body in sink.posts for a in body["data"]}
    assert names == {"faithfulness"}
    assert {a["metadata"]["trace_id"] for _, b in sink.posts for a in b["data"]} == set(
        inter["trace_id"]
    )


def test_client_refuses_a_missing_sqlite_file(tmp_path):
    with pytest.raises(ConfigError, match="no such SQLite file"):
        Client(f"sqlite:///{tmp_path / 'typo.db'}")
    assert not (tmp_path / "typo.db").exists()


FRAME = pd.DataFrame(
    {
        "question": [
            "How many requests per minute does the Starter plan allow?",
            "How many requests per minute does the Starter plan allow?",
            "¿Cuántas solicitudes por minuto permite el plan Starter?",
        ],
        "answer": [
            "The Starter plan allows 120 requests per minute.",
            "The Starter plan allows 5000 requests per minute and includes a free phone.",
            "El plan Starter permite 120 solicitudes por minuto.",
        ],
        "contexts": [
            ["The Starter plan allows 120 requests per minute."],
            [{"id": "kb-1", "content": "The Starter plan allows 120 requests per minute."}],
            ["El plan Starter permite 120 solicitudes por minuto."],
        ],
    },
    index=["a", "b", "c"],
)


def test_evaluate_dataframe_offline_keeps_the_index_and_names_columns_by_metric():
    out = evaluate_dataframe(FRAME)
    assert list(out.index) == ["a", "b", "c"]
    metrics = ("faithfulness", "answer_relevance", "context_relevance")
    assert list(out.columns) == [
        f"{m}{s}" for m in metrics for s in ("_label", "_score", "_explanation")
    ]
    assert out.loc["a", "faithfulness_label"] == "faithful"
    assert out.loc["b", "faithfulness_label"] == "unfaithful"
    assert out.loc["c", "faithfulness_label"] == "faithful"
    assert out.loc["b", "faithfulness_score"] < out.loc["a", "faithfulness_score"]
    scores = out[[f"{m}_score" for m in metrics]].to_numpy(dtype=float)
    assert ((scores >= 0) & (scores <= 1)).all()
    assert out["faithfulness_explanation"].map(lambda e: isinstance(e, str) and e != "").all()


async def test_evaluate_dataframe_works_inside_a_running_event_loop():
    out = evaluate_dataframe(FRAME.rename(columns={"question": "query"}), judges=["faithfulness"])
    assert list(out["faithfulness_label"]) == ["faithful", "unfaithful", "faithful"]


def test_evaluate_dataframe_with_the_llm_backend_and_its_cache(tmp_path, capsys):
    verdict = {
        "reasoning": "checked",
        "claims": [
            {
                "claim": "c",
                "supported": True,
                "evidence": "The Starter plan allows 120 requests per minute.",
                "reason": "in context",
            }
        ],
    }
    with FakeOpenAIServer(default=lambda body: verdict) as server:
        llm = LLMConfig(base_url=server.base_url, model="judge-1", max_retries=0, timeout_s=5)
        frame = pd.concat([FRAME.iloc[:1]] * 60, ignore_index=True)
        frame["answer"] = [
            f"The Starter plan allows 120 requests per minute ({i})." for i in range(60)
        ]
        cache = str(tmp_path / "cache.db")
        out = evaluate_dataframe(
            frame, judges=["faithfulness"], backend="llm", llm=llm, cache_path=cache, concurrency=4
        )
        calls = len(server.requests)
        again = evaluate_dataframe(
            frame, judges=["faithfulness"], backend="llm", llm=llm, cache_path=cache
        )
    assert len(out) == 60 and set(out["faithfulness_label"]) == {"faithful"}
    assert calls == 60 and len(server.requests) == 60  # the second pass came from the cache
    assert again["faithfulness_label"].tolist() == out["faithfulness_label"].tolist()
    assert "60/60" in capsys.readouterr().err  # the progress bar of a long frame


def test_evaluate_dataframe_rejects_what_it_cannot_judge():
    with pytest.raises(ConfigError, match="needs columns question"):
        evaluate_dataframe(pd.DataFrame({"answer": ["x"]}))
    with pytest.raises(ConfigError, match="needs llm="):
        evaluate_dataframe(FRAME, backend="llm")
    with pytest.raises(ConfigError, match="unknown judge 'politeness'"):
        evaluate_dataframe(FRAME, judges=["politeness"])
