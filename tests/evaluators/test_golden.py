"""Golden-set files: aliases, line-numbered errors, versions, immutable writes, changelog, BEIR."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.golden.sets import (
    append_changelog,
    changelog_path,
    load_beir,
    load_golden,
    next_version_path,
    write_golden,
)
from ragsieve.evaluators.records import GoldenCase


def _write(path: Path, *rows: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_load_canonical_and_alias_rows(tmp_path: Path) -> None:
    p = _write(
        tmp_path / "golden_v3.jsonl",
        {
            "id": "a",
            "query": "q a",
            "relevant_chunks": {"c1": 3, "c2": 0},
            "category": "billing",
            "source": "production",
            "reviewed": True,
            "created_at": "2026-01-02T03:04:05Z",
        },
        "",
        {"pregunta": "¿Cuánto cuesta?", "chunks_relevantes": ["c9"], "respuesta_ideal": "10 €"},
        {"id": "c", "query": "q c", "gold_chunk_ids": [], "gold_answer": "I don't know"},
    )
    gs = load_golden(p)
    assert gs.version == 3 and gs.path == p
    a, b, c = gs.cases
    assert a.relevant_chunks == {"c1": 3, "c2": 0} and a.category == "billing" and a.reviewed
    assert b.query == "¿Cuánto cuesta?" and b.relevant_chunks == {"c9": 1}
    assert b.reference_answer == "10 €" and b.id.startswith("q_")
    assert c.is_no_answer and c.reference_answer == "I don't know"
    assert [x.id for x in gs.answerable] == ["a", b.id] and gs.no_answer == [c]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{not json", ":2: json: "),
        ("[1, 2]", ":2: line: expected a JSON object"),
        ('{"id": "x", "query": ""}', ":2: query: String should have at least 1 character"),
        ('{"id": "x", "query": "q", "relevant_chunks": {"c": 7}}', ":2: relevant_chunks: "),
        ('{"id": "x", "query": "q", "source": "web"}', ":2: source: "),
        ('{"id": "x", "query": "q", "colour": "red"}', ":2: colour: Extra inputs"),
        ('{"id": "ok", "query": "again"}', ":2: id: duplicate 'ok' (first on line 1)"),
    ],
)
def test_first_bad_line_is_reported_with_path_line_and_field(
    tmp_path: Path, line: str, expected: str
) -> None:
    p = _write(tmp_path / "golden.jsonl", {"id": "ok", "query": "fine"}, line, "{also bad")
    with pytest.raises(ConfigError) as info:
        load_golden(p)
    assert str(info.value).startswith(str(p) + expected)
    assert "\n" not in str(info.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_golden(tmp_path / "nope.jsonl")


def test_versions_and_next_version_path() -> None:
    assert next_version_path("sets/golden_v3.jsonl") == Path("sets/golden_v4.jsonl")
    assert next_version_path("golden.jsonl") == Path("golden_v2.jsonl")
    assert next_version_path("my_set_v12.jsonl") == Path("my_set_v13.jsonl")
    assert changelog_path("sets/golden_v3.jsonl") == Path("sets/golden.CHANGELOG.md")
    assert changelog_path("golden.jsonl") == Path("golden.CHANGELOG.md")


def test_write_golden_round_trips_and_refuses_to_overwrite(tmp_path: Path) -> None:
    cases = [
        GoldenCase(
            id="a",
            query="¿Qué es?",
            relevant_chunks={"c": 2},
            category="x",
            created_at=datetime(2026, 1, 1, tzinfo=UTC),
        ),
        GoldenCase(id="b", query="none", reference_answer="abstain"),
    ]
    p = write_golden(tmp_path / "golden_v1.jsonl", cases)
    assert load_golden(p).cases == cases
    assert "¿Qué es?" in p.read_text(encoding="utf-8")
    with pytest.raises(ConfigError, match="golden_v2.jsonl"):
        write_golden(p, cases[:1])
    assert load_golden(p).cases == cases  # untouched
    write_golden(p, cases[:1], overwrite=True)
    assert load_golden(p).cases == cases[:1]
    assert sorted(x.name for x in tmp_path.iterdir()) == ["golden_v1.jsonl"]  # no temp left


def test_append_changelog_shared_across_versions(tmp_path: Path) -> None:
    when = datetime(2026, 11, 29, 17, 0, tzinfo=UTC)
    log = append_changelog(tmp_path / "golden_v3.jsonl", "Added 4 billing cases.", now=when)
    append_changelog(tmp_path / "golden_v4.jsonl", "Fixed grades of q_12.\n", now=when)
    assert log == tmp_path / "golden.CHANGELOG.md"
    text = log.read_text()
    assert text.count("# Changelog of golden") == 1
    assert "## golden_v3.jsonl (2026-11-29 17:00 UTC)\n\nAdded 4 billing cases." in text
    assert text.index("golden_v3") < text.index("golden_v4")
    with pytest.raises(ConfigError):
        append_changelog(tmp_path / "golden_v4.jsonl", "  ")


def test_load_beir_queries_and_qrels(tmp_path: Path) -> None:
    q = _write(
        tmp_path / "queries.jsonl",
        {"id": "1", "text": "first"},
        {"id": "2", "text": "second", "answers": ["dos"]},
        {"id": "3", "text": "third"},
    )
    r = tmp_path / "qrels.tsv"
    r.write_text("query-id\tcorpus-id\tscore\n1\tdA\t1\n1\tdB\t2\n2\tdC\t1\n")
    gs = load_beir(q, r)
    assert [c.relevant_chunks for c in gs.cases] == [{"dA": 1, "dB": 2}, {"dC": 1}, {}]
    assert gs.cases[1].reference_answer == "dos" and gs.cases[2].is_no_answer
    r.write_text("query-id\tcorpus-id\tscore\n1\tdA\tx\n")
    with pytest.raises(ConfigError, match=r"qrels.tsv:2: score: not an integer"):
        load_beir(q, r)
    r.write_text("9\tdA\t1\n")
    with pytest.raises(ConfigError, match="1 ids not in queries.jsonl: 9"):
        load_beir(q, r)
