"""docs/benchmarks/service.md's service-desk table is ``bench/service.py``'s committed results."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _bench_service() -> Any:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("bench_service", ROOT / "bench/service.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


def test_readme_service_table_is_the_benchmark() -> None:
    module = _bench_service()
    data = json.loads((ROOT / "bench/results/service.json").read_text(encoding="utf-8"))
    readme = (ROOT / "docs/benchmarks/service.md").read_text(encoding="utf-8")
    assert module.readme_table(data) in readme, "run bench/service.py --readme"
    bumped = json.loads(json.dumps(data))
    bumped["results"]["heldout"]["recall"] = round(data["results"]["heldout"]["recall"] + 0.05, 3)
    assert module.readme_table(bumped) not in readme


def test_fit_halves_mix_the_sources_and_keep_topics_whole() -> None:
    """The fit's halves hold both kinds of topic (service pages and question ids sort apart by
    name: halves in name order gave labels of one source and fresh traffic of the other), split
    every topic once, and come out the same on every run."""
    halves = _bench_service()._halves
    pages = {f"Page {c} | Service#{i}_0" for c in "ABCDEFGHIJ" for i in range(2)}
    questions = {f"memerag:memerag:es:{n}" for n in range(20)}
    a, b = halves(pages | questions)
    assert a | b == pages | questions and not a & b
    assert abs(len(a) - len(b)) <= 1
    for half in (a, b):
        assert 5 <= len(half & pages) <= 15 and 5 <= len(half & questions) <= 15
    assert halves(pages | questions) == (a, b)
