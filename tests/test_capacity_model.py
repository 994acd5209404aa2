"""bench/capacity.py: the arithmetic from a traffic profile to machines, storage and spend."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _capacity() -> ModuleType:
    spec = importlib.util.spec_from_file_location("capacity", ROOT / "bench/capacity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["capacity"] = module  # dataclasses resolve their module's annotations there
    spec.loader.exec_module(module)
    return module


def _figures(cap: ModuleType) -> object:
    return cap.Figures(
        spans_per_s_per_core=10_000.0,
        settle_ms_per_trace=2.0,
        disk_bytes_per_span=8_000.0,
        postgres_spans_per_s_1=5_000.0,
    )


def test_a_small_profile_by_hand() -> None:
    cap = _capacity()
    p = cap.Profile("t", rps=1.0, spans_per_trace=5, peak_factor=2, sample=0.1, retention_days=10)
    r = cap.simulate(p, _figures(cap))
    assert r["spans_per_s_peak"] == 10.0  # 1 trace/s x 5 spans x peak 2
    assert r["collector_cores"] == round(10 / (10_000 * 0.6), 2)
    assert r["settle_cores"] == round(1 * 2 * 2.0 / 1000 / 0.6, 2)
    assert r["disk_gb_per_day"] == round(5 * 86_400 * 8_000 / 1e9, 2)  # 3.46 GB
    assert r["stored_gb_at_retention"] == round(5 * 86_400 * 8_000 / 1e9 * 10, 1)
    assert r["judge_calls_per_day"] == round(86_400 * 0.1 * 3)
    assert r["judge_usd_per_day"] == round(86_400 * 0.1 * 3 * 0.0004, 2)
    assert r["store_step"].startswith("1")


def test_steps_follow_the_thresholds() -> None:
    cap = _capacity()
    assert cap.store_step(cap.SQLITE_MAX_SPANS_PER_S, cap.SQLITE_MAX_GB).startswith("1")
    assert cap.store_step(cap.SQLITE_MAX_SPANS_PER_S + 1, 1).startswith("2")
    assert cap.store_step(1, cap.SQLITE_MAX_GB + 1).startswith("2")
    assert cap.store_step(cap.POSTGRES_MAX_SPANS_PER_S + 1, 1).startswith("3")
    assert cap.store_step(1, cap.POSTGRES_MAX_GB + 1).startswith("3")


def test_tail_sampling_and_budget_bound_the_load() -> None:
    cap = _capacity()
    f = _figures(cap)
    full = cap.simulate(cap.Profile("a", rps=1_000.0), f)
    kept = cap.simulate(cap.Profile("b", rps=1_000.0, tail_keep=0.1), f)
    assert kept["spans_per_s_peak"] == full["spans_per_s_peak"] / 10
    assert kept["collectors"] < full["collectors"]
    capped = cap.simulate(cap.Profile("c", rps=1_000.0, daily_budget_calls=1_000), f)
    assert capped["judge_calls_per_day"] == 1_000
    # Past step 1 the collectors are sized on the measured PostgreSQL rate, not SQLite's.
    assert full["store_step"].startswith("3")
    assert full["collector_cores"] == round(full["spans_per_s_peak"] / (5_000 * 0.6), 2)


def test_figures_come_from_the_results_and_say_so(tmp_path: Path) -> None:
    cap = _capacity()
    defaults = cap.load_figures(tmp_path)
    assert set(defaults.sources.values()) == {"default (no result file)"}
    (tmp_path / "ingest.json").write_text(json.dumps({"raw": {"spans_per_s": 1234.5}}))
    got = cap.load_figures(tmp_path)
    assert got.spans_per_s_per_core == 1234.5
    assert "ingest.json" in got.sources["spans_per_s_per_core"]
