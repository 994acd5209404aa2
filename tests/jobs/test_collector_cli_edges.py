"""First-hour edges of ``collector`` and ``interactions`` (issue 42), through the real CLI.

``interactions list`` said ``ok`` (the app's span status) for traces no job had judged; a trace
id had to be typed in full; ``collector --help`` named HTTP alone; the start banner did not say
that spans are forwarded, nor where.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from console_script import ragsieve_script
from test_up import read_until

from ragsieve.collector.cliopts import clip
from ragsieve.collector.store import Store, open_store
from ragsieve.evaluators.testing import make_interaction

FIRST = "abcdef01" + "0" * 24
SECOND = "abcdef02" + "0" * 24
THIRD = "12345678" + "0" * 24


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}


def _ragsieve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ragsieve_script()), *args], cwd=cwd, env=_env(), capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


LONG_QUESTION = (
    "What status code does the API send back when I exceed the rate limit on the reporting"
    " endpoint during a bulk export?"
)


def _settled(store: Store, trace_id: str, answer: str, query: str | None = None) -> None:
    rec = make_interaction(trace_id=trace_id, answer=answer, **({"query": query} if query else {}))
    store.execute(
        "INSERT INTO traces (trace_id, first_seen_at, last_seen_at, has_root) VALUES (?, 1, 1, 1)",
        (rec.trace_id,),
    )
    assert store.save_interaction(rec, seen_at=2.0, now=3.0)


@pytest.fixture
def two_traces(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 's.db'}"
    st = open_store(url)
    try:
        _settled(st, FIRST, "The capital of France is Paris.")
        _settled(st, SECOND, "Lyon has been the capital of France since 1999.")
        _settled(st, THIRD, "429.", LONG_QUESTION)
    finally:
        st.close()
    return url


def _rows(out: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert out.returncode == 0, out.stderr
    header, *lines = out.stdout.splitlines()
    assert header.split()[:3] == ["TRACE", "ID", "VERDICT"]
    return {line.split()[0]: line for line in lines}


def test_interactions_list_says_not_judged_until_a_run_decides(
    two_traces: str, tmp_path: Path
) -> None:
    before = _rows(_ragsieve("interactions", "list", "--store", two_traces, cwd=tmp_path))
    assert set(before) == {FIRST, SECOND, THIRD}
    for line in before.values():
        assert line.split()[1:3] == ["not", "judged"]  # not "ok": nothing has judged it
        assert line.split()[3] == "ok"  # the app's own status, in its own column
    run = _ragsieve("jobs", "run", "--store", two_traces, "--settle", "0", "--all", cwd=tmp_path)
    assert run.returncode in (0, 1), run.stderr
    after = _rows(_ragsieve("interactions", "list", "--store", two_traces, cwd=tmp_path))
    assert after[FIRST].split()[1] == "pass"
    assert "'What status code does the API send back when I exceed the…'" in after[THIRD]
    assert after[SECOND].split()[1] == "FLAGGED"  # the unsupported answer
    # the run lists what it flagged and the command that shows it, which works as printed
    listed = run.stdout.split("== flagged cases (2)\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert {line.split()[0] for line in listed} == {THIRD[:12], SECOND[:12]}
    show = next(x for x in run.stdout.splitlines() if "ragsieve results show" in x).split()
    shown = _ragsieve(*show[1:], cwd=tmp_path)
    assert shown.returncode == 0 and show[3] == listed[0].split()[0], shown.stderr
    assert {THIRD, SECOND} & set(shown.stdout.split()), shown.stdout


def test_a_reviewers_word_shows_beside_the_jobs_flag(two_traces: str, tmp_path: Path) -> None:
    """After a reviewer says the judge was wrong, the listing reads theirs first; a label that
    agrees with the job changes nothing."""
    from ragsieve.jobs.fitting.labels import Label, add_label

    run = _ragsieve("jobs", "run", "--store", two_traces, "--settle", "0", "--all", cwd=tmp_path)
    assert run.returncode in (0, 1), run.stderr
    st = open_store(two_traces)
    try:
        add_label(st, Label(SECOND, "pass", "review", reason="judge was wrong"), by="me")
        add_label(st, Label(FIRST, "pass", "review"), by="me")
    finally:
        st.close()
    rows = _rows(_ragsieve("interactions", "list", "--store", two_traces, cwd=tmp_path))
    assert "reviewed pass (job FLAGGED)" in rows[SECOND]
    assert rows[FIRST].split()[1] == "pass" and "reviewed" not in rows[FIRST]


def test_a_listing_cut_short_by_its_limit_says_so(two_traces: str, tmp_path: Path) -> None:
    cut = _ragsieve("interactions", "list", "--store", two_traces, "--limit", "2", cwd=tmp_path)
    assert len(_rows(cut)) == 2
    assert "showing the newest 2; more match" in cut.stderr
    whole = _ragsieve("interactions", "list", "--store", two_traces, "--limit", "3", cwd=tmp_path)
    assert len(_rows(whole)) == 3 and "more match" not in whole.stderr


def test_results_show_says_why_a_stored_trace_has_no_verdict(
    two_traces: str, tmp_path: Path
) -> None:
    unsampled = _ragsieve("results", "show", FIRST, "--store", two_traces, cwd=tmp_path)
    assert unsampled.returncode == 2
    assert "no run of the job has sampled it yet" in unsampled.stderr
    assert "ragsieve jobs run --all" in unsampled.stderr
    missing = _ragsieve("results", "show", "f" * 32, "--store", two_traces, cwd=tmp_path)
    assert missing.returncode == 2 and "the store has no such trace" in missing.stderr
    st = open_store(two_traces)
    try:  # a run picked it and no judge result was usable: not "never sampled"
        st.execute("INSERT INTO runs (run_id, started_at) VALUES ('r1', 1.0)", ())
        st.execute(
            "INSERT INTO samples (run_id, trace_id, stratum, inclusion_p, verdict, body)"
            " VALUES ('r1', ?, 'uniform', 1.0, 'unjudged', '{}')",
            (SECOND,),
        )
    finally:
        st.close()
    unjudged = _ragsieve("results", "show", SECOND, "--store", two_traces, cwd=tmp_path)
    assert unjudged.returncode == 2 and "a run sampled it and left it unjudged" in unjudged.stderr


def test_a_unique_trace_id_prefix_is_enough_and_an_ambiguous_one_is_refused(
    two_traces: str, tmp_path: Path
) -> None:
    shown = _ragsieve("interactions", "show", "ABCDEF02", "--store", two_traces, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f'"trace_id": "{SECOND}"' in shown.stdout
    both = _ragsieve("interactions", "show", "abcdef", "--store", two_traces, cwd=tmp_path)
    assert both.returncode == 2
    assert f"matches 2 traces: {FIRST}, {SECOND}" in both.stderr
    short = _ragsieve("interactions", "show", "abcde", "--store", two_traces, cwd=tmp_path)
    assert short.returncode == 2 and "a prefix of at least 6" in short.stderr
    none = _ragsieve("interactions", "show", "fedcba98", "--store", two_traces, cwd=tmp_path)
    assert none.returncode == 2 and "no interaction with trace id fedcba98" in none.stderr


@pytest.mark.parametrize(
    "command",
    [
        ("interactions", "list"),
        ("results", "list"),
        ("runs", "list"),
        ("report", "--html", "r.html"),
        ("jobs", "run"),
    ],
)
def test_a_bad_since_is_refused_naming_the_flag(
    command: tuple[str, ...], two_traces: str, tmp_path: Path
) -> None:
    out = _ragsieve(*command, "--since", "2x", "--store", two_traces, cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("error: Invalid value for '--since': duration '2x'")
    assert len(out.stderr.strip().splitlines()) == 1


def test_collector_help_names_both_transports(tmp_path: Path) -> None:
    out = _ragsieve("collector", "--help", cwd=tmp_path)
    assert out.returncode == 0
    assert "OTLP/HTTP" in out.stdout and "OTLP/gRPC" in out.stdout


@pytest.mark.parametrize("phoenix", [True, False])
def test_the_start_banner_says_where_spans_are_forwarded(tmp_path: Path, phoenix: bool) -> None:
    target = "http://127.0.0.1:9/v1/traces"  # nothing listens: the outbox keeps the spans
    env = _env()
    if phoenix:
        env["RAGSIEVE_PHOENIX__BASE_URL"] = "http://127.0.0.1:9"
    args = ["collector", "serve", "--port", "0", "--grpc-port", "0", "--forward-otlp", target]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragsieve.jobs", *args, "--store", f"sqlite:///{tmp_path}/c.db"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    try:
        m = read_until(proc, r"listening on .*", 30)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    where = " (Phoenix at http://127.0.0.1:9)" if phoenix else ""
    assert m.group(0).endswith(f"; forwarding every span to {target}{where}"), m.group(0)


def test_clip_cuts_long_text_at_a_word_with_an_ellipsis() -> None:
    text = "doc_1#chunk_1 reached the prompt and holds what the answer says"
    assert clip(text, 100) == text
    assert clip(text, 40) == "doc_1#chunk_1 reached the prompt and…"
    assert len(clip(text, 40)) <= 40
    assert clip("one\n  two   three", 20) == "one two three"  # one line
    assert clip("a; b; " + "x" * 50, 10) == "a; b…"  # no trailing punctuation before the cut
    assert clip("x" * 50, 10) == "x" * 9 + "…"  # one word longer than the width: cut inside
    assert clip(None, 10) == ""
