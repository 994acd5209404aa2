"""Golden roles: which cases people tune on (``dev``), the CI gate runs (``regression``), and the
locked ``holdout`` that is scored rarely and never shown case by case.

The rule lives in the set's changelog, one line written by ``ragsieve golden split``::

    roles: salt=3f9c01d2a4b5e6f7 fractions=dev:0.3,regression:0.5,holdout:0.2 holdout_looks=5

A case keeps the role written in its golden file forever; only cases without one get a role. Within
a category, those cases are taken in the order of ``sha256(salt:id)`` and each goes to the role
furthest below its share of the category (``fraction × cases`` minus cases already there), so every
category is spread over the roles in proportion (a category of three cases already has one in
each role at the default fractions) and adding cases never moves an existing one. Promotion
(``golden promote``) applies the same rule to the cases it adds.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import get_args

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.golden.sets import (
    GoldenSet,
    append_changelog,
    changelog_path,
    load_golden,
    next_version_path,
    read_changelog,
    write_golden,
)
from ragsieve.evaluators.records import GoldenCase, GoldenRole

ROLES: tuple[GoldenRole, ...] = get_args(GoldenRole)
DEFAULT_FRACTIONS: Mapping[GoldenRole, float] = {"dev": 0.3, "regression": 0.5, "holdout": 0.2}
DEFAULT_ROLES: tuple[GoldenRole, ...] = ("dev", "regression")
DEFAULT_HOLDOUT_LOOKS = 5
UNCATEGORIZED = "uncategorized"
_RULE = re.compile(
    r"^roles: salt=(?P<salt>[0-9A-Za-z_-]+) fractions=(?P<fr>\S+)(?: holdout_looks=(?P<n>\d+))?\s*$"
)
_SECTION = re.compile(r"^## (?P<name>\S+) \(")
HOLDOUT_ENTRY = "Holdout evaluation"


@dataclass(frozen=True)
class SplitRule:
    """The salt and target fractions that give cases their roles, as kept in the changelog."""

    salt: str
    fractions: Mapping[GoldenRole, float]
    holdout_looks: int = DEFAULT_HOLDOUT_LOOKS

    def line(self) -> str:
        """The changelog line this rule is read back from."""
        fr = ",".join(f"{r}:{self.fractions[r]:g}" for r in ROLES)
        return f"roles: salt={self.salt} fractions={fr} holdout_looks={self.holdout_looks}"


def parse_fractions(text: str) -> dict[GoldenRole, float]:
    """``"0.3,0.5,0.2"`` (dev, regression, holdout) or ``"dev:0.3,..."``; they must sum to 1."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) != len(ROLES):
        raise ConfigError(f"fractions {text!r}: expected 3 numbers for dev, regression, holdout")
    out: dict[GoldenRole, float] = {}
    for default_role, part in zip(ROLES, parts, strict=True):
        name, _, value = part.rpartition(":")
        role = _role(name) if name else default_role
        try:
            out[role] = float(value)
        except ValueError:
            raise ConfigError(f"fractions {text!r}: {value!r} is not a number") from None
    if set(out) != set(ROLES) or any(not 0 <= v <= 1 for v in out.values()):
        raise ConfigError(f"fractions {text!r}: need dev, regression, holdout each in [0, 1]")
    if abs(sum(out.values()) - 1) > 1e-6:
        raise ConfigError(f"fractions {text!r}: must sum to 1 (got {sum(out.values()):g})")
    return out


def _role(name: str) -> GoldenRole:
    for role in ROLES:
        if role == name.strip():
            return role
    raise ConfigError(f"role {name!r}: unknown; expected one of {', '.join(ROLES)}")


def parse_roles(values: Iterable[str]) -> tuple[GoldenRole, ...]:
    """``--role`` values (repeatable, comma-separated) in canonical order; none → dev+regression."""
    picked = {_role(v) for raw in values for v in raw.split(",") if v.strip()}
    return tuple(r for r in ROLES if r in picked) or DEFAULT_ROLES


def new_salt() -> str:
    """A fresh random salt (16 hex digits) for a set's first split."""
    return secrets.token_hex(8)


def read_rule(golden_path: str | Path) -> SplitRule | None:
    """The last ``roles:`` line of the set's changelog, or None when the set was never split."""
    log = changelog_path(golden_path)
    rule: SplitRule | None = None
    for lineno, line in enumerate(read_changelog(golden_path).splitlines(), start=1):
        m = _RULE.match(line)
        if m is None:
            continue
        try:
            fractions = parse_fractions(m.group("fr"))
        except ConfigError as exc:
            raise ConfigError(f"{log}:{lineno}: roles: {exc}") from None
        looks = int(m.group("n")) if m.group("n") else DEFAULT_HOLDOUT_LOOKS
        rule = SplitRule(m.group("salt"), fractions, looks)
    return rule


def case_key(salt: str, case_id: str) -> str:
    """The hash that orders a case among the unassigned cases of its category."""
    return hashlib.sha256(f"{salt}:{case_id}".encode()).hexdigest()


def next_role(counts: Mapping[GoldenRole, int], rule: SplitRule, key: str) -> GoldenRole:
    """The role furthest below its share once one more case joins a category with ``counts``.

    Deficit of role r = ``fraction_r × (n + 1) − count_r``; ties are broken by ``key``.
    """
    n = sum(counts.values()) + 1
    deficit = {r: rule.fractions[r] * n - counts.get(r, 0) for r in ROLES if rule.fractions[r] > 0}
    best = max(deficit.values())
    tied = [r for r in ROLES if r in deficit and deficit[r] > best - 1e-9]
    return tied[int(key[:8], 16) % len(tied)]


def assign_roles(
    cases: Sequence[GoldenCase],
    rule: SplitRule,
    *,
    forced: Mapping[str, GoldenRole] | None = None,
) -> list[GoldenCase]:
    """Cases in the same order, each without a role given one; existing roles never change.

    ``forced`` pins roles by case id (promotion sends a new failure category to ``regression``);
    pinned cases count towards their category's shares like any other.
    """
    counts: dict[str, Counter[GoldenRole]] = {}
    for case in cases:
        if case.role is not None:
            counts.setdefault(_category(case), Counter())[case.role] += 1
    pins = forced or {}
    todo = sorted(
        (c for c in cases if c.role is None),
        key=lambda c: (c.id not in pins, case_key(rule.salt, c.id)),
    )
    given: dict[str, GoldenRole] = {}
    for case in todo:
        seen = counts.setdefault(_category(case), Counter())
        role = pins.get(case.id) or next_role(seen, rule, case_key(rule.salt, case.id))
        seen[role] += 1
        given[case.id] = role
    return [c.model_copy(update={"role": given[c.id]}) if c.id in given else c for c in cases]


def _category(case: GoldenCase) -> str:
    return case.category or UNCATEGORIZED


def role_counts(cases: Iterable[GoldenCase]) -> dict[str, dict[str, int]]:
    """``category → role → cases`` (roles in canonical order, unassigned as ``none``)."""
    out: dict[str, Counter[str]] = {}
    for case in cases:
        out.setdefault(_category(case), Counter())[case.role or "none"] += 1
    order = [*ROLES, "none"]
    return {
        cat: {r: row[r] for r in order if row[r]}
        for cat, row in sorted(out.items(), key=lambda kv: kv[0])
    }


def select_roles(golden: GoldenSet, roles: Sequence[GoldenRole] | None) -> GoldenSet:
    """The cases of ``roles`` (None: dev + regression, or every case of a set never split).

    Raises:
        ConfigError: roles asked of a set that has none, or a split set with unassigned cases.
    """
    missing = [c.id for c in golden.cases if c.role is None]
    if len(missing) == len(golden.cases):
        if roles is None:
            return golden
        raise ConfigError(
            f"{golden.path}: role: no case has a role; run `ragsieve golden split "
            f"--golden {golden.path}` first"
        )
    if missing:
        raise ConfigError(
            f"{golden.path}: role: {len(missing)} cases have no role (first: {missing[0]!r}); "
            f"run `ragsieve golden split --golden {golden.path}` to give them one"
        )
    wanted = set(roles or DEFAULT_ROLES)
    cases = [c for c in golden.cases if c.role in wanted]
    if not cases:
        raise ConfigError(f"{golden.path}: role: no case has role {', '.join(sorted(wanted))}")
    return GoldenSet(path=golden.path, version=golden.version, cases=cases)


def holdout_looks(golden_path: str | Path) -> int:
    """How many holdout evaluations the changelog records for this very file (version)."""
    name, current, looks = Path(golden_path).name, "", 0
    for line in read_changelog(golden_path).splitlines():
        m = _SECTION.match(line)
        if m is not None:
            current = m.group("name")
        elif current == name and line.startswith(HOLDOUT_ENTRY):
            looks += 1
    return looks


@dataclass
class SplitResult:
    """What ``golden split`` wrote (or, with ``dry_run``, would write)."""

    source: Path
    path: Path | None
    rule: SplitRule
    assigned: dict[str, GoldenRole]
    counts: dict[str, dict[str, int]]
    changelog: Path | None = None

    def to_json(self) -> dict[str, object]:
        """Stable JSON for ``golden split --json``."""
        return {
            "source": str(self.source),
            "path": str(self.path) if self.path else None,
            "salt": self.rule.salt,
            "fractions": dict(self.rule.fractions),
            "holdout_looks": self.rule.holdout_looks,
            "assigned": self.assigned,
            "by_category": self.counts,
            "changelog": str(self.changelog) if self.changelog else None,
        }


def plan_split(
    golden: GoldenSet,
    *,
    fractions: Mapping[GoldenRole, float] | None = None,
    salt: str | None = None,
    holdout_looks: int | None = None,
) -> tuple[SplitRule, list[GoldenCase]]:
    """The rule (the changelog's, else a new one) and the cases with every role filled in.

    A set split before keeps its salt: another salt would not move existing cases, but would make
    the assignment of the cases added since impossible to reproduce from the changelog.
    """
    old = read_rule(golden.path)
    if old is not None and salt is not None and salt != old.salt:
        raise ConfigError(
            f"{changelog_path(golden.path)}: roles: salt {old.salt} is already set; "
            "a set keeps one salt"
        )
    if holdout_looks is not None and holdout_looks < 1:
        raise ConfigError(f"holdout_looks: must be >= 1 (got {holdout_looks})")
    rule = SplitRule(
        salt=old.salt if old else (salt or new_salt()),
        fractions=dict(fractions or (old.fractions if old else DEFAULT_FRACTIONS)),
        holdout_looks=holdout_looks or (old.holdout_looks if old else DEFAULT_HOLDOUT_LOOKS),
    )
    return rule, assign_roles(golden.cases, rule)


def split_entry(rule: SplitRule, result: SplitResult, by: str) -> str:
    """The changelog entry of a split: the rule line, then what changed."""
    per_role = Counter(result.assigned.values())
    given = ", ".join(f"{r} {per_role[r]}" for r in ROLES)
    lines = [
        rule.line(),
        "",
        f"Roles given to {len(result.assigned)} cases by {by} ({given}); "
        "cases that had a role kept it.",
        "",
        "Cases per category and role:",
    ]
    for cat, row in result.counts.items():
        lines.append(f"- {cat}: " + ", ".join(f"{r} {n}" for r, n in row.items()))
    return "\n".join(lines)


def split_golden(
    path: str | Path,
    *,
    by: str,
    fractions: Mapping[GoldenRole, float] | None = None,
    salt: str | None = None,
    holdout_looks: int | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> SplitResult:
    """Write the next version of ``path`` with a role on every case, and the rule to the changelog.

    Old versions are never rewritten; with nothing to assign and the rule unchanged nothing is
    written (``path`` of the result is None).
    """
    golden = load_golden(path)
    if not golden.cases:
        raise ConfigError(f"{golden.path}: golden set is empty")
    old = read_rule(golden.path)
    rule, cases = plan_split(golden, fractions=fractions, salt=salt, holdout_looks=holdout_looks)
    before = {c.id: c.role for c in golden.cases}
    assigned = {c.id: c.role for c in cases if c.role is not None and before[c.id] is None}
    out = next_version_path(golden.path)
    result = SplitResult(golden.path, out, rule, assigned, role_counts(cases))
    if not assigned and rule == old:
        result.path = None
        return result
    if dry_run:
        return result
    write_golden(out, cases)
    result.changelog = append_changelog(out, split_entry(rule, result, by), now=now)
    return result
