"""The docs site builds strictly, and a broken link, a missing anchor or a page left out of the nav
fails the build; the README stays a front page whose links all land on a page."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _need_mkdocs() -> None:
    """MkDocs is in the ``test`` extra: missing, a local checkout skips, CI fails."""
    try:
        import material  # noqa: F401  (the theme mkdocs.yml names)
        import mkdocs  # noqa: F401
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"mkdocs / mkdocs-material not installed under CI: {exc}")
        pytest.skip(f"mkdocs not installed ({exc}); pip install -e '.[docs]'")


def _build(site: Path, dest: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the config in ``site`` into ``dest``, as CI runs it."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(dest)],
        cwd=site, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip


@pytest.fixture
def site_copy(tmp_path: Path) -> Path:
    """The docs and their config copied to a scratch checkout (bench/results for the pictures)."""
    _need_mkdocs()
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "bench").mkdir()
    shutil.copytree(ROOT / "bench" / "results", copy / "bench" / "results")
    return copy


def test_the_docs_build_strictly(tmp_path: Path) -> None:
    _need_mkdocs()
    out = _build(ROOT, tmp_path / "site")
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "site" / "benchmarks" / "service" / "index.html").is_file()
    assert (tmp_path / "site" / "assets" / "report.png").is_file()  # the bench's own picture


@pytest.mark.parametrize(
    ("page", "text", "complaint"),
    [
        ("job.md", "\nSee [nowhere](no-such-page.md).\n", "no-such-page.md"),
        ("job.md", "\nSee [the gate](golden-set.md#no-such-heading).\n", "no-such-heading"),
        ("stray.md", "# A page nobody listed\n", "stray.md"),
    ],
)
def test_a_broken_link_an_anchor_or_an_unlisted_page_fails_the_build(
    site_copy: Path, page: str, text: str, complaint: str
) -> None:
    target = site_copy / "docs" / page
    target.write_text(
        (target.read_text(encoding="utf-8") if target.exists() else "") + text, encoding="utf-8"
    )
    out = _build(site_copy, site_copy / "site")
    assert out.returncode != 0
    assert complaint in out.stdout + out.stderr


def test_every_docs_page_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r"([\w/-]+\.md)\s*$", config, re.M))
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert pages == listed
    assert re.search(r"^strict: true$", config, re.M)


def test_the_readme_is_a_front_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    # the two Quickstart commands, as a new user pastes them
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert blocks[:2] == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/ragsieve demo\n",
        "bash tests/run\n",
    ]
    assert "`apt-get`" in text and "PostgreSQL" in text and "Chromium" in text
    assert "`./.phoenix-venv`" in text
    # every step of the first hour, each with its command
    first_hour = text[text.index("## The first hour") :]
    for command in ("collector serve", "jobs run", "golden review", "golden promote", "gate"):
        assert f"`ragsieve {command}" in first_hour, command
    links = re.findall(r"\]\(((?:docs/)[^)#]+)(?:#[^)]*)?\)", text)
    assert links, "the front page links into the docs"
    for link in links:
        assert (ROOT / link).is_file(), link
