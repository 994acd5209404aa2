"""MkDocs hook: pictures the benchmarks write under ``bench/results/`` join the site as they are.

``bench/report.py --screenshot`` writes ``bench/results/report.png``; the docs show that file
(as ``assets/report.png``) rather than a copy that could fall behind it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
PICTURES = ("report.png",)


def on_files(files: Files, config: Any) -> Files:
    for name in PICTURES:
        files.append(File.generated(config, f"assets/{name}", abs_src_path=str(RESULTS / name)))
    return files
