"""``golden push``/``pull`` against a small Phoenix-shaped HTTP server and against real Phoenix."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from golden_plant import PORTS_EN, flagged, stream, write_golden_v3

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.phoenix import PhoenixDatasets, PhoenixError, pull, push
from ragsieve.jobs.settings import GoldenSettings, Settings


class DatasetServer:
    """The dataset endpoints with Phoenix's create / append / update semantics, in memory."""

    def __init__(self) -> None:
        self.datasets: dict[str, dict[str, Any]] = {}  # id -> {"name", "examples": {eid: ex}}
        self.uploads: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.lock = threading.Lock()

    def by_name(self, name: str) -> str | None:
        return next((i for i, d in self.datasets.items() if d["name"] == name), None)

    def upload(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.uploads.append(body)
        ds_id = self.by_name(body["name"])
        if ds_id is not None and body.get("action", "create") == "create":
            return 409, {"detail": "exists"}
        if ds_id is None:
            ds_id = f"RGF0YXNldDo{len(self.datasets) + 1}"
            self.datasets[ds_id] = {"name": body["name"], "examples": {}}
        examples = self.datasets[ds_id]["examples"]
        if body.get("action") == "update":
            examples.clear()
        n = len(body["inputs"])
        for i in range(n):
            eid = (body.get("example_ids") or [None] * n)[i] or uuid.uuid4().hex
            examples[eid] = {
                "id": eid,
                "input": body["inputs"][i],
                "output": (body.get("outputs") or [{}] * n)[i],
                "metadata": (body.get("metadata") or [{}] * n)[i],
                "span_id": (body.get("span_ids") or [None] * n)[i],
            }
        return 200, {"data": {"dataset_id": ds_id, "version_id": uuid.uuid4().hex}}

    def handler(self) -> type[BaseHTTPRequestHandler]:
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, data: Any) -> None:
                raw = json.dumps(data).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                url = urlparse(self.path)
                with srv.lock:
                    srv.auth.append(self.headers.get("authorization"))
                    if url.path == "/v1/datasets":
                        name = parse_qs(url.query).get("name", [None])[0]
                        data = [
                            {"id": i, "name": d["name"]}
                            for i, d in srv.datasets.items()
                            if name is None or d["name"] == name
                        ]
                        return self._send(200, {"data": data, "next_cursor": None})
                    parts = url.path.split("/")
                    if len(parts) == 5 and parts[4] == "examples" and parts[3] in srv.datasets:
                        exs = list(srv.datasets[parts[3]]["examples"].values())
                        return self._send(
                            200,
                            {"data": {"dataset_id": parts[3], "version_id": "v", "examples": exs}},
                        )
                self._send(404, {"detail": "not found"})

            def do_POST(self) -> None:
                url = urlparse(self.path)
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with srv.lock:
                    srv.auth.append(self.headers.get("authorization"))
                    if url.path == "/v1/datasets/upload" and parse_qs(url.query).get("sync"):
                        return self._send(*srv.upload(body))
                self._send(404, {"detail": "not found"})

        return Handler


@pytest.fixture
def datasets() -> Iterator[tuple[DatasetServer, str]]:
    state = DatasetServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), state.handler())
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def grown(store: Store, tmp_path: Path) -> CandidateRepo:
    v3 = write_golden_v3(tmp_path)
    grow(store, stream(), Settings(golden=GoldenSettings(path=str(v3))))
    return CandidateRepo(store)


def test_push_appends_and_never_recreates(grown: CandidateRepo, datasets: Any) -> None:
    state, url = datasets
    # a reviewer's own example already lives in the dataset: it must survive every push
    state.upload(
        {
            "action": "create",
            "name": "cands",
            "inputs": [{"query": "mine"}],
            "example_ids": ["reviewer-own"],
        }
    )
    with PhoenixDatasets(url, api_key="s3cret") as client:
        first = push(grown, client, "cands", {})
        open_ids = {c.id for c in grown.select(["candidate"])}
        assert first["pushed"] == len(open_ids) and first["created"] is False
        assert push(grown, client, "cands", {})["pushed"] == 0  # nothing twice
        grow(
            grown.store,
            [flagged("How do I rotate the API token?", "retrieval", 500)],
            Settings(golden=GoldenSettings(path=None)),
        )
        second = push(grown, client, "cands", {})
    assert second["pushed"] == 1
    assert [u.get("action") for u in state.uploads[1:]] == ["append", "append"]
    examples = state.datasets[first["dataset_id"]]["examples"]
    assert set(examples) == open_ids | {
        "reviewer-own",
        candidate_id("how do i rotate the api token"),
    }
    ports = examples[candidate_id(normalize_text(PORTS_EN))]
    assert ports["span_id"] == f"{1:016x}"  # linked to the span of the first flagged trace
    assert ports["metadata"]["seen"] == 4 and len(ports["metadata"]["source_trace_ids"]) == 4
    assert ports["input"] == {"query": PORTS_EN}
    assert set(state.auth) == {"Bearer s3cret"}


def test_pull_applies_edits_and_decisions(grown: CandidateRepo, datasets: Any) -> None:
    state, url = datasets
    with PhoenixDatasets(url) as client:
        ds = push(grown, client, "cands", {})["dataset_id"]
        exs = state.datasets[ds]["examples"]
        ports_id = candidate_id(normalize_text(PORTS_EN))
        refund_id = candidate_id(normalize_text("Can I get a refund on my annual plan?"))
        exs[ports_id]["output"] = {
            "reference_answer": "Open 443 and 8443.",
            "relevant_chunks": ["kb-ports"],
        }
        exs[ports_id]["metadata"].update(decision="Accepted", reviewer="dana")
        exs[refund_id]["metadata"].update(decision="reject", reason="out_of_scope")
        out = pull(grown, client, "cands")
        assert (out["edited"], out["accepted"], out["rejected"]) == (1, 1, 1)
        assert out["unchanged"] == len(exs) - 2
        assert pull(grown, client, "cands")["already_decided"] == 2  # idempotent
        with pytest.raises(ConfigError, match="no dataset named 'other'"):
            pull(grown, client, "other")
    ports = grown.get(ports_id)
    assert ports is not None and ports.status == "accepted"
    assert ports.body["reference_answer"] == "Open 443 and 8443."
    assert ports.body["relevant_chunks"] == {"kb-ports": 1}
    assert ports.body["review"]["by"] == "dana"
    refund = grown.get(refund_id)
    assert refund is not None and refund.status == "rejected"
    assert refund.body["review"]["reason"] == "out_of_scope"


def test_pull_accepts_a_case_without_chunks_only_when_its_cause_has_no_answer(
    grown: CandidateRepo, datasets: Any
) -> None:
    state, url = datasets
    with PhoenixDatasets(url) as client:
        ds = push(grown, client, "cands", {})["dataset_id"]
        ex = state.datasets[ds]["examples"][candidate_id(normalize_text(PORTS_EN))]
        assert ex["metadata"]["judged_root_cause"] == ex["metadata"]["root_cause"]
        ex["output"] = {"reference_answer": None, "relevant_chunks": []}
        ex["metadata"].update(decision="accept", reviewer="dana", root_cause="retrieval")
        out = pull(grown, client, "cands")
        assert (out["accepted"], out["needs_chunk"]) == (0, 1)  # a miss has an answer somewhere
        c = grown.get(ex["id"])
        assert c is not None and c.status == "candidate" and c.cause == "retrieval"
        ex["metadata"].update(root_cause="no_answer_expected")  # the reviewer says it has none
        out = pull(grown, client, "cands")
        assert (out["accepted"], out["needs_chunk"]) == (1, 0)
    c = grown.get(ex["id"])
    assert c is not None and c.status == "accepted" and c.cause == "no_answer_expected"


def test_unreachable_phoenix_is_a_clear_error(grown: CandidateRepo) -> None:
    with pytest.raises(ConfigError, match="phoenix.base_url"):
        PhoenixDatasets("")
    with PhoenixDatasets("http://127.0.0.1:9", timeout_s=2) as client:
        with pytest.raises(PhoenixError, match="127.0.0.1:9"):
            push(grown, client, "cands", {})
    assert all("phoenix" not in c.body for c in grown.select(["candidate"]))


@pytest.mark.phoenix
def test_push_and_pull_with_real_phoenix(store: Store, tmp_path: Path, phoenix_server: Any) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    project = f"golden-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=phoenix_server.traces_url))
    )
    tracer = provider.get_tracer("golden-test")
    planted = stream()
    cases = []
    for f in planted[:4]:
        with tracer.start_as_current_span("rag") as span:
            span.set_attribute("openinference.span.kind", "CHAIN")
            span.set_attribute("input.value", f.interaction.query or "")
            ctx = span.get_span_context()
        it = f.interaction.model_copy(
            update={"trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}"}
        )
        cases.append(type(f)(**{**f.__dict__, "interaction": it}))
    provider.shutdown()
    phoenix_server.wait_for_spans([c.interaction.trace_id for c in cases], 4, project=project)
    grow(store, cases, Settings(golden=GoldenSettings(path=None)))
    repo = CandidateRepo(store)
    name = f"cands-{uuid.uuid4().hex[:8]}"
    with PhoenixDatasets(phoenix_server.base_url) as client:
        first = push(repo, client, name, {})
        assert first["pushed"] == 2 and first["created"] is True  # EN ports (seen 3) + ES ports
        grow(store, [planted[5]], Settings(golden=GoldenSettings(path=None)))
        second = push(repo, client, name, {})
        assert second["pushed"] == 1 and second["dataset_id"] == first["dataset_id"]
        examples = client.examples(first["dataset_id"])
    assert len(examples) == 3  # appended, not replaced
    by_id = {e["metadata"]["candidate_id"]: e for e in examples}
    ports = by_id[candidate_id(normalize_text(PORTS_EN))]
    assert ports["source"]["span_id"] == cases[0].interaction.span_id  # linked to its span

    # a reviewer edits the example in Phoenix (a new revision of the same example id)
    edited = {**ports["metadata"], "decision": "accept", "reviewer": "erin"}
    resp = httpx.post(
        f"{phoenix_server.base_url}/v1/datasets/upload",
        params={"sync": "true"},
        timeout=30,
        json={
            "action": "append",
            "name": name,
            "inputs": [ports["input"]],
            "outputs": [{"reference_answer": "Open 443.", "relevant_chunks": ["kb-ports"]}],
            "metadata": [edited],
            "example_ids": [ports["id"]],
        },
    )
    resp.raise_for_status()
    with PhoenixDatasets(phoenix_server.base_url) as client:
        out = pull(repo, client, name)
        assert len(client.examples(first["dataset_id"])) == 3
    assert (out["edited"], out["accepted"]) == (1, 1)
    row = repo.get(ports["metadata"]["candidate_id"])
    assert row is not None and row.status == "accepted"
    assert row.body["reference_answer"] == "Open 443." and row.body["review"]["by"] == "erin"
