"""The README's service-desk table is ``bench/service.py``'s committed results, nothing else."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_service_table_is_the_benchmark() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("bench_service", ROOT / "bench/service.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    data = json.loads((ROOT / "bench/results/service.json").read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert module.readme_table(data) in readme, "run bench/service.py --readme"
    bumped = json.loads(json.dumps(data))
    bumped["results"]["heldout"]["recall"] = round(data["results"]["heldout"]["recall"] + 0.05, 3)
    assert module.readme_table(bumped) not in readme
