"""The docs' ingest, scale, cost-growth and capacity figures are the committed bench results."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _tables() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ingest_tables", ROOT / "bench/ingest_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _page(name: str) -> str:
    return (ROOT / "docs" / "benchmarks" / name).read_text(encoding="utf-8")


def test_growth_and_capacity_tables_are_the_results() -> None:
    tables = _tables()
    readme = _page("growth.md")
    growth = tables.load("growth.json")
    assert tables.growth_table(growth) in readme, "run bench/growth.py, bench/ingest_tables.py"
    assert tables.capacity_table(tables.load("capacity.json")) in _page("capacity.md")
    bumped = json.loads(json.dumps(growth))
    bumped["levels"][-1]["ingest"]["spans_per_s"] += 100
    assert tables.growth_table(bumped) not in readme


def test_ingest_and_scale_figures_are_durable_and_from_the_results() -> None:
    tables = _tables()
    readme = _page("ingest.md")
    ingest = tables.load("ingest.json")
    assert ingest["server_core"] is not None  # measured with the server pinned to one core
    assert f"**{ingest['raw']['spans_per_s']:,.0f} spans/s**" in readme
    assert f"{ingest['probe']['bytes']['spans_per_s']:,.0f}" in readme
    scale = tables.load("scale.json")
    assert scale["postgres_durability"] == "durable"
    durable = " / ".join(f"{r['spans_per_s']:,.0f}" for r in scale["ingest"])
    unsafe = " / ".join(
        f"{r['spans_per_s']:,.0f}" for r in tables.load("scale_unsafe.json")["ingest"]
    )
    assert durable in readme and unsafe in readme
    assert readme.index(durable) < readme.index(unsafe)  # durable figures first
