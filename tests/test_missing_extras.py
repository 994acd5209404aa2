"""One contract for a missing optional extra (issue 42): one line naming the install, exit 2.

Each extra is hidden for real: the child process gets a ``sitecustomize`` on ``PYTHONPATH`` whose
meta-path finder makes importing the extra's modules raise ``ModuleNotFoundError``, as on an
install without the extra. The commands run through the installed console script; the Python API
raises :class:`MissingExtra`, an ``ImportError`` with the same message.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from console_script import ragsieve_script

from ragsieve.evaluators.errors import MissingExtra, RagsieveError
from ragsieve.evaluators.tools.extras import EXTRAS, extra_of, hint_for, missing

ROOT = Path(__file__).resolve().parents[1]
HIDER = """\
import os
import sys

HIDDEN = set(os.environ["HIDE_MODULES"].split(","))


class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name in HIDDEN or name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Hide())
"""
DEAD_PG = "postgresql://ragsieve@127.0.0.1:9/nowhere"  # never reached: the extra is checked first


def _run(tmp_path: Path, hidden: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "hide").mkdir(exist_ok=True)
    (tmp_path / "hide" / "sitecustomize.py").write_text(HIDER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    env.update(PYTHONPATH=str(tmp_path / "hide"), HIDE_MODULES=hidden)
    return subprocess.run(
        args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _one_line(out: subprocess.CompletedProcess[str], what: str, extra: str, module: str) -> None:
    """Exit 2 and exactly one line: ``error: <what> needs: <python> -m pip install -e
    '<checkout>[<extra>]' (no module '<module>')``, an install that works in this checkout."""
    assert out.returncode == 2, (out.returncode, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    m = re.fullmatch(
        rf"error: {re.escape(what)} needs: (\S+) -m pip install -e '(.+)\[{extra}\]'"
        rf" \(no module '{re.escape(module)}'\)",
        lines[0],
    )
    assert m, lines[0]
    assert Path(m.group(1)).resolve() == Path(sys.executable).resolve()
    project = tomllib.loads((Path(m.group(2)) / "pyproject.toml").read_text())["project"]
    assert project["name"] == "ragsieve" and extra in project["optional-dependencies"]


def _sqlite(tmp_path: Path) -> str:
    from ragsieve.collector.store import open_store

    url = f"sqlite:///{tmp_path}/s.db"
    open_store(url).close()
    return url


def test_the_table_names_every_extra_and_distribution_in_pyproject() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    declared = {
        name: {re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0] for req in reqs}
        for name, reqs in extras.items()
        if name not in ("test", "docs")  # what the checkout's own tests and docs build need
    }
    assert declared == {name: set(dists) for name, dists in EXTRAS.items()}
    assert extra_of("procrastinate.worker") == "postgres" and extra_of("phoenix.otel") == "phoenix"
    assert extra_of("pyarrow.parquet") == "parquet" and extra_of("tqdm.auto") == "pandas"
    assert extra_of("numpy") is None and extra_of(None) is None


def test_missing_extra_is_an_import_error_and_a_ragsieve_error() -> None:
    err = missing("parquet", "parquet export", "pyarrow")
    assert (
        isinstance(err, MissingExtra)
        and isinstance(err, ImportError)
        and isinstance(err, RagsieveError)
    )
    assert err.extra == "parquet" and err.name == "pyarrow"
    assert str(err).startswith("parquet export needs: ") and "\n" not in str(err)
    with pytest.raises(ValueError, match="unknown extra 'parket'"):
        missing("parket", "x")


@pytest.mark.parametrize(
    ("direct_url", "installer", "hint"),
    [
        (None, "pip", "py -m pip install 'ragsieve[pandas]'"),  # from an index
        (None, "uv", "uv pip install --python py 'ragsieve[pandas]'"),
        (
            {"url": "file:///src/ragsieve", "dir_info": {"editable": True}},
            "pip",
            "py -m pip install -e '/src/ragsieve[pandas]'",
        ),
        (
            {"url": "file:///src/rag%20sieve", "dir_info": {}},  # `pip install .`: not editable
            "uv",
            "uv pip install --python py '/src/rag sieve[pandas]'",
        ),
        (
            {"url": "file:///w/ragsieve-0.1.0-py3-none-any.whl", "archive_info": {}},
            "pip",
            "py -m pip install 'ragsieve[pandas] @ file:///w/ragsieve-0.1.0-py3-none-any.whl'",
        ),
        (
            {
                "url": "https://example.org/ragsieve.git",
                "vcs_info": {"vcs": "git", "commit_id": "abc123", "requested_revision": "main"},
            },
            "pip",
            "py -m pip install 'ragsieve[pandas] @ git+https://example.org/ragsieve.git@abc123'",
        ),
    ],
)
def test_the_hint_follows_the_way_ragsieve_was_installed(
    direct_url: dict[str, object] | None, installer: str, hint: str
) -> None:
    assert hint_for("pandas", direct_url, installer=installer, python="py") == hint


@pytest.mark.parametrize(
    ("hidden", "command", "module"),
    [
        ("procrastinate,psycopg", "worker", "psycopg"),  # procrastinate imports psycopg first
        ("procrastinate,psycopg", "schedule", "psycopg"),
        ("procrastinate", "worker", "procrastinate"),  # psycopg alone does not make the extra
    ],
)
def test_workers_without_the_postgres_extra(
    tmp_path: Path, hidden: str, command: str, module: str
) -> None:
    out = _run(tmp_path, hidden, [str(ragsieve_script()), "workers", command, "--store", DEAD_PG])
    _one_line(out, f"ragsieve workers {command}", "postgres", module)


@pytest.mark.parametrize("args", [["interactions", "list"], ["jobs", "run"]])
def test_the_postgres_store_without_the_postgres_extra(tmp_path: Path, args: list[str]) -> None:
    out = _run(
        tmp_path, "procrastinate,psycopg", [str(ragsieve_script()), *args, "--store", DEAD_PG]
    )
    _one_line(out, f"store URL {DEAD_PG!r}", "postgres", "psycopg")


def test_parquet_export_without_the_parquet_extra(tmp_path: Path) -> None:
    args = ["results", "export", "--format", "parquet", "--out", "r.parquet"]
    out = _run(tmp_path, "pyarrow", [str(ragsieve_script()), *args, "--store", _sqlite(tmp_path)])
    _one_line(out, "parquet export", "parquet", "pyarrow")
    assert not (tmp_path / "r.parquet").exists()


def test_the_pandas_api_without_the_pandas_extra(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from ragsieve.jobs.api import Client\n"
        "try:\n"
        f"    Client(store={_sqlite(tmp_path)!r})\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc.extra, file=sys.stderr)\n"
        "    print(f'error: {exc}', file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    out = _run(tmp_path, "pandas", [sys.executable, "-c", code])
    first, _, rest = out.stderr.partition("\n")
    assert first == "MissingExtra pandas", out.stderr
    _one_line(_with(out, rest), "the DataFrame API", "pandas", "pandas")


def _with(out: subprocess.CompletedProcess[str], stderr: str) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(out.args, out.returncode, out.stdout, stderr)


def test_the_progress_bar_falls_back_without_tqdm(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    code = (
        "import pandas as pd\n"
        "from ragsieve.evaluators.dataframe import evaluate_dataframe\n"
        "q, a, c = 'What is the capital of France?', 'Paris.', ['Paris is the capital.']\n"
        "df = pd.DataFrame({'question': [q, q], 'answer': [a, a], 'contexts': [c, c]})\n"
        "out = evaluate_dataframe(df, judges=['faithfulness'], progress=True)\n"
        "print(len(out))\n"
    )
    out = _run(tmp_path, "tqdm", [sys.executable, "-c", code])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "2" and "evaluated 2/2 rows" in out.stderr


def test_any_other_import_of_an_extra_under_the_cli_gives_the_same_line(tmp_path: Path) -> None:
    """No ragsieve command imports the ``phoenix`` extra (Phoenix is spoken to over REST); should
    one ever import it, or any extra's module without :func:`require`, the entry point still
    turns the failure into the one line."""
    code = (
        "import click\n"
        "from ragsieve.collector.cliopts import run_cli\n"
        "@click.group()\n"
        "def root():\n"
        "    pass\n"
        "@root.command('send')\n"
        "def send():\n"
        "    import phoenix.otel\n"
        "run_cli(root, 'ragsieve', ['send'])\n"
    )
    out = _run(tmp_path, "phoenix", [sys.executable, "-c", code])
    _one_line(out, "ragsieve send", "phoenix", "phoenix")


def test_the_model_tier_without_the_model_extra(tmp_path: Path) -> None:
    from ragsieve.evaluators.judges.model.manifest import MANIFEST

    folder = tmp_path / "reranker"
    folder.mkdir()
    (folder / MANIFEST).write_text('{"task": "relevance"}')
    (folder / "model.onnx").write_bytes(b"")  # never read: the extra is checked first
    (folder / "tokenizer.json").write_text("{}")
    code = (
        "import sys\n"
        "from ragsieve.evaluators.judges.model.manifest import read_manifest\n"
        "from ragsieve.evaluators.judges.model.runtime import LocalModel\n"
        "try:\n"
        f"    LocalModel(read_manifest({str(folder)!r}))\n"
        "except ImportError as exc:\n"
        "    print(f'error: {exc}', file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    out = _run(tmp_path, "onnxruntime,tokenizers", [sys.executable, "-c", code])
    _one_line(out, f"{folder}: the model tier", "model", "onnxruntime")


def test_help_needs_no_extra(tmp_path: Path) -> None:
    for command in ("worker", "schedule"):
        out = _run(
            tmp_path, "procrastinate,psycopg", [str(ragsieve_script()), "workers", command, "-h"]
        )
        assert out.returncode == 0 and "--store" in out.stdout, out.stderr
