"""Every TOML block of the README and docs loads, and its thresholds are the effective defaults.

A user pastes these blocks as they are, so a block with a stale threshold gives wrong verdicts
(issue 29: ``context_relevance = 0.2`` flagged correct abstentions). The defaults are read from
``DEFAULT_THRESHOLDS`` and the settings model, never written here: when the judges are retuned,
this test names every README line to update. A block may set another value only when the line
says so in a comment ("not the default").
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from ragsieve.evaluators.gate import load_policy
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.jobs.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# the front page and every docs page a user pastes from
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
_BLOCK = re.compile(r"^```toml\n(.*?)^```", re.S | re.M)
_SAYS_CHANGED = re.compile(r"#.*\bnot the default\b", re.I)


def toml_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the opening fence, body) of every ```toml block."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def kind(body: str) -> str:
    """What file a README block is an excerpt of."""
    if "[project.entry-points" in body:
        return "pyproject"
    if body.lstrip().startswith("# gate.toml"):
        return "gate"
    return "ragsieve"


def threshold_mismatches(body: str, start: int, name: str = "README.md") -> list[str]:
    """Lines of page ``name`` setting a ``jobs.thresholds`` value other than the default."""
    out = []
    section: tuple[str, ...] = ()
    for offset, line in enumerate(body.splitlines(), 1):
        code = line.split("#", 1)[0].strip()
        head = re.fullmatch(r"\[+([^\]]+)\]+", code)
        if head:
            section = tuple(p.strip() for p in head.group(1).split("."))
            continue
        m = re.match(r"([A-Za-z0-9_.]+)\s*=\s*(.+)", code)
        if not m:
            continue
        full = section + tuple(m.group(1).split("."))
        if full[:2] != ("jobs", "thresholds") or len(full) != 3 or _SAYS_CHANGED.search(line):
            continue
        metric, value = full[2], tomllib.loads(f"v = {m.group(2)}")["v"]
        default = DEFAULT_THRESHOLDS.get(metric)
        if value != default:
            out.append(
                f"{name}:{start + offset}: jobs.thresholds.{metric} = {value}, the default"
                f" is {default}; write the default or say '# not the default' on the line"
            )
    return out


def test_every_readme_config_block_loads_and_keeps_the_default_thresholds(tmp_path: Path) -> None:
    blocks = [
        (page.relative_to(ROOT).as_posix(), start, body)
        for page in PAGES
        for start, body in toml_blocks(page.read_text(encoding="utf-8"))
    ]
    assert len(blocks) >= 3
    problems: list[str] = []
    for name, start, body in blocks:
        path = tmp_path / f"{name.replace('/', '_')}_{start}.toml"
        path.write_text(body, encoding="utf-8")
        if kind(body) == "pyproject":
            tomllib.loads(body)
        elif kind(body) == "gate":
            load_policy(path)
        else:
            load_settings(config=path)  # unknown keys and bad values raise ConfigError
            problems += threshold_mismatches(body, start, name)
    assert not problems, "\n".join(problems)


def test_the_judges_page_states_the_effective_default_thresholds() -> None:
    text = (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
    defaults = Settings().jobs.thresholds
    assert defaults == dict(DEFAULT_THRESHOLDS)
    m = re.search(
        r"\(defaults\s+faithfulness\s+([\d.]+),\s+answer\s+relevance\s+([\d.]+),"
        r"\s+context\s+relevance\s+([\d.]+)",
        text,
    )
    assert m, "the judges section should state the default thresholds"
    stated = dict(
        zip(
            ("faithfulness", "answer_relevance", "context_relevance"),
            map(float, m.groups()),
            strict=True,
        )
    )
    assert stated == defaults


@pytest.mark.parametrize(
    ("line", "caught"),
    [
        ("context_relevance = 0.123", True),
        ("context_relevance = 0.123   # stricter: not the default", False),
        (f"context_relevance = {DEFAULT_THRESHOLDS['context_relevance']}", False),
    ],
)
def test_a_changed_threshold_is_caught(line: str, caught: bool) -> None:
    body = f"[jobs]\nsince = '2h'\n[jobs.thresholds]\n{line}\n"
    assert bool(threshold_mismatches(body, 100)) is caught
    if caught:
        assert threshold_mismatches(body, 100)[0].startswith("README.md:104:")
