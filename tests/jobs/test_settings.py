"""Settings precedence (flags > env > TOML > defaults) and one-line errors naming the source."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ragsieve.evaluators.errors import ConfigError
from ragsieve.jobs.cli import cli
from ragsieve.jobs.settings import load_settings, reference_table


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ragsieve.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults() -> None:
    s = load_settings()
    assert s.store == "sqlite:///ragsieve.db"
    assert s.collector.host == "127.0.0.1" and s.collector.port == 4318
    assert s.jobs.backend == "offline"


def test_precedence_flags_env_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write(tmp_path, '[jobs]\nsince = "6h"\nsample_size = 10\n[collector]\nport = 5000\n')
    assert load_settings(cfg).jobs.since == "6h"
    monkeypatch.setenv("RAGSIEVE_JOBS__SINCE", "3h")
    s = load_settings(cfg)
    assert s.jobs.since == "3h" and s.jobs.sample_size == 10 and s.collector.port == 5000
    s = load_settings(cfg, {"jobs.since": "1h", "collector.port": None})
    assert s.jobs.since == "1h" and s.collector.port == 5000


def test_toml_error_names_file_line_and_field(tmp_path: Path) -> None:
    cfg = write(tmp_path, '# comment\n[jobs]\nsince = "2h"\nbudget_calls = 0\n')
    with pytest.raises(ConfigError) as exc:
        load_settings(cfg)
    assert str(exc.value).startswith(f"{cfg}:4: jobs.budget_calls: ")
    assert "(got 0)" in str(exc.value)


def test_unknown_key_and_syntax_error(tmp_path: Path) -> None:
    cfg = write(tmp_path, "[collector]\nhost = '0.0.0.0'\nprot = 1\n")
    with pytest.raises(ConfigError, match=r":3: collector.prot: unknown setting"):
        load_settings(cfg)
    cfg = write(tmp_path, "[collector\nhost = 1\n")
    with pytest.raises(ConfigError, match=r"ragsieve.toml:1: "):
        load_settings(cfg)


def test_env_error_names_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSIEVE_COLLECTOR__PORT", "notaport")
    with pytest.raises(ConfigError, match=r"^RAGSIEVE_COLLECTOR__PORT: "):
        load_settings()


def test_secret_in_toml_refused(tmp_path: Path) -> None:
    cfg = write(tmp_path, '[llm]\nbase_url = "http://127.0.0.1:1"\napi_key = "sk-123"\n')
    with pytest.raises(ConfigError, match=r":3: llm.api_key: secrets are read from the env"):
        load_settings(cfg)


def test_cli_exits_2_with_one_line(tmp_path: Path) -> None:
    from ragsieve.jobs.cli import main

    cfg = write(tmp_path, "[jobs]\nevery_minutes = -1\n")
    runner = CliRunner()
    result = runner.invoke(cli, ["--config", str(cfg), "config", "show"], standalone_mode=False)
    assert isinstance(result.exception, ConfigError)
    with pytest.raises(SystemExit) as exit_info:
        main(["--config", str(cfg), "config", "show"])
    assert exit_info.value.code == 2


def test_store_url_checked_with_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSIEVE_STORE", "mysql://db/x")
    with pytest.raises(ConfigError, match=r"^RAGSIEVE_STORE: unsupported store URL"):
        load_settings()


def test_readme_config_reference_is_current() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
    assert reference_table() in page.read_text(encoding="utf-8"), (
        "run `ragsieve config reference` and paste it in docs/configuration.md"
    )
