"""Tables as a chunk writes them: as markdown (one row a line), as a markdown table run onto
one line, as rows a chunker joined with full stops, or run together with their line breaks
dropped ("Plan | Fee | Term Basic | €25 | 12 months Plus | …": each row's last cell and the
next row's label share one cell).
"""

from __future__ import annotations

import re

from ragsieve.evaluators.judges.offline.text.text import sentences

TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
FLAT_MIN_ROWS = 3  # a header and two rows: fewer cells leave the table's width undecided
FLAT_MAX_WIDTH = 10


def cells(line: str) -> list[str]:
    """A table line's cells."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _rows(line: str) -> list[str]:
    """A markdown table run onto one line ("| Plan | Data | |---|---| | Basic | 5 GB |") as its
    rows, one line each: the rule row says how many cells a row has, and the empty cell of the
    "| |" between two rows is dropped (a row's first cell names it: it is not empty). Any other
    line: itself."""
    found = cells(line)
    rule = [i for i, c in enumerate(found) if TABLE_RULE.match(c)]
    width = len(rule)
    if width < 2 or rule != list(range(rule[0], rule[0] + width)):
        return [line]
    head = found[: rule[0]]
    rows = [head[:-1] if head and not head[-1] else head]
    rest, i = found[rule[-1] + 1 :], 0
    while i < len(rest):
        if not rest[i]:
            i += 1
            continue
        rows.append(rest[i : i + width])
        i += width
    if len(rows) < 2 or any(len(r) != width for r in rows):
        return [line]
    return ["| " + " | ".join(r) + " |" for r in rows]


def _split_joined(cell: str) -> tuple[str, str] | None:
    """A cell that holds one row's last cell and the next row's label ("12 months Plus",
    "Minimum term Basic") split where the label starts: at its first capitalised word after
    the first (a short all-capital word is a unit: "2 GB Annual discount"), or None."""
    words = cell.split()
    for i in range(1, len(words)):
        w = words[i]
        if w[:1].isupper() and not (w.isupper() and len(w) <= 3):
            return " ".join(words[:i]), " ".join(words[i:])
    return None


def _flat_rows(line: str) -> list[str]:
    """A table whose line breaks were dropped and whose rule row is missing ("Membership |
    Monthly fee | Minimum term Basic | €25 | 12 months Plus | €42 | 6 months"), as its rows;
    the width is the one every joined cell can be split at and every row below the header
    holds a number at; when no width, or more than one, fits, the line itself."""
    if line.lstrip().startswith("|") or TABLE_RULE.search(line):
        return [line]
    found = cells(line)
    fits: list[list[list[str]]] = []
    for width in range(2, min(FLAT_MAX_WIDTH, len(found)) + 1):
        if (len(found) - 1) % (width - 1) or (len(found) - 1) // (width - 1) < FLAT_MIN_ROWS:
            continue
        rows = _rebuild(found, width)
        if rows is not None:
            fits.append(rows)
    if len(fits) != 1:
        return [line]
    return ["| " + " | ".join(r) + " |" for r in fits[0]]


def _rebuild(found: list[str], width: int) -> list[list[str]] | None:
    """``found``'s cells as rows of ``width`` cells, each joined cell split in two, or None."""
    rows: list[list[str]] = []
    row: list[str] = []
    for i, cell in enumerate(found):
        joined = i and i < len(found) - 1 and i % (width - 1) == 0
        if not joined:
            row.append(cell)
            continue
        parts = _split_joined(cell)
        if parts is None:
            return None
        rows.append([*row, parts[0]])
        row = [parts[1]]
    rows.append(row)
    if any(len(r) != width for r in rows):
        return None
    if not all(any(ch.isdigit() for c in r[1:] for ch in c) for r in rows[1:]):
        return None
    return rows


def lines(chunk: str) -> list[str]:
    """``chunk``'s lines; a line of several sentences, two or more of them table rows (a chunker
    dropped the breaks: "Plan | Data. Basic | 5 GB. Plus | 30 GB. Prices include VAT."), gives
    each sentence as a line of its own: a row as a table line, any other sentence as prose; a
    markdown table on one line gives its rows (:func:`_rows`), a table run together without
    its rule its rows too (:func:`_flat_rows`)."""
    out: list[str] = []
    for whole in chunk.replace("\r", "").split("\n"):
        if whole.count("|") > 2 and len(rows := _rows(whole)) > 1:
            out.extend(rows)
            continue
        parts = sentences(whole) if "|" in whole else [whole]
        if len(parts) >= 2 and sum("|" in p for p in parts) >= 2:
            out.extend(f"| {p.strip().rstrip('.')} |" if "|" in p else p for p in parts)
        elif whole.count("|") > 2:
            out.extend(_flat_rows(whole))
        else:
            out.append(whole)
    return out


def grids(chunks: list[str]) -> list[list[list[str]]]:
    """The context's tables, each as its rows of cells (the header row first)."""
    out: list[list[list[str]]] = []
    for chunk in chunks:
        grid: list[list[str]] = []
        for line in [*lines(chunk), ""]:
            if TABLE_RULE.match(line):
                continue
            if line.count("|") >= 2:
                grid.append(cells(line))
                continue
            if len(grid) > 1:
                out.append(grid)
            grid = []
    return out


__all__ = ["TABLE_RULE", "cells", "grids", "lines"]
