"""The README's cost-growth and capacity tables, generated from the committed bench results.

Run after ``bench/growth.py`` and ``bench/capacity.py``:
``.venv/bin/python bench/ingest_tables.py`` prints both tables (paste them into the README);
``tests/test_readme_ingest_figures.py`` checks that the README holds exactly these.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    return data


def _n(x: float) -> str:
    return f"{x:,.0f}"


def growth_table(data: dict[str, Any]) -> str:
    """Each cost at each level of stored spans, and what it should grow with."""
    levels = data["levels"]
    head = "| cost | " + " | ".join(f"{lv['stored_spans']:,} spans stored" for lv in levels)
    rows = [head + " | should grow with |", "|---|" + "---:|" * len(levels) + "---|"]

    def row(label: str, cells: list[str], grows: str) -> None:
        rows.append(f"| {label} | " + " | ".join(cells) + f" | {grows} |")

    ing = [lv["ingest"] for lv in levels]
    row("ingest, durable spans/s (one core)", [_n(i["spans_per_s"]) for i in ing], "neither")
    row("ingest p99 ms", [f"{i['p99_ms']:.0f}" for i in ing], "neither")
    row("ingest CPU µs per span", [f"{i['cpu_us_per_span']:.0f}" for i in ing], "neither")
    row(
        "collector RSS, first → last quarter MB",
        [f"{i['rss_first_quarter_mb']:.0f} → {i['rss_last_quarter_mb']:.0f}" for i in ing],
        "neither",
    )
    row(
        "read a 24 h window of interactions",
        [f"{lv['list_window_ms'] / 1000:.1f} s ({lv['window_interactions']:,})" for lv in levels],
        "the window",
    )
    row(
        "`jobs run --since 24h --dry-run` (settle, select, sample)",
        [f"{lv['job_dry_run']['seconds']:.1f} s" for lv in levels],
        "the window",
    )
    row(
        "`jobs run --since 24h --budget-calls 50`",
        [f"{lv['job_pass']['seconds']:.1f} s" for lv in levels],
        "the window and the budget",
    )
    st = [lv["settle"] for lv in levels]
    row(
        f"find due traces ({st[0]['pending']:,} pending)",
        [f"{s['due_query_ms']:.1f} ms" for s in st],
        "neither",
    )
    row(
        "settle one trace (derive + save)",
        [f"{s['settle_ms_per_trace']:.1f} ms" for s in st],
        "neither",
    )
    row(
        f"settle all {st[0]['pending']:,} pending (extrapolated from {st[0]['settled_sample']:,})",
        [f"{s['settle_all_pending_s_extrapolated']:.0f} s" for s in st],
        "the backlog",
    )
    row(
        "SQLite file (spans, interactions, indexes)",
        [f"{lv['db_mb'] / 1024:.1f} GB" for lv in levels],
        "the store (retention bounds it)",
    )
    return "\n".join(rows)


def capacity_table(data: dict[str, Any]) -> str:
    """The simulated profiles."""
    rows = [
        "| profile | traces/s | spans/s at peak | collectors | settle cores | GB/day"
        " | kept (row store / column store) | judge calls/day | USD/day | workers | store step |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in data["profiles"]:
        p = r["profile"]
        rows.append(
            f"| {p['name']} | {p['rps'] * p['tail_keep']:,.0f} | {_n(r['spans_per_s_peak'])}"
            f" | {r['collectors']} | {r['settle_cores']:.1f} | {r['disk_gb_per_day']:,.0f}"
            f" | {_n(r['stored_gb_at_retention'])} / {_n(r['stored_gb_in_column_store'])} GB"
            f" | {r['judge_calls_per_day']:,} | {r['judge_usd_per_day']:,.0f}"
            f" | {r['judge_workers']} | {r['store_step']} |"
        )
    return "\n".join(rows)


def main() -> None:
    print(growth_table(load("growth.json")))
    print()
    print(capacity_table(load("capacity.json")))


if __name__ == "__main__":
    main()
