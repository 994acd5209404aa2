"""tests/run under CI=true: a missing or skipped Phoenix/Postgres suite fails the run, with why."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[1] / "run"


def part(pattern: str) -> str:
    match = re.search(pattern, RUN.read_text(), re.S | re.M)
    assert match, pattern
    return match.group(1)


def integration_missing(ci: str | None, reason: str) -> subprocess.CompletedProcess[str]:
    """Run the script's own ``integration_missing`` (as tests/run defines it) in bash."""
    prelude = part(r"^(CI_STRICT=0\n.*?^\})\n")
    env = {"PATH": "/usr/bin:/bin", **({"CI": ci} if ci is not None else {})}
    script = f'{prelude}\nintegration_missing "{reason}"\necho carried on\n'
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)


@pytest.mark.parametrize("ci", ["true", "1"])
def test_a_missing_integration_suite_fails_under_ci(ci: str) -> None:
    proc = integration_missing(ci, "could not install arize-phoenix")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "error: could not install arize-phoenix (CI=true" in proc.stderr


@pytest.mark.parametrize("ci", [None, "false", ""])
def test_a_missing_integration_suite_is_a_warning_locally(ci: str | None) -> None:
    proc = integration_missing(ci, "could not install PostgreSQL")
    assert proc.returncode == 0 and proc.stdout == "carried on\n"
    assert proc.stderr == "warning: could not install PostgreSQL\n"


def test_skipped_integration_tests_fail_the_ci_run(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(
        "import pytest\n"
        "def test_ok(): pass\n"
        "@pytest.mark.skip(reason='no PostgreSQL binaries (initdb, pg_ctl) found')\n"
        "def test_store(): pass\n"
        "@pytest.mark.skip(reason='needs a GPU')\n"
        "def test_unrelated(): pass\n"
    )
    report = tmp_path / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    )
    check = part(r"<<'PYEOF'[^\n]*\n(.*?)^PYEOF$")
    proc = subprocess.run(
        [sys.executable, "-c", check, str(report)], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "1 integration test(s) skipped under CI=true" in proc.stderr
    assert "test_store: no PostgreSQL binaries" in proc.stderr
    assert "test_unrelated" not in proc.stderr

    (tmp_path / "test_suite.py").write_text("def test_ok(): pass\n")
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    )
    ok = subprocess.run([sys.executable, "-c", check, str(report)], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stderr == ""
