"""Every code block of the README and the docs that a user would paste runs here, as pasted.

A ``bash`` block runs line by line through the real ``ragsieve`` console script, in a folder
holding what a user has by then: a store the demo filled, the ``ragsieve.toml`` of
docs/job.md, their golden files, labels and retriever. A ``python`` block is executed. ``toml``
blocks are loaded by tests/test_readme_config.py, which reads every page. A block that does not
run here says so on the line before its fence, with a reason:

- ``<!-- docs-test: skip: why -->``: it installs, starts the whole suite or a long-lived server;
- ``<!-- docs-test: covered by tests/....py -->``: that test runs it as pasted (and names the page);
- ``<!-- docs-test: given: name, name -->``: a fragment using names that are the user's own
  (their question, retriever, model call); the test supplies them.

Placeholders a user replaces are replaced here too: ``…`` (an API key), the session id ``3f9c``
and ``<trace-id>`` (real ones from the store), the Ollama URL (the loopback OpenAI-compatible
server of ``ragsieve.evaluators.testing``). Servers (``ragsieve ... up``) are started, waited for
and stopped with SIGTERM, as tests/jobs/test_first_hour.py runs ``collector serve``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from console_script import ragsieve_script

from ragsieve.evaluators.testing import FakeOpenAIServer, make_interaction

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S
)
MARK = re.compile(r"^\s*<!-- docs-test: (?P<kind>skip|covered by|given):? (?P<what>.+?) -->\s*$")
CODE = {"bash", "python", "toml", "yaml", "json"}  # a fence without a language is a picture


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    body: str
    kind: str | None  # skip / covered by / given, from the line before the fence
    what: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def parse(text: str, page: str) -> list[Block]:
    """The fenced blocks of one page, each with the marker on the line before its fence."""
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.match(before)
        indent = len(m.group("indent"))
        out.append(
            Block(
                page,
                text.count("\n", 0, m.start()) + 1,
                m.group("lang"),
                "\n".join(x[indent:] for x in m.group("body").split("\n")),
                mark.group("kind") if mark else None,
                mark.group("what") if mark else "",
            )
        )
    return out


def blocks() -> list[Block]:
    """Every fenced block of the README and the docs."""
    return [
        b
        for page in PAGES
        for b in parse(page.read_text(encoding="utf-8"), page.relative_to(ROOT).as_posix())
    ]


RUN = [b for b in blocks() if b.lang in ("bash", "python") and b.kind in (None, "given")]


def test_every_code_block_runs_here_or_says_why() -> None:
    import test_readme_config

    assert set(test_readme_config.PAGES) == set(PAGES)  # it loads every page's toml blocks
    found = [b for b in blocks() if b.lang]
    assert {b.lang for b in found} <= CODE, {b.where: b.lang for b in found if b.lang not in CODE}
    assert len(RUN) >= 10
    for b in found:
        if b.kind == "skip":
            assert len(b.what.split()) >= 4, f"{b.where}: say why the block does not run"
        elif b.kind == "covered by":
            test = ROOT / b.what
            assert test.is_file(), f"{b.where}: {b.what} does not exist"
            assert Path(b.page).name in test.read_text(encoding="utf-8"), (
                f"{b.where}: {b.what} does not read {b.page}"
            )
        elif b.lang == "yaml":
            pytest.fail(f"{b.where}: a yaml block needs a test that runs it (covered by ...)")
        elif b.lang == "json":  # an example of a file's content: it must at least be that
            json.loads(b.body)


def test_a_marker_counts_on_the_line_before_the_fence_only() -> None:
    page = (
        "<!-- docs-test: skip: serves until stopped -->\n```bash\nragsieve up\n```\n\n"
        "<!-- docs-test: skip: too far away -->\n\nText.\n```bash\nragsieve jobs run\n```\n\n"
        "1. A step:\n\n    <!-- docs-test: given: question -->\n    ```python\n"
        "    print(question)\n    ```\n"
    )
    first, second, third = parse(page, "p.md")
    assert (first.kind, first.what, first.body) == ("skip", "serves until stopped", "ragsieve up\n")
    assert second.kind is None and second.line == 9
    assert (third.kind, third.what, third.body) == ("given", "question", "print(question)\n")


# ---------------------------------------------------------------------------- the user's folder


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _rs(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ragsieve_script()), *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}


CHUNKS = {
    "plans#starter": "The Starter plan allows 120 requests per minute.",
    "plans#pro": "The Pro plan allows 600 requests per minute.",
    "audit#keep": "The audit log keeps sign-ins and key events for 400 days.",
    "audit#roles": "Team members can have one of four roles: Owner, Admin, Developer or Analyst.",
    "billing#refund": "Readers bought in the online store can be returned within 30 days.",
    "billing#invoice": "Invoices are emailed on the first day of each month.",
}
QUESTIONS = [
    ("How many requests per minute does the Starter plan allow?", "plans#starter", "plans"),
    ("What is the rate limit of the Pro plan?", "plans#pro", "plans"),
    ("How long is the audit log kept?", "audit#keep", "audit"),
    ("Which roles can team members have?", "audit#roles", "audit"),
    ("How long do I have to return a reader?", "billing#refund", "billing"),
    ("When are invoices sent?", "billing#invoice", "billing"),
    ("How many requests can the Starter plan make each minute?", "plans#starter", "plans"),
    ("What does the audit log keep?", "audit#keep", "audit"),
    ("Can I return a reader I bought online?", "billing#refund", "billing"),
]  # three a category: at the default fractions each gets a case of every role
RETRIEVER = """
CHUNKS = {chunks!r}


def search(query, k):
    words = set(query.lower().split())
    ranked = sorted(CHUNKS, key=lambda c: -len(words & set(CHUNKS[c].lower().split())))
    return [{{"id": c, "content": CHUNKS[c]}} for c in ranked[:k]]
"""
ANSWERER = """
def answer(query, chunks):
    return chunks[0] if chunks else "I don't have that information."
"""


def _golden(path: Path, *, split: bool = False) -> None:
    """A golden set of the user's (``split``: and its next version, with roles)."""
    from ragsieve.evaluators.golden.roles import split_golden
    from ragsieve.evaluators.golden.sets import write_golden
    from ragsieve.evaluators.records import GoldenCase

    path.parent.mkdir(parents=True, exist_ok=True)
    write_golden(
        path,
        [
            GoldenCase(
                id=f"case-{i}",
                query=q,
                relevant_chunks=[c],
                reference_answer=CHUNKS[c],
                category=cat,
            )  # fmt: skip
            for i, (q, c, cat) in enumerate(QUESTIONS)
        ],
    )
    if split:
        split_golden(path, by="docs", salt="d0c5")


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What a user has by the time they paste the docs' commands: a store with judged traffic
    (the demo's), the docs' ragsieve.toml, a labelled file, labels, a retriever and a corpus."""
    base = tmp_path_factory.mktemp("user")
    demo = _rs(
        "demo", "--queries", "60", "--store", "sqlite:///ragsieve.db", "--json",
        cwd=base, env=_clean_env(),
    )  # fmt: skip
    assert demo.returncode in (0, 1), demo.stderr  # 1: a scorecard floor missed on 60 queries
    job = (ROOT / "docs" / "job.md").read_text(encoding="utf-8")
    toml = re.search(r"```toml\n(# ragsieve\.toml.*?)```", job, re.S)
    assert toml is not None
    (base / "ragsieve.toml").write_text(toml.group(1), encoding="utf-8")
    rows = [json.loads(x) for x in _rs("results", "list", "--json", cwd=base, env=_clean_env())
            .stdout.splitlines()]  # fmt: skip
    flagged = {r["trace_id"] for r in rows if r["flagged"]}
    traces = sorted({r["trace_id"] for r in rows}, key=lambda t: (t not in flagged, t))
    assert len(traces) >= 40
    _jsonl(base / "labels.jsonl", [  # 20 of each class, as judges fit needs
        {"trace_id": t, "verdict": "fail" if i < 20 else "pass"} for i, t in enumerate(traces[:40])
    ])  # fmt: skip
    _jsonl(base / "labelled.jsonl", [
        {"id": f"r{i}-{ok}", "question": q, "contexts": [CHUNKS[c]], "label_faithful": ok,
         "answer": CHUNKS[c] if ok else CHUNKS[c].replace("1", "9").replace("4", "7") + " Ask us."}
        for i, (q, c, _) in enumerate(QUESTIONS) for ok in (True, False)
    ])  # fmt: skip
    (base / "myapp").mkdir()
    (base / "myapp" / "__init__.py").write_text("")
    (base / "myapp" / "search.py").write_text(RETRIEVER.format(chunks=CHUNKS))
    (base / "myapp" / "rag.py").write_text(ANSWERER)
    _jsonl(base / "chunks.jsonl", [{"id": c, "text": t} for c, t in CHUNKS.items()])
    _jsonl(base / "run.jsonl", [
        {"id": f"case-{i}", "retrieved_ids": [c, *sorted(set(CHUNKS) - {c})[:4]]}
        for i, (_, c, _) in enumerate(QUESTIONS)
    ])  # fmt: skip
    return base


class _Hooks(BaseHTTPRequestHandler):
    received: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        self.received.append(self.rfile.read(int(self.headers.get("content-length") or 0)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def webhook() -> Iterator[tuple[str, list[bytes]]]:
    """A loopback webhook receiver (the alerts sink a user configures)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hooks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", _Hooks.received
    server.shutdown()


def _llm_reply(body: dict[str, Any]) -> dict[str, Any]:
    return {"reasoning": "checked against the context", "abstained": False, "claims": [
        {"claim": "the answer", "supported": True, "evidence": None, "reason": "stated"}
    ]}  # fmt: skip


# Per block (by a command it holds): the files the user has made by then.
SETUP: dict[str, Callable[[Path], None]] = {
    "golden promote --golden golden/golden_v3.jsonl": lambda ws: _golden(
        ws / "golden" / "golden_v3.jsonl"
    ),
    "golden split --golden golden/golden_v4.jsonl": lambda ws: _golden(
        ws / "golden" / "golden_v4.jsonl"
    ),
    "ragsieve eval --golden golden/golden_v5.jsonl": lambda ws: _golden(
        ws / "golden" / "golden_v4.jsonl", split=True
    ),
}
# What a reviewer types into an interactive command: accept two, then quit.
STDIN = {"golden review --audit": "y\nq\n", "golden review": "a\na\nq\n"}
SERVES = ("up",)  # commands that run until stopped


def _lines(body: str) -> list[str]:
    """Shell lines with continuations joined and comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [
        x for x in (shlex.join(shlex.split(ln, comments=True)) for ln in joined.splitlines()) if x
    ]


def _serve(argv: list[str], cwd: Path, env: dict[str, str], port: int) -> str:
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.3)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    return err


@pytest.mark.parametrize("block", RUN, ids=[b.where for b in RUN])
def test_the_block_runs_as_pasted(
    block: Block, user_folder: Path, webhook: tuple[str, list[bytes]], tmp_path: Path
) -> None:
    if block.lang == "python":
        _run_python(block)
        return
    ws = tmp_path / "ws"
    shutil.copytree(user_folder, ws)
    for key, setup in SETUP.items():
        if key in block.body:
            setup(ws)
    interactions = [
        json.loads(x)
        for x in _rs("interactions", "list", "--json", cwd=ws, env=_clean_env()).stdout.splitlines()
    ]
    sessions = [i["session_id"] for i in interactions if i.get("session_id")]
    session = max(set(sessions), key=sessions.count)
    port = _free_port()
    env = {
        **_clean_env(),
        "PYTHONPATH": str(ws),  # the user's app is importable where they run ragsieve
        "RAGSIEVE_COLLECTOR__PORT": str(port),  # the defaults may be taken on a shared machine
        "RAGSIEVE_COLLECTOR__GRPC_PORT": "0",
        "RAGSIEVE_ALERTS__WEBHOOK_URL": webhook[0],
    }
    with FakeOpenAIServer(default=_llm_reply) as llm:
        for line in _lines(block.body):
            line = (
                line.replace("3f9c", session)
                .replace("'<trace-id>'", interactions[0]["trace_id"])
                .replace("http://127.0.0.1:11434/v1", llm.base_url)
                .replace("…", "sk-docs-test")
            )
            argv = shlex.split(line)
            extra = {}
            while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
                name, value = argv.pop(0).split("=", 1)
                extra[name] = value
            assert argv[0] == "ragsieve", (
                f"{block.where}: runs {argv[0]}; mark it or make it ragsieve"
            )
            full = [str(ragsieve_script()), *argv[1:]]
            if argv[-1] in SERVES:
                _serve(full, ws, {**env, **extra}, port)
                continue
            stdin = next((v for k, v in STDIN.items() if k in line), None)
            out = subprocess.run(
                full, cwd=ws, env={**env, **extra}, input=stdin or "", capture_output=True,
                text=True, timeout=600, check=False,
            )  # fmt: skip
            assert out.returncode == 0, f"{block.where}: {line}\n{out.stdout[-2000:]}{out.stderr}"
            _after(line, ws, out, webhook[1], llm)


def _after(
    line: str,
    ws: Path,
    out: subprocess.CompletedProcess[str],
    hooks: list[bytes],
    llm: FakeOpenAIServer,
) -> None:
    """What a command is for, checked where a wrong command could still exit 0."""
    if "alerts test" in line:
        assert hooks, "alerts test sent nothing to the webhook"
    elif "results export --format parquet" in line:
        assert (ws / "results.parquet").stat().st_size > 0
    elif "report --since 14d --html report.html" in line:
        assert "<svg" in (ws / "report.html").read_text(encoding="utf-8")
    elif "--judge llm_faithfulness" in line:
        assert llm.requests, "the LLM calibration never called the endpoint"
    elif "golden split" in line:
        assert (ws / "golden" / "golden_v5.jsonl").is_file()
    elif "golden promote" in line:
        assert "wrote golden/" in out.stdout
    elif "--out cand.json" in line:
        assert json.loads((ws / "cand.json").read_text(encoding="utf-8"))


GIVEN: dict[str, Any] = {
    "question": "How many requests per minute does the Starter plan allow?",
    "my_retriever": lambda q: [{"id": c, "content": t, "score": 0.5} for c, t in CHUNKS.items()],
    "call_llm": lambda q, hits: hits[0]["content"],
}


def _run_python(block: Block) -> None:
    scope: dict[str, Any] = {"__name__": "docs_block"}
    if block.kind == "given":
        names = [n.strip() for n in block.what.split(",")]
        scope.update({n: GIVEN[n] for n in names})
    exec(compile(block.body, block.where, "exec"), scope)  # noqa: S102  (the docs' own code)
    if "class PolitenessJudge" in block.body:  # a judge plugin: it judges
        import asyncio

        judge = scope["PolitenessJudge"]()
        rude = make_interaction(answer="Obviously, read the manual.")
        [result] = asyncio.run(judge.evaluate(rude))
        assert result.label == "rude" and result.evaluator == "politeness"
    if block.kind == "given":
        assert scope.get("answer") == CHUNKS["plans#starter"]
