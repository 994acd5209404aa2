"""The fit benchmark page's figures are ``bench/fit.py``'s committed results, nothing else."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_fit_table_is_the_benchmark() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("bench_fit", ROOT / "bench/fit.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    data = json.loads((ROOT / "bench/results/fit.json").read_text(encoding="utf-8"))
    readme = (ROOT / "docs/benchmarks/fit.md").read_text(encoding="utf-8")
    assert module.readme_table(data) in readme, "run bench/fit.py, paste its table into the page"
    bumped = json.loads(json.dumps(data))
    bumped["baseline_batch_b"]["fpr"] = round(data["baseline_batch_b"]["fpr"] + 0.05, 3)
    assert module.readme_table(bumped) not in readme
