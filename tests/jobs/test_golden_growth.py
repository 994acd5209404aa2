"""Golden growth on a planted stream: dedup, categories, novelty, PII, promotion."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from golden_plant import PORTS_EN, PORTS_ES, STREAM, stream, write_golden_v3

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.golden.roles import case_key, next_role, read_rule, split_golden
from ragsieve.evaluators.golden.sets import changelog_path, load_golden
from ragsieve.evaluators.records import normalize_text
from ragsieve.evaluators.tools.embeddings import embed
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.categories import summarize
from ragsieve.jobs.golden.growth.reference import load_reference
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.promote import promote
from ragsieve.jobs.golden.review.review import decide
from ragsieve.jobs.settings import GoldenSettings, Settings


def _settings(golden: Path | None, **kw: object) -> Settings:
    return Settings(golden=GoldenSettings(path=str(golden) if golden else None, **kw))


def _by_query(repo: CandidateRepo, query: str):  # type: ignore[no-untyped-def]
    row = repo.get(candidate_id(normalize_text(query)))
    assert row is not None, query
    return row


def _summaries(repo: CandidateRepo, golden: Path | None) -> dict[str, object]:
    ref = load_reference(repo, golden, embed)
    rows = repo.select(["candidate", "accepted", "rejected", "covered"])
    return {
        s.id: s for s in summarize(rows, ref, new_threshold=GoldenSettings().new_category_cosine)
    }


@pytest.fixture
def grown(store: Store, tmp_path: Path) -> tuple[CandidateRepo, Path, dict]:  # type: ignore[type-arg]
    v3 = write_golden_v3(tmp_path)
    report = grow(store, stream(), _settings(v3))
    return CandidateRepo(store), v3, report


def test_duplicates_collapse_and_are_counted_on_the_survivor(grown) -> None:  # type: ignore[no-untyped-def]
    repo, _, report = grown
    ports = _by_query(repo, PORTS_EN)
    # the original, an exact duplicate, an EN paraphrase and a second exact duplicate
    assert ports.seen == 4
    assert ports.source_trace_ids == [f"{n:032x}" for n in (1, 2, 3, 10)]
    ports_es = _by_query(repo, PORTS_ES)
    assert ports_es.seen == 2 and ports_es.source_trace_ids == [f"{n:032x}" for n in (4, 5)]
    # the candidate lists its askings: each distinct wording once, the first one first
    assert ports.body["askings"] == [PORTS_EN, "Which ports does the on-prem agent need opened?"]
    assert ports_es.body["askings"] == [
        PORTS_ES,
        "¿Qué puertos necesita tener abiertos el agente on-prem?",
    ]
    assert ports.category == ports_es.category  # one failure category across languages
    assert report["merged_duplicates"] == 4
    assert report["covered_by_golden"] == 1
    assert report["new_candidates"] == len(STREAM) - 4 - 1
    open_rows = repo.select(["candidate"])
    assert sum(r.seen for r in open_rows) + 1 == len(STREAM)  # + the covered one
    assert len({r.norm_query for r in open_rows}) == len(open_rows)


def test_query_already_in_golden_is_covered_not_a_candidate(grown) -> None:  # type: ignore[no-untyped-def]
    repo, _, _ = grown
    row = _by_query(repo, "What is the refund policy for annual plans")
    assert row.status == "covered" and row.body["golden_id"] == "g-refund"
    assert row not in repo.select(["candidate"])


def test_new_category_detected_and_named_known_ones_not(grown) -> None:  # type: ignore[no-untyped-def]
    repo, v3, report = grown
    new = report["new_categories"]
    assert [c["category"] for c in new] == [_by_query(repo, PORTS_EN).category]
    assert new[0]["terms"] == ["on-prem", "agent", "ports"]
    assert new[0]["name"] == "on-prem / agent / ports"
    assert new[0]["examples"] == [PORTS_EN, PORTS_ES]  # most seen first
    assert (new[0]["root_cause"], new[0]["failures_seen"]) == ("retrieval", 6)
    sums = _summaries(repo, v3)
    refund = sums[_by_query(repo, "Can I get a refund on my annual plan?").category]
    assert not refund.new and refund.golden_category == "billing"
    assert (
        _by_query(repo, "¿Me devuelven el dinero si cancelo el plan anual?").category == refund.id
    )
    # one failure shares its topic with no other: no category, nothing announced about it
    assert _by_query(repo, "¿Cómo configuro el inicio de sesión único SAML?").category is None
    assert sums[new[0]["category"]].golden_cases == 0
    # a reviewer's corrected cause counts for all the failures of its candidate
    ports = _by_query(repo, PORTS_EN)
    ports.body.setdefault("review", {})["root_cause"] = "no_answer_expected"
    repo.save([ports])
    corrected = _summaries(repo, v3)[new[0]["category"]]
    assert corrected.root_causes.get("no_answer_expected", 0) >= ports.seen
    assert corrected.root_causes.get("retrieval", 0) == 6 - ports.seen


def test_rerunning_the_same_window_changes_nothing(store: Store, tmp_path: Path) -> None:
    v3 = write_golden_v3(tmp_path)
    grow(store, stream(), _settings(v3))
    before = store.query("SELECT id, seen, body FROM candidates ORDER BY id")
    again = grow(store, stream(), _settings(v3))
    assert again["already_seen"] == len(STREAM)
    assert again["new_candidates"] == again["merged_duplicates"] == 0
    assert store.query("SELECT id, seen, body FROM candidates ORDER BY id") == before


def test_pii_is_scrubbed_before_anything_is_written(store: Store, tmp_path: Path) -> None:
    from golden_plant import flagged

    v3 = write_golden_v3(tmp_path)
    f = flagged("My card 4111 1111 1111 1111 was charged twice, ticket ACME-99812", "retrieval", 77)
    rep = grow(store, [f], _settings(v3, pii_patterns=[r"ACME-\d+"]))
    # every text the row holds (its timestamps are numbers: 1796411162 holds "4111")
    raw = json.dumps(
        [[v for v in r if isinstance(v, str)] for r in store.query("SELECT * FROM candidates")]
    )
    for secret in ("4111", "ACME-99812", "@example.com", "612 345 678"):
        assert secret not in raw
    assert rep["pii_scrubbed"] == {"card": 1, "custom": 1, "email": 1, "phone": 1}
    bad = _settings(v3, pii_patterns=["(unclosed"])
    with pytest.raises(ConfigError, match="golden.pii_patterns"):
        grow(store, [flagged("another question", "retrieval", 78)], bad)


def test_nothing_is_promoted_without_acceptance(grown) -> None:  # type: ignore[no-untyped-def]
    repo, v3, _ = grown
    res = promote(repo, v3, _summaries(repo, v3), by="bob")
    assert res.added == [] and not (v3.parent / "golden_v4.jsonl").exists()
    decide(repo, _by_query(repo, PORTS_ES), "rejected", "alice", "false_alarm: the judge was wrong")
    res = promote(repo, v3, _summaries(repo, v3), by="bob")
    assert res.added == [] and not (v3.parent / "golden_v4.jsonl").exists()


def test_promotion_writes_a_valid_next_version_and_never_overwrites(grown) -> None:  # type: ignore[no-untyped-def]
    repo, v3, _ = grown
    original = v3.read_bytes()
    ports = _by_query(repo, PORTS_EN)
    ports.body["reference_answer"] = "Open TCP 443 and 8443 outbound."
    ports.body["relevant_chunks"] = {"kb-ports": 3, "kb-firewall": 1}
    decide(repo, ports, "accepted", "alice", None)
    decide(
        repo, _by_query(repo, "Can I get a refund on my annual plan?"), "accepted", "carol", None
    )
    decide(repo, _by_query(repo, PORTS_ES), "rejected", "alice", "false_alarm: the judge was wrong")
    sums = _summaries(repo, v3)

    dry = promote(repo, v3, sums, by="bob", dry_run=True)
    assert len(dry.added) == 2 and not dry.path.exists()

    res = promote(repo, v3, sums, by="bob")
    v4 = v3.parent / "golden_v4.jsonl"
    assert res.path == v4
    gs = load_golden(v4)
    assert gs.version == 4 and len(gs.cases) == 4 + 2
    assert v3.read_bytes() == original
    added = {c.query: c for c in gs.cases if c.source == "production"}
    case = added[PORTS_EN]
    assert case.reviewed and dict(case.relevant_chunks) == {"kb-ports": 3, "kb-firewall": 1}
    assert case.reference_answer == "Open TCP 443 and 8443 outbound."
    assert case.metadata["source_trace_ids"] == ports.source_trace_ids
    # one case per failure: the other wordings merged into it ride along as its variants
    assert case.metadata["variants"] == ["Which ports does the on-prem agent need opened?"]
    assert case.metadata["new_category"] is True
    assert added["Can I get a refund on my annual plan?"].category == "billing"
    assert added["Can I get a refund on my annual plan?"].is_no_answer

    log = changelog_path(v4).read_text(encoding="utf-8")
    assert "golden_v4.jsonl" in log and "Promoted by bob" in log
    assert "alice" in log and "carol" in log and "NEW failure category" in log
    assert "billing" in log

    negatives = [json.loads(x) for x in res.negatives_path.read_text().splitlines()]  # type: ignore[union-attr]
    assert [n["question"] for n in negatives] == [PORTS_ES]
    assert negatives[0]["label_faithful"] is True  # the judge's "unfaithful" was a false alarm

    # never overwrites: v4 exists, promoting from v3 again is refused; nothing twice from v4
    with pytest.raises(ConfigError, match="never overwritten"):
        promote(repo, v3, sums, by="bob")
    again = promote(repo, v4, _summaries(repo, v4), by="bob")
    assert again.added == [] and not (v3.parent / "golden_v5.jsonl").exists()

    # the promoted cases now count as golden: the category is no longer new
    after = grow(repo.store, [], _settings(v3))
    assert after["new_categories"] == []


def test_promotion_refused_for_an_existing_negatives_file_writes_nothing(grown) -> None:  # type: ignore[no-untyped-def]
    repo, v3, _ = grown
    decide(repo, _by_query(repo, PORTS_EN), "accepted", "alice", None)
    decide(repo, _by_query(repo, PORTS_ES), "rejected", "alice", "false_alarm: the judge was wrong")
    taken = v3.parent / "golden_v4.rejected.jsonl"
    taken.write_text("someone else's labels\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="never overwritten"):
        promote(repo, v3, _summaries(repo, v3), by="bob")
    v4 = v3.parent / "golden_v4.jsonl"
    assert not v4.exists() and not changelog_path(v4).exists()
    assert taken.read_text(encoding="utf-8") == "someone else's labels\n"
    assert not _by_query(repo, PORTS_EN).body.get("promoted_in")
    taken.unlink()
    res = promote(repo, v3, _summaries(repo, v3), by="bob")  # the same promotion, once free
    assert res.path == v4 and v4.exists() and res.negatives == 1


def test_near_duplicate_of_a_golden_case_is_covered(store: Store, tmp_path: Path) -> None:
    from golden_plant import flagged

    v3 = write_golden_v3(tmp_path)
    near = "What's the refund policy on annual plans?"  # cosine 0.99 to g-refund
    rep = grow(
        store, [flagged(near, "retrieval", 90), flagged(near, "retrieval", 91)], _settings(v3)
    )
    assert (rep["covered_by_golden"], rep["merged_duplicates"], rep["new_candidates"]) == (1, 1, 0)
    row = _by_query(CandidateRepo(store), near)
    assert row.status == "covered" and row.body["golden_id"] == "g-refund" and row.seen == 2
    assert 0.95 < row.body["golden_similarity"] < 1.0


def test_promoted_cases_get_roles_and_a_new_category_goes_to_regression(grown) -> None:  # type: ignore[no-untyped-def]
    repo, v3, _ = grown
    split = split_golden(v3, by="ana", salt="5a17")
    v4 = split.path
    assert v4 is not None
    before = {c.id: c.role for c in load_golden(v4).cases}
    decide(repo, _by_query(repo, PORTS_EN), "accepted", "alice", None)
    refund = "Can I get a refund on my annual plan?"
    decide(repo, _by_query(repo, refund), "accepted", "carol", None)
    res = promote(repo, v4, _summaries(repo, v4), by="bob")
    v5 = load_golden(res.path)
    roles = {c.id: c.role for c in v5.cases}
    assert {q: roles[q] for q in before} == before  # nothing already in the set moves
    added = {c.query: c for c in v5.cases if c.id not in before}
    assert added[PORTS_EN].metadata["new_category"] is True
    assert added[PORTS_EN].role == "regression"
    # a known category follows the rule: the role furthest below its share in that category
    billing = Counter(c.role for c in load_golden(v4).cases if c.category == "billing")
    rule = read_rule(v4)
    assert rule is not None
    expected = next_role(billing, rule, case_key(rule.salt, added[refund].id))
    assert added[refund].role == expected
    assert res.to_json()["roles"] == {c.id: c.role for c in added.values()}
    assert "new failure categories to regression first" in changelog_path(res.path).read_text()


def test_the_review_screen_shows_the_merged_askings(grown) -> None:  # type: ignore[no-untyped-def]
    from ragsieve.jobs.golden.review.review import render

    repo, _, _ = grown
    screen = render(_by_query(repo, PORTS_EN), None)
    assert "also asked as (1):" in screen
    assert "Which ports does the on-prem agent need opened?" in screen
    # each merged wording with the answer its own failure gave: the reviewer judges them all
    other = next(
        s for s in _by_query(repo, PORTS_EN).body["sources"]
        if s["query"] == "Which ports does the on-prem agent need opened?"
    )  # fmt: skip
    flat = " ".join(screen.split())
    assert f"Which ports does the on-prem agent need opened? -> answered: {other['answer']}" in flat
    alone = render(_by_query(repo, "Can I get a refund on my annual plan?"), None)
    assert "also asked as" not in alone


def test_an_undetermined_root_cause_nobody_named_stays_unknown_in_the_golden_case() -> None:
    from datetime import UTC, datetime

    from ragsieve.jobs.golden.growth.repo import Candidate
    from ragsieve.jobs.golden.review.promote import to_case

    def accepted(cause: str | None, named: str | None) -> Candidate:
        review = {"decision": "accepted", "by": "ana", **({"root_cause": named} if named else {})}
        body = {"query": "q?", "review": review, "reference_answer": "a"}
        return Candidate("c1", "accepted", "q?", root_cause=cause, body=body)

    now = datetime(2026, 12, 4, tzinfo=UTC)
    assert to_case(accepted("undetermined", None), None, now).metadata["root_cause"] is None
    named = to_case(accepted("undetermined", "retrieval"), None, now).metadata
    assert (named["root_cause"], named["judged_root_cause"]) == ("retrieval", "undetermined")
    assert to_case(accepted("generation", None), None, now).metadata["root_cause"] == "generation"
