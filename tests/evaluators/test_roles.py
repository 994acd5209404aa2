"""Golden roles: stratified by category, reproducible from the changelog's salt, stable under
additions; ``ragsieve golden split`` through the root command."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.golden.roles import (
    DEFAULT_FRACTIONS,
    ROLES,
    SplitRule,
    assign_roles,
    parse_fractions,
    read_rule,
    select_roles,
    split_golden,
)
from ragsieve.evaluators.golden.sets import changelog_path, load_golden, write_golden
from ragsieve.evaluators.records import GoldenCase
from ragsieve.jobs.cli import main

SIZES = {"billing": 40, "shipping": 17, "returns": 7, "gifts": 3, "legal": 2, "misc": 1}


def _cases(sizes: dict[str, int], prefix: str = "q") -> list[GoldenCase]:
    return [
        GoldenCase(
            id=f"{prefix}-{cat}-{i}",
            query=f"{cat} question {i}",
            relevant_chunks={"c": 1},
            category=cat,
        )
        for cat, n in sizes.items()
        for i in range(n)
    ]


def _by_cat(cases: list[GoldenCase]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for c in cases:
        out.setdefault(c.category or "", Counter())[c.role or "none"] += 1
    return out


def ran(args: list[str]) -> tuple[int, str, str]:
    """Run the ``ragsieve`` entry point (error mapping included): exit code, stdout, stderr."""
    with CliRunner().isolation() as (out, err, _):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue().decode(), err.getvalue().decode()


def test_every_category_is_spread_over_the_roles_in_proportion() -> None:
    rule = SplitRule("s1", DEFAULT_FRACTIONS)
    got = _by_cat(assign_roles(_cases(SIZES), rule))
    for cat, n in SIZES.items():
        assert sum(got[cat].values()) == n and "none" not in got[cat]
        for role in ROLES:
            # within one case of its share, in every category
            assert abs(got[cat][role] - DEFAULT_FRACTIONS[role] * n) < 1 + 1e-9, (cat, role)
        if n >= 3:
            assert set(got[cat]) == set(ROLES), cat
    assert got["billing"] == Counter(dev=12, regression=20, holdout=8)


def test_assignment_depends_on_ids_and_salt_not_file_order() -> None:
    cases = _cases(SIZES)
    a = {c.id: c.role for c in assign_roles(cases, SplitRule("s1", DEFAULT_FRACTIONS))}
    b = {c.id: c.role for c in assign_roles(cases[::-1], SplitRule("s1", DEFAULT_FRACTIONS))}
    other = {c.id: c.role for c in assign_roles(cases, SplitRule("s2", DEFAULT_FRACTIONS))}
    assert a == b
    assert a != other  # another salt picks other cases for the same shares
    assert Counter(a.values()) == Counter(other.values())


def test_roles_never_change_when_cases_are_added(tmp_path: Path) -> None:
    v1 = write_golden(tmp_path / "golden_v1.jsonl", _cases(SIZES))
    first = split_golden(v1, by="ana", salt="abc123")
    assert first.path == tmp_path / "golden_v2.jsonl" and len(first.assigned) == sum(SIZES.values())
    v2 = load_golden(first.path)
    grown = [*v2.cases, *_cases({"billing": 10, "gifts": 6, "brand_new": 5}, prefix="new")]
    v3 = write_golden(tmp_path / "golden_v3.jsonl", grown)
    second = split_golden(v3, by="ben")
    assert second.rule.salt == "abc123"  # read back from the changelog
    v4 = load_golden(tmp_path / "golden_v4.jsonl")
    before = {c.id: c.role for c in v2.cases}
    after = {c.id: c.role for c in v4.cases}
    assert {q: after[q] for q in before} == before
    assert set(second.assigned) == {c.id for c in grown[len(v2.cases) :]}
    cats = _by_cat(v4.cases)
    assert set(cats["brand_new"]) == set(ROLES)
    for cat in ("billing", "gifts"):
        n = sum(cats[cat].values())
        assert all(abs(cats[cat][r] - DEFAULT_FRACTIONS[r] * n) < 1 + 1e-9 for r in ROLES)
    # v1..v3 untouched on disk, and splitting a fully split set writes nothing
    assert "role" not in (tmp_path / "golden_v1.jsonl").read_text()
    assert split_golden(tmp_path / "golden_v4.jsonl", by="ben").path is None
    assert not (tmp_path / "golden_v5.jsonl").exists()


def test_golden_split_command_writes_roles_and_the_rule(tmp_path: Path) -> None:
    v1 = write_golden(tmp_path / "golden_v1.jsonl", _cases({"a": 5, "b": 5}))
    code, out, err = ran(
        ["golden", "split", "--golden", v1, "--fractions", "0.2,0.6,0.2", "--by", "ana", "--json"]
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["path"] == str(tmp_path / "golden_v2.jsonl") and data["by_category"]["a"] == {
        "dev": 1,
        "regression": 3,
        "holdout": 1,
    }
    rule = read_rule(tmp_path / "golden_v2.jsonl")
    assert rule is not None and rule.salt == data["salt"] and rule.fractions["regression"] == 0.6
    log = changelog_path(v1).read_text()
    assert f"roles: salt={data['salt']} fractions=dev:0.2,regression:0.6,holdout:0.2" in log
    assert "by ana" in log
    lines = (tmp_path / "golden_v2.jsonl").read_text().splitlines()
    assert all(json.loads(x)["role"] in ROLES for x in lines)
    code, out, _ = ran(["golden", "split", "--golden", tmp_path / "golden_v2.jsonl"])
    assert code == 0 and "nothing written" in out
    code, _, err = ran(["golden", "split", "--golden", v1, "--fractions", "0.5,0.5,0.5"])
    assert code == 2 and err.startswith("error: fractions '0.5,0.5,0.5': must sum to 1")


def test_roles_are_refused_where_they_do_not_exist(tmp_path: Path) -> None:
    gs = load_golden(write_golden(tmp_path / "golden_v1.jsonl", _cases({"a": 4})))
    assert select_roles(gs, None) is gs  # never split: every case counts
    with pytest.raises(ConfigError, match="no case has a role; run `ragsieve golden split"):
        select_roles(gs, ("holdout",))
    half = [*assign_roles(gs.cases, SplitRule("x", DEFAULT_FRACTIONS)), *_cases({"b": 1}, "z")]
    mixed = load_golden(write_golden(tmp_path / "golden_v2.jsonl", half))
    with pytest.raises(ConfigError, match="1 cases have no role"):
        select_roles(mixed, None)
    with pytest.raises(ConfigError, match="must sum to 1"):
        parse_fractions("0.3,0.3,0.3")
